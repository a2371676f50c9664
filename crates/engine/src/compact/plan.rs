//! Compaction planning: which files of which partitions are rewritten, in which bins, and what
//! the partition is predicted to look like afterwards. The executor runs exactly these bins.
//!
//! Candidates are files below `min_file_size`, and, as in Delta's OPTIMIZE, files whose deletion
//! vector marks more than `max_deleted_ratio` of their rows deleted whatever their size (`purge`:
//! every file with a deletion vector). Other files at or above the size are never touched, so
//! re-running a compaction does not churn healthy files. Rewriting applies deletion vectors: the
//! outputs hold only the rows the table reads. Bins of one file are dropped (rewriting a file
//! alone gains nothing) unless that file's deleted rows are why it is rewritten.

use crate::model::thresholds::DEFAULT_MAX_DELETED_RATIO;
use deltalake::kernel::DeletionVectorDescriptor;
use serde::Serialize;

use super::ordering::PlannedOrder;
use super::selection::Predicate;
use super::tiers::due_groups;
use crate::delta::features::FeatureNote;
/// A file's row tracking fields, as the Delta protocol defines them.
pub use crate::delta::row_tracking::RowIds;
use crate::model::cost::Cost;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::stats::file_sizes::SizeStats;
use crate::stats::histogram::Histogram;

/// One active file, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileRef {
    /// As the log writes it (used in the `remove` action).
    pub path: String,
    /// The object-store path relative to the table root.
    #[serde(skip)]
    pub store_path: String,
    pub size: u64,
    /// Its deletion vector: the rewrite leaves out the rows it marks, and the `remove` names it.
    #[serde(skip)]
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    /// Rows in the Parquet file (deleted ones included), from the add's statistics.
    #[serde(skip)]
    pub num_records: Option<u64>,
    /// Its tier (`tiers`): 0 for a writer's file, t + 1 for lakehealth's output of tier-t files.
    #[serde(skip)]
    pub tier: u32,
    /// Its row tracking fields (none when the table does not track rows).
    #[serde(skip)]
    pub row_ids: RowIds,
}

impl FileRef {
    pub fn has_deletion_vector(&self) -> bool {
        self.deletion_vector.is_some()
    }

    /// Rows its deletion vector marks deleted.
    pub fn deleted_rows(&self) -> u64 {
        self.deletion_vector
            .as_ref()
            .map_or(0, |dv| dv.cardinality.max(0) as u64)
    }

    /// The share of its rows deleted; None without a deletion vector or a row count.
    pub fn deleted_ratio(&self) -> Option<f64> {
        let n = self.num_records.filter(|n| *n > 0)?;
        self.has_deletion_vector()
            .then(|| self.deleted_rows() as f64 / n as f64)
    }

    /// Whether its deleted rows alone make it a candidate (whatever its size, even alone).
    fn rewritten_for_deletes(&self, d: &DeletedRows) -> bool {
        self.has_deletion_vector()
            && (d.purge || self.deleted_ratio().is_some_and(|r| r > d.max_ratio))
    }
}

/// What a plan does with files whose deletion vectors mark rows deleted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeletedRows {
    /// A file with a larger share of its rows deleted is rewritten whatever its size (Delta's
    /// `spark.databricks.delta.optimize.maxDeletedRowsRatio`, 0.05 by default).
    pub max_ratio: f64,
    /// Every file with a deletion vector is rewritten (Delta's `REORG TABLE ... APPLY (PURGE)`).
    pub purge: bool,
}

