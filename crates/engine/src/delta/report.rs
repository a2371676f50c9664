//! Delta tables: statistics from the transaction log (`engine::delta::log::replay`), and for tables
//! with deletion vectors the rows they mark deleted (`engine::delta::log::file_rows`: each live file's
//! vector cardinality and row count, read from the log only for such tables).

use std::collections::HashMap;
use std::sync::Arc;

use object_store::ObjectStore;

use crate::clock::now_ms;
use crate::delta::log::actions::{MetaData, Protocol};
use crate::delta::log::file_rows::live_file_rows;
use crate::delta::log::listing::LogListing;
use crate::delta::log::replay::{replay, replay_listed};
use crate::delta::log::state::LogState;
use crate::error::Result;
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::DEFAULT_MAX_DELETED_RATIO;
use crate::options::OpenOptions;
use crate::progress::LoadProgress;
use crate::stats::deleted_rows::{DeletedRows, FileRows};
use crate::stats::findings::deleted_rows_finding;
use crate::stats::table_report::TableReport;

/// `listing`: `_delta_log/` as format detection listed it, or None to list it here.
pub async fn load_delta(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    listing: Option<LogListing>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    Ok(open_delta(loc, store, listing, opts, progress).await?.0)
}

/// `load_delta`, and the replayed state the report was built from (a `table::Table` keeps it,
/// so its live log follows on from it instead of replaying the table again).
pub async fn open_delta(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    listing: Option<LogListing>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<(TableReport, LogState)> {
    let uri = loc.display();
    let state = match listing {
        Some(l) => replay_listed(store, &uri, l, opts.replay, progress).await?,
        None => replay(store, &uri, opts.replay, progress).await?,
    };
    // Only a table with deletion vectors reads its files' paths, vectors and row counts.
    let deleted = match uses_deletion_vectors(state.protocol.as_ref()) {
        true => Some(deleted_rows(store, &uri, &state, opts.replay.io_concurrency).await),
        false => None,
    };
    let mut report = TableReport::from_state(
        TableFormat::Delta,
        uri,
        loc.name(),
        &state,
        opts.thresholds,
        now_ms(),
    );
    match deleted {
        Some(Ok(d)) => {
            report
                .findings
                .extend(d.as_ref().and_then(deleted_rows_finding));
            report.deleted_rows = d;
        }
        Some(Err(e)) => report
            .warnings
            .push(format!("deleted rows could not be counted: {e}")),
        None => {}
    }
    Ok((report, state))
}

fn uses_deletion_vectors(p: Option<&Protocol>) -> bool {
    p.and_then(|p| p.reader_features.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == "deletionVectors"))
}

/// Deleted rows per partition at the replayed version, from the log (`log::file_rows`):
/// partitions named by their logical columns, as the compaction plan names them.
async fn deleted_rows(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    state: &LogState,
    io_concurrency: usize,
) -> Result<Option<DeletedRows>> {
    let files = live_file_rows(store, uri, state, io_concurrency).await?;
    let cols = &state.metadata.partition_columns;
    let physical = partition_keys(&state.metadata);
    let mut groups: HashMap<PartitionValues, Vec<FileRows>> = HashMap::new();
    for f in files {
        let values = PartitionValues(
            cols.iter()
                .zip(&physical)
                .map(|(c, key)| {
                    let v = f
                        .partition_values
                        .iter()
                        .find(|(k, _)| k == key)
                        .and_then(|(_, v)| v.clone())
                        // The protocol's empty string is NULL.
                        .filter(|v| !v.is_empty());
                    (c.clone(), v)
                })
                .collect(),
        );
        groups.entry(values).or_default().push(FileRows {
            // Decoded, as delta-rs names a file (the plan matches files over the ratio by it).
            path: percent_encoding::percent_decode_str(&f.path)
                .decode_utf8_lossy()
                .into_owned(),
            deleted: f.deleted,
            records: f.records,
        });
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_by(|a, b| a.0.0.cmp(&b.0.0));
    Ok(DeletedRows::compute(&groups, DEFAULT_MAX_DELETED_RATIO))
}

/// The key each partition column has in the log's `partitionValues`: its physical name in a
/// column-mapped table (`delta.columnMapping.physicalName`), else its name.
fn partition_keys(md: &MetaData) -> Vec<String> {
    let mapped = md
        .configuration
        .get("delta.columnMapping.mode")
        .and_then(|m| m.as_deref())
        .is_some_and(|m| m == "name" || m == "id");
    let schema: Option<serde_json::Value> = mapped
        .then(|| serde_json::from_str(&md.schema_string).ok())
        .flatten();
    md.partition_columns
        .iter()
        .map(|c| {
            schema
                .as_ref()
                .and_then(|s| s["fields"].as_array())
                .and_then(|fields| fields.iter().find(|f| f["name"] == c.as_str()))
                .and_then(|f| f["metadata"]["delta.columnMapping.physicalName"].as_str())
                .unwrap_or(c)
                .to_string()
        })
        .collect()
}
