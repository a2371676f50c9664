//! A compaction job from request to summary: open the table, plan, wait for its partitions to
//! be free, execute on a runtime of its own (so it cannot starve a streaming writer or the UI).

use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::Compression;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{JobEvent, JobSummary};
use super::execute::{ExecOptions, execute};
use super::locks::{PartitionLocks, key};
use super::plan::{CompactionPlan, PlanOptions, Selection, plan};
use super::table::{CompactionTable, open_for_compaction};
use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;
use crate::engine::stats::file_sizes::Thresholds;

#[derive(Debug, Clone)]
pub struct CompactRequest {
    pub selection: Selection,
    /// Output size to aim for; None: the table's delta.targetFileSize, else the config's.
    pub target_file_size: Option<u64>,
    /// Files at or above it are left alone; None: the small-file threshold.
    pub min_file_size: Option<u64>,
    pub parallelism: usize,
    /// Input bytes per bin (one commit each); None: 8 x target, at least 512 MiB.
    pub max_bin_bytes: Option<u64>,
    pub storage_options: HashMap<String, String>,
}

impl CompactRequest {
    /// The TUI's request: these partitions, every size from the table or the config.
    pub fn for_partitions(labels: Vec<String>, storage_options: HashMap<String, String>) -> Self {
        Self {
            selection: Selection::Labels(labels),
            target_file_size: None,
            min_file_size: None,
            parallelism: 1,
            max_bin_bytes: None,
            storage_options,
        }
    }
}

pub struct PreparedJob {
    pub table: CompactionTable,
    pub plan: CompactionPlan,
    pub exec: ExecOptions,
    selection: Selection,
    plan_options: PlanOptions,
    thresholds: Thresholds,
}

impl PreparedJob {
    /// Re-reads the table and plans again (a queued job whose partitions another job just
    /// compacted would otherwise conflict on files that are gone).
    pub async fn replan(&mut self) -> Result<()> {
        self.table
            .table
            .update_incremental(None)
            .await
            .map_err(|e| EngineError::Other(format!("{}: {e}", self.table.uri)))?;
        let files = self.table.partition_files()?;
        self.plan = plan(
            self.table.version(),
            files,
            &self.selection,
            &self.plan_options,
            &self.thresholds,
        );
        Ok(())
    }
}

/// Output/input bytes of past OPTIMIZE commits in `report`'s history, else 1.0.
pub fn observed_ratio(commits: &[crate::engine::log::state::CommitSummary]) -> f64 {
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
    let table = open_for_compaction(loc, &req.storage_options).await?;
    let target = req
        .target_file_size
        .or(table.table_target_file_size())
        .unwrap_or(thresholds.target_file_size);
    if target == 0 {
        return Err(EngineError::Other(
            "the target file size must be greater than 0".into(),
        ));
    }
    let min = req.min_file_size.unwrap_or(thresholds.small_file_size);
    let o = PlanOptions {
        target_file_size: target,
        min_file_size: min,
        compression_ratio: ratio,
        max_bin_bytes: req
            .max_bin_bytes
            .unwrap_or((8 * target).max(512 * 1024 * 1024)),
    };
    let t = Thresholds {
        target_file_size: target,
        ..thresholds
    };
    let files = table.partition_files()?;
    let plan = plan(table.version(), files, &req.selection, &o, &t);
    let exec = ExecOptions {
        target_file_size: target,
        parallelism: req.parallelism.max(1),
        compression: Compression::SNAPPY,
        predicate: req.selection.describe(),
        compression_ratio: ratio,
    };
    Ok(PreparedJob {
        table,
        plan,
        exec,
        selection: req.selection.clone(),
        plan_options: o,
        thresholds: t,
    })
}

/// Executes on a dedicated runtime with one worker thread per unit of parallelism: compaction
/// gets at most that many cores, the caller's runtime (UI, writer) keeps its own.
pub async fn run_isolated(
    mut job: PreparedJob,
    locks: Arc<PartitionLocks>,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> Result<JobSummary> {
    let keys: Vec<String> = job
        .plan
        .partitions
        .iter()
        .map(|p| key(&job.table.uri, &p.values.label()))
        .collect();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let workers = job.exec.parallelism.max(1);
    std::thread::Builder::new()
        .name("lakehealth-compact".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("lakehealth-compact")
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ =
                        done_tx.send(Err(EngineError::Other(format!("compaction runtime: {e}"))));
                    return;
                }
            };
            let summary = rt.block_on(async move {
                let _guard = match locks.try_acquire(&keys) {
                    Some(g) => g,
                    None => {
                        let g = tokio::select! {
                            g = locks.acquire(&keys) => g,
                            _ = cancel.cancelled() => {
                                return JobSummary { cancelled: true, ..Default::default() };
                            }
                        };
                        // Another job of this process compacted these partitions meanwhile.
                        if let Err(e) = job.replan().await {
                            return JobSummary {
                                errors: vec![e.to_string()],
                                ..Default::default()
                            };
                        }
                        let _ = events.send(JobEvent::Replanned {
                            bins: job.plan.bins,
                            files: job.plan.files_in,
                            bytes: job.plan.bytes_in,
                        });
                        g
                    }
                };
                execute(&job.table, &job.plan, &job.exec, cancel, events).await
            });
            let _ = done_tx.send(Ok(summary));
        })
        .map_err(|e| EngineError::Other(format!("cannot start the compaction thread: {e}")))?;
    done_rx
        .await
        .map_err(|_| EngineError::Other("the compaction thread stopped unexpectedly".into()))?
}
