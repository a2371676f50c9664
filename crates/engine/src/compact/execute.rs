//! Running a compaction plan: bins are rewritten in parallel (`rewrite`), and each finished bin
//! is committed on its own as soon as it is proven (`commit`: validated against the latest
//! version, never undone once it may have landed). A bin whose files another commit took is
//! dropped and its partition planned again from the newer snapshot.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use deltalake::DeltaTable;
use deltalake::protocol::DeltaOperation;
use object_store::ObjectStore;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{
    CommitRecord, ConflictRecord, Failure, FailureKind, JobEvent, JobSummary, PartitionTally,
    Progress,
};
use super::executor::{BinResult, ExecOptions, Executor, RunContext, Work};
use super::plan::{Bin, CompactionPlan, Selection, plan};
use super::rewrite::{BinError, BinFailure, BinOutput, Counters, delete_outputs};
use super::schema::file_schema;
use super::table::{CompactionTable, partition_files};
use crate::delta::commit::{BinActions, CommitOutcome, Conflict, commit_bin};
use crate::model::partition::PartitionValues;

/// A partition is planned again at most this many times in one job (a table whose files keep
/// being taken by another compactor is left to it).
const MAX_REPLANS: u32 = 3;

fn progress(
    ct: &CompactionTable,
    c: &Counters,
    total: &Totals,
    pace: Option<&super::pace::Pacer>,
) -> Progress {
    Progress {
        pace_bytes_per_second: pace.and_then(|p| p.rate()),
        bytes_read: ct.counters.read(),
        bytes_written: ct.counters.written(),
        files_read: c.files_read.load(Ordering::Relaxed),
        rows: c.rows.load(Ordering::Relaxed),
        bins_done: c.bins_done.load(Ordering::Relaxed),
        bins_total: total.bins,
        files_total: total.files,
        bytes_total: total.bytes,
        commit_wait_ms: 0,
    }
}

#[derive(Debug, Clone, Copy)]
struct Totals {
    bins: u64,
    files: u64,
    bytes: u64,
}

/// Whether every file of `removes` is active in `table` with the deletion vector it names.
fn still_active(table: &DeltaTable, removes: &[deltalake::kernel::Remove]) -> bool {
    let Ok(snapshot) = table.snapshot() else {
        return false;
    };
    let mut wanted: HashMap<&str, Option<&deltalake::kernel::DeletionVectorDescriptor>> = removes
        .iter()
        .map(|r| (r.path.as_str(), r.deletion_vector.as_ref()))
        .collect();
    for f in snapshot.log_data() {
        let path = f.path();
        if let Some(dv) = wanted.get(path.as_ref())
            && f.deletion_vector_descriptor().as_ref() == *dv
        {
            wanted.remove(path.as_ref());
        }
        if wanted.is_empty() {
            return true;
        }
    }
    wanted.is_empty()
}

/// Why a job cannot run with the schema and executor it has.
#[derive(Debug, thiserror::Error)]
enum JobSchemaError {
    #[error(
        "row tracking is enabled on the table and the Ray executor's workers do not carry the rows' ids yet: compact it with the local executor"
    )]
    RayRowTracking,
    #[error(
        "the table uses column mapping and the Ray executor has not been proven on such tables yet: compact it with the local executor"
    )]
    RayColumnMapping,
    #[error("reading the table schema: {0}")]
    Schema(#[from] super::schema::SchemaError),
}

/// The schema a job's bins are rewritten with; Err: why the job cannot run.
fn job_schema(ct: &CompactionTable, opts: &ExecOptions) -> Result<SchemaRef, JobSchemaError> {
    if ct.features.materialize.is_some() && matches!(opts.executor, Executor::Ray(_)) {
        return Err(JobSchemaError::RayRowTracking);
    }
    if ct.column_mapped && matches!(opts.executor, Executor::Ray(_)) {
        return Err(JobSchemaError::RayColumnMapping);
    }
    Ok(file_schema(&ct.table)?)
}

/// Each partition's share of a commit of `outs`, in the order the partitions first appear.
fn tallies(outs: &[BinOutput]) -> Vec<PartitionTally> {
    let mut t: Vec<PartitionTally> = Vec::new();
    for o in outs {
        let i = match t.iter().position(|x| x.partition == o.partition) {
            Some(i) => i,
            None => {
                t.push(PartitionTally {
                    partition: o.partition.clone(),
                    files_removed: 0,
                    files_added: 0,
                    bytes_removed: 0,
                    bytes_added: 0,
                    rows: 0,
                });
                t.len() - 1
            }
        };
        let x = &mut t[i];
        x.files_removed += o.removes.len() as u64;
        x.files_added += o.adds.len() as u64;
        x.bytes_removed += o.bytes_in;
        x.bytes_added += o.bytes_out();
        x.rows += o.rows;
    }
    t
}

