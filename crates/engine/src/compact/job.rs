//! A compaction job from request to summary: open the table, plan, wait for its partitions to
//! be free, execute on a runtime of its own (so it cannot starve a streaming writer or the UI).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parquet::basic::Compression;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::budget::{Brakes, Throttle};
use super::events::{FailureKind, JobEvent, JobSummary};
use super::execute::execute_bins;
use super::executor::ExecOptions;
use super::locks::{PartitionLocks, key};
use super::ordering::sorter::{DEFAULT_SORT_MEMORY, MIN_SORT_MEMORY};
use super::ordering::what_if::what_if;
use super::ordering::{LayoutRequest, PlannedOrder, plan_order};
use super::plan::{CompactionPlan, DeletedRows, PlanOptions, Selection, Strategy, plan};
use super::rewrite::RewriteOptions;
use super::table::{CompactionTable, open_for_compaction};
use crate::delta::features::FeatureNote;
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::cost::{Cost, Rates, Requests};
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::size::format_bytes;
use crate::stats::skipping::SkippingHealth;
use crate::stats::skipping::columns::AddColumns;

#[derive(Clone)]
pub struct CompactRequest {
    pub selection: Selection,
    /// Output size to aim for; None: the table's delta.targetFileSize, else the config's.
    pub target_file_size: Option<u64>,
    /// Files at or above it are left alone; None: the small-file threshold.
    pub min_file_size: Option<u64>,
    pub parallelism: usize,
    /// Input bytes per bin (one commit each); None: 8 x target, at least 512 MiB.
    pub max_bin_bytes: Option<u64>,
    /// Which small files are merged: all of them (`compact`), or due tiers (the janitor).
    pub strategy: Strategy,
    /// Which files are rewritten for their deleted rows (ratio, purge).
    pub deleted_rows: DeletedRows,
    /// The order rows are written in (a clustered table's clustering by default).
    pub layout: LayoutRequest,
    /// Bytes a bin's sort holds before it spills; None: `DEFAULT_SORT_MEMORY`.
    pub sort_memory: Option<usize>,
    pub storage_options: HashMap<String, String>,
}

/// Secret storage options never show, even in a debug print.
impl std::fmt::Debug for CompactRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactRequest")
            .field("selection", &self.selection)
            .field("target_file_size", &self.target_file_size)
            .field("min_file_size", &self.min_file_size)
            .field("parallelism", &self.parallelism)
            .field("max_bin_bytes", &self.max_bin_bytes)
            .field("strategy", &self.strategy)
            .field("deleted_rows", &self.deleted_rows)
            .field("layout", &self.layout)
            .field("sort_memory", &self.sort_memory)
            .field(
                "storage_options",
                &crate::secrets::redacted_options(&self.storage_options),
            )
            .finish()
    }
}

impl CompactRequest {
    /// The TUI's request: these partitions, every size from the table or the config.
    pub fn for_partitions(
        partitions: Vec<PartitionValues>,
        storage_options: HashMap<String, String>,
    ) -> Self {
        Self {
            selection: Selection::Partitions(partitions),
            target_file_size: None,
            min_file_size: None,
            parallelism: 1,
            max_bin_bytes: None,
            strategy: Strategy::BinPack,
            deleted_rows: DeletedRows::default(),
            layout: LayoutRequest::Auto,
            sort_memory: None,
            storage_options,
        }
    }
}

pub struct PreparedJob {
    pub table: CompactionTable,
    pub plan: CompactionPlan,
    pub exec: ExecOptions,
    /// The budget applied (`set_throttle`) and why; None: the request's parallelism, unbounded.
    pub throttle: Option<Throttle>,
    selection: Selection,
    /// What the store charges (`set_rates`; by default, by its scheme).
    rates: Rates,
    /// The store's request counters when the plan was made: the job's actuals start there.
    requests_at_plan: Requests,
}

impl PreparedJob {
    /// Applies a throttle (`janitor::throttle`): its budget, kept with why it was chosen.
    pub fn set_throttle(&mut self, t: Throttle) {
        self.set_budget(t.budget);
        self.throttle = Some(t);
    }

    /// Prices the plan (and later the job's actuals) at `rates`, a store's configured prices.
    pub fn set_rates(&mut self, rates: Rates) {
        self.rates = rates;
        self.plan.estimate = rates.cost(self.plan.estimate.requests);
    }

    /// What the job made against the store since its plan, priced.
    fn actual(&self) -> Cost {
        self.rates
            .cost(self.table.requests.requests().since(self.requests_at_plan))
    }

