//! The janitor: watches tables and compacts partitions as they fill with small files, by a
//! policy, explaining every decision. Each cycle reads every table's log (the same reader as
//! `report`), decides for every partition (`decide`), and runs a compaction job for each due
//! one through the engine's job (`compact::job`), which validates every commit against the
//! latest version, proves the content, and never undoes a landed commit: the janitor writes to
//! a table no other way. Failures back off per table (`schedule`); every decision and result is
//! a JSON line (`history`).

pub mod activity;
pub mod decide;
pub mod history;
pub mod maintenance;
pub mod metrics;
pub mod policy;
pub mod schedule;
pub mod throttle;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use object_store::ObjectStore;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::activity::{Activity, Columns};
use self::decide::{Decision, DecisionKind, Eligible, Facts, decide};
use self::history::{DecisionLine, History, Line, Outcome, ResultLine, ts};
use self::metrics::Metrics;
use self::policy::{CommitSpacing, Policy};
use self::schedule::{Backoff, TableSchedule};
use self::throttle::Throttle;
use crate::engine::compact::events::{JobEvent, JobSummary};
use crate::engine::compact::executor::Executor;
use crate::engine::compact::job::{CompactRequest, observed_ratio, prepare, run_isolated};
use crate::engine::compact::locks::PartitionLocks;
use crate::engine::compact::plan::Selection;
use crate::engine::compact::selection::Predicate;
use crate::engine::compact::spacing::{CommitSpacer, LastCommit};
use crate::engine::discover::discover_tables;
use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;
use crate::engine::log::replay::replay;
use crate::engine::open::{OpenOptions, now_ms};
use crate::engine::size::format_bytes;
use crate::engine::stats::file_sizes::Thresholds;
use crate::engine::stats::table_report::{PartitionValues, TableReport, physical_names};

/// Commits read per table and cycle for write times (see `activity`).
const ACTIVITY_BUDGET: usize = 2000;

/// A table as the janitor names it: its URI without user info (never a credential).
pub fn table_id(loc: &Location) -> String {
    if loc.is_local() {
        let d = loc.display();
        return match d.trim_end_matches('/') {
            "" => d,
            t => t.to_string(),
        };
    }
    crate::engine::secrets::redact_url(loc.url.as_str())
        .trim_end_matches('/')
        .to_string()
}

/// A table read this cycle.
struct Loaded {
    loc: Location,
    id: String,
    store: Arc<dyn ObjectStore>,
    report: TableReport,
    cols: Columns,
}

/// A due partition's job, for a caller that runs it itself (`Janitor::decide_only`).
#[derive(Debug, Clone)]
pub struct DueJob {
    pub values: PartitionValues,
    pub reason: String,
    pub request: CompactRequest,
    pub thresholds: Thresholds,
    pub ratio: f64,
    pub throttle: Throttle,
}

/// One table's decisions, and the jobs of its due partitions.
#[derive(Debug, Clone)]
pub struct TableDecisions {
    /// The table as the janitor names it (`table_id`).
    pub table: String,
    pub decisions: Vec<DecisionLine>,
    pub due: Vec<DueJob>,
}

/// One due partition's job.
struct JobSpec {
    table: String,
    loc: Location,
    values: PartitionValues,
    reason: String,
    req: CompactRequest,
    thresholds: Thresholds,
    ratio: f64,
    executor: Executor,
    /// The job's budget, from the writers the log showed this cycle.
    throttle: Throttle,
    /// The table's commit spacing (a writer is active), shared by its jobs.
    spacer: Option<Arc<CommitSpacer>>,
    /// Where the job says what it is doing (`Line::Activity`).
    talk: Option<mpsc::UnboundedSender<Line>>,
}

struct JobDone {
    spec: JobSpec,
    /// The version the job planned at (None: it never planned).
    version_read: Option<u64>,
    outcome: Option<(Outcome, String)>,
    summary: JobSummary,
    duration_ms: u64,
}

/// What one cycle did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CycleStats {
    pub tables: u64,
    pub partitions: u64,
    pub due: u64,
    pub jobs: u64,
    pub failed_jobs: u64,
    pub table_errors: u64,
    /// Jobs cancelled by a signal, as "table partition: what landed".
    pub cancelled: Vec<String>,
    /// Due partitions whose job never started because of a signal.
    pub not_started: u64,
}

