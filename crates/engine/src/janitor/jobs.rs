//! The janitor's compaction jobs: one per table at a time, over all of its due partitions, so
//! that bins of different partitions that are ready together go into one commit (a commit slot
//! is spent on everything ready). A job runs in the background while cycles go on deciding;
//! what it is doing is shared (`JobState`) so that a decision can say "running" or "waiting for
//! the next commit slot", and it talks as it goes (`Line::Activity`). Its result is one line
//! per partition (`results`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::history::{Line, Outcome, ResultLine, ts};
use super::throttle::Throttle;
use crate::clock::now_ms;
use crate::compact::events::{FailureKind, JobEvent, JobSummary};
use crate::compact::executor::Executor;
use crate::compact::job::{CompactRequest, PreparedJob, prepare, run_isolated};
use crate::compact::locks::PartitionLocks;
use crate::compact::spacing::CommitSpacer;
use crate::location::Location;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::model::trigger::Trigger;
use crate::size::{format_bytes, plural};
use crate::stats::log_health::Rewrite;

use super::decide::DecisionKind;

/// A due partition and why it is due.
#[derive(Debug, Clone)]
pub(super) struct DuePartition {
    pub values: PartitionValues,
    pub reason: String,
    /// Due for re-clustering: the files a lookup would open fewer (its benefit in the queue).
    pub lookup_saving: f64,
}

/// What a job is for: merging small files, or rewriting partitions whole in the order the
/// janitor keeps (`max_depth`; its commits say so, and its bytes are counted apart).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum JobPurpose {
    SmallFiles,
    Recluster(super::clustering::KeptOrder),
}

impl JobPurpose {
    pub fn decision(&self) -> DecisionKind {
        match self {
            JobPurpose::SmallFiles => DecisionKind::Due,
            JobPurpose::Recluster(_) => DecisionKind::Recluster,
        }
    }

    pub fn trigger(&self) -> Trigger {
        match self {
            JobPurpose::SmallFiles => Trigger::Janitor,
            JobPurpose::Recluster(_) => Trigger::JanitorRecluster,
        }
    }
}

/// What a job runs, by the table's format.
pub(super) enum Work {
    /// Delta: the engine's compaction job (validated against the log, proven, spaced).
    Delta(Box<CompactRequest>),
    /// Iceberg: bins committed one by one through the table's catalog (`iceberg_jobs`).
    Iceberg(Box<super::iceberg_jobs::IcebergWork>),
}

/// One table's job over its due partitions.
pub(super) struct JobSpec {
    pub table: String,
    pub loc: Location,
    pub partitions: Vec<DuePartition>,
    pub purpose: JobPurpose,
    /// What it saves readers and what it rewrites: its place in the queue (`queue`).
    pub benefit: super::queue::Benefit,
    /// Why its target is what it is, when the policy chose it by the table's size.
    pub target_reason: Option<String>,
    /// The table's write amplification over its recent log when the job was decided.
    pub rewrite: Rewrite,
    pub work: Work,
    pub thresholds: Thresholds,
    pub ratio: f64,
    /// What the table's store charges: the job's estimate and actuals are priced at them.
    pub rates: crate::model::cost::Rates,
    pub executor: Executor,
    /// The job's budget, from the writers the log showed this cycle.
    pub throttle: Throttle,
    /// The table's commit spacing (a writer is active).
    pub spacer: Option<Arc<CommitSpacer>>,
    /// Where the job says what it is doing (`Line::Activity`).
    pub talk: Option<mpsc::UnboundedSender<Line>>,
    /// What the job is doing now, read by the cycles that run meanwhile.
    pub state: Arc<Mutex<JobState>>,
}

impl JobSpec {
    pub fn values(&self) -> Vec<PartitionValues> {
        self.partitions.iter().map(|p| p.values.clone()).collect()
    }
}

/// What a running job is doing, as the decisions of later cycles describe it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobState {
    /// When the job started (ms since the epoch).
    pub since_ms: i64,
    /// A finished bin waits for the commit spacing until then (ms since the epoch).
    pub commit_slot_ms: Option<i64>,
    /// Commits landed so far.
    pub commits: u64,
    /// Share of its input read so far, 0.0–1.0 (`Progress::ratio`).
    pub done: f64,
    /// The read pace it follows now; None: unbounded.
    pub pace_bytes_per_second: Option<u64>,
}

impl JobState {
    /// The reason a partition of this job is not decided again.
    pub fn describe(&self, now: i64) -> String {
        let age = (now - self.since_ms).max(0);
        let landed = match self.commits {
            0 => String::new(),
            n => format!(", {n} commit(s) landed"),
        };
        match self.commit_slot_ms {
            Some(at) if at > now => format!(
                "running: its job (started {} s ago{landed}) waits for the next commit slot in {} s",
                age / 1000,
                (at - now + 999) / 1000
            ),
            _ => format!(
                "running: its job started {} s ago{landed}; not planned again until it ends",
                age / 1000
            ),
        }
    }
}

