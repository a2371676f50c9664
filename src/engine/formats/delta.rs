//! Delta tables: statistics from the transaction log (`engine::log::replay`), and for tables
//! with deletion vectors the rows they mark deleted (from delta-rs's snapshot, which carries
//! each file's vector and row count).

use std::collections::HashMap;
use std::sync::Arc;

use deltalake::table::builder::DeltaTableBuilder;
use object_store::ObjectStore;

use crate::engine::compact::plan::DEFAULT_MAX_DELETED_RATIO;
use crate::engine::compact::table::partition_files;
use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;
use crate::engine::log::actions::Protocol;
use crate::engine::log::replay::replay;
use crate::engine::open::{OpenOptions, now_ms};
use crate::engine::progress::LoadProgress;
use crate::engine::stats::deleted_rows::{DeletedRows, FileRows};
use crate::engine::stats::findings::deleted_rows_finding;
use crate::engine::stats::table_report::TableReport;

pub async fn load_delta(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    let uri = loc.display();
    let state = replay(store, &uri, opts.replay, progress).await?;
    let dv = uses_deletion_vectors(state.protocol.as_ref());
    let mut report = TableReport::build(uri, loc.name(), state, opts.thresholds, now_ms());
    if dv {
        match deleted_rows(loc, &opts.storage_options, report.version).await {
            Ok(d) => {
                report
                    .findings
                    .extend(d.as_ref().and_then(deleted_rows_finding));
                report.deleted_rows = d;
            }
            Err(e) => report
                .warnings
                .push(format!("deleted rows could not be counted: {e}")),
        }
    }
    Ok(report)
}

fn uses_deletion_vectors(p: Option<&Protocol>) -> bool {
    p.and_then(|p| p.reader_features.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == "deletionVectors"))
}

/// Deleted rows per partition at `version`, from delta-rs's snapshot of it.
async fn deleted_rows(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    version: u64,
) -> Result<Option<DeletedRows>> {
    let uri = loc.display();
    let derr = |e| EngineError::from_delta(&uri, "counting deleted rows", e);
    let mut table = DeltaTableBuilder::from_url(loc.url.clone())
        .map_err(derr)?
        .with_storage_options(storage_options.clone())
        .build()
        .map_err(derr)?;
    table.load_version(version).await.map_err(derr)?;
    let groups: Vec<_> = partition_files(&table, &uri)?
        .into_iter()
        .map(|(values, files)| {
            let rows = files
                .iter()
                .map(|f| FileRows {
                    path: f.path.clone(),
                    deleted: f.deleted_rows(),
                    records: f.num_records,
                })
                .collect();
            (values, rows)
        })
        .collect();
    Ok(DeletedRows::compute(&groups, DEFAULT_MAX_DELETED_RATIO))
}