struct Run<'a> {
    ct: &'a CompactionTable,
    opts: &'a ExecOptions,
    events: &'a mpsc::UnboundedSender<JobEvent>,
    summary: JobSummary,
    /// The committer's own view of the table, brought to the latest version by each commit.
    table: DeltaTable,
    store: Arc<dyn ObjectStore>,
    replans: HashMap<PartitionValues, u32>,
    read_version: u64,
    started: Instant,
    /// Counter values when the job started (the store's counters are shared by a table).
    read0: u64,
    written0: u64,
    /// The table schema the bins are written with (`file_schema`): a commit checks it still is.
    schema: Option<String>,
}

impl<'a> Run<'a> {
    fn new(
        ct: &'a CompactionTable,
        plan: &CompactionPlan,
        opts: &'a ExecOptions,
        events: &'a mpsc::UnboundedSender<JobEvent>,
    ) -> Self {
        Run {
            ct,
            opts,
            events,
            summary: JobSummary {
                table_version_read: plan.table_version,
                ..Default::default()
            },
            table: ct.table.clone(),
            store: ct.table.object_store(),
            replans: HashMap::new(),
            read_version: plan.table_version,
            started: Instant::now(),
            read0: ct.counters.read(),
            written0: ct.counters.written(),
            schema: ct
                .table
                .snapshot()
                .ok()
                .map(|s| s.metadata().schema_string().clone()),
        }
    }

    fn send(&self, e: JobEvent) {
        let _ = self.events.send(e);
    }

    /// Bins for `values` from the committer's (latest) snapshot.
    fn replan(&mut self, values: &PartitionValues) -> Vec<Bin> {
        let n = self.replans.entry(values.clone()).or_default();
        *n += 1;
        if *n > MAX_REPLANS {
            return Vec::new();
        }
        let Ok(files) = partition_files(&self.table, &self.ct.uri) else {
            return Vec::new();
        };
        let version = self.table.version().unwrap_or_default();
        let p = plan(
            version,
            files,
            &Selection::Partitions(vec![values.clone()]),
            &self.opts.plan_options,
            &self.opts.thresholds,
        );
        p.partitions.into_iter().flat_map(|p| p.bins).collect()
    }

    /// Commits proven bins that are ready together: one commit for all of them (a commit slot
    /// is spent on everything that is ready), each bin validated on its own first. Returns
    /// bins to run again for partitions whose bins met a conflict.
    async fn commit_ready(&mut self, outs: Vec<BinOutput>) -> Vec<(PartitionValues, Bin)> {
        for out in &outs {
            self.summary.verify_seconds += out.verify_seconds;
            self.summary.spilled_bytes += out.spilled_bytes;
            self.send(JobEvent::BinFinished {
                partition: out.partition.clone(),
                files_in: out.removes.len() as u64,
                files_out: out.adds.len() as u64,
                bytes_in: out.bytes_in,
                bytes_out: out.bytes_out(),
                rows: out.rows,
            });
        }
        if outs.len() > 1 {
            // Bins whose files another commit took go alone (each reports its conflict).
            let _ = self.table.update_incremental(None).await;
            let (fit, taken): (Vec<BinOutput>, Vec<BinOutput>) = outs
                .into_iter()
                .partition(|o| still_active(&self.table, &o.removes));
            let mut again = Vec::new();
            for out in taken {
                again.extend(self.commit_alone(out).await);
            }
            if fit.len() > 1 {
                again.extend(self.commit_together(fit).await);
            } else {
                for out in fit {
                    again.extend(self.commit_alone(out).await);
                }
            }
            return again;
        }
        let mut again = Vec::new();
        for out in outs {
            again.extend(self.commit_alone(out).await);
        }
        again
    }

    fn operation(&self) -> DeltaOperation {
        DeltaOperation::Optimize {
            predicate: self.opts.predicate.clone(),
            target_size: self.opts.rewrite.target_file_size as i64,
        }
    }