pub(super) struct JobDone {
    pub spec: JobSpec,
    /// The version the job planned at (None: it never planned).
    pub version_read: Option<u64>,
    /// None: never started (cancelled before).
    pub summary: Option<JobSummary>,
    /// Set when the plan had nothing to do: the text of every partition's result.
    pub nothing: Option<String>,
    pub duration_ms: u64,
}

impl JobDone {
    /// Whether the job failed as a whole or in any partition (for the table's back-off), with
    /// its first error.
    pub fn failure(&self) -> Option<String> {
        let s = self.summary.as_ref()?;
        (!s.errors.is_empty() && !s.cancelled).then(|| s.errors[0].clone())
    }

    /// Whether the job ran to an end (compacted, or found nothing, or met conflicts).
    pub fn completed(&self) -> bool {
        self.summary
            .as_ref()
            .is_some_and(|s| !s.cancelled && s.errors.is_empty())
    }
}

/// What planning a job found: a job to run, or its end already.
pub enum Planned {
    Ready(Box<PreparedJob>),
    Ended(Box<JobEnd>),
}

/// How a janitor job ended, for `Janitor::record` (the table's back-off and result lines).
#[derive(Debug, Clone)]
pub struct JobEnd {
    /// None: never started (cancelled before).
    summary: Option<JobSummary>,
    /// Set when the plan had nothing to do: the text of every partition's result.
    nothing: Option<String>,
}

impl JobEnd {
    /// The job ran (to its end, a failure or a cancel): what its runner returned.
    pub fn ran(summary: JobSummary) -> Self {
        Self {
            summary: Some(summary),
            nothing: None,
        }
    }

    /// Its plan had nothing to do: `summary` as read, `text` every partition's result.
    pub(super) fn nothing(summary: JobSummary, text: String) -> Self {
        Self {
            summary: Some(summary),
            nothing: Some(text),
        }
    }

    /// It never started (stopped before, or its plan was gone).
    pub fn never_started() -> Self {
        Self {
            summary: None,
            nothing: None,
        }
    }

    /// Its first error, for humans (None: it did not fail).
    pub fn error(&self) -> Option<&str> {
        let s = self.summary.as_ref()?;
        (!s.cancelled).then(|| s.errors.first().map(String::as_str))?
    }
}

/// Plans `spec`'s job from the latest version, with the spec's executor, budget and commit
/// spacing. A plan with nothing to do, or one that cannot be made, is the job's end.
pub(super) async fn plan_job(spec: &JobSpec) -> Planned {
    let req = match &spec.work {
        Work::Delta(req) => req,
        Work::Iceberg(_) => {
            // `Janitor::decide_only` never hands an Iceberg job to a caller.
            let s = JobSummary::failed(
                FailureKind::Setup,
                "an Iceberg table's janitor job runs in `lakehealth watch`".into(),
            );
            return Planned::Ended(Box::new(JobEnd::ran(s)));
        }
    };
    let mut job = match prepare(&spec.loc, req, spec.thresholds, spec.ratio).await {
        Ok(j) => j,
        Err(e) => {
            let s = JobSummary::failed(FailureKind::Setup, format!("planning failed: {e}"));
            return Planned::Ended(Box::new(JobEnd::ran(s)));
        }
    };
    if job.plan.bins == 0 {
        let p = &job.plan;
        let msg = format!(
            "nothing to compact at version {}: no two files below {} to merge, and no file over {} % deleted rows",
            p.table_version,
            format_bytes(p.min_file_size),
            job.exec.plan_options.deleted_rows.max_ratio * 100.0
        );
        let s = JobSummary {
            table_version_read: p.table_version,
            ..Default::default()
        };
        return Planned::Ended(Box::new(JobEnd {
            summary: Some(s),
            nothing: Some(msg),
        }));
    }
    job.set_rates(spec.rates);
    job.exec.executor = spec.executor.clone();
    job.set_throttle(spec.throttle.clone());
    job.exec.commit_spacing = spec.spacer.clone();
    job.exec.trigger = spec.purpose.trigger();
    Planned::Ready(Box::new(job))
}

