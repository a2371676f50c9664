//! Log maintenance: checkpoints (`checkpoint`) and VACUUM (`vacuum`), both through delta-rs's
//! own machinery, with lakehealth's guards around it; and orphan files (`orphans`: data files
//! no version references, which `report` counts and the CLI's `vacuum` deletes). Each checks
//! the table's write protocol first (`check_write_protocol`). The CLI, the TUI and the janitor
//! call these functions; nothing here draws or prints.

pub mod checkpoint;
pub mod orphans;
pub mod vacuum;

use std::collections::HashMap;
use std::sync::Arc;

use deltalake::DeltaTable;
use deltalake::table::builder::DeltaTableBuilder;
use object_store::ObjectStore;
use object_store::prefix::PrefixStore;

use crate::compact::table::{StoreWrapper, table_path};
use crate::delta::log::cache::LogCache;
use crate::delta::log::listing::LogListing;
use crate::delta::log::replay::list_log;
use crate::error::{EngineError, Result};
use crate::location::Location;

pub(crate) use crate::delta::delta_rs::load as open_delta;

/// `open_delta` and `_delta_log/`'s listing (the checkpoints in it) from one read of the log:
/// both go through a cache (`delta::log::cache`) that lists it once and fetches each commit
/// once, then thaws, so what delta-rs does next reads the live log. `wrap` wraps the store
/// under the cache (tests count its requests).
pub(crate) async fn open_delta_listed(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    what: &str,
    wrap: Option<&StoreWrapper>,
) -> Result<(DeltaTable, LogListing)> {
    let uri = loc.display();
    let mut root = loc.open_root_store(storage_options)?;
    if let Some(wrap) = wrap {
        root = wrap(root);
    }
    let cache = Arc::new(LogCache::new(root, &table_path(loc)?));
    let folder: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(
        cache.clone() as Arc<dyn ObjectStore>,
        table_path(loc)?,
    ));
    let listing = match list_log(&folder, &uri).await {
        Ok(l) => l,
        Err(e) => {
            cache.thaw();
            return Err(e);
        }
    };
    let table = DeltaTableBuilder::from_url(loc.url.clone())
        .map_err(|e| EngineError::from_delta(&uri, what, e))?
        .with_storage_backend(cache.clone(), loc.url.clone())
        .with_storage_options(storage_options.clone())
        .load()
        .await;
    cache.thaw();
    Ok((
        table.map_err(|e| EngineError::from_delta(&uri, what, e))?,
        listing,
    ))
}

/// Delta's `vacuumProtocolCheck` asks a vacuum to check the table's write protocol first;
/// lakehealth does so before any maintenance that deletes or writes files, whether the table
/// lists the feature or not: every feature must be one lakehealth understands
/// (`delta::features`), and where delta-rs commits (VACUUM's start and end commits, a
/// checkpoint) one delta-rs can write. Refused before anything is touched, naming the features.
pub(crate) fn check_write_protocol(
    table: &DeltaTable,
    uri: &str,
    what: &str,
    delta_rs_commits: bool,
) -> Result<()> {
    use deltalake::kernel::transaction::{PROTOCOL, TransactionError};
    let refuse = |detail: String| EngineError::Unsupported {
        uri: uri.to_string(),
        detail: format!("{what}: {detail}; nothing was changed"),
    };
    let features = crate::delta::features::of_table(table)
        .map_err(|e| EngineError::from_delta(uri, what, e))?;
    features.map_err(|e| refuse(e.to_string()))?;
    if !delta_rs_commits {
        return Ok(());
    }
    let snapshot = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(uri, what, e))?;
    match PROTOCOL.can_write_to(snapshot) {
        Ok(()) => Ok(()),
        Err(TransactionError::UnsupportedTableFeatures(f)) => {
            let mut names: Vec<String> = f.iter().map(|f| f.to_string()).collect();
            names.sort();
            Err(refuse(format!(
                "it commits through delta-rs 1.1, which cannot write to tables with {}",
                names.join(", ")
            )))
        }
        Err(e) => Err(refuse(format!(
            "delta-rs 1.1 cannot write to this table ({e})"
        ))),
    }
}