    /// Several validated bins as one commit; a race lost in between (a file taken after the
    /// check) commits each bin on its own instead, so only the taken bins stay out.
    async fn commit_together(&mut self, outs: Vec<BinOutput>) -> Vec<(PartitionValues, Bin)> {
        let removes: Vec<_> = outs
            .iter()
            .flat_map(|o| o.removes.iter().cloned())
            .collect();
        let adds: Vec<_> = outs.iter().flat_map(|o| o.adds.iter().cloned()).collect();
        let bin = BinActions {
            removes: &removes,
            adds: &adds,
            read_version: self.read_version,
            operation: self.operation(),
            row_ids_materialized: self.ct.features.materialize.is_some(),
            schema: self.schema.as_deref(),
            trigger: self.opts.trigger,
        };
        match commit_bin(&mut self.table, &bin).await {
            CommitOutcome::Landed { version, retries } => {
                if let Some(s) = &self.opts.commit_spacing {
                    s.committed(Instant::now());
                }
                self.landed(outs, version, retries);
                Vec::new()
            }
            CommitOutcome::Conflict(_) => {
                let mut again = Vec::new();
                for out in outs {
                    again.extend(self.commit_alone(out).await);
                }
                again
            }
            CommitOutcome::Failed(error) => {
                for out in outs {
                    self.commit_failed(out, error.clone()).await;
                }
                Vec::new()
            }
            CommitOutcome::Unknown(error) => {
                for out in outs {
                    self.commit_unknown(out, error.clone());
                }
                Vec::new()
            }
        }
    }

    /// Commits one proven bin; returns bins to run for its partition after a conflict.
    async fn commit_alone(&mut self, out: BinOutput) -> Vec<(PartitionValues, Bin)> {
        let bin = BinActions {
            removes: &out.removes,
            adds: &out.adds,
            read_version: self.read_version,
            operation: self.operation(),
            row_ids_materialized: self.ct.features.materialize.is_some(),
            schema: self.schema.as_deref(),
            trigger: self.opts.trigger,
        };
        match commit_bin(&mut self.table, &bin).await {
            CommitOutcome::Landed { version, retries } => {
                if let Some(s) = &self.opts.commit_spacing {
                    s.committed(Instant::now());
                }
                self.landed(vec![out], version, retries);
                Vec::new()
            }
            CommitOutcome::Conflict(conflict) => {
                let values = out.partition.clone();
                self.conflicted(out, conflict)
                    .await
                    .into_iter()
                    .map(|b| (values.clone(), b))
                    .collect()
            }
            CommitOutcome::Failed(error) => {
                self.commit_failed(out, error).await;
                Vec::new()
            }
            CommitOutcome::Unknown(error) => {
                self.commit_unknown(out, error);
                Vec::new()
            }
        }
    }

    /// One commit that landed, of one bin or several.
    fn landed(&mut self, outs: Vec<BinOutput>, version: u64, retries: u64) {
        let mut partitions: Vec<PartitionValues> = Vec::new();
        for o in &outs {
            if !partitions.contains(&o.partition) {
                partitions.push(o.partition.clone());
            }
        }
        let rec = CommitRecord {
            version,
            files_removed: outs.iter().map(|o| o.removes.len() as u64).sum(),
            files_added: outs.iter().map(|o| o.adds.len() as u64).sum(),
            bytes_removed: outs.iter().map(|o| o.bytes_in).sum(),
            bytes_added: outs.iter().map(|o| o.bytes_out()).sum(),
            rows: outs.iter().map(|o| o.rows).sum(),
            deleted_rows: outs.iter().map(|o| o.deleted_rows).sum(),
            retries,
            partitions,
            bins: outs.len() as u64,
            fingerprints: outs.iter().map(|o| o.fingerprint).collect(),
            by_partition: tallies(&outs),
        };
        self.summary.files_removed += rec.files_removed;
        self.summary.files_added += rec.files_added;
        self.summary.bytes_removed += rec.bytes_removed;
        self.summary.bytes_added += rec.bytes_added;
        self.summary.rows += rec.rows;
        self.summary.deleted_rows += rec.deleted_rows;
        self.summary.commits.push(rec.clone());
        self.send(JobEvent::Committed(rec));
    }

    /// Another commit took the bin's files: its outputs, never referenced by the log, are
    /// deleted, and the partition is planned again.
    async fn conflicted(&mut self, out: BinOutput, conflict: Conflict) -> Vec<Bin> {
        let left = delete_outputs(&self.store, &out.output_paths()).await;
        self.summary.orphaned_files.extend(left);
        let bins = self.replan(&out.partition);
        let rec = ConflictRecord {
            partition: out.partition,
            conflict,
            replanned_bins: bins.len() as u64,
        };
        self.summary.conflicts.push(rec.clone());
        self.send(JobEvent::Conflict(rec));
        bins
    }

