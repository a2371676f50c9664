//! Plain Parquet folders: statistics from a listing alone (sizes from the listing, no data file
//! opened). The listing is streamed and folded into per-partition sizes as it arrives.

pub mod convert;
pub(crate) mod hive;
pub(crate) mod scan;
pub(crate) mod spark_sink;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use object_store::ObjectStore;

use crate::clock::now_ms;
use crate::delta::log::actions::MetaData;
use crate::delta::log::listing::LogListing;
use crate::delta::log::partition_key::PartitionSizes;
use crate::delta::log::state::{CommitSummary, LogState, Tombstones, TxnState};
use crate::error::Result;
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::options::OpenOptions;
use crate::parquet_folder::hive::PartitionParser;
use crate::parquet_folder::scan::{Entry, classify, list_folder};
use crate::progress::LoadProgress;
use crate::size::format_bytes;
use crate::stats::details::FolderDetails;
use crate::stats::table_report::TableReport;

/// What a reader of a log-less format found, as the statistics need it.
pub struct FolderState {
    pub version: u64,
    /// Spark sink: the latest compacted batch plays the role of a checkpoint.
    pub checkpoint_version: Option<u64>,
    pub partition_columns: Vec<String>,
    pub partitions: PartitionSizes,
    pub commits: Vec<CommitSummary>,
    pub txns: HashMap<String, TxnState>,
    pub log_bytes: u64,
    pub log_objects: u64,
    pub warnings: Vec<String>,
}

impl FolderState {
    /// The `LogState` the statistics are computed from (no tombstones, no findings: a folder has
    /// no log of removes).
    pub fn into_log_state(self) -> LogState {
        LogState {
            version: self.version,
            checkpoint_version: self.checkpoint_version,
            checkpoint_rows: 0,
            metadata: MetaData {
                id: String::new(),
                schema_string: String::new(),
                format: None,
                partition_columns: self.partition_columns,
                configuration: HashMap::new(),
            },
            protocol: None,
            partitions: self.partitions,
            tombstones: Tombstones::default(),
            txns: self.txns,
            commits: self.commits,
            listing: LogListing {
                log_bytes: self.log_bytes,
                log_objects: self.log_objects,
                ..LogListing::default()
            },
            json_bytes_since_checkpoint: 0,
            warnings: self.warnings,
            repeated_removes: Vec::new(),
            origins: BTreeMap::new(),
            fully_read_from: None,
            checkpoint_paths_read: false,
        }
    }
}

/// Warnings about what the listing found beside the data.
pub fn listing_warnings(details: &FolderDetails, parser: &PartitionParser) -> Vec<String> {
    let mut w = Vec::new();
    if details.other_files.files > 0 {
        w.push(format!(
            "{} files ({}) are not Parquet and are not counted, e.g. {}",
            details.other_files.files,
            format_bytes(details.other_files.bytes),
            details.other_files.examples.join(", ")
        ));
    }
    if parser.files_in_plain_folders > 0 {
        w.push(format!(
            "{} Parquet files sit in folders not named key=value; only key=value folders are read as partitions",
            parser.files_in_plain_folders
        ));
    }
    w
}

pub async fn load_parquet_folder(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    let uri = loc.display();
    let mut parser = PartitionParser::default();
    let mut partitions = PartitionSizes::default();
    let mut details = FolderDetails::default();
    let mut newest: Option<i64> = None;
    details.listing = list_folder(
        store,
        &uri,
        !loc.is_local(),
        progress,
        |meta| match classify(meta.location.as_ref()) {
            Entry::Data(rel) => {
                partitions.push(parser.key_of(rel), meta.size);
                let t = meta.last_modified.timestamp_millis();
                newest = Some(newest.map_or(t, |n| n.max(t)));
            }
            Entry::Hidden(rel) => details.hidden_files.add(rel, meta.size),
            Entry::Other(rel) => details.other_files.add(rel, meta.size),
        },
    )
    .await?;
    progress(LoadProgress::Computing);
    let mut warnings = listing_warnings(&details, &parser);
    if partitions.files() == 0 {
        warnings.push("no Parquet files found".into());
    }
    let state = FolderState {
        version: 0,
        checkpoint_version: None,
        partition_columns: parser.columns,
        partitions,
        commits: Vec::new(),
        txns: HashMap::new(),
        log_bytes: 0,
        log_objects: 0,
        warnings,
    };
    let mut report = TableReport::from_state(
        TableFormat::ParquetFolder,
        uri,
        loc.name(),
        &state.into_log_state(),
        opts.thresholds,
        now_ms(),
    );
    report.log.last_commit_ms = newest;
    report.folder = Some(details);
    Ok(report)
}
