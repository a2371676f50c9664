//! Skipping health: how well a table's files skip for a value of each column, from the
//! statistics its log already holds (no data read). `depth` is the measure, `columns` reads
//! the statistics (`delta::skipping` opens a Delta table for them); this file summarises per
//! table and per partition.

pub mod columns;
pub mod depth;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::partition::PartitionValues;
use columns::AddColumns;
use depth::{Depth, depth};

/// A clustering column whose mean depth is above this is a finding: a point lookup on it
/// opens this many files on average where clustering promises about one.
pub const CLUSTERING_DEPTH_BOUND: f64 = 4.0;

/// Partitions kept in a report (the worst first); the rest are counted.
pub const PARTITIONS_SHOWN: usize = 100;

/// One column's depth across the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnSkipping {
    pub column: String,
    /// Declared for clustering (Delta's `delta.clustering` domain).
    pub clustering: bool,
    #[serde(flatten)]
    pub depth: Depth,
}

/// One column's depth within one partition (the files a lookup opens once the partition is
/// pruned).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionColumn {
    pub column: String,
    pub mean_depth: f64,
    pub worst_depth: usize,
    pub skipped_share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionSkipping {
    pub partition: PartitionValues,
    pub files: usize,
    /// In the table's column order (`SkippingHealth::columns`).
    pub columns: Vec<PartitionColumn>,
}

/// Something a reader should act on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkippingFinding {
    /// A clustering column no longer clusters: lookups on it open many files.
    ClusteringDepth {
        column: String,
        mean_depth: f64,
        bound: f64,
    },
    /// No column has statistics: nothing can be skipped by value.
    NoStatistics,
}

impl SkippingFinding {
    /// The message, with what to run by the table's format (lakehealth orders Delta files;
    /// an Iceberg table's sort order is kept by `rewrite_data_files` with `sort`).
    pub fn message_for(&self, source: StatsSource) -> String {
        match (self, source) {
            (
                Self::ClusteringDepth {
                    column,
                    mean_depth,
                    bound,
                },
                StatsSource::IcebergManifests,
            ) => format!(
                "sort-order column {column}: a lookup opens {mean_depth:.1} files on average (bound {bound:.0}); rewrite it in order (Iceberg's rewrite_data_files with strategy sort)"
            ),
            _ => self.message(),
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::ClusteringDepth {
                column,
                mean_depth,
                bound,
            } => format!(
                "clustering column {column}: a lookup opens {mean_depth:.1} files on average (bound {bound:.0}); re-cluster with `compact` (OPTIMIZE)"
            ),
            Self::NoStatistics => {
                "no column has min/max statistics: every query opens every file".into()
            }
        }
    }
}

/// Where the statistics came from, and what a table's declared order is called there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatsSource {
    /// Delta: the add actions' `stats` (min/max), clustering columns from the domain.
    #[default]
    DeltaLog,
    /// Iceberg: the manifests' `lower_bounds`/`upper_bounds`, the default sort order's columns.
    IcebergManifests,
}

impl StatsSource {
    pub fn describe(self) -> &'static str {
        match self {
            StatsSource::DeltaLog => "the log's min/max statistics",
            StatsSource::IcebergManifests => "the manifests' lower/upper bounds",
        }
    }

    /// What a declared column is called.
    pub fn declared(self) -> &'static str {
        match self {
            StatsSource::DeltaLog => "clustering column",
            StatsSource::IcebergManifests => "sort-order column",
        }
    }
}

/// The skipping health of a table at one version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippingHealth {
    pub version: u64,
    pub source: StatsSource,
    pub files: usize,
    /// Declared clustering columns, in their order.
    pub clustering_columns: Vec<String>,
    /// Clustering columns first (in their order), then the worst skipping first.
    pub columns: Vec<ColumnSkipping>,
    /// The worst partitions first (by the first of `columns`), at most `PARTITIONS_SHOWN`.
    pub partitions: Vec<PartitionSkipping>,
    pub partitions_total: usize,
    pub findings: Vec<SkippingFinding>,
}

impl SkippingHealth {
    /// From the table's add actions at `version` and its clustering columns.
    pub fn from_adds(version: u64, adds: &AddColumns, clustering_columns: Vec<String>) -> Self {
        Self::of_columns(version, adds, clustering_columns, None)
    }

    /// The same health, said to come from `source`.
    pub fn with_source(mut self, source: StatsSource) -> Self {
        self.source = source;
        self
    }