    /// What holds the job back, for lifting it while it runs (`Brakes::lift`).
    pub fn brakes(&self) -> Brakes {
        Brakes {
            pace: self.exec.rewrite.pace.clone(),
            spacing: self.exec.commit_spacing.clone(),
        }
    }

    /// Applies a budget: bins at once, and the read rate.
    fn set_budget(&mut self, b: super::budget::Budget) {
        self.exec.parallelism = super::budget::bounded_parallelism(b.parallelism);
        self.exec.background = b.background;
        self.exec.commit_spacing = b
            .commit_spacing_ms
            .map(|ms| Arc::new(super::spacing::CommitSpacer::new(Duration::from_millis(ms))));
        self.exec.rewrite.pace = b
            .read_bytes_per_second
            .map(|r| Arc::new(super::pace::Pacer::new(r)));
        self.exec.writer_rhythm_ms = b.writer_rhythm_ms;
    }

    /// Re-reads the table and, when it moved since the plan was made, plans again: a plan older
    /// than the table (a preview left open, a queued job whose partitions another job just
    /// compacted) never runs as is. Returns whether it planned again.
    pub async fn replan_if_stale(&mut self) -> Result<bool> {
        self.table
            .table
            .update_incremental(None)
            .await
            .map_err(|e| {
                EngineError::from_delta(&self.table.uri, "reading the latest version", e)
            })?;
        if self.table.version() == self.plan.table_version {
            return Ok(false);
        }
        let files = self.table.partition_files()?;
        // The order and the notes the job was prepared with still hold (the rewrite options
        // carry the order).
        let (order, notes) = (self.plan.order.take(), std::mem::take(&mut self.plan.notes));
        self.plan = plan(
            self.table.version(),
            files,
            &self.selection,
            &self.exec.plan_options,
            &self.exec.thresholds,
        );
        self.plan.notes = notes;
        self.plan.order = order;
        self.plan.estimate = self.rates.cost(self.plan.estimate.requests);
        Ok(true)
    }
}

/// Output/input bytes of past OPTIMIZE commits in `report`'s history, else 1.0.
pub fn observed_ratio(commits: &[crate::delta::log::state::CommitSummary]) -> f64 {
    let (added, removed) = commits
        .iter()
        .filter(|c| c.operation == "OPTIMIZE" && c.bytes_removed > 0 && c.bytes_added > 0)
        .fold((0u64, 0u64), |(a, r), c| {
            (a + c.bytes_added, r + c.bytes_removed)
        });
    if removed == 0 {
        1.0
    } else {
        (added as f64 / removed as f64).clamp(0.05, 5.0)
    }
}

pub async fn prepare(
    loc: &Location,
    req: &CompactRequest,
    thresholds: Thresholds,
    ratio: f64,
) -> Result<PreparedJob> {
    crate::root_links::refuse_links_leaving(loc, "compact")?;
    crate::sealed::keyring().map_err(EngineError::NoKey)?;
    let table = open_for_compaction(loc, &req.storage_options).await?;
    prepare_table(table, req, thresholds, ratio)
}

/// The smallest target any plan accepts (tests and tiny tables use KiB targets).
pub const MIN_TARGET_FILE_SIZE: u64 = crate::size::KIB;
/// The smallest `delta.targetFileSize` taken from a table: below it the property is a mistake.
pub const MIN_TABLE_TARGET_FILE_SIZE: u64 = crate::size::MIB;

