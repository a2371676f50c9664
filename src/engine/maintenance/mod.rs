//! Log maintenance: checkpoints (`checkpoint`) and VACUUM (`vacuum`), both through delta-rs's
//! own machinery, with lakehealth's guards around it; and orphan files (`orphans`: data files
//! no version references, which `report` counts and the CLI's `vacuum` deletes). The CLI, the TUI and the janitor call
//! these functions; nothing here draws or prints.

pub mod checkpoint;
pub mod orphans;
pub mod vacuum;

use std::collections::HashMap;

use deltalake::DeltaTable;
use deltalake::table::builder::DeltaTableBuilder;

use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;

/// Loads the latest version of the table with delta-rs (any storage the other commands read).
pub(crate) async fn open_delta(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    what: &str,
) -> Result<DeltaTable> {
    let uri = loc.display();
    DeltaTableBuilder::from_url(loc.url.clone())
        .map_err(|e| EngineError::from_delta(&uri, what, e))?
        .with_storage_options(storage_options.clone())
        .load()
        .await
        .map_err(|e| EngineError::from_delta(&uri, what, e))
}