pub struct Janitor {
    targets: Vec<Location>,
    policy: Policy,
    open: OpenOptions,
    history: History,
    /// Every line also goes here (the CLI prints them).
    sink: Box<dyn FnMut(&Line) + Send + Sync>,
    schedules: HashMap<String, TableSchedule>,
    activity: HashMap<String, Activity>,
    locks: Arc<PartitionLocks>,
    cycle: u64,
    history_failed: bool,
    /// When each table was last vacuumed (from the history, then this run).
    last_vacuum: HashMap<String, i64>,
    /// Ingestion first (`throttle`); off: every job uses every core, unbounded.
    throttle: bool,
    metrics: Option<Arc<Metrics>>,
    /// Each table's last compaction commit, for the commit spacing across its jobs.
    last_commits: HashMap<String, LastCommit>,
}

impl Janitor {
    /// Restores the tables' failure records from `history` (unless `resume`, which clears
    /// them) and writes the policy line.
    pub fn new(
        targets: Vec<Location>,
        policy: Policy,
        open: OpenOptions,
        history: History,
        sink: Box<dyn FnMut(&Line) + Send + Sync>,
        resume: bool,
    ) -> Self {
        let restored = match history::restore(history.path()) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("janitor: cannot read the history for earlier failures: {e}");
                HashMap::new()
            }
        };
        let last_vacuum = maintenance::last_vacuums(history.path());
        let mut j = Janitor {
            targets,
            policy,
            open,
            history,
            sink,
            schedules: HashMap::new(),
            activity: HashMap::new(),
            locks: Arc::new(PartitionLocks::default()),
            cycle: 0,
            history_failed: false,
            last_vacuum,
            throttle: true,
            metrics: None,
            last_commits: HashMap::new(),
        };
        let now = now_ms();
        j.emit(Line::Policy {
            ts: ts(now),
            policy: j.policy.to_json(),
            summary: j.policy.summary(),
            targets: j.targets.iter().map(table_id).collect(),
            history: j.history.path().display().to_string(),
        });
        for (table, s) in restored {
            if s.failures == 0 {
                continue;
            }
            if resume {
                j.emit(Line::Schedule {
                    ts: ts(now),
                    table,
                    schedule: TableSchedule::default(),
                });
            } else {
                j.schedules.insert(table, s);
            }
        }
        j
    }

    /// Records what each cycle finds and does in `m` (served by `metrics::serve`).
    pub fn with_metrics(mut self, m: Arc<Metrics>) -> Self {
        self.metrics = Some(m);
        self
    }

    /// Jobs ignore the writers: every core, unbounded reads (for comparison).
    pub fn unthrottled(mut self) -> Self {
        self.throttle = false;
        self
    }

    /// The budget of `t`'s jobs this cycle.
    fn throttle_for(&self, t: &Loaded, now: i64) -> Throttle {
        let cores = throttle::cores();
        if !self.throttle {
            return Throttle {
                budget: throttle::Budget {
                    parallelism: cores,
                    read_bytes_per_second: None,
                    background: false,
                    commit_spacing_ms: None,
                },
                reason: format!("throttle off: {cores} bin(s) at a time, unbounded"),
            };
        }
        let w = throttle::measure(
            &t.report.commits,
            &t.report.streaming_writers,
            now,
            throttle::WINDOW_MS,
        );
        let mut t = throttle::choose(&w, cores, throttle::ACTIVE_READ_RATE);
        if t.budget.commit_spacing_ms.is_some() {
            t.budget.commit_spacing_ms = match self.policy.commit_spacing {
                CommitSpacing::Auto => t.budget.commit_spacing_ms,
                CommitSpacing::Off => None,
                CommitSpacing::Every(d) => Some(d.as_millis().min(u64::MAX as u128) as u64),
            };
            if self.policy.commit_spacing != CommitSpacing::Auto {
                t.reason = throttle::with_spacing(&t.reason, t.budget.commit_spacing_ms);
            }
        }
        t
    }

    fn emit(&mut self, line: Line) {
        if let Err(e) = self.history.append(&line)
            && !self.history_failed
        {
            self.history_failed = true;
            let w = Line::Warning {
                ts: ts(now_ms()),
                message: format!(
                    "cannot append to the history file {}: {e}",
                    self.history.path().display()
                ),
            };
            (self.sink)(&w);
        }
        (self.sink)(&line);
    }

    fn backoff(&self) -> Backoff {
        Backoff {
            base: self.policy.backoff_base,
            max: self.policy.backoff_max,
            max_failures: self.policy.max_failures,
        }
    }

    /// Thresholds the tables are read with: "small" is the policy's.
    fn thresholds(&self) -> Thresholds {
        let base = self.open.thresholds;
        Thresholds {
            target_file_size: base.target_file_size,
            small_file_size: self.policy.small_file_size,
            max_file_size: base.max_file_size.max(self.policy.small_file_size),
        }
    }

    /// Cycles every interval until `cancel`; one cycle with `once`. Returns the last cycle's
    /// statistics.
    pub async fn run(&mut self, once: bool, cancel: CancellationToken) -> CycleStats {
        loop {
            let stats = self.cycle(&cancel).await;
            if cancel.is_cancelled() {
                let mut what = Vec::new();
                if !stats.cancelled.is_empty() {
                    what.push(format!(
                        "cancelled {} running job(s) before their next commit: {}",
                        stats.cancelled.len(),
                        stats.cancelled.join("; ")
                    ));
                }
                if stats.not_started > 0 {
                    what.push(format!(
                        "{} due partition(s) not started",
                        stats.not_started
                    ));
                }
                if what.is_empty() {
                    what.push("no job was running".into());
                }
                self.emit(Line::Stopped {
                    ts: ts(now_ms()),
                    reason: what.join("; "),
                });
                return stats;
            }
            if once {
                return stats;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.policy.interval) => {}
                _ = cancel.cancelled() => {
                    self.emit(Line::Stopped {
                        ts: ts(now_ms()),
                        reason: "stopped between cycles; no job was running".into(),
                    });
                    return stats;
                }
            }
        }
    }

    /// Reads a table with the janitor's thresholds; keeps what the activity reader needs.
    async fn load(&self, loc: &Location) -> Result<Loaded> {
        let store = loc.open_store(&self.open.storage_options)?;
        let uri = loc.display();
        let state = replay(&store, &uri, self.open.replay, &|_| {}).await?;
        // Logical -> physical names of mapped columns, for partitionValues in commits.
        let physical = physical_names(&state.metadata.schema_string)
            .into_iter()
            .map(|(p, l)| (l, p))
            .collect();
        let report = TableReport::build(uri, loc.name(), state, self.thresholds(), now_ms());
        let cols = Columns {
            logical: report.partition_columns.clone(),
            physical,
        };
        Ok(Loaded {
            loc: loc.clone(),
            id: table_id(loc),
            store,
            report,
            cols,
        })
    }

    /// Every target as a table, or the tables found under it (found again every cycle, so
    /// new tables are picked up).
    async fn tables(&mut self, stats: &mut CycleStats) -> Vec<Loaded> {
        let mut out = Vec::new();
        for target in self.targets.clone() {
            match self.load(&target).await {
                Ok(t) => out.push(t),
                Err(EngineError::NotATable { .. }) => {
                    let found = match target.open_store(&self.open.storage_options) {
                        Ok(store) => {
                            discover_tables(
                                &store,
                                &target.display(),
                                self.open.discovery_depth,
                                &|_| {},
                            )
                            .await
                        }
                        Err(e) => Err(e),
                    };
                    let rels = match found {
                        Ok(r) if r.is_empty() => {
                            self.table_error(&target, "no Delta table found here".into(), stats);
                            continue;
                        }
                        Ok(r) => r,
                        Err(e) => {
                            self.table_error(&target, e.to_string(), stats);
                            continue;
                        }
                    };
                    for rel in rels {
                        let loaded = match target.join(&rel) {
                            Ok(loc) => self.load(&loc).await.map_err(|e| (loc, e)),
                            Err(e) => Err((target.clone(), e)),
                        };
                        match loaded {
                            Ok(t) => out.push(t),
                            Err((loc, e)) => self.table_error(&loc, e.to_string(), stats),
                        }
                    }
                }
                Err(e) => self.table_error(&target, e.to_string(), stats),
            }
        }
        out
    }

    fn table_error(&mut self, loc: &Location, error: String, stats: &mut CycleStats) {
        stats.table_errors += 1;
        self.emit(Line::TableError {
            ts: ts(now_ms()),
            table: table_id(loc),
            error,
        });
    }

    /// Reads `loc` and decides for each of its partitions as a cycle does (the decision lines
    /// go to the history and the sink too), without running a job: the caller runs the due
    /// ones through its own job runner (the TUI's, so they show and cancel like manual jobs).
    pub async fn decide_only(&mut self, loc: &Location) -> Result<TableDecisions> {
        let t = self.load(loc).await?;
        let mut counts = [0u64; 5];
        let (jobs, decisions) = self.decide_table(&t, now_ms(), &mut counts).await;
        Ok(TableDecisions {
            table: t.id.clone(),
            decisions,
            due: jobs
                .into_iter()
                .map(|j| DueJob {
                    values: j.values,
                    reason: j.reason,
                    request: j.req,
                    thresholds: j.thresholds,
                    ratio: j.ratio,
                    throttle: j.throttle,
                })
                .collect(),
        })
    }

    /// Decides for every partition of `t`; returns the jobs of the due ones and every decision.
    async fn decide_table(
        &mut self,
        t: &Loaded,
        now: i64,
        counts: &mut [u64; 5],
    ) -> (Vec<JobSpec>, Vec<DecisionLine>) {
        let horizon = self.policy.horizon();
        let horizon_ms = horizon.as_millis().min(i64::MAX as u128) as i64;
        let mut activity = self.activity.remove(&t.id).unwrap_or_default();
        if let Err(e) = activity
            .update(
                &t.store,
                &t.id,
                t.report.version,
                &t.cols,
                horizon_ms,
                now,
                ACTIVITY_BUDGET,
            )
            .await
        {
            // Decisions that need write times then say they are unknown.
            tracing::warn!("janitor: reading recent commits of {}: {e}", t.id);
        }
        let eligible_for = match &self.policy.partitions {
            None => None,
            Some(f) => {
                let today = chrono::DateTime::from_timestamp_millis(now)
                    .unwrap_or_default()
                    .date_naive();
                Some(
                    f.expand(today)
                        .and_then(|text| {
                            Predicate::parse(&text, &t.report.partition_columns)
                                .map_err(|e| e.reason)
                        })
                        .map_err(|e| format!("{e} (policy line {})", f.line)),
                )
            }
        };
        let gate = self
            .schedules
            .get(&t.id)
            .map(|s| s.gate(&self.backoff(), now))
            .unwrap_or(schedule::Gate::Ready);
        let age_since = self
            .policy
            .aged
            .map(|a| now.saturating_sub(a.age.as_millis().min(i64::MAX as u128) as i64));
        let ratio = observed_ratio(&t.report.commits);
        let budget = self.throttle_for(t, now);
        let spacer = budget.budget.commit_spacing_ms.map(|ms| {
            let last = self.last_commits.entry(t.id.clone()).or_default().clone();
            Arc::new(CommitSpacer::sharing(Duration::from_millis(ms), last))
        });
        let mut jobs = Vec::new();
        let mut lines = Vec::new();
        for p in &t.report.partitions {
            let eligible = match &eligible_for {
                None => Eligible::Yes,
                Some(Ok(pred)) if pred.matches(&p.values.0) => Eligible::Yes,
                Some(Ok(pred)) => Eligible::Outside(pred.text.clone()),
                Some(Err(e)) => Eligible::Invalid(e.clone()),
            };
            let facts = Facts {
                values: &p.values,
                files: p.stats.files,
                small_files: p.stats.small_files,
                last_write: activity.last_write(&p.values),
                recent_small_files: age_since.and_then(|since| {
                    activity.recent_small_files(&p.values, self.policy.small_file_size, since)
                }),
                known_for_ms: activity.known_for_ms(now),
            };
            let Decision { kind, reason } = decide(&self.policy, &facts, &eligible, &gate, now);
            counts[kind as usize] += 1;
            if kind == DecisionKind::Due {
                jobs.push(JobSpec {
                    table: t.id.clone(),
                    loc: t.loc.clone(),
                    values: p.values.clone(),
                    reason: reason.clone(),
                    req: CompactRequest {
                        selection: Selection::Partitions(vec![p.values.clone()]),
                        target_file_size: self.policy.target_file_size,
                        min_file_size: Some(self.policy.min_file_size),
                        parallelism: 1,
                        max_bin_bytes: None,
                        strategy: self.policy.strategy,
                        deleted_rows: self.policy.deleted_rows,
                        storage_options: self.open.storage_options.clone(),
                    },
                    thresholds: self.thresholds(),
                    ratio,
                    executor: self.policy.executor.clone(),
                    throttle: budget.clone(),
                    spacer: spacer.clone(),
                    talk: None,
                });
            }
            lines.push(Line::Decision(DecisionLine {
                ts: ts(now),
                table: t.id.clone(),
                partition: p.values.clone(),
                rule: self.policy.rule().into(),
                decision: kind,
                reason,
                files: p.stats.files,
                small_files: p.stats.small_files,
                bytes: p.stats.bytes,
            }));
        }
        self.activity.insert(t.id.clone(), activity);
        if let Some(m) = &self.metrics {
            let s = &t.report.stats;
            m.table_read(
                &t.id,
                s.files,
                s.small_files,
                s.health_score,
                jobs.len() as u64,
                now,
            );
        }
        let decisions = lines
            .iter()
            .filter_map(|l| match l {
                Line::Decision(d) => Some(d.clone()),
                _ => None,
            })
            .collect();
        for l in lines {
            self.emit(l);
        }
        (jobs, decisions)
    }

    /// One cycle: read, decide, run the due jobs (at most `max_jobs` at once), record.
    pub async fn cycle(&mut self, cancel: &CancellationToken) -> CycleStats {
        let started = Instant::now();
        self.cycle += 1;
        let mut stats = CycleStats::default();
        let now = now_ms();
        if let Some(m) = &self.metrics {
            m.cycle_started(now);
        }
        let tables = self.tables(&mut stats).await;
        stats.tables = tables.len() as u64;
        // Indexed by DecisionKind.
        let mut counts = [0u64; 5];
        let mut jobs = Vec::new();
        for t in &tables {
            stats.partitions += t.report.partitions.len() as u64;
            jobs.extend(self.decide_table(t, now, &mut counts).await.0);
        }
        // Forget activity of tables that are gone.
        let present: std::collections::HashSet<&str> =
            tables.iter().map(|t| t.id.as_str()).collect();
        self.activity.retain(|k, _| present.contains(k.as_str()));
        let facts: Vec<maintenance::TableFacts> = tables
            .iter()
            .map(|t| maintenance::TableFacts::of(&t.loc, &t.id, &t.report))
            .collect();
        drop(tables);
        stats.due = jobs.len() as u64;

        // Ingestion first: while a writer is active one job at a time (each one bin at a time
        // at a bounded read rate); otherwise up to `max_jobs`, each on every core.
        let at_once = if jobs
            .iter()
            .any(|j| j.throttle.budget.read_bytes_per_second.is_some())
        {
            1
        } else {
            self.policy.max_jobs.max(1)
        };
        let locks = self.locks.clone();
        let (talk, mut heard) = mpsc::unbounded_channel();
        let jobs: Vec<JobSpec> = jobs
            .into_iter()
            .map(|mut spec| {
                spec.talk = Some(talk.clone());
                spec
            })
            .collect();
        // The channel closes once every job is done.
        drop(talk);
        let mut running = futures::stream::iter(
            jobs.into_iter()
                .map(|spec| run_job(spec, locks.clone(), cancel.clone())),
        )
        .buffer_unordered(at_once);
        // Per table: the first failure of this cycle, and whether any job completed.
        let mut outcomes: HashMap<String, (Option<String>, bool)> = HashMap::new();
        loop {
            // A job's activity as it happens; its result when it ends.
            let done = tokio::select! {
                Some(line) = heard.recv() => {
                    self.emit(line);
                    continue;
                }
                done = running.next() => done,
            };
            let Some(done) = done else { break };
            while let Ok(line) = heard.try_recv() {
                self.emit(line);
            }
            let Some((outcome, summary_text)) = done.outcome.clone() else {
                stats.not_started += 1;
                continue;
            };
            stats.jobs += 1;
            if let Some(m) = &self.metrics {
                m.job_done(
                    &done.spec.table,
                    outcome == Outcome::Failed,
                    done.summary.bytes_removed,
                );
            }
            let entry = outcomes.entry(done.spec.table.clone()).or_default();
            match outcome {
                Outcome::Failed => {
                    stats.failed_jobs += 1;
                    if entry.0.is_none() {
                        entry.0 = Some(
                            done.summary
                                .errors
                                .first()
                                .cloned()
                                .unwrap_or_else(|| summary_text.clone()),
                        );
                    }
                }
                Outcome::Cancelled => stats.cancelled.push(format!(
                    "{} {}: {}",
                    done.spec.table,
                    done.spec.values.label(),
                    summary_text
                )),
                _ => entry.1 = true,
            }
            self.emit(Line::Result(result_line(
                &done,
                outcome,
                summary_text,
                self.policy.rule(),
            )));
        }
        drop(running);
        let lines = maintenance::maintain(
            &facts,
            &self.policy.maintenance,
            &mut self.last_vacuum,
            &self.open.storage_options,
            now,
            cancel,
        )
        .await;
        for l in lines {
            self.emit(Line::Maintenance(l));
        }

        let end = now_ms();
        let quiet: Vec<String> = self
            .schedules
            .iter()
            .filter(|(t, s)| s.failures > 0 && !outcomes.contains_key(*t))
            .map(|(t, _)| t.clone())
            .collect();
        for table in quiet {
            // Repeated every cycle: the history's tail always has it for the next run.
            let schedule = self.schedules[&table].clone();
            self.emit(Line::Schedule {
                ts: ts(end),
                table,
                schedule,
            });
        }
        for (table, (failure, completed)) in outcomes {
            let s = self.schedules.entry(table.clone()).or_default();
            let before = s.clone();
            match failure {
                Some(e) => s.record_failure(end, e),
                None if completed => s.record_success(),
                None => {}
            }
            if *s != before || s.failures > 0 {
                let schedule = s.clone();
                self.emit(Line::Schedule {
                    ts: ts(end),
                    table,
                    schedule,
                });
            }
        }
        self.schedules.retain(|_, s| s.failures > 0);
        self.emit(Line::Cycle {
            ts: ts(end),
            cycle: self.cycle,
            tables: stats.tables,
            partitions: stats.partitions,
            due: counts[DecisionKind::Due as usize],
            not_due: counts[DecisionKind::NotDue as usize],
            skipped: counts[DecisionKind::Skipped as usize],
            backing_off: counts[DecisionKind::BackingOff as usize],
            suspended: counts[DecisionKind::Suspended as usize],
            jobs: stats.jobs,
            failed_jobs: stats.failed_jobs,
            table_errors: stats.table_errors,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        if let Some(m) = &self.metrics {
            m.cycle_ended(now_ms());
        }
        stats
    }
}

/// Prepares (plans from the latest version) and runs one partition's job on the engine's
/// isolated runtime. None as outcome: not started (cancelled before).
async fn run_job(spec: JobSpec, locks: Arc<PartitionLocks>, cancel: CancellationToken) -> JobDone {
    let started = Instant::now();
    let done = |spec, outcome: Option<(Outcome, String)>, summary: JobSummary, started: Instant| {
        // A job that failed before planning read no version.
        let planned = matches!(&outcome, Some((o, _)) if *o != Outcome::Failed)
            || summary.table_version_read > 0;
        JobDone {
            spec,
            version_read: planned.then_some(summary.table_version_read),
            outcome,
            summary,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    };
    if cancel.is_cancelled() {
        return done(spec, None, JobSummary::default(), started);
    }
    let mut job = match prepare(&spec.loc, &spec.req, spec.thresholds, spec.ratio).await {
        Ok(j) => j,
        Err(e) => {
            let msg = format!("planning failed: {e}");
            let s = JobSummary {
                errors: vec![msg.clone()],
                ..Default::default()
            };
            return done(spec, Some((Outcome::Failed, msg)), s, started);
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
        return done(spec, Some((Outcome::NothingToCompact, msg)), s, started);
    }
    job.exec.executor = spec.executor.clone();
    job.set_budget(spec.throttle.budget);
    job.exec.commit_spacing = spec.spacer.clone();
    tracing::info!(
        "janitor: {} {}: {}",
        spec.table,
        spec.values.label(),
        spec.throttle.reason
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let talker = Talker {
        table: spec.table.clone(),
        partition: spec.values.clone(),
        out: spec.talk.clone(),
    };
    talker.say(format!(
        "started: {} bin(s), {} files ({}); {}",
        job.plan.bins,
        job.plan.files_in,
        format_bytes(job.plan.bytes_in),
        spec.throttle.reason
    ));
    let drain = tokio::spawn(talker.follow(rx));
    let summary = run_isolated(job, locks, cancel, tx).await;
    let _ = drain.await;
    let outcome = classify(&summary);
    let text = describe(&summary, outcome);
    done(spec, Some((outcome, text)), summary, started)
}

/// Says what a job does, as `Line::Activity` (and in the log).
struct Talker {
    table: String,
    partition: PartitionValues,
    out: Option<mpsc::UnboundedSender<Line>>,
}

impl Talker {
    fn say(&self, message: String) {
        tracing::info!(
            "janitor: {} {}: {message}",
            self.table,
            self.partition.label()
        );
        if let Some(out) = &self.out {
            let _ = out.send(Line::Activity {
                ts: ts(now_ms()),
                table: self.table.clone(),
                partition: self.partition.clone(),
                message,
            });
        }
    }

    /// Every commit, conflict and failed bin, and each wait for a commit slot once.
    async fn follow(self, mut rx: mpsc::UnboundedReceiver<JobEvent>) {
        let mut waiting = false;
        while let Some(ev) = rx.recv().await {
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
                        "committed v{}: -{} +{} files ({} -> {}), {} rows",
                        c.version,
                        c.files_removed,
                        c.files_added,
                        format_bytes(c.bytes_removed),
                        format_bytes(c.bytes_added),
                        c.rows
                    ))
                }
                JobEvent::Conflict(c) => self.say(format!("conflict: {}", c.conflict)),
                JobEvent::BinFailed { error, .. } => {
                    tracing::warn!(
                        "janitor: {} {}: bin failed: {error}",
                        self.table,
                        self.partition.label()
                    )
                }
                _ => {}
            }
        }
    }
}