/// Plans `req` on a table already opened for compaction.
pub fn prepare_table(
    table: CompactionTable,
    req: &CompactRequest,
    thresholds: Thresholds,
    ratio: f64,
) -> Result<PreparedJob> {
    let target = match req.target_file_size {
        Some(t) => t,
        None => match table.table_target_file_size()? {
            // A plan holds one predicted size per output: a target of a few bytes would
            // predict (and the executor write) millions of files.
            Some(t) if t < MIN_TABLE_TARGET_FILE_SIZE => {
                return Err(EngineError::InvalidRequest(format!(
                    "{}: the table property delta.targetFileSize is {t} bytes, below {}: that \
                     would write a file every few bytes. Pass --target (e.g. 128MiB)",
                    table.uri,
                    format_bytes(MIN_TABLE_TARGET_FILE_SIZE)
                )));
            }
            Some(t) => t,
            None => thresholds.target_file_size,
        },
    };
    if target < MIN_TARGET_FILE_SIZE {
        return Err(EngineError::InvalidRequest(format!(
            "the target file size must be at least {} (got {target} bytes)",
            format_bytes(MIN_TARGET_FILE_SIZE)
        )));
    }
    let min = req.min_file_size.unwrap_or(thresholds.small_file_size);
    if let Some(m) = req.sort_memory.filter(|m| *m < MIN_SORT_MEMORY) {
        return Err(EngineError::InvalidRequest(format!(
            "the sort memory must be at least {} (got {})",
            format_bytes(MIN_SORT_MEMORY as u64),
            format_bytes(m as u64)
        )));
    }
    let order = planned_order(&table, &req.layout)?;
    let strategy = match &order {
        Some(o) if o.whole_partitions => Strategy::WholePartition,
        _ => req.strategy,
    };
    let o = PlanOptions {
        target_file_size: target,
        min_file_size: min,
        compression_ratio: ratio,
        max_bin_bytes: req
            .max_bin_bytes
            .unwrap_or((8 * target).max(512 * 1024 * 1024)),
        strategy,
        deleted_rows: req.deleted_rows,
    };
    let t = Thresholds {
        target_file_size: target,
        ..thresholds
    };
    let files = table.partition_files()?;
    let values: Vec<PartitionValues> = files.iter().map(|(v, _)| v.clone()).collect();
    let selection = req
        .selection
        .clone()
        .resolve(&values)
        .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
    let mut plan = plan(table.version(), files, &selection, &o, &t);
    plan.notes = table.features.notes();
    if order.as_ref().is_some_and(|o| o.clustering) {
        plan.notes.retain(|n| *n != FeatureNote::NotReclustered);
    }
    if table.clustering.is_empty() {
        // CLUSTER BY NONE: nothing to keep.
        plan.notes.retain(|n| *n != FeatureNote::NotReclustered);
    }
    plan.order = order.clone().map(|mut o| {
        // The what-if of the largest bin, beside the depth in its partition now (lookups
        // prune partitions first).
        let largest = plan
            .partitions
            .iter()
            .flat_map(|p| {
                p.bins
                    .iter()
                    .map(move |b| (b.predicted_outputs, p.values.clone()))
            })
            .max_by_key(|(n, _)| *n);
        let (outputs, partition) = largest.unwrap_or((1, PartitionValues(Vec::new())));
        let now = depth_now(&table, &partition, &o.order.columns);
        o.what_if = what_if(&o.order, outputs, |c| now.get(c).copied());
        o.what_if_partition = (!partition.0.is_empty()).then_some(partition);
        o
    });
    let rates = Rates::default_for_scheme(&table.scheme);
    plan.estimate = rates.cost(plan.estimate.requests);
    let requests_at_plan = table.requests.requests();
    let exec = ExecOptions {
        rewrite: RewriteOptions {
            target_file_size: target,
            compression: Compression::SNAPPY,
            compression_ratio: ratio,
            pace: None,
            clustering_provider: order.as_ref().and_then(|o| o.clustering_provider()),
            order: order.map(|o| o.order),
            sort_memory: req.sort_memory.unwrap_or(DEFAULT_SORT_MEMORY),
            output_job: table.ledger.job().to_string(),
        },
        parallelism: super::budget::bounded_parallelism(req.parallelism),
        predicate: selection.describe(),
        plan_options: o,
        thresholds: t,
        executor: Default::default(),
        background: false,
        commit_spacing: None,
        writer_rhythm_ms: None,
        trigger: Default::default(),
    };
    Ok(PreparedJob {
        table,
        plan,
        exec,
        throttle: None,
        selection,
        rates,
        requests_at_plan,
    })
}

/// The mean overlap depth now of each of `columns` (the order's; no other column is measured)
/// in `partition` (the table's, unpartitioned), from the statistics of the snapshot the plan
/// was made from (empty when they cannot be read, or the partition is not among the worst the
/// measure keeps: the what-if then shows no "now").
fn depth_now(
    table: &CompactionTable,
    partition: &PartitionValues,
    columns: &[String],
) -> HashMap<String, f64> {
    let Ok(state) = table.table.snapshot() else {
        return HashMap::new();
    };
    let Ok(batches) = state.add_actions_batches(true) else {
        return HashMap::new();
    };
    let health = SkippingHealth::of_columns(
        state.version(),
        &AddColumns::new(batches),
        table.clustering.clone(),
        Some(columns),
    );
    if partition.0.is_empty() {
        return health
            .columns
            .into_iter()
            .map(|c| (c.column, c.depth.mean))
            .collect();
    }
    health
        .partitions
        .into_iter()
        .find(|p| p.partition == *partition)
        .map(|p| {
            p.columns
                .into_iter()
                .map(|c| (c.column, c.mean_depth))
                .collect()
        })
        .unwrap_or_default()
}