    /// The commit certainly did not land: its outputs are deleted.
    async fn commit_failed(&mut self, out: BinOutput, error: String) {
        let left = delete_outputs(&self.store, &out.output_paths()).await;
        self.summary.orphaned_files.extend(left.iter().cloned());
        self.summary.fail(
            vec![out.partition.clone()],
            Failure {
                kind: FailureKind::Commit,
                message: error.clone(),
            },
            format!("{}: commit failed: {error}", out.partition.label()),
        );
        self.send(JobEvent::CommitFailed {
            partitions: vec![out.partition],
            error,
            orphaned_files: left,
        });
    }

    /// The commit may have landed: its outputs are kept (deleting them could break it).
    fn commit_unknown(&mut self, out: BinOutput, error: String) {
        let paths = out.output_paths();
        self.summary.unknown_outcome_files.extend(paths.clone());
        self.summary.fail(
            vec![out.partition.clone()],
            Failure {
                kind: FailureKind::CommitUnknown,
                message: error.clone(),
            },
            format!(
                "{}: commit outcome unknown, outputs kept: {error}",
                out.partition.label()
            ),
        );
        self.send(JobEvent::CommitUnknown {
            partitions: vec![out.partition],
            error,
            kept_files: paths,
        });
    }

    async fn failed(&mut self, e: BinError) {
        let left = delete_outputs(&self.store, &e.outputs).await;
        self.summary.orphaned_files.extend(left);
        if e.failure != BinFailure::Cancelled {
            let failure = e.failure.report();
            self.summary.fail(
                vec![e.partition.clone()],
                failure.clone(),
                format!("{}: {}", e.partition.label(), e.failure),
            );
            self.send(JobEvent::BinFailed {
                partition: e.partition,
                error: failure,
            });
        }
    }

    /// Receives finished bins and commits them, until every bin (those planned again after a
    /// conflict included) is done; sends progress meanwhile. While the commit spacing holds a
    /// finished bin back, the bins that finish meanwhile join it: the next commit slot commits
    /// all of them at once.
    async fn drive(
        &mut self,
        mut results: mpsc::Receiver<BinResult>,
        work: &mpsc::UnboundedSender<Work>,
        mut pending: u64,
        totals: &mut Totals,
        counters: &Counters,
        cancel: &CancellationToken,
    ) {
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        let mut ready: Vec<BinOutput> = Vec::new();
        while pending > 0 || !ready.is_empty() {
            let wait = self.commit_wait();
            if !ready.is_empty() && cancel.is_cancelled() {
                // Cancelled while waiting to commit: the outputs never commit.
                for out in ready.drain(..) {
                    let left = delete_outputs(&self.store, &out.output_paths()).await;
                    self.summary.orphaned_files.extend(left);
                }
                continue;
            }
            if !ready.is_empty() && wait.is_zero() {
                for (values, b) in self.commit_ready(std::mem::take(&mut ready)).await {
                    totals.bins += 1;
                    totals.files += b.files.len() as u64;
                    totals.bytes += b.bytes;
                    pending += 1;
                    let _ = work.send((values, b));
                }
                continue;
            }
            let holding = !ready.is_empty();
            let r = tokio::select! {
                r = results.recv(), if pending > 0 => match r {
                    Some(r) => r,
                    None => { pending = 0; continue }
                },
                _ = tokio::time::sleep(wait.min(Duration::from_millis(250))), if holding => {
                    let mut p = progress(self.ct, counters, totals, self.opts.rewrite.pace.as_deref());
                    p.commit_wait_ms = self.commit_wait().as_millis().min(u64::MAX as u128) as u64;
                    self.send(JobEvent::Progress(p));
                    continue;
                }
                _ = cancel.cancelled(), if holding => continue,
                _ = ticker.tick() => {
                    let mut p = progress(self.ct, counters, totals, self.opts.rewrite.pace.as_deref());
                    if holding {
                        p.commit_wait_ms = self.commit_wait().as_millis().min(u64::MAX as u128) as u64;
                    }
                    self.send(JobEvent::Progress(p));
                    continue;
                }
            };
            pending -= 1;
            match r {
                Ok(out) if cancel.is_cancelled() => {
                    let left = delete_outputs(&self.store, &out.output_paths()).await;
                    self.summary.orphaned_files.extend(left);
                }
                Ok(out) => ready.push(out),
                Err(e) => self.failed(e).await,
            }
        }
    }