fn classify(s: &JobSummary) -> Outcome {
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

fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn versions(s: &JobSummary) -> String {
    s.commits
        .iter()
        .map(|c| format!("v{}", c.version))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The result for humans.
fn describe(s: &JobSummary, o: Outcome) -> String {
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

fn result_line(d: &JobDone, outcome: Outcome, summary: String, rule: &str) -> ResultLine {
    let s = &d.summary;
    ResultLine {
        ts: ts(now_ms()),
        table: d.spec.table.clone(),
        partition: d.spec.values.clone(),
        rule: rule.into(),
        decision: DecisionKind::Due,
        reason: d.spec.reason.clone(),
        outcome,
        summary,
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_carry_no_user_info() {
        let l = Location::parse("s3://key:secret@bucket/lake/t").unwrap();
        assert_eq!(table_id(&l), "s3://bucket/lake/t");
        let l = Location::parse("s3://bucket/lake/t/").unwrap();
        assert_eq!(table_id(&l), "s3://bucket/lake/t");
    }

    #[test]
    fn outcomes_by_what_the_summary_holds() {
        let mut s = JobSummary::default();
        assert_eq!(classify(&s), Outcome::NothingToCompact);
        s.conflicts
            .push(crate::engine::compact::events::ConflictRecord {
                partition: PartitionValues(vec![]),
                conflict: crate::engine::compact::commit::Conflict {
                    version: Some(3),
                    operation: Some("OPTIMIZE".into()),
                    engine: None,
                    missing_files: 2,
                    files: 2,
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
}
