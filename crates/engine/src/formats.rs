//! Loading a table with the reader its format needs (`detect` says which).

use std::sync::Arc;

use object_store::ObjectStore;

use crate::detect::{list_children, probe_format};

use super::error::{EngineError, Result};
use super::location::Location;
use super::options::OpenOptions;
use super::progress::LoadProgress;
use super::stats::table_report::TableReport;

use crate::delta::log::listing::LogListing;
use crate::delta::log::replay::list_log_objects;
use crate::delta::log::state::LogState;
use crate::model::format::TableFormat;
use crate::{delta, iceberg, parquet_folder};

/// Loads the table at `loc` with the reader its format needs. Not a table of any kind:
/// `EngineError::NotATable` (the caller may then search below it).
pub async fn load_table_any(
    loc: &Location,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    // A `*.metadata.json` URI names one Iceberg snapshot's metadata directly.
    if iceberg::is_metadata_file_url(&loc.url) {
        return iceberg::load_iceberg(loc, opts, progress).await;
    }
    let store = loc.open_store(&opts.storage_options)?;
    Ok(load_table_from(loc, &store, opts, progress).await?.report)
}

/// A table as its reader loaded it.
pub struct Loaded {
    pub report: TableReport,
    /// A Delta table's replayed log, which its live log can follow on from.
    pub delta_log: Option<LogState>,
}

impl From<TableReport> for Loaded {
    fn from(report: TableReport) -> Self {
        Self {
            report,
            delta_log: None,
        }
    }
}

/// `load_table_any` through `store`, the table's folder (`table::Table` passes one that reads
/// the log once for every reader of the table).
pub async fn load_table_from(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Loaded> {
    if iceberg::is_metadata_file_url(&loc.url) {
        return iceberg::load_iceberg(loc, opts, progress)
            .await
            .map(Into::into);
    }
    let store = store.clone();
    let uri = loc.display();
    // A Delta table is known by its log: listing `_delta_log/` first spares listing the folder,
    // and the replay starts from that listing (one request and one round trip fewer). A
    // listing that fails is left to the folder's listing to report.
    progress(LoadProgress::Listing);
    if let Ok(log) = list_log_objects(&store, &uri).await
        && log.log_objects > 0
    {
        return open_delta(loc, &store, Some(log), opts, progress).await;
    }
    let children = list_children(&store, &uri, None).await?;
    let format = probe_format(&store, &uri, None, &children).await?;
    let report = match format {
        Some(TableFormat::Delta) => return open_delta(loc, &store, None, opts, progress).await,
        Some(TableFormat::ParquetFolder) => {
            parquet_folder::load_parquet_folder(loc, &store, opts, progress).await
        }
        Some(TableFormat::SparkFileSink) => {
            parquet_folder::spark_sink::load_spark_sink(loc, &store, opts, progress).await
        }
        Some(TableFormat::Iceberg) => iceberg::load_iceberg(loc, opts, progress).await,
        None => Err(EngineError::NotATable { uri, depth: 0 }),
    };
    report.map(Into::into)
}

async fn open_delta(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    listing: Option<LogListing>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Loaded> {
    let (report, log) = delta::report::open_delta(loc, store, listing, opts, progress).await?;
    Ok(Loaded {
        report,
        delta_log: Some(log),
    })
}

/// What the UI says, where compaction is offered, for a table lakehealth does not compact.
pub fn compaction_unsupported(t: &TableReport) -> String {
    match t.format {
        TableFormat::Iceberg => iceberg::compaction_unsupported(t),
        f => format!("compaction of {} tables is not supported", f.label()),
    }
}

/// How well the table's files skip, from the statistics its format keeps: a Delta table's
/// log (`delta::skipping`), an Iceberg table's manifest bounds (`iceberg::skipping`). A plain
/// Parquet folder keeps none outside its files' footers: that is said, not guessed.
pub async fn skipping_health(
    loc: &Location,
    format: TableFormat,
    opts: &OpenOptions,
) -> Result<crate::stats::skipping::SkippingHealth> {
    match format {
        TableFormat::Delta => delta::skipping::skipping_health(loc, &opts.storage_options).await,
        TableFormat::Iceberg => iceberg::skipping::skipping_health(loc, opts).await,
        other => Err(EngineError::Unsupported {
            uri: loc.display(),
            detail: format!(
                "skipping health reads a table format's statistics (Delta's log, Iceberg's manifests); a {} table keeps none outside its files",
                other.label()
            ),
        }),
    }
}