    /// How long the next commit must still wait for the spacing (zero: it may go).
    fn commit_wait(&self) -> Duration {
        match &self.opts.commit_spacing {
            Some(s) => s.remaining(Instant::now()),
            None => Duration::ZERO,
        }
    }

    fn finish(mut self, cancel: &CancellationToken) -> JobSummary {
        self.summary.cancelled = cancel.is_cancelled();
        if self.summary.cancelled {
            self.send(JobEvent::Cancelled {
                orphaned_files: self.summary.orphaned_files.clone(),
            });
        }
        self.summary.bytes_read = self.ct.counters.read() - self.read0;
        self.summary.bytes_written = self.ct.counters.written() - self.written0;
        self.summary.seconds = self.started.elapsed().as_secs_f64();
        self.summary
    }
}

/// A paced job beside a writer whose rhythm is known follows its cadence until the returned
/// token is cancelled (`cadence`); each change of pace is an event.
fn follow_the_writer(
    ct: &CompactionTable,
    version: u64,
    opts: &ExecOptions,
    events: &mpsc::UnboundedSender<JobEvent>,
) -> CancellationToken {
    let done = CancellationToken::new();
    if let (Some(pacer), Some(rhythm)) = (opts.rewrite.pace.clone(), opts.writer_rhythm_ms) {
        let store = ct.table.object_store();
        let (d, events) = (done.clone(), events.clone());
        tokio::spawn(super::cadence::follow(
            store,
            version,
            rhythm,
            pacer,
            d,
            move |note| {
                let _ = events.send(JobEvent::Pace(note));
            },
        ));
    }
    done
}

/// Runs every bin of `plan` and commits each as it finishes. Never fails as a whole: errors
/// are reported per bin/commit in the summary and as events; the final event is always sent.
pub async fn execute(
    ct: &CompactionTable,
    plan: &CompactionPlan,
    opts: &ExecOptions,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> JobSummary {
    let summary = execute_bins(ct, plan, opts, cancel, events.clone()).await;
    let _ = events.send(JobEvent::Finished(summary.clone()));
    summary
}

/// `execute` without its final event: the job (`job::run_locked`) adds what it did around the
/// bins (its sweep, its price) and sends it.
pub(crate) async fn execute_bins(
    ct: &CompactionTable,
    plan: &CompactionPlan,
    opts: &ExecOptions,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> JobSummary {
    let mut run = Run::new(ct, plan, opts, &events);
    run.send(JobEvent::Started {
        bins: plan.bins,
        files: plan.files_in,
        bytes: plan.bytes_in,
    });
    let schema = match job_schema(ct, opts) {
        Ok(s) => s,
        Err(e) => {
            let message = e.to_string();
            run.summary.fail(
                Vec::new(),
                Failure {
                    kind: FailureKind::Setup,
                    message: message.clone(),
                },
                message,
            );
            return run.finish(&cancel);
        }
    };
    let counters = Arc::new(Counters::default());
    let mut totals = Totals {
        bins: plan.bins,
        files: plan.files_in,
        bytes: plan.bytes_in,
    };
    let (work_tx, work_rx) = mpsc::unbounded_channel::<Work>();
    let mut pending = 0u64;
    for p in &plan.partitions {
        for b in &p.bins {
            let _ = work_tx.send((p.values.clone(), b.clone()));
            pending += 1;
        }
    }
    let (tx, rx) = mpsc::channel::<BinResult>(opts.parallelism.max(1) * 2);
    // Bins run apart from the commits so a commit in progress never pauses them, and a slow bin
    // never holds back the commit of one already finished.
    let ctx = RunContext {
        table: ct.table.clone(),
        uri: ct.uri.clone(),
        schema,
        opts: opts.clone(),
        cancel: cancel.clone(),
        counters: counters.clone(),
        bytes: ct.counters.clone(),
        table_version: plan.table_version,
    };
    let rewriters = opts.executor.spawn(ctx, work_rx, tx);
    let follower = follow_the_writer(ct, plan.table_version, opts, &events);
    run.drive(rx, &work_tx, pending, &mut totals, &counters, &cancel)
        .await;
    follower.cancel();
    drop(work_tx);
    let _ = rewriters.await;
    run.summary.pace = opts.rewrite.pace.as_ref().and_then(|p| p.note());
    run.send(JobEvent::Progress(progress(
        ct,
        &counters,
        &totals,
        opts.rewrite.pace.as_deref(),
    )));
    run.finish(&cancel)
}
