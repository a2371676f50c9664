//! The numbers for one table, as the TUI shows them and `lakehealth report --json` prints them.

use crate::delta::log::actions::physical_names;

use serde::Serialize;

use super::deleted_rows::DeletedRows;
use super::file_sizes::SizeStats;
use super::findings::{Finding, FindingsCoverage, findings};
use super::log_health::LogHealth;
use super::vacuum::VacuumDebt;
use super::writers::{StreamingWriter, streaming_writers};
use crate::delta::log::state::{CommitSummary, LogState};
use crate::model::format::TableFormat;
use crate::model::thresholds::Thresholds;
use crate::properties::TableProps;
use crate::stats::details::FolderDetails;
use crate::stats::details::IcebergDetails;
use crate::stats::details::OrphanScan;

use crate::model::partition::PartitionValues;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionReport {
    pub values: PartitionValues,
    #[serde(flatten)]
    pub stats: SizeStats,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableReport {
    pub uri: String,
    pub name: String,
    /// Delta, a Parquet folder, a Spark file-sink folder or Iceberg.
    pub format: TableFormat,
    pub version: u64,
    pub partition_columns: Vec<String>,
    #[serde(flatten)]
    pub stats: SizeStats,
    pub thresholds: Thresholds,
    /// `delta.targetFileSize` of the table, when it sets one (then it is the target).
    pub table_target_file_size: Option<u64>,
    pub partitions: Vec<PartitionReport>,
    pub log: LogHealth,
    pub vacuum: VacuumDebt,
    pub streaming_writers: Vec<StreamingWriter>,
    /// Newest first.
    pub commits: Vec<CommitSummary>,
    pub warnings: Vec<String>,
    /// Damage the log shows has happened (files removed twice: duplicated rows).
    pub findings: Vec<Finding>,
    /// The versions the findings were looked for in.
    pub findings_checked: FindingsCoverage,
    /// Parquet folders and Spark sinks: what the listing cost and found beside the data files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<FolderDetails>,
    /// Iceberg tables: snapshot, manifests, delete files and the rewrite_data_files preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iceberg: Option<Box<IcebergDetails>>,
    /// Delta tables, when `report` listed the folders: files no version references
    /// (`maintenance::orphans`; the TUI does not list them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphans: Option<OrphanScan>,
    /// Delta tables, when `report --skipping` read the file statistics: how well the files
    /// skip for a value of each column (`skipping`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipping: Option<Box<crate::stats::skipping::SkippingHealth>>,
    /// Delta tables with deletion vectors: rows they mark deleted, per partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_rows: Option<DeletedRows>,
}

impl TableReport {
    /// A Delta table's report from its replayed log.
    pub fn build(
        uri: String,
        name: String,
        state: LogState,
        base: Thresholds,
        now_ms: i64,
    ) -> Self {
        Self::from_state(TableFormat::Delta, uri, name, &state, base, now_ms)
    }

    /// The report of a table of any format whose reader filled a `LogState` (a Parquet folder's
    /// listing, a Spark sink's log), or of a state that stays in use (the live watcher keeps
    /// applying commits to it): the same statistics, partitions and histograms.
    pub fn from_state(
        format: TableFormat,
        uri: String,
        name: String,
        state: &LogState,
        base: Thresholds,
        now_ms: i64,
    ) -> Self {
        let props = TableProps::parse(
            state
                .metadata
                .configuration
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_deref()?))),
        );
        let table_target = props.target_file_size();
        let thresholds = Thresholds {
            target_file_size: table_target.unwrap_or(base.target_file_size),
            ..base
        };
        let retention_hours = props.deleted_file_retention().as_secs_f64() / 3600.0;
        let log = LogHealth::from_state(state, props.checkpoint_interval());
        let vacuum = VacuumDebt::compute(&state.tombstones, retention_hours, now_ms);
        let writers = streaming_writers(state);
        let (findings, findings_checked) = findings(state);
        let mut warnings = state.warnings.clone();
        warnings.extend(
            props
                .invalid()
                .iter()
                .map(|p| format!("{p}; it is ignored (the default applies)")),
        );
        if log.checkpoint_overdue {
            warnings.push(format!(
                "{} commits since the last checkpoint (interval {}): every reader and writer replays them as JSON",
                log.commits_since_checkpoint, log.checkpoint_interval
            ));
        }
        let columns = state.metadata.partition_columns.clone();
        let phys = physical_names(&state.metadata.schema_string);
        let groups = state.partitions.resolve(&columns, &phys);
        let (stats, partitions) = size_sections(&columns, groups, &thresholds);
        TableReport {
            uri,
            name,
            format,
            version: state.version,
            partition_columns: columns,
            stats,
            thresholds,
            table_target_file_size: table_target,
            partitions,
            log,
            vacuum,
            streaming_writers: writers,
            commits: state.commits.clone(),
            warnings,
            findings,
            findings_checked,
            folder: None,
            iceberg: None,
            orphans: None,
            skipping: None,
            deleted_rows: None,
        }
    }
}

/// Whole-table and per-partition statistics of live files grouped by partition values (in
/// `columns` order): every table format's reader ends here.
pub fn size_sections(
    columns: &[String],
    groups: Vec<(Vec<Option<String>>, Vec<u64>)>,
    thresholds: &Thresholds,
) -> (SizeStats, Vec<PartitionReport>) {
    let edges = thresholds.edges();
    let total_files: usize = groups.iter().map(|(_, s)| s.len()).sum();
    let mut all_sizes: Vec<u64> = Vec::with_capacity(total_files);
    let mut partitions: Vec<PartitionReport> = Vec::with_capacity(groups.len());
    for (values, mut sizes) in groups {
        all_sizes.extend_from_slice(&sizes);
        let stats = SizeStats::from_sizes(&mut sizes, thresholds, &edges);
        partitions.push(PartitionReport {
            values: PartitionValues(columns.iter().cloned().zip(values).collect()),
            stats,
        });
    }
    // By label as displayed, then by the typed values (labels of NULL and 'null' are equal).
    partitions.sort_by_cached_key(|p| (p.values.label(), p.values.clone()));
    let refs: Vec<&SizeStats> = partitions.iter().map(|p| &p.stats).collect();
    let stats = SizeStats::for_table(&mut all_sizes, &refs, thresholds, &edges);
    (stats, partitions)
}