impl JobDone {
    pub(super) fn new(spec: JobSpec, end: JobEnd, started: Instant) -> Self {
        let version_read = end
            .summary
            .as_ref()
            .and_then(|s| (s.table_version_read > 0).then_some(s.table_version_read));
        JobDone {
            spec,
            version_read,
            summary: end.summary,
            nothing: end.nothing,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// Plans and runs one table's job on the engine's isolated runtime (`watch`).
pub(super) async fn run_job(
    spec: JobSpec,
    locks: Arc<PartitionLocks>,
    cancel: CancellationToken,
) -> JobDone {
    let started = Instant::now();
    if cancel.is_cancelled() {
        return JobDone::new(spec, JobEnd::never_started(), started);
    }
    if matches!(spec.work, Work::Iceberg(_)) {
        return super::iceberg_jobs::run(spec, cancel, started).await;
    }
    let job = match plan_job(&spec).await {
        Planned::Ready(job) => job,
        Planned::Ended(end) => return JobDone::new(spec, *end, started),
    };
    let talker = Talker::of(&spec);
    let target = spec
        .target_reason
        .as_ref()
        .map(|why| format!("; {why}"))
        .unwrap_or_default();
    talker.say(format!(
        "started: {} bin(s), {} files ({}) in {} partition(s); {}{target}; estimate: {}",
        job.plan.bins,
        job.plan.files_in,
        format_bytes(job.plan.bytes_in),
        job.plan.partitions.len(),
        spec.throttle.reason,
        job.plan.estimate.describe(format_bytes)
    ));
    let (tx, rx) = mpsc::unbounded_channel();
    let drain = tokio::spawn(talker.follow(rx));
    let summary = run_isolated(*job, locks, cancel, tx).await;
    let _ = drain.await;
    JobDone::new(spec, JobEnd::ran(summary), started)
}

/// Keeps a job's `JobState` from its events (the commit slot it waits for, commits landed).
pub fn observe(state: &Mutex<JobState>, ev: &JobEvent) {
    let Ok(mut s) = state.lock() else { return };
    match ev {
        JobEvent::Progress(p) => {
            s.done = p.ratio();
            s.pace_bytes_per_second = p.pace_bytes_per_second;
            if p.commit_wait_ms > 0 {
                s.commit_slot_ms = Some(now_ms() + p.commit_wait_ms.min(i64::MAX as u64) as i64);
            }
        }
        JobEvent::Committed(_) => {
            s.commit_slot_ms = None;
            s.commits += 1;
        }
        _ => {}
    }
}

/// Says what a job does, as `Line::Activity` (and in the log), and keeps its `JobState`.
pub(super) struct Talker {
    table: String,
    partitions: Vec<PartitionValues>,
    out: Option<mpsc::UnboundedSender<Line>>,
    pub(super) state: Arc<Mutex<JobState>>,
}

impl Talker {
    pub(super) fn of(spec: &JobSpec) -> Self {
        Talker {
            table: spec.table.clone(),
            partitions: spec.values(),
            out: spec.talk.clone(),
            state: spec.state.clone(),
        }
    }

    pub(super) fn say(&self, message: String) {
        let label = labels(&self.partitions);
        tracing::info!("janitor: {} {label}: {message}", self.table);
        if let Some(out) = &self.out {
            let _ = out.send(Line::Activity {
                ts: ts(now_ms()),
                table: self.table.clone(),
                partitions: self.partitions.clone(),
                message,
            });
        }
    }

    /// Every commit, conflict and failed bin, and each wait for a commit slot once.
    async fn follow(self, mut rx: mpsc::UnboundedReceiver<JobEvent>) {
        let mut waiting = false;
        while let Some(ev) = rx.recv().await {
            observe(&self.state, &ev);
            match ev {
                JobEvent::Progress(p) if p.commit_wait_ms > 0 && !waiting => {
                    waiting = true;
                    self.say(format!(
                        "waiting {} s for the next commit slot (a writer is active: commits spaced)",
                        p.commit_wait_ms.div_ceil(1000)
                    ));
                }
                JobEvent::Committed(c) => {
                    waiting = false;
                    self.say(format!(
                        "committed v{}: {} bin(s) of {} partition(s), -{} +{} files ({} -> {}), {} rows",
                        c.version,
                        c.bins,
                        c.partitions.len(),
                        c.files_removed,
                        c.files_added,
                        format_bytes(c.bytes_removed),
                        format_bytes(c.bytes_added),
                        c.rows
                    ))
                }
                JobEvent::Pace(note) => self.say(note.text()),
                JobEvent::Conflict(c) => self.say(format!(
                    "conflict in {}: {}",
                    c.partition.label(),
                    c.conflict
                )),
                JobEvent::BinFailed { partition, error } => tracing::warn!(
                    "janitor: {} {}: bin failed: {error}",
                    self.table,
                    partition.label()
                ),
                _ => {}
            }
        }
    }
}

/// Partitions for humans: "a=1, a=2" (or "(table)" for an unpartitioned one).
pub fn labels(p: &[PartitionValues]) -> String {
    p.iter().map(|v| v.label()).collect::<Vec<_>>().join(", ")
}

pub(super) fn classify(s: &JobSummary) -> Outcome {
    if s.cancelled {
        Outcome::Cancelled
    } else if !s.errors.is_empty() {
        Outcome::Failed
    } else if !s.commits.is_empty() {
        Outcome::Compacted
    } else if !s.conflicts.is_empty() {
        Outcome::Conflict
    } else {
        Outcome::NothingToCompact
    }
}

fn versions(s: &JobSummary) -> String {
    s.commits
        .iter()
        .map(|c| format!("v{}", c.version))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The result for humans.
pub(super) fn describe(s: &JobSummary, o: Outcome) -> String {
    let conflicts = if s.conflicts.is_empty() {
        String::new()
    } else {
        format!(
            "; {} not committed: another commit took their files ({})",
            plural(s.conflicts.len() as u64, "bin"),
            s.conflicts
                .iter()
                .map(|c| c.conflict.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    match o {
        Outcome::Compacted => format!(
            "compacted {} ({}) into {} ({}) in {} ({}) in {:.1} s{conflicts}",
            plural(s.files_removed, "file"),
            format_bytes(s.bytes_removed),
            plural(s.files_added, "file"),
            format_bytes(s.bytes_added),
            plural(s.commits.len() as u64, "commit"),
            versions(s),
            s.seconds
        ),
        Outcome::Conflict => format!("nothing committed{conflicts}"),
        Outcome::NothingToCompact => "nothing left to compact at the latest version".into(),
        Outcome::Failed => format!(
            "failed: {}{}{conflicts}",
            s.errors.join("; "),
            if s.commits.is_empty() {
                String::new()
            } else {
                format!(" (landed before: {})", versions(s))
            }
        ),
        Outcome::Cancelled => format!(
            "cancelled before its next commit; {} landed{}",
            plural(s.commits.len() as u64, "commit"),
            if s.commits.is_empty() {
                String::new()
            } else {
                format!(" ({})", versions(s))
            }
        ),
    }
}

/// One result line per partition of a job that started (None: it never did).
pub(super) fn results(d: &JobDone, rule: &str) -> Option<Vec<ResultLine>> {
    let summary = d.summary.as_ref()?;
    Some(
        d.spec
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = summary.for_partition(&p.values);
                let outcome = classify(&s);
                let text = match (&d.nothing, outcome) {
                    (Some(n), Outcome::NothingToCompact) => n.clone(),
                    _ => describe(&s, outcome),
                };
                ResultLine {
                    ts: ts(now_ms()),
                    table: d.spec.table.clone(),
                    partition: p.values.clone(),
                    rule: rule.into(),
                    decision: d.spec.purpose.decision(),
                    reason: p.reason.clone(),
                    outcome,
                    summary: text,
                    number_of_compacted_files: s.files_removed,
                    amount_of_data_compacted_bytes: s.bytes_removed,
                    number_of_output_files: s.files_added,
                    amount_of_output_data_bytes: s.bytes_added,
                    rows: s.rows,
                    versions: s.commits.iter().map(|c| c.version).collect(),
                    duration_ms: d.duration_ms,
                    conflicts: s.conflicts.clone(),
                    errors: s.errors.clone(),
                    table_version_read: d.version_read,
                    throttle: d.spec.throttle.reason.clone(),
                    pace: summary.pace.clone(),
                    write_amplification: d.spec.rewrite.write_amplification,
                    recluster_amplification: d.spec.rewrite.recluster_amplification,
                    estimate: summary.estimate.clone().filter(|_| i == 0),
                    actual: summary.actual.clone().filter(|_| i == 0),
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_by_what_the_summary_holds() {
        let mut s = JobSummary::default();
        assert_eq!(classify(&s), Outcome::NothingToCompact);
        s.conflicts.push(crate::compact::events::ConflictRecord {
            partition: PartitionValues(vec![]),
            conflict: crate::delta::commit::Conflict {
                version: Some(3),
                operation: Some("OPTIMIZE".into()),
                engine: None,
                missing_files: 2,
                files: 2,
                reason: None,
            },
            replanned_bins: 0,
        });
        assert_eq!(classify(&s), Outcome::Conflict);
        assert!(describe(&s, Outcome::Conflict).contains("another commit took their files"));
        s.errors.push("x".into());
        assert_eq!(classify(&s), Outcome::Failed);
        s.cancelled = true;
        assert_eq!(classify(&s), Outcome::Cancelled);
    }

    #[test]
    fn a_running_job_says_how_long_until_its_commit_slot() {
        let s = JobState {
            since_ms: 10_000,
            commit_slot_ms: Some(30_500),
            commits: 1,
            ..Default::default()
        };
        assert_eq!(
            s.describe(22_000),
            "running: its job (started 12 s ago, 1 commit(s) landed) waits for the next commit slot in 9 s"
        );
        assert_eq!(
            s.describe(31_000),
            "running: its job started 21 s ago, 1 commit(s) landed; not planned again until it ends"
        );
    }
}