impl Default for DeletedRows {
    fn default() -> Self {
        Self {
            max_ratio: DEFAULT_MAX_DELETED_RATIO,
            purge: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    pub files: Vec<FileRef>,
    pub bytes: u64,
    /// Predicted output files (sizes are a prediction: they depend on compression).
    pub predicted_outputs: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionPlan {
    pub values: PartitionValues,
    pub files_before: u64,
    pub bytes_before: u64,
    pub bins: Vec<Bin>,
    pub files_in: u64,
    pub bytes_in: u64,
    pub predicted_files_out: u64,
    pub predicted_files_after: u64,
    pub histogram_before: Histogram,
    pub predicted_histogram_after: Histogram,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionPlan {
    pub table_version: u64,
    pub target_file_size: u64,
    pub min_file_size: u64,
    /// Output/input bytes assumed for predictions (from past OPTIMIZE commits, else 1.0).
    pub compression_ratio: f64,
    pub partitions: Vec<PartitionPlan>,
    pub files_in: u64,
    pub bytes_in: u64,
    pub predicted_files_out: u64,
    pub bins: u64,
    /// Files of the plan with a deletion vector (their deleted rows are left out of the outputs).
    pub deletion_vector_files: u64,
    /// Rows those deletion vectors mark deleted: the outputs hold that many rows fewer.
    pub deleted_rows: u64,
    /// Files rewritten because of their deleted rows alone (over the ratio, or purged).
    pub files_rewritten_for_deletes: u64,
    /// How the table's features shape the compaction (set by the job from the table).
    pub notes: Vec<FeatureNote>,
    /// Its requests, bytes and price at the store's rates (set by the job: `price`).
    pub estimate: Cost,
    /// The order its bins write rows in (set by the job); None: as read.
    pub order: Option<PlannedOrder>,
}

#[derive(Debug, Clone)]
pub enum Selection {
    All,
    /// Partitions by their typed values (the TUI's marks, a replan after a conflict).
    Partitions(Vec<PartitionValues>),
    /// Partitions by label (`col=value/...`, as `PartitionValues::label` prints them), as typed
    /// on a command line; `resolve` turns them into values and refuses an ambiguous label.
    Labels(Vec<String>),
    Predicate(Predicate),
}

/// A SQL string literal.
fn sql_str(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// A SQL identifier, quoted when it is not a plain name.
fn sql_ident(c: &str) -> String {
    let plain = c
        .chars()
        .next()
        .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_')
        && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    if plain {
        c.to_string()
    } else {
        format!("`{}`", c.replace('`', "``"))
    }
}

/// `a = '1' AND b IS NULL` for one partition.
pub fn partition_sql(values: &PartitionValues) -> String {
    values
        .0
        .iter()
        .map(|(c, v)| match v {
            Some(v) => format!("{} = {}", sql_ident(c), sql_str(v)),
            None => format!("{} IS NULL", sql_ident(c)),
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

impl Selection {
    pub fn includes(&self, values: &PartitionValues) -> bool {
        match self {
            Selection::All => true,
            Selection::Partitions(p) => p.contains(values),
            Selection::Labels(l) => l.contains(&values.label()),
            Selection::Predicate(p) => p.matches(&values.0),
        }
    }

    /// Labels resolved against the table's partitions (a label shared by two partitions, NULL
    /// and the string "null", is an error). A label or a predicate that matches no partition
    /// of the table is an error that lists the partitions there are: a typo (`2026-11-30` for
    /// `ingestion_date=2026-11-30`) must not pass for "nothing to compact".
    pub fn resolve(self, partitions: &[PartitionValues]) -> Result<Selection, SelectionError> {
        match self {
            Selection::Labels(labels) => resolve_labels(&labels, partitions),
            Selection::Predicate(p) if !partitions.iter().any(|v| p.matches(&v.0)) => Err(
                SelectionError::NoMatch(no_match(&format!("--where {:?}", p.text), partitions)),
            ),
            other => Ok(other),
        }
    }

    /// The selection as a SQL predicate, for the OPTIMIZE commit's `predicate`: the parsed
    /// `--where` as the SQL parser renders it, or one condition per partition. Labels have no
    /// faithful SQL (NULL and 'null' print alike): `resolve` them first; unresolved they give
    /// None.
    pub fn describe(&self) -> Option<String> {
        let any = |parts: Vec<String>| {
            if parts.len() == 1 {
                parts.into_iter().next()
            } else {
                Some(
                    parts
                        .iter()
                        .map(|p| format!("({p})"))
                        .collect::<Vec<_>>()
                        .join(" OR "),
                )
            }
        };
        match self {
            Selection::All => None,
            Selection::Partitions(p) if p.is_empty() => None,
            Selection::Partitions(p) => any(p.iter().map(partition_sql).collect()),
            Selection::Labels(_) => None,
            Selection::Predicate(p) => Some(p.text.clone()),
        }
    }
}

/// Why a selection does not name partitions of the table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// A label or a predicate that matches no partition: the text lists the partitions there
    /// are (see `no_match`).
    #[error("{0}")]
    NoMatch(String),
    /// A label two partitions print as (a NULL value and the string "null").
    #[error(
        "--partition {label:?} matches {count} partitions (a NULL value and the string \"null\" print alike); select with --where instead, e.g. {sql}"
    )]
    Ambiguous {
        label: String,
        count: usize,
        /// Each partition's condition, " / " between them.
        sql: String,
    },
}

fn resolve_labels(
    labels: &[String],
    partitions: &[PartitionValues],
) -> Result<Selection, SelectionError> {
    let mut out = Vec::new();
    for l in labels {
        let matching: Vec<&PartitionValues> =
            partitions.iter().filter(|p| &p.label() == l).collect();
        if matching.is_empty() {
            return Err(SelectionError::NoMatch(no_match(
                &format!("--partition {l:?}"),
                partitions,
            )));
        }
        if matching.len() > 1 {
            return Err(SelectionError::Ambiguous {
                label: l.clone(),
                count: matching.len(),
                sql: matching
                    .iter()
                    .map(|p| partition_sql(p))
                    .collect::<Vec<_>>()
                    .join(" / "),
            });
        }
        out.extend(matching.into_iter().cloned());
    }
    Ok(Selection::Partitions(out))
}

/// Partitions named in a "matches nothing" error.
const LISTED_PARTITIONS: usize = 10;

/// "`what` matches none of the table's partitions", with the partitions there are (the
/// first few, as `report` labels them) and the one a bare value probably meant.
fn no_match(what: &str, partitions: &[PartitionValues]) -> String {
    if partitions.is_empty() {
        return format!("{what} matches no partition: the table has no data files");
    }
    if partitions.iter().all(|p| p.0.is_empty()) {
        return format!(
            "{what} matches no partition: the table is unpartitioned (compact it without --where or --partition)"
        );
    }
    let mut labels: Vec<String> = partitions.iter().map(|p| p.label()).collect();
    labels.sort();
    labels.dedup();
    let mut text = format!(
        "{what} matches none of the table's {} partitions: {}",
        labels.len(),
        labels
            .iter()
            .take(LISTED_PARTITIONS)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    if labels.len() > LISTED_PARTITIONS {
        text.push_str(&format!(
            ", ... ({} more; `lakehealth report` lists them all)",
            labels.len() - LISTED_PARTITIONS
        ));
    }
    // A bare value typed for a label: `2026-11-30` for `ingestion_date=2026-11-30`.
    let bare = what
        .strip_prefix("--partition \"")
        .and_then(|w| w.strip_suffix('"'));
    if let Some(bare) = bare
        && let Some(meant) = labels.iter().find(|l| {
            l.split('/')
                .any(|kv| kv.split_once('=').is_some_and(|(_, v)| v == bare))
        })
    {
        text.push_str(&format!("; did you mean --partition {meant}?"));
    }
    text
}

#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    pub target_file_size: u64,
    pub min_file_size: u64,
    /// Output bytes per input byte, for predictions.
    pub compression_ratio: f64,
    /// Input bytes per bin at most (each bin is committed on its own).
    pub max_bin_bytes: u64,
    /// Which small files are merged now.
    pub strategy: Strategy,
    /// Which files are rewritten for their deleted rows.
    pub deleted_rows: DeletedRows,
}

/// Which of a partition's small files a plan merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Strategy {
    /// Every small file, as Delta's OPTIMIZE does (`lakehealth compact`).
    #[default]
    BinPack,
    /// Only tiers that are due (`tiers`): a byte is rewritten a bounded number of times (the
    /// janitor's default); lower tiers merge early so that fewer than `keep_below` small files
    /// stay (the policy's threshold).
    Tiered { fanout: u32, keep_below: u64 },
    /// Every file of the partition, whatever its size, in one bin (sorted or z-ordered as a
    /// whole: `ordering`), as Delta's `OPTIMIZE ... ZORDER BY` does. A partition of one file
    /// is rewritten only when it makes more than one output.
    WholePartition,
}

/// Predicted output file sizes of `input` bytes: equal shares, each at least the target
/// (unless the whole partition is smaller), as the executor rolls files.
pub fn predicted_output_sizes(input: u64, ratio: f64, target: u64) -> Vec<u64> {
    let out = (input as f64 * ratio).round() as u64;
    let n = predicted_output_count(input, ratio, target);
    let each = out / n;
    let mut v = vec![each; n as usize];
    if let Some(last) = v.last_mut() {
        *last += out - each * n;
    }
    v
}

/// How many files `predicted_output_sizes` predicts, without listing them.
pub fn predicted_output_count(input: u64, ratio: f64, target: u64) -> u64 {
    let out = (input as f64 * ratio).round() as u64;
    (out / target.max(1)).max(1)
}

/// Packs candidates into bins of about `max_bin_bytes`: a bin closes only once it predicts at
/// least two targets of output, and a tail that predicts less than that, or holds less than
/// half a bin of input (the ratio is a prediction), joins the previous bin. So a partition is
/// never split into bins whose outputs are each below the target when together they are not.
fn pack(mut files: Vec<FileRef>, o: &PlanOptions) -> Vec<Bin> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let two_targets = 2.0 * o.target_file_size as f64;
    let mut bins: Vec<Vec<FileRef>> = Vec::new();
    let mut cur: Vec<FileRef> = Vec::new();
    let mut cur_bytes = 0;
    for f in files {
        if !cur.is_empty()
            && cur_bytes + f.size > o.max_bin_bytes
            && cur_bytes as f64 * o.compression_ratio >= two_targets
        {
            bins.push(std::mem::take(&mut cur));
            cur_bytes = 0;
        }
        cur_bytes += f.size;
        cur.push(f);
    }
    if !cur.is_empty() {
        let tail_out = cur_bytes as f64 * o.compression_ratio;
        match bins.last_mut() {
            Some(prev) if tail_out < two_targets || cur_bytes < o.max_bin_bytes / 2 => {
                prev.extend(cur)
            }
            _ => bins.push(cur),
        }
    }
    bins.into_iter()
        .filter(|b| b.len() > 1 || b.iter().any(|f| f.rewritten_for_deletes(&o.deleted_rows)))
        .map(|files| {
            let bytes = files.iter().map(|f| f.size).sum();
            Bin {
                predicted_outputs: predicted_output_count(
                    bytes,
                    o.compression_ratio,
                    o.target_file_size,
                ),
                files,
                bytes,
            }
        })
        .collect()
}

pub fn plan(
    table_version: u64,
    partitions: Vec<(PartitionValues, Vec<FileRef>)>,
    selection: &Selection,
    o: &PlanOptions,
    thresholds: &Thresholds,
) -> CompactionPlan {
    let mut out: Vec<PartitionPlan> = partitions
        .into_iter()
        .filter(|(values, _)| selection.includes(values))
        .filter_map(|(values, files)| plan_partition(values, &files, o, thresholds))
        .collect();
    out.sort_by(|a, b| a.values.0.cmp(&b.values.0));
    let planned = || {
        out.iter()
            .flat_map(|p| p.bins.iter().flat_map(|b| b.files.iter()))
    };
    let deletion_vector_files = planned().filter(|f| f.has_deletion_vector()).count() as u64;
    let deleted_rows = planned().map(FileRef::deleted_rows).sum();
    let files_rewritten_for_deletes = planned()
        .filter(|f| f.size >= o.min_file_size && f.rewritten_for_deletes(&o.deleted_rows))
        .count() as u64;
    let mut plan = CompactionPlan {
        table_version,
        target_file_size: o.target_file_size,
        min_file_size: o.min_file_size,
        compression_ratio: o.compression_ratio,
        files_in: out.iter().map(|p| p.files_in).sum(),
        bytes_in: out.iter().map(|p| p.bytes_in).sum(),
        predicted_files_out: out.iter().map(|p| p.predicted_files_out).sum(),
        bins: out.iter().map(|p| p.bins.len() as u64).sum(),
        partitions: out,
        deletion_vector_files,
        deleted_rows,
        files_rewritten_for_deletes,
        notes: Vec::new(),
        estimate: Cost::default(),
        order: None,
    };
    // Priced by the job, at its store's rates.
    plan.estimate.requests = super::price::estimate(&plan);
    plan
}

/// One partition's bins and the histogram predicted after them; None when it has no bin.
fn plan_partition(
    values: PartitionValues,
    files: &[FileRef],
    o: &PlanOptions,
    thresholds: &Thresholds,
) -> Option<PartitionPlan> {
    let edges = thresholds.edges();
    let mut before: Vec<u64> = files.iter().map(|f| f.size).collect();
    let histogram_before = SizeStats::from_sizes(&mut before, thresholds, &edges).histogram;
    let candidates: Vec<FileRef> = files
        .iter()
        .filter(|f| {
            o.strategy == Strategy::WholePartition
                || f.size < o.min_file_size
                || f.rewritten_for_deletes(&o.deleted_rows)
        })
        .cloned()
        .collect();
    let bins = bins_of(candidates, o);
    if bins.is_empty() {
        return None;
    }
    let rewritten: std::collections::HashSet<&str> = bins
        .iter()
        .flat_map(|b| b.files.iter().map(|f| f.path.as_str()))
        .collect();
    let mut after: Vec<u64> = files
        .iter()
        .filter(|f| !rewritten.contains(f.path.as_str()))
        .map(|f| f.size)
        .collect();
    for b in &bins {
        after.extend(predicted_output_sizes(
            b.bytes,
            o.compression_ratio,
            o.target_file_size,
        ));
    }
    let files_in: u64 = bins.iter().map(|b| b.files.len() as u64).sum();
    let bytes_in = bins.iter().map(|b| b.bytes).sum();
    let predicted_files_out = bins.iter().map(|b| b.predicted_outputs).sum();
    let predicted_files_after = after.len() as u64;
    let predicted_histogram_after = SizeStats::from_sizes(&mut after, thresholds, &edges).histogram;
    Some(PartitionPlan {
        files_before: files.len() as u64,
        bytes_before: files.iter().map(|f| f.size).sum(),
        values,
        bins,
        files_in,
        bytes_in,
        predicted_files_out,
        predicted_files_after,
        histogram_before,
        predicted_histogram_after,
    })
}

/// The candidates packed into bins as the strategy says.
fn bins_of(candidates: Vec<FileRef>, o: &PlanOptions) -> Vec<Bin> {
    match o.strategy {
        Strategy::BinPack => pack(candidates, o),
        Strategy::Tiered { fanout, keep_below } => {
            // Files rewritten for their deleted rows go whether or not their tier is due.
            let (for_deletes, by_size): (Vec<FileRef>, Vec<FileRef>) = candidates
                .into_iter()
                .partition(|f| f.rewritten_for_deletes(&o.deleted_rows));
            let mut bins: Vec<Bin> = due_groups(by_size, fanout, o.target_file_size, keep_below)
                .into_iter()
                .flat_map(|group| pack(group, o))
                .collect();
            bins.extend(pack(for_deletes, o));
            bins
        }
        Strategy::WholePartition => whole(candidates, o).into_iter().collect(),
    }
}

/// The partition's files as one bin, unless it is one file that would stay one file.
fn whole(mut files: Vec<FileRef>, o: &PlanOptions) -> Option<Bin> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let bytes = files.iter().map(|f| f.size).sum();
    let predicted_outputs = predicted_output_count(bytes, o.compression_ratio, o.target_file_size);
    if files.is_empty() || (files.len() == 1 && predicted_outputs < 2) {
        return None;
    }
    Some(Bin {
        files,
        bytes,
        predicted_outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::{GIB, MIB};

    fn t() -> Thresholds {
        Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        }
    }

    fn o() -> PlanOptions {
        PlanOptions {
            target_file_size: 128 * MIB,
            min_file_size: 128 * MIB,
            compression_ratio: 1.0,
            max_bin_bytes: 1024 * MIB,
            strategy: Strategy::BinPack,
            deleted_rows: DeletedRows::default(),
        }
    }

    fn files(prefix: &str, sizes: &[u64]) -> Vec<FileRef> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| FileRef {
                path: format!("{prefix}/f{i:05}"),
                store_path: format!("{prefix}/f{i:05}"),
                size,
                deletion_vector: None,
                num_records: Some(100),
                tier: 0,
                row_ids: Default::default(),
            })
            .collect()
    }

    fn pv(v: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(v.into()))])
    }

    #[test]
    fn healthy_files_are_never_candidates() {
        let mut f = files("d=1", &[MIB; 300]);
        f.extend(files("d=1/big", &[200 * MIB, 500 * MIB]));
        let p = plan(7, vec![(pv("1"), f)], &Selection::All, &o(), &t());
        assert_eq!(p.files_in, 300);
        assert_eq!(p.bytes_in, 300 * MIB);
        assert!(
            p.partitions[0]
                .bins
                .iter()
                .all(|b| b.files.iter().all(|f| f.size < 128 * MIB))
        );
        // 300 MiB -> 2 outputs of 150 MiB, plus the 2 big files untouched.
        assert_eq!(p.predicted_files_out, 2);
        assert_eq!(p.partitions[0].predicted_files_after, 4);
        let small_after: u64 = p.partitions[0]
            .predicted_histogram_after
            .buckets
            .iter()
            .filter(|b| b.band == crate::stats::histogram::Band::Small)
            .map(|b| b.files)
            .sum();
        assert_eq!(small_after, 0, "outputs land in the target band");
    }

    #[test]
    fn rerun_on_compacted_partition_plans_nothing() {
        let f = files("d=1", &[150 * MIB, 150 * MIB, 140 * MIB]);
        let p = plan(1, vec![(pv("1"), f)], &Selection::All, &o(), &t());
        assert!(p.partitions.is_empty());
        assert_eq!(p.files_in, 0);
    }

    #[test]
    fn bins_respect_the_cap_and_absorb_a_small_tail() {
        let mut opts = o();
        opts.max_bin_bytes = 256 * MIB;
        // 600 x 1 MiB: bins of 256, 256 and a tail of 88 MiB (< target) merged into the second.
        let p = plan(
            1,
            vec![(pv("1"), files("d=1", &[MIB; 600]))],
            &Selection::All,
            &opts,
            &t(),
        );
        let bins: Vec<u64> = p.partitions[0].bins.iter().map(|b| b.bytes / MIB).collect();
        assert_eq!(bins, vec![256, 344]);
        assert_eq!(p.files_in, 600);
    }

    #[test]
    fn single_small_files_and_unselected_partitions_are_left_alone() {
        let parts = vec![
            (pv("1"), files("d=1", &[MIB])),
            (pv("2"), files("d=2", &[MIB, MIB])),
            (pv("3"), files("d=3", &[MIB, MIB])),
        ];
        let sel = Selection::Labels(vec!["d=2".into()]);
        let p = plan(1, parts, &sel, &o(), &t());
        assert_eq!(p.partitions.len(), 1);
        assert_eq!(p.partitions[0].values.label(), "d=2");
        assert_eq!(p.partitions[0].predicted_files_out, 1);
    }

    fn with_dv(mut f: FileRef, deleted: i64) -> FileRef {
        f.deletion_vector = Some(DeletionVectorDescriptor {
            storage_type: deltalake::kernel::StorageType::Inline,
            path_or_inline_dv: "x".into(),
            offset: None,
            size_in_bytes: 1,
            cardinality: deleted,
        });
        f
    }

    #[test]
    fn small_files_with_deletion_vectors_are_candidates_and_their_deleted_rows_counted() {
        let mut f = files("d=1", &[MIB, MIB, MIB]);
        f[0] = with_dv(f[0].clone(), 3);
        let p = plan(1, vec![(pv("1"), f)], &Selection::All, &o(), &t());
        assert_eq!(p.files_in, 3);
        assert_eq!(p.deletion_vector_files, 1);
        assert_eq!(p.deleted_rows, 3);
        assert_eq!(p.files_rewritten_for_deletes, 0);
    }

    #[test]
    fn a_large_file_over_the_deleted_ratio_is_rewritten_even_alone() {
        // 200 MiB files (above the 128 MiB small size), 100 rows each.
        let f = files("d=1", &[200 * MIB, 200 * MIB, 200 * MIB]);
        let over = with_dv(f[0].clone(), 6); // 6 % > 5 %
        let at = with_dv(f[1].clone(), 5); // 5 %: not over
        let p = plan(
            1,
            vec![(pv("1"), vec![over.clone(), at.clone(), f[2].clone()])],
            &Selection::All,
            &o(),
            &t(),
        );
        assert_eq!(p.files_in, 1, "{p:?}");
        assert_eq!(p.partitions[0].bins[0].files[0].path, over.path);
        assert_eq!(p.files_rewritten_for_deletes, 1);
        let mut strict = o();
        strict.deleted_rows.max_ratio = 0.01;
        let p = plan(
            1,
            vec![(pv("1"), vec![over.clone(), at.clone(), f[2].clone()])],
            &Selection::All,
            &strict,
            &t(),
        );
        assert_eq!(p.files_in, 2, "both over 1 %: {p:?}");
        assert_eq!(p.deleted_rows, 11);
    }

    #[test]
    fn purge_rewrites_every_file_with_a_deletion_vector_in_the_selection_only() {
        let f = files("d=1", &[200 * MIB, 200 * MIB]);
        let one = with_dv(f[0].clone(), 1);
        let g = files("d=2", &[200 * MIB]);
        let other = with_dv(g[0].clone(), 1);
        let parts = || {
            vec![
                (pv("1"), vec![one.clone(), f[1].clone()]),
                (pv("2"), vec![other.clone()]),
            ]
        };
        assert_eq!(plan(1, parts(), &Selection::All, &o(), &t()).files_in, 0);
        let mut purge = o();
        purge.deleted_rows.purge = true;
        let sel = Selection::Labels(vec!["d=1".into()]);
        let p = plan(1, parts(), &sel, &purge, &t());
        assert_eq!(p.files_in, 1);
        assert_eq!(p.partitions[0].bins[0].files[0].path, one.path);
        assert_eq!(p.files_rewritten_for_deletes, 1);
    }

    #[test]
    fn tiered_plans_rewrite_files_over_the_ratio_even_when_no_tier_is_due() {
        let f = files("d=1", &[MIB, MIB]);
        let over = with_dv(f[0].clone(), 50);
        let mut tiered = o();
        tiered.strategy = Strategy::Tiered {
            fanout: 10,
            keep_below: 50,
        };
        let p = plan(
            1,
            vec![(pv("1"), vec![over.clone(), f[1].clone()])],
            &Selection::All,
            &tiered,
            &t(),
        );
        assert_eq!(p.files_in, 1, "{p:?}");
        assert_eq!(p.partitions[0].bins[0].files[0].path, over.path);
    }

    #[test]
    fn a_lone_small_file_with_few_deleted_rows_is_left_alone() {
        let f = with_dv(files("d=1", &[MIB])[0].clone(), 1);
        let p = plan(1, vec![(pv("1"), vec![f])], &Selection::All, &o(), &t());
        assert_eq!(p.files_in, 0);
    }

    #[test]
    fn output_shares_are_at_least_the_target() {
        let v = predicted_output_sizes(300 * MIB, 1.0, 128 * MIB);
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|&s| s >= 128 * MIB));
        assert_eq!(v.iter().sum::<u64>(), 300 * MIB);
        assert_eq!(
            predicted_output_sizes(10 * MIB, 0.5, 128 * MIB),
            vec![5 * MIB]
        );
    }

    #[test]
    fn null_and_the_string_null_are_different_partitions() {
        let null = PartitionValues(vec![("d".into(), None)]);
        let s = pv("null");
        let sel = Selection::Partitions(vec![null.clone()]);
        assert!(sel.includes(&null));
        assert!(!sel.includes(&s));
        let amb = Selection::Labels(vec!["d=null".into()]).resolve(&[null.clone(), s.clone()]);
        assert!(amb.unwrap_err().to_string().contains("d IS NULL"));
        let one = Selection::Labels(vec!["d=null".into()]).resolve(std::slice::from_ref(&s));
        assert!(matches!(one, Ok(Selection::Partitions(v)) if v == vec![s]));
    }

    #[test]
    fn a_selection_that_matches_nothing_lists_the_partitions() {
        let parts = [pv("2026-11-29"), pv("2026-11-30")];
        let e = Selection::Labels(vec!["2026-11-30".into()])
            .resolve(&parts)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--partition \"2026-11-30\" matches none of the table's 2 partitions: d=2026-11-29, d=2026-11-30"),
            "{e}"
        );
        assert!(e.contains("did you mean --partition d=2026-11-30?"), "{e}");
        let p =
            super::super::selection::Predicate::parse("d = '2026-12-01'", &["d".into()]).unwrap();
        let e = Selection::Predicate(p)
            .resolve(&parts)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--where \"d = '2026-12-01'\" matches none"),
            "{e}"
        );
        let p =
            super::super::selection::Predicate::parse("d >= '2026-11-30'", &["d".into()]).unwrap();
        assert!(Selection::Predicate(p).resolve(&parts).is_ok());
        let many: Vec<PartitionValues> = (0..25).map(|i| pv(&format!("{i:02}"))).collect();
        let e = Selection::Labels(vec!["x".into()])
            .resolve(&many)
            .unwrap_err()
            .to_string();
        assert!(e.contains("15 more"), "{e}");
    }

    #[test]
    fn the_commit_predicate_is_sql() {
        let a = PartitionValues(vec![
            ("d".into(), Some("it's".into())),
            ("my col".into(), None),
        ]);
        let sel = Selection::Partitions(vec![a, pv("2")]);
        assert_eq!(
            sel.describe().unwrap(),
            "(d = 'it''s' AND `my col` IS NULL) OR (d = '2')"
        );
        let cols = vec!["d".to_string(), "my col".to_string()];
        let p = Predicate::parse("d in ('1','2') or `my col` is null", &cols).unwrap();
        assert_eq!(
            Selection::Predicate(p).describe().unwrap(),
            "d IN ('1', '2') OR `my col` IS NULL"
        );
        assert_eq!(Selection::Labels(vec!["d=1".into()]).describe(), None);
    }

    #[test]
    fn an_ordered_plan_takes_every_file_of_a_partition_into_one_bin() {
        let o = PlanOptions {
            strategy: Strategy::WholePartition,
            max_bin_bytes: 256 * MIB,
            ..o()
        };
        // Healthy files too, and more than one bin's worth: one bin, sorted as a whole.
        let mut f = files("d=1", &[MIB; 300]);
        f.extend(files("d=1/big", &[200 * MIB, 500 * MIB]));
        let one_small = files("d=2", &[MIB]);
        let one_large = files("d=3", &[GIB]);
        let p = plan(
            7,
            vec![(pv("1"), f), (pv("2"), one_small), (pv("3"), one_large)],
            &Selection::All,
            &o,
            &t(),
        );
        let parts: Vec<&PartitionValues> = p.partitions.iter().map(|p| &p.values).collect();
        assert_eq!(parts, vec![&pv("1"), &pv("3")], "a lone small file stays");
        assert_eq!(p.partitions[0].bins.len(), 1);
        assert_eq!(p.partitions[0].files_in, 302);
        assert_eq!(p.partitions[1].bins[0].predicted_outputs, 8);
    }
}