/// The order the request asks of the table, its columns checked against the table's.
fn planned_order(table: &CompactionTable, layout: &LayoutRequest) -> Result<Option<PlannedOrder>> {
    if *layout == LayoutRequest::Auto && table.clustering.is_empty() {
        return Ok(None);
    }
    let schema = super::schema::file_schema(&table.table).map_err(|e| {
        EngineError::InvalidRequest(format!("{}: reading the schema: {e}", table.uri))
    })?;
    plan_order(
        layout,
        &table.clustering,
        &table.partition_columns()?,
        &table.data_columns()?,
        &schema,
    )
    .map_err(|e| EngineError::InvalidRequest(format!("{}: {e}", table.uri)))
}

/// A summary for a job that ended before executing, and its final event.
fn ended_early(events: &mpsc::UnboundedSender<JobEvent>, summary: JobSummary) -> JobSummary {
    if summary.cancelled {
        let _ = events.send(JobEvent::Cancelled {
            orphaned_files: Vec::new(),
        });
    }
    let _ = events.send(JobEvent::Finished(summary.clone()));
    summary
}

/// Waits for the job's partitions, replans if the table moved, executes. Every path out of
/// here sends exactly one `Finished` event.
async fn run_locked(
    mut job: PreparedJob,
    locks: Arc<PartitionLocks>,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> JobSummary {
    let keys: Vec<_> = job
        .plan
        .partitions
        .iter()
        .map(|p| key(&job.table.uri, &p.values))
        .collect();
    let _guard = match locks.try_acquire(&keys) {
        Some(g) => g,
        None => tokio::select! {
            g = locks.acquire(&keys) => g,
            _ = cancel.cancelled() => {
                let s = JobSummary { cancelled: true, ..Default::default() };
                return ended_early(&events, s);
            }
        },
    };
    match job.replan_if_stale().await {
        Ok(false) => {}
        Ok(true) => {
            let _ = events.send(JobEvent::Replanned {
                bins: job.plan.bins,
                files: job.plan.files_in,
                bytes: job.plan.bytes_in,
            });
        }
        Err(e) => {
            let s = JobSummary {
                table_version_read: job.plan.table_version,
                ..JobSummary::failed(FailureKind::Read, e.to_string())
            };
            return ended_early(&events, s);
        }
    }
    let swept = super::job_ledger::sweep(&job.table.table, crate::clock::now_ms()).await;
    if !swept.deleted.is_empty() || !swept.refused.is_empty() {
        tracing::info!(
            "{}: swept {} uncommitted output(s) of {} killed job(s); refused {} ledger entr(ies)",
            job.table.uri,
            swept.deleted.len(),
            swept.dead_jobs.len(),
            swept.refused.len()
        );
    }
    let mut summary = execute_bins(&job.table, &job.plan, &job.exec, cancel, events.clone()).await;
    // Every output committed or deleted: nothing for a later sweep to settle.
    if summary.unknown_outcome_files.is_empty() && summary.orphaned_files.is_empty() {
        super::job_ledger::remove(&job.table.ledger).await;
    }
    summary.swept = Box::new(swept);
    summary.estimate = Some(Box::new(job.plan.estimate));
    summary.actual = Some(Box::new(job.actual()));
    let _ = events.send(JobEvent::Finished(summary.clone()));
    summary
}

/// Executes on a dedicated runtime with one worker thread per unit of parallelism: compaction
/// gets at most that many cores, the caller's runtime (UI, writer) keeps its own. The final
/// event is always sent, whatever happens (a runtime that cannot start included).
pub async fn run_isolated(
    job: PreparedJob,
    locks: Arc<PartitionLocks>,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> JobSummary {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let workers = job.exec.parallelism.max(1);
    let background = job.exec.background;
    let thread_events = events.clone();
    let spawned = std::thread::Builder::new()
        .name("lakehealth-compact".into())
        .spawn(move || {
            let lower = move || {
                if background && !super::priority::lower_this_thread() {
                    tracing::debug!("could not lower the compaction thread's priority");
                }
            };
            lower();
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("lakehealth-compact")
                .on_thread_start(lower)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let s = JobSummary::failed(
                        FailureKind::Setup,
                        format!("cannot start the compaction runtime: {e}"),
                    );
                    let _ = done_tx.send(ended_early(&thread_events, s));
                    return;
                }
            };
            let summary = rt.block_on(run_locked(job, locks, cancel, thread_events));
            let _ = done_tx.send(summary);
        });
    if let Err(e) = spawned {
        let s = JobSummary::failed(
            FailureKind::Setup,
            format!("cannot start the compaction thread: {e}"),
        );
        return ended_early(&events, s);
    }
    match done_rx.await {
        Ok(s) => s,
        Err(_) => {
            let s = JobSummary::failed(
                FailureKind::Panicked,
                "the compaction thread stopped unexpectedly".into(),
            );
            ended_early(&events, s)
        }
    }
}