    /// The same, measuring only the columns `only` names (None: every column with statistics):
    /// a plan's what-if needs its order's columns, not the table's every one.
    pub fn of_columns(
        version: u64,
        adds: &AddColumns,
        clustering_columns: Vec<String>,
        only: Option<&[String]>,
    ) -> Self {
        let files = adds.files();
        let spans: Vec<columns::ColumnSpans> = adds
            .stat_columns()
            .iter()
            .filter(|c| only.is_none_or(|o| o.contains(c)))
            .filter_map(|c| adds.spans(c))
            .collect();
        let mut cols: Vec<ColumnSkipping> = spans
            .iter()
            .map(|s| ColumnSkipping {
                column: s.column.clone(),
                clustering: clustering_columns.contains(&s.column),
                depth: depth(&s.spans(0..s.files())),
            })
            .collect();
        let rank = |c: &ColumnSkipping| {
            clustering_columns
                .iter()
                .position(|k| *k == c.column)
                .unwrap_or(usize::MAX)
        };
        cols.sort_by(|a, b| {
            rank(a)
                .cmp(&rank(b))
                .then(a.depth.skipped_share.total_cmp(&b.depth.skipped_share))
                .then(a.column.cmp(&b.column))
        });
        let order: Vec<usize> = cols
            .iter()
            .filter_map(|c| spans.iter().position(|s| s.column == c.column))
            .collect();
        let (partitions, partitions_total) = match adds.partitions() {
            Some(keys) => per_partition(&keys, &order, &spans),
            None => (Vec::new(), 0),
        };
        let findings = findings(&cols, &clustering_columns);
        Self {
            version,
            source: StatsSource::DeltaLog,
            files,
            clustering_columns,
            columns: cols,
            partitions,
            partitions_total,
            findings,
        }
    }
}

/// "3176 files carry no min/max for event_id, sensor_id: ..." when any file lacks a column's
/// statistics (its writer wrote none, or `delta.dataSkippingNumIndexedCols` left it out).
pub fn without_stats_note(h: &SkippingHealth) -> Option<String> {
    let missing: Vec<&ColumnSkipping> = h
        .columns
        .iter()
        .filter(|c| c.depth.without_stats > 0)
        .collect();
    let most = missing.iter().map(|c| c.depth.without_stats).max()?;
    let names: Vec<&str> = missing.iter().map(|c| c.column.as_str()).collect();
    Some(format!(
        "up to {most} of {} files carry no min/max for {}: every lookup opens them",
        h.files,
        names.join(", ")
    ))
}

fn findings(cols: &[ColumnSkipping], clustering: &[String]) -> Vec<SkippingFinding> {
    if cols.is_empty() {
        return vec![SkippingFinding::NoStatistics];
    }
    cols.iter()
        .filter(|c| clustering.contains(&c.column) && c.depth.mean > CLUSTERING_DEPTH_BOUND)
        .map(|c| SkippingFinding::ClusteringDepth {
            column: c.column.clone(),
            mean_depth: c.depth.mean,
            bound: CLUSTERING_DEPTH_BOUND,
        })
        .collect()
}

/// Every partition's depth for `columns` alone, in their order (those without statistics
/// left out), among its files of at least `min_size` bytes, the worst first: what the
/// janitor's re-clustering judges (small files are the small-file rule's; a report keeps only
/// the worst `PARTITIONS_SHOWN`). An unpartitioned table is one partition without values.
pub fn partition_depths(
    adds: &AddColumns,
    columns: &[String],
    min_size: u64,
) -> Vec<PartitionSkipping> {
    let spans: Vec<columns::ColumnSpans> = columns.iter().filter_map(|c| adds.spans(c)).collect();
    let order: Vec<usize> = (0..spans.len()).collect();
    let keys = adds
        .partitions()
        .unwrap_or_else(|| vec![PartitionValues(Vec::new()); adds.files()]);
    // A size delta-rs did not give counts the file in.
    let sizes = adds.sizes();
    let kept = |i: usize| {
        sizes
            .as_ref()
            .and_then(|s| s.get(i))
            .is_none_or(|&b| b.max(0) as u64 >= min_size)
    };
    every_partition(&keys, &kept, &order, &spans)
}

/// Each partition's depth per column (`order`: indices into `spans`, the report's column
/// order); the worst partitions first, at most `PARTITIONS_SHOWN`, and how many there are.
fn per_partition(
    keys: &[PartitionValues],
    order: &[usize],
    spans: &[columns::ColumnSpans],
) -> (Vec<PartitionSkipping>, usize) {
    let mut out = every_partition(keys, &|_| true, order, spans);
    let total = out.len();
    out.truncate(PARTITIONS_SHOWN);
    (out, total)
}

fn every_partition(
    keys: &[PartitionValues],
    kept: &dyn Fn(usize) -> bool,
    order: &[usize],
    spans: &[columns::ColumnSpans],
) -> Vec<PartitionSkipping> {
    let mut groups: BTreeMap<&PartitionValues, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| kept(*i)) {
        groups.entry(k).or_default().push(i);
    }
    let mut out: Vec<PartitionSkipping> = groups
        .into_iter()
        .map(|(k, files)| PartitionSkipping {
            partition: k.clone(),
            files: files.len(),
            columns: order
                .iter()
                .map(|&c| {
                    let d = depth(&spans[c].spans(files.iter().copied()));
                    PartitionColumn {
                        column: spans[c].column.clone(),
                        mean_depth: d.mean,
                        worst_depth: d.worst,
                        skipped_share: d.skipped_share,
                    }
                })
                .collect(),
        })
        .collect();
    // By the report's first column: the first clustering column, else the worst-skipping one.
    let deepest = |p: &PartitionSkipping| p.columns.first().map_or(0.0, |c| c.mean_depth);
    out.sort_by(|a, b| {
        deepest(b)
            .total_cmp(&deepest(a))
            .then(a.partition.cmp(&b.partition))
    });
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};

    use super::*;

    /// Flattened add actions as delta-rs hands them over: `k` and `v` per file, a partition.
    fn adds(k: &[(i64, i64)], v: &[(i64, i64)], part: &[&str]) -> AddColumns {
        let col = |xs: Vec<i64>| Arc::new(Int64Array::from(xs)) as ArrayRef;
        let batch = RecordBatch::try_from_iter([
            ("num_records", col(vec![10; k.len()])),
            ("min.k", col(k.iter().map(|r| r.0).collect())),
            ("max.k", col(k.iter().map(|r| r.1).collect())),
            ("min.v", col(v.iter().map(|r| r.0).collect())),
            ("max.v", col(v.iter().map(|r| r.1).collect())),
            (
                "partition.p",
                Arc::new(StringArray::from(part.to_vec())) as ArrayRef,
            ),
        ])
        .unwrap();
        AddColumns::new(vec![batch])
    }

    #[test]
    fn a_clustering_column_whose_files_overlap_past_the_bound_is_a_finding_and_comes_first() {
        // `k` (clustering) spans everything in every file; `v` tiles.
        let k = vec![(0, 100); 6];
        let v: Vec<(i64, i64)> = (0..6).map(|i| (i * 10, i * 10 + 9)).collect();
        let h = SkippingHealth::from_adds(
            3,
            &adds(&k, &v, &["a", "a", "a", "b", "b", "b"]),
            vec!["k".into()],
        );
        assert_eq!(h.columns[0].column, "k");
        assert!(h.columns[0].clustering);
        assert_eq!(h.columns[0].depth.mean, 6.0);
        assert_eq!(
            h.findings,
            vec![SkippingFinding::ClusteringDepth {
                column: "k".into(),
                mean_depth: 6.0,
                bound: CLUSTERING_DEPTH_BOUND
            }]
        );
        // Within each partition, 3 files: depth 3 for `k`, 1 for `v`.
        assert_eq!(h.partitions_total, 2);
        for p in &h.partitions {
            assert_eq!(p.files, 3);
            assert_eq!((p.columns[0].worst_depth, p.columns[1].worst_depth), (3, 1));
        }
    }

    #[test]
    fn partition_depths_measure_only_the_named_columns_in_every_partition() {
        let k = vec![(0, 100); 6];
        let v: Vec<(i64, i64)> = (0..6).map(|i| (i * 10, i * 10 + 9)).collect();
        let parts: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
        let names: Vec<&str> = parts.iter().map(String::as_str).collect();
        // Six partitions of one file each: none is cut, whatever PARTITIONS_SHOWN is.
        let all = partition_depths(&adds(&k, &v, &names), &["v".to_string()], 0);
        assert_eq!(all.len(), 6);
        assert!(
            all.iter()
                .all(|p| p.columns.len() == 1 && p.columns[0].column == "v")
        );
        let one = partition_depths(
            &adds(&k, &v, &["a"; 6]),
            &["k".to_string(), "missing".to_string()],
            0,
        );
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].files, 6);
        assert_eq!(
            one[0].columns.len(),
            1,
            "a column without statistics is left out"
        );
        assert_eq!(one[0].columns[0].mean_depth, 6.0);
        // Files below the size are left out (the small-file rule's).
        let col = |xs: Vec<i64>| Arc::new(Int64Array::from(xs)) as ArrayRef;
        let sized = RecordBatch::try_from_iter([
            ("num_records", col(vec![10; 4])),
            ("size_bytes", col(vec![5, 500, 500, 5])),
            ("min.k", col(vec![0; 4])),
            ("max.k", col(vec![9; 4])),
        ])
        .unwrap();
        let big = partition_depths(&AddColumns::new(vec![sized]), &["k".to_string()], 100);
        assert_eq!((big[0].files, big[0].columns[0].mean_depth), (2, 2.0));
    }

    #[test]
    fn files_without_a_columns_statistics_are_said() {
        let mut h = SkippingHealth::from_adds(1, &adds(&[(0, 1)], &[(0, 1)], &["a"]), vec![]);
        assert_eq!(without_stats_note(&h), None);
        h.columns[0].depth.without_stats = 1;
        let note = without_stats_note(&h).unwrap();
        assert!(
            note.contains("up to 1 of 1 files carry no min/max for"),
            "{note}"
        );
    }

    #[test]
    fn a_clustered_column_within_the_bound_is_no_finding_and_no_statistics_is_one() {
        let tiles: Vec<(i64, i64)> = (0..6).map(|i| (i * 10, i * 10 + 9)).collect();
        let h = SkippingHealth::from_adds(1, &adds(&tiles, &tiles, &["a"; 6]), vec!["k".into()]);
        assert!(h.findings.is_empty(), "{:?}", h.findings);
        let none = SkippingHealth::from_adds(1, &AddColumns::new(Vec::new()), Vec::new());
        assert_eq!(none.findings, vec![SkippingFinding::NoStatistics]);
    }
}
