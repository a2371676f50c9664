//! The janitor: watches tables and compacts partitions as they fill with small files, by a
//! policy, explaining every decision. Each cycle reads every table's log (the same reader as
//! `report`), decides for every partition (`decide`), and runs a compaction job for each due
//! one through the engine's job (`compact::job`), which validates every commit against the
//! latest version, proves the content, and never undoes a landed commit: the janitor writes to
//! a table no other way. Failures back off per table (`schedule`); every decision and result is
//! a JSON line (`history`).

pub(crate) mod activity;
pub mod clustering;
pub mod decide;
pub mod depth_read;
pub mod fleet;
mod followed;
pub mod forecast;
pub mod history;
mod iceberg_activity;
mod iceberg_jobs;
pub mod jobs;
pub(crate) mod maintenance;
pub mod metrics;
pub mod policy;
pub mod polling;
pub mod queue;
mod round;
pub(crate) mod schedule;
pub mod throttle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use self::activity::{Activity, Columns};
use self::decide::DecisionKind;
use self::depth_read::DepthState;
use self::followed::Followed;
use self::history::{DecisionLine, History, Line, Outcome, ts};
use self::jobs::{DuePartition, JobDone, JobPurpose, JobSpec, JobState, Work};
pub use self::jobs::{JobEnd, Planned};
use self::metrics::Metrics;
use self::policy::{CommitSpacing, Policy};
use self::queue::{Benefit, JobQueue};
use self::schedule::{Backoff, TableSchedule};
use self::throttle::Throttle;
use crate::clock::now_ms;
use crate::compact::job::{CompactRequest, observed_ratio};
use crate::compact::locks::PartitionLocks;
use crate::compact::plan::Selection;
use crate::compact::selection::Predicate;
use crate::compact::spacing::{CommitSpacer, LastCommit};
use crate::compact::table::StoreWrapper;
use crate::delta::watch::{LogWatcher, WatchOptions};
use crate::discover::{FoundTable, rediscover};
use crate::error::{EngineError, Result};
use crate::iceberg::compact::job::IceRequest;
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::options::OpenOptions;
use crate::stats::table_report::TableReport;

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
    crate::secrets::redact_url(loc.url.as_str())
        .trim_end_matches('/')
        .to_string()
}

/// A table read this cycle.
struct Loaded {
    loc: Location,
    id: String,
    report: TableReport,
    source: Source,
}

/// Where a table was read from, which says how it is compacted and maintained.
enum Source {
    /// Its log: write times per partition (`activity`), checkpoints and vacuums by policy.
    Delta {
        store: Arc<dyn ObjectStore>,
        cols: Columns,
    },
    /// The current metadata its catalog names (`metadata`); compacted through that catalog.
    Iceberg { catalog: String, metadata: String },
}

/// A table's job the janitor decided, for a caller that runs it itself (the TUI: its jobs
/// show and cancel like manual ones). The pipeline is the same as `watch`'s: the caller plans
/// it (`plan`), tells the janitor it started (`Janitor::started`), feeds it the job's events
/// (`observe`) and records its end whatever the path (`Janitor::record`), so its results,
/// the table's back-off and later decisions ("running: ...") are those of `watch`.
pub struct CallerJob {
    spec: JobSpec,
    started: Instant,
}

impl CallerJob {
    pub fn table(&self) -> &str {
        &self.spec.table
    }

    pub fn partitions(&self) -> Vec<PartitionValues> {
        self.spec.values()
    }

    /// Runs its bins on `executor` instead of the policy's.
    pub fn set_executor(&mut self, executor: crate::compact::executor::Executor) {
        self.spec.executor = executor;
    }

    /// Plans it from the latest version (with the policy's sizes, the throttle's budget and
    /// the table's commit spacing).
    pub async fn plan(&self) -> Planned {
        jobs::plan_job(&self.spec).await
    }

    /// What keeps the job's state from its events, for the decisions made while it runs.
    pub fn observer(&self) -> impl Fn(&crate::compact::events::JobEvent) + Send + 'static {
        let state = self.spec.state.clone();
        move |ev| jobs::observe(&state, ev)
    }
}

/// One table's decisions, and its job over the due partitions (None when nothing is due or
/// its job is still in flight).
pub struct TableDecisions {
    /// The table as the janitor names it (`table_id`).
    pub table: String,
    pub decisions: Vec<DecisionLine>,
    pub job: Option<CallerJob>,
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
    /// Jobs still running when the cycle ended (they go on; their results come when they end).
    pub running: u64,
    /// Tables whose job ended (their failure record was written then).
    pub ended_tables: std::collections::HashSet<String>,
}

/// A table's job in flight.
struct InFlight {
    partitions: Vec<PartitionValues>,
    state: Arc<Mutex<JobState>>,
}

/// What woke the janitor between cycles.
enum Wake {
    Tick,
    Cancelled,
    Heard(Box<Line>),
    Ended(Box<std::result::Result<(tokio::task::Id, JobDone), tokio::task::JoinError>>),
    /// Time to publish the fleet again (jobs are running: their progress moved).
    Refresh,
}

/// How often the fleet is published while jobs run.
const FLEET_REFRESH: Duration = Duration::from_secs(1);

pub struct Janitor {
    targets: Vec<Location>,
    policy: Policy,
    open: OpenOptions,
    history: History,
    /// Every line also goes here (the CLI prints them).
    sink: Box<dyn FnMut(&Line) + Send + Sync>,
    schedules: HashMap<String, TableSchedule>,
    activity: HashMap<String, Activity>,
    /// Each table's overlap depth as last read (`max_depth`): partitions past the bound only.
    depths: HashMap<String, depth_read::TableDepth>,
    /// A table's last failed depth read (when, why): retried after `depth_every`, not every
    /// cycle (each try is a log replay).
    depth_failures: HashMap<String, (i64, String)>,
    /// Partitions re-clustered since their table's last depth read: the next read sets their
    /// floor.
    reclustered: HashMap<String, Vec<PartitionValues>>,
    /// The depth each re-clustered partition was left at, when still past the bound
    /// (`clustering::judge`).
    floors: HashMap<String, HashMap<PartitionValues, Vec<clustering::ColumnDepth>>>,
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
    /// Jobs in flight: cycles go on deciding while they run (one per table at a time).
    jobs: JoinSet<JobDone>,
    in_flight: HashMap<String, InFlight>,
    /// Each job task's table, to clear it even if the task itself failed.
    tasks: HashMap<tokio::task::Id, String>,
    /// Where running jobs say what they do; emitted as it comes.
    talk: mpsc::UnboundedSender<Line>,
    heard: mpsc::UnboundedReceiver<Line>,
    /// Jobs that ended since the last cycle line, counted in the next one.
    ended: CycleStats,
    /// Each Delta table's log as read so far: a cycle reads only its new commits (a full replay
    /// only the first time, after a fallback the tail cannot apply, or after an error).
    logs: HashMap<String, Followed>,
    /// Wraps the store each table's log is read through (tests count its requests).
    log_store_wrapper: Option<Arc<StoreWrapper>>,
    /// Due jobs of every table waiting for a job slot (`queue`): one per table.
    queue: JobQueue<JobSpec>,
    /// The run's stop signal, given to the jobs started between cycles.
    cancel: CancellationToken,
    /// Which tables are read this cycle and when roots are listed again (`polling`).
    polling: polling::Polling,
    /// Tables whose last read failed: retried on `polling`'s back-off.
    broken_ids: std::collections::HashSet<String>,
    /// Each Iceberg table as last read: between its reads (`polling`) it is decided from this.
    iceberg: HashMap<String, IcebergSeen>,
    /// Each partition's last "not due" reason said, by table: said again only when it changes.
    said: HashMap<(String, PartitionValues), String>,
    /// Every request watching makes (log reads, root listings): `/metrics`.
    watch_requests: Arc<crate::compact::counting_store::ByteCounters>,
    /// Each table's fleet row in the making (`fleet`): a few numbers per table.
    book: HashMap<String, fleet::Book>,
    /// When the run started (the month's spend is extrapolated from it).
    started_ms: i64,
    /// Where the fleet is published (the TUI), when anyone looks.
    fleet: Option<tokio::sync::watch::Sender<Arc<fleet::FleetSnapshot>>>,
    next_refresh: tokio::time::Instant,
    /// A table with a writer active this cycle: the other tables' jobs then yield the cores
    /// to it (lowest CPU priority, one bin each), without waiting for it.
    active_writer: Option<String>,
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
        let reclustered = history::restore_reclustered(history.path()).unwrap_or_else(|e| {
            tracing::warn!("janitor: cannot read the history for re-clustered partitions: {e}");
            Default::default()
        });
        let (talk, heard) = mpsc::unbounded_channel();
        let polling =
            polling::Polling::new(policy.interval, policy.idle_poll_max, policy.discover_every);
        let mut j = Janitor {
            targets,
            policy,
            open,
            history,
            sink,
            schedules: HashMap::new(),
            activity: HashMap::new(),
            depths: HashMap::new(),
            depth_failures: HashMap::new(),
            reclustered: reclustered.pending,
            floors: reclustered.floors,
            locks: Arc::new(PartitionLocks::default()),
            cycle: 0,
            history_failed: false,
            last_vacuum,
            throttle: true,
            metrics: None,
            last_commits: HashMap::new(),
            jobs: JoinSet::new(),
            in_flight: HashMap::new(),
            tasks: HashMap::new(),
            talk,
            heard,
            ended: CycleStats::default(),
            logs: HashMap::new(),
            log_store_wrapper: None,
            queue: JobQueue::default(),
            cancel: CancellationToken::new(),
            polling,
            broken_ids: Default::default(),
            watch_requests: Default::default(),
            said: HashMap::new(),
            book: HashMap::new(),
            iceberg: HashMap::new(),
            started_ms: now_ms(),
            fleet: None,
            next_refresh: tokio::time::Instant::now(),
            active_writer: None,
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

    /// Publishes every table's state, debt, last job and spend to `tx` (`fleet`): after each
    /// cycle, each job's end, and every second while jobs run.
    pub fn with_fleet(mut self, tx: tokio::sync::watch::Sender<Arc<fleet::FleetSnapshot>>) -> Self {
        self.fleet = Some(tx);
        self
    }

    /// Reads every table's log through `wrap(store)` (tests count the requests with it).
    pub fn with_log_store_wrapper(mut self, wrap: Arc<StoreWrapper>) -> Self {
        self.log_store_wrapper = Some(wrap);
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
        if matches!(t.source, Source::Iceberg { .. }) {
            return Throttle {
                budget: throttle::Budget::full(1),
                reason: "Iceberg: one bin at a time at background CPU priority, each committed through the catalog as soon as it is proven (a lost race is retried on the new snapshot)".into(),
                writers: "Iceberg: one bin at a time".into(),
            };
        }
        if !self.throttle {
            return Throttle {
                budget: throttle::Budget::full(cores),
                reason: format!("throttle off: {cores} bin(s) at a time, unbounded"),
                writers: "throttle off (--no-throttle)".into(),
            };
        }
        let w = throttle::measure(
            &t.report.commits,
            &t.report.streaming_writers,
            now,
            throttle::WINDOW_MS,
        );
        if !w.active()
            && let Some(other) = self.active_writer.as_ref().filter(|o| **o != t.id)
        {
            return throttle::yielding(&w.describe(), other, cores);
        }
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

    /// Cycles every interval until `cancel`; one cycle with `once` (which waits for its jobs).
    /// Cycles never wait for jobs: a job runs in the background while later cycles decide,
    /// and its result line comes when it ends. Returns the last cycle's statistics.
    pub async fn run(&mut self, once: bool, cancel: CancellationToken) -> CycleStats {
        loop {
            let mut stats = self.cycle(&cancel, once).await;
            if cancel.is_cancelled() {
                return self.stop(stats).await;
            }
            if once {
                return stats;
            }
            let next = crate::clock::deadline(tokio::time::Instant::now(), self.policy.interval);
            loop {
                match self.wake(Some(next), &cancel).await {
                    Wake::Tick => break,
                    Wake::Cancelled => {
                        stats = CycleStats::default();
                        return self.stop(stats).await;
                    }
                    Wake::Heard(line) => self.emit(*line),
                    Wake::Ended(done) => {
                        let table = self.ended(*done);
                        self.reread(table).await;
                    }
                    Wake::Refresh => self.refresh(),
                }
            }
        }
    }

    /// Publishes the fleet now, and again in `FLEET_REFRESH` while jobs run.
    fn refresh(&mut self) {
        self.publish();
        self.next_refresh = tokio::time::Instant::now() + FLEET_REFRESH;
    }

    /// The next thing to act on: a line a job said, a job that ended, the tick at `until`, or
    /// the cancel (when `until` is given).
    async fn wake(
        &mut self,
        until: Option<tokio::time::Instant>,
        cancel: &CancellationToken,
    ) -> Wake {
        let ticking = until.is_some();
        let at = until.unwrap_or_else(tokio::time::Instant::now);
        let busy = !self.jobs.is_empty();
        let (refreshing, refresh_at) = (busy && self.fleet.is_some(), self.next_refresh);
        tokio::select! {
            biased;
            Some(line) = self.heard.recv() => Wake::Heard(Box::new(line)),
            Some(done) = self.jobs.join_next_with_id(), if busy => Wake::Ended(Box::new(done)),
            _ = cancel.cancelled(), if ticking => Wake::Cancelled,
            _ = tokio::time::sleep_until(refresh_at), if refreshing => Wake::Refresh,
            _ = tokio::time::sleep_until(at), if ticking => Wake::Tick,
        }
    }

    /// Waits for every job in flight to end (each sees the cancel and stops before its next
    /// commit), records them, and says what the signal stopped.
    async fn stop(&mut self, mut stats: CycleStats) -> CycleStats {
        // Nothing queued starts after a stop.
        for q in self.queue.drain() {
            self.ended.not_started += q.job.partitions.len() as u64;
        }
        self.wait_for_jobs().await;
        let ended = std::mem::take(&mut self.ended);
        stats.cancelled.extend(ended.cancelled);
        stats.not_started += ended.not_started;
        stats.jobs += ended.jobs;
        stats.failed_jobs += ended.failed_jobs;
        stats.running = 0;
        let mut what = Vec::new();
        if !stats.cancelled.is_empty() {
            what.push(format!(
                "stopped running jobs before their next commit in {} partition(s): {}",
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
        stats
    }

    /// Until no job is in flight, emitting what they say and recording each as it ends.
    async fn wait_for_jobs(&mut self) {
        let never = CancellationToken::new();
        while !self.jobs.is_empty() {
            match self.wake(None, &never).await {
                Wake::Heard(line) => self.emit(*line),
                Wake::Ended(done) => {
                    let table = self.ended(*done);
                    self.reread(table).await;
                }
                Wake::Refresh => self.refresh(),
                Wake::Tick | Wake::Cancelled => {}
            }
        }
        while let Ok(line) = self.heard.try_recv() {
            self.emit(line);
        }
    }

    /// A job ended: its result lines, the table's failure record, the metrics.
    fn ended(
        &mut self,
        done: std::result::Result<(tokio::task::Id, JobDone), tokio::task::JoinError>,
    ) -> Option<Location> {
        while let Ok(line) = self.heard.try_recv() {
            self.emit(line);
        }
        let done = match done {
            Ok((id, d)) => {
                self.tasks.remove(&id);
                d
            }
            Err(e) => {
                // The engine's job catches its own panics; this would be the janitor's task
                // itself. The table is free again and its failure counts for its back-off.
                let table = self.tasks.remove(&e.id()).unwrap_or_default();
                self.in_flight.remove(&table);
                let error = format!("the compaction job's task ended abnormally: {e}");
                self.emit(Line::Warning {
                    ts: ts(now_ms()),
                    message: format!("{table}: {error}"),
                });
                self.ended.jobs += 1;
                self.ended.failed_jobs += 1;
                let book = self.book.entry(table.clone()).or_default();
                book.last_job = Some(fleet::LastJob {
                    ended_ms: now_ms(),
                    outcome: Outcome::Failed,
                    summary: error.clone(),
                    usd: None,
                });
                self.schedules
                    .entry(table)
                    .or_default()
                    .record_failure(now_ms(), error);
                self.dispatch();
                self.publish();
                return None;
            }
        };
        let table = done.spec.loc.clone();
        self.record_done(done);
        // A slot is free: the next queued job starts now, not at the next cycle.
        self.dispatch();
        self.publish();
        Some(table)
    }

    /// Reads a Delta table's new commits after its job ended, so its fleet row's debt is what
    /// the job left (one request: the log is followed, not replayed). Only for a fleet view.
    async fn reread(&mut self, table: Option<Location>) {
        let Some(loc) = table.filter(|_| self.fleet.is_some()) else {
            return;
        };
        let id = table_id(&loc);
        if !self.logs.contains_key(&id) {
            return;
        }
        match self.load_delta(&loc, true).await {
            Ok(t) => {
                let book = self.book.entry(id).or_default();
                book.debt = Some(fleet::Debt::of(&t.report));
                book.reason =
                    "read again after its job ended; decided again at the next cycle".into();
                self.publish();
            }
            Err(e) => tracing::debug!("janitor: {id}: reading it after its job: {e}"),
        }
    }

    /// A job ended (its task did not fail): result lines, failure record, metrics.
    fn record_done(&mut self, done: JobDone) {
        self.in_flight.remove(&done.spec.table);
        let table = done.spec.table.clone();
        let Some(lines) = jobs::results(&done, self.policy.rule()) else {
            self.ended.not_started += done.spec.partitions.len() as u64;
            return;
        };
        self.ended.jobs += 1;
        self.ended.ended_tables.insert(table.clone());
        let failure = done.failure();
        if failure.is_some() {
            self.ended.failed_jobs += 1;
        }
        if let Some(s) = &done.summary {
            let outcome = jobs::classify(s);
            let usd = s.actual.as_ref().map(|c| c.usd);
            let book = self.book.entry(table.clone()).or_default();
            book.jobs_usd += usd.unwrap_or(0.0);
            book.last_job = Some(fleet::LastJob {
                ended_ms: now_ms(),
                outcome,
                summary: jobs::describe(s, outcome),
                usd,
            });
        }
        if let Some(m) = &self.metrics {
            let bytes = done.summary.as_ref().map_or(0, |s| s.bytes_removed);
            m.job_done(&table, failure.is_some(), bytes);
        }
        for r in lines {
            if r.outcome == Outcome::Cancelled {
                self.ended.cancelled.push(format!(
                    "{} {}: {}",
                    r.table,
                    r.partition.label(),
                    r.summary
                ));
            }
            self.emit(Line::Result(Box::new(r)));
        }
        let s = self.schedules.entry(table.clone()).or_default();
        let before = s.clone();
        match failure {
            Some(e) => s.record_failure(now_ms(), e),
            None if done.completed() => s.record_success(),
            None => {}
        }
        if *s != before || s.failures > 0 {
            let schedule = s.clone();
            self.emit(Line::Schedule {
                ts: ts(now_ms()),
                table: table.clone(),
                schedule,
            });
        }
        if self.schedules.get(&table).is_some_and(|s| s.failures == 0) {
            self.schedules.remove(&table);
        }
    }

    /// Reads a Delta table, else an Iceberg table through the policy's catalog.
    async fn load(&mut self, loc: &Location) -> Result<Loaded> {
        match self.load_delta(loc, true).await {
            Err(EngineError::NotATable { uri, depth }) => {
                match crate::iceberg::is_iceberg_location(loc, &self.open).await {
                    Ok(true) => self.load_iceberg(loc).await,
                    _ => Err(EngineError::NotATable { uri, depth }),
                }
            }
            other => other,
        }
    }

    /// An Iceberg table as of the metadata its catalog names now (the one a commit swaps).
    async fn load_iceberg(&self, loc: &Location) -> Result<Loaded> {
        use crate::iceberg::compact::catalog::Catalog;
        let uri = loc.display();
        let Some(catalog) = self.policy.iceberg_catalog.clone() else {
            return Err(EngineError::Unsupported {
                uri,
                detail: "an Iceberg table is compacted through its catalog: name it with the policy's iceberg_catalog or `watch --catalog URI`".into(),
            });
        };
        let through = |e: crate::iceberg::compact::catalog::CatalogError| EngineError::Catalog {
            uri: uri.clone(),
            source: Box::new(e),
        };
        let c = Catalog::open(&catalog).map_err(through)?;
        let (_, metadata) = c.find(loc.url.as_str(), None).await.map_err(through)?;
        let at = Location::parse(&metadata)?;
        let mut report = crate::iceberg::load_iceberg(&at, &self.open, &|_| {}).await?;
        report.uri = uri;
        report.name = loc.name();
        Ok(Loaded {
            loc: loc.clone(),
            id: table_id(loc),
            report,
            source: Source::Iceberg { catalog, metadata },
        })
    }

    /// Reads a Delta table with the janitor's thresholds; keeps what the activity reader needs.
    /// A table read before is advanced by its new commits (`LogWatcher::poll`), not replayed;
    /// unless `read`, it is taken as last read (`polling`: an idle table between its reads).
    async fn load_delta(&mut self, loc: &Location, read: bool) -> Result<Loaded> {
        let id = table_id(loc);
        let followed = match self.logs.remove(&id) {
            Some(f) if !read => f,
            Some(Followed::Full(mut w)) => match w.poll().await {
                Ok(events) => {
                    let changed = !events.is_empty() || self.busy(&id);
                    self.polling.read(&id, self.cycle, changed);
                    Followed::Full(w)
                }
                Err(e) => {
                    tracing::debug!("janitor: {id}: following the log failed ({e}); replaying it");
                    self.replayed(loc, &id).await?
                }
            },
            Some(Followed::Summary(s)) => {
                match followed::has_new_commit(&s.store, &s.report.uri, s.version).await {
                    Ok(false) => {
                        let busy = self.busy(&id);
                        self.polling.read(&id, self.cycle, busy);
                        Followed::Summary(s)
                    }
                    // It moved: replayed once, followed again.
                    Ok(true) => self.replayed(loc, &id).await?,
                    Err(e) => {
                        self.logs.insert(id.clone(), Followed::Summary(s));
                        return Err(e);
                    }
                }
            }
            None => self.replayed(loc, &id).await?,
        };
        // Idle long enough: only its summary is kept (memory follows the tables that move).
        let followed =
            if self.polling.quiet_reads(&id) >= followed::SUMMARIZE_AFTER && !self.busy(&id) {
                followed.summarized()
            } else {
                followed
            };
        let view = followed.view();
        self.logs.insert(id.clone(), followed);
        Ok(Loaded {
            loc: loc.clone(),
            id,
            report: view.report,
            source: Source::Delta {
                store: view.store,
                cols: view.cols,
            },
        })
    }

    /// `loc`'s log replayed, to be followed from now on (a read that found it changed).
    async fn replayed(&mut self, loc: &Location, id: &str) -> Result<Followed> {
        let w = self.open_log(loc).await?;
        self.polling.read(id, self.cycle, true);
        Ok(Followed::Full(Box::new(w)))
    }

    /// A table's log, replayed once, to be followed by its new commits from then on.
    async fn open_log(&mut self, loc: &Location) -> Result<LogWatcher> {
        let book = self.book.entry(table_id(loc)).or_default();
        book.rates = Some(self.open.prices.for_scheme(loc.url.scheme()));
        let counters = book.watch.clone();
        let store: Arc<dyn ObjectStore> = Arc::new(
            crate::compact::counting_store::CountingStore::new(self.store_for(loc)?, counters),
        );
        let mut opts = WatchOptions::new(&self.open, Duration::ZERO);
        opts.thresholds = self.thresholds();
        // The janitor decides on the whole backlog at once: no intermediate statistics.
        opts.max_commits_per_poll = usize::MAX;
        LogWatcher::open(store, loc.display(), loc.name(), opts).await
    }

    /// The store of `loc` the janitor reads logs and listings through.
    fn store_for(&self, loc: &Location) -> Result<Arc<dyn ObjectStore>> {
        let store: Arc<dyn ObjectStore> =
            Arc::new(crate::compact::counting_store::CountingStore::new(
                loc.open_store(&self.open.storage_options)?,
                self.watch_requests.clone(),
            ));
        Ok(match &self.log_store_wrapper {
            Some(wrap) => wrap(store),
            None => store,
        })
    }

    /// Every target as a table, or the tables found under it (found again every cycle, so
    /// new tables are picked up).
    async fn tables(&mut self, stats: &mut CycleStats) -> Vec<Loaded> {
        let mut out = Vec::new();
        // Every table tried this cycle, read or not (what is not tried is gone).
        let mut tried = std::collections::HashSet::new();
        for target in self.targets.clone() {
            tried.insert(table_id(&target));
            let root = target.display();
            // A root listed recently is not read as a table, nor listed, again.
            let listed = self
                .polling
                .listing(&root, self.cycle)
                .map(|found| found.to_vec());
            let as_table = match listed {
                Some(rels) => Err((
                    EngineError::NotATable {
                        uri: root,
                        depth: 0,
                    },
                    Some(rels),
                )),
                None => self.load_due(&target).await.map_err(|e| (e, None)),
            };
            match as_table {
                Ok(Some(t)) => out.push(t),
                Ok(None) => stats.table_errors += 1,
                Err((EngineError::NotATable { .. }, listed)) => {
                    let found = match listed {
                        Some(rels) => Ok(rels),
                        None => {
                            let found = match self.store_for(&target) {
                                Ok(store) => self.discover(&store, &target).await,
                                Err(e) => Err(e),
                            };
                            if let Ok(rels) = &found
                                && !rels.is_empty()
                            {
                                self.book.remove(&table_id(&target));
                                self.polling
                                    .listed(&target.display(), rels.clone(), self.cycle);
                            }
                            found
                        }
                    };
                    let rels = match found {
                        Ok(r) if r.is_empty() => {
                            let what = if self.policy.iceberg_catalog.is_some() {
                                "no Delta or Iceberg table found here"
                            } else {
                                "no Delta table found here (Iceberg tables are watched with a catalog: the policy's iceberg_catalog or --catalog)"
                            };
                            self.table_error(&target, what.into(), stats);
                            continue;
                        }
                        Ok(r) => r,
                        Err(e) => {
                            self.table_error(&target, e.to_string(), stats);
                            continue;
                        }
                    };
                    for found in rels {
                        let loaded = match target.join(&found.rel) {
                            Ok(loc) => {
                                tried.insert(table_id(&loc));
                                self.load_due(&loc).await.map_err(|e| (loc, e))
                            }
                            Err(e) => Err((target.clone(), e)),
                        };
                        match loaded {
                            Ok(Some(t)) => out.push(t),
                            Ok(None) => stats.table_errors += 1,
                            Err((loc, e)) => self.table_error(&loc, e.to_string(), stats),
                        }
                    }
                }
                Err((e, _)) => self.table_error(&target, e.to_string(), stats),
            }
        }
        // A table no longer found (or unreadable this cycle) is read afresh if it comes back.
        let read: std::collections::HashSet<&str> = out.iter().map(|t| t.id.as_str()).collect();
        self.logs.retain(|id, _| read.contains(id.as_str()));
        self.broken_ids.retain(|id| tried.contains(id));
        self.iceberg.retain(|id, _| tried.contains(id));
        self.polling.retain(|id| tried.contains(id));
        // A root that lists is not a row of its own (its error, if it had one, is gone).
        self.book.retain(|id, b| {
            tried.contains(id) && (b.debt.is_some() || b.error.is_some() || b.last_job.is_some())
        });
        out
    }

    /// A table for this cycle: read when `polling` says so, else as last read. A broken one
    /// waits out its own back-off (None; its error is said again when it is retried).
    async fn load_due(&mut self, loc: &Location) -> Result<Option<Loaded>> {
        let id = table_id(loc);
        let due = self.polling.due(&id, self.cycle) || self.busy(&id);
        if self.broken_ids.contains(&id) && !due {
            return Ok(None);
        }
        let loaded = match (self.logs.contains_key(&id), self.iceberg.get(&id)) {
            (true, _) => self.load_delta(loc, due).await,
            // An Iceberg table between its reads: as last read.
            (false, Some(seen)) if !due => Ok(seen.loaded(loc, &id)),
            (false, _) => self.load(loc).await.inspect(|t| self.seen_iceberg(t)),
        };
        match loaded {
            Ok(t) => {
                self.broken_ids.remove(&id);
                Ok(Some(t))
            }
            Err(e @ EngineError::NotATable { .. }) => Err(e),
            Err(e) => {
                self.broken_ids.insert(id.clone());
                self.polling.read(&id, self.cycle, false);
                Err(e)
            }
        }
    }

    /// An Iceberg table just read: kept for the cycles it is not read, and read again next
    /// cycle only if its catalog named new metadata (or work is pending on it).
    fn seen_iceberg(&mut self, t: &Loaded) {
        let Source::Iceberg { catalog, metadata } = &t.source else {
            return;
        };
        let changed = self
            .iceberg
            .get(&t.id)
            .is_none_or(|seen| seen.metadata != *metadata)
            || self.busy(&t.id);
        self.polling.read(&t.id, self.cycle, changed);
        self.iceberg.insert(
            t.id.clone(),
            IcebergSeen {
                catalog: catalog.clone(),
                metadata: metadata.clone(),
                report: t.report.clone(),
            },
        );
    }

    /// A table with a job queued or running: read every cycle (its state moves).
    fn busy(&self, id: &str) -> bool {
        self.in_flight.contains_key(id) || self.queue.contains(id)
    }

    /// The tables below `target`: Delta tables, and Iceberg tables when a catalog is named.
    /// The tables its last listing found are not probed again (see `rediscover`).
    async fn discover(
        &self,
        store: &Arc<dyn ObjectStore>,
        target: &Location,
    ) -> Result<Vec<FoundTable>> {
        let iceberg = self.policy.iceberg_catalog.is_some();
        let root = target.display();
        let known = self.polling.known(&root);
        Ok(
            rediscover(store, &root, self.open.discovery_depth, known, &|_| {})
                .await?
                .into_iter()
                .filter(|t| {
                    t.format == TableFormat::Delta || (iceberg && t.format == TableFormat::Iceberg)
                })
                .collect(),
        )
    }

    fn table_error(&mut self, loc: &Location, error: String, stats: &mut CycleStats) {
        stats.table_errors += 1;
        self.book.entry(table_id(loc)).or_default().error = Some(error.clone());
        self.emit(Line::TableError {
            ts: ts(now_ms()),
            table: table_id(loc),
            error,
        });
    }

    /// Reads `loc` and decides for each of its partitions as a cycle does (the decision lines
    /// go to the history and the sink too), without running a job: the caller runs the due
    /// partitions' job through its own runner (see `CallerJob`).
    pub async fn decide_only(&mut self, loc: &Location) -> Result<TableDecisions> {
        let t = self.load_delta(loc, true).await?;
        let mut counts = Counts::default();
        let (job, decisions) = self.decide_table(&t, now_ms(), &mut counts).await;
        Ok(TableDecisions {
            table: t.id.clone(),
            decisions,
            job: job.map(|spec| CallerJob {
                spec,
                started: Instant::now(),
            }),
        })
    }

    /// The caller started `job`: its partitions are decided "running" until it is recorded.
    pub fn started(&mut self, job: &mut CallerJob) {
        job.started = Instant::now();
        if let Ok(mut s) = job.spec.state.lock() {
            s.since_ms = now_ms();
        }
        self.in_flight.insert(
            job.spec.table.clone(),
            InFlight {
                partitions: job.spec.values(),
                state: job.spec.state.clone(),
            },
        );
        self.publish();
    }

    /// The caller's `job` ended: its result lines, the table's failure record, the metrics, as
    /// for `watch`'s own jobs.
    pub fn record(&mut self, job: CallerJob, end: JobEnd) {
        let done = JobDone::new(job.spec, end, job.started);
        self.record_done(done);
        // A caller has no cycle lines: what ended is not counted in one.
        self.ended = CycleStats::default();
        self.publish();
    }

    /// One table through the pipeline's read and decide steps: its recent writes are read, every
    /// partition decided (`round`, pure), the job over its due partitions planned (none while
    /// one is in flight), and the decisions recorded. Returns the job and the decisions.
    async fn decide_table(
        &mut self,
        t: &Loaded,
        now: i64,
        counts: &mut Counts,
    ) -> (Option<JobSpec>, Vec<DecisionLine>) {
        let activity = self.read_activity(t, now).await;
        let depth = self.read_depth(t, now).await;
        let (target_file_size, _) = self.target_for(t);
        let eligible_for = self.eligible_for(t, now);
        let gate = self
            .schedules
            .get(&t.id)
            .map(|s| s.gate(&self.backoff(), now))
            .unwrap_or(schedule::Gate::Ready);
        let busy = self.in_flight.get(&t.id).map(|job| round::Busy {
            partitions: &job.partitions,
            doing: job
                .state
                .lock()
                .map(|s| s.describe(now))
                .unwrap_or_else(|_| "running".into()),
        });
        let read = round::TableRead {
            table: &t.id,
            partitions: t
                .report
                .partitions
                .iter()
                .map(|p| round::PartitionSizes {
                    values: &p.values,
                    files: p.stats.files,
                    small_files: p.stats.small_files,
                    bytes: p.stats.bytes,
                })
                .collect(),
            activity: &activity,
            eligible_for: eligible_for.as_ref(),
            gate: &gate,
            busy,
            age_since: self
                .policy
                .aged
                .map(|a| now.saturating_sub(a.age.as_millis().min(i64::MAX as u128) as i64)),
            depth: &depth,
            target_file_size: target_file_size
                .or(t.report.table_target_file_size)
                .unwrap_or(self.open.thresholds.target_file_size),
            floors: self.floors.get(&t.id),
        };
        let round = round::decide_table(&self.policy, &read, now);
        drop(read);
        let book = self.book.entry(t.id.clone()).or_default();
        book.debt = Some(fleet::Debt::of(&t.report));
        book.reason = fleet::idle_reason(&round.lines);
        book.error = None;
        self.activity.insert(t.id.clone(), activity);
        let job = (!round.due.is_empty()).then(|| self.job_spec(t, round.due, round.purpose, now));
        for d in &round.lines {
            counts.add(d.decision);
        }
        self.record_table(t, job.as_ref(), &round.lines, now);
        (job, round.lines)
    }

    /// The table's writes since the last round (kept across rounds, read forward): a Delta
    /// table's commits, an Iceberg table's snapshots (`iceberg_activity`). One that cannot be
    /// read leaves decisions that need write times saying they are unknown.
    async fn read_activity(&mut self, t: &Loaded, now: i64) -> Activity {
        let horizon_ms = self.policy.horizon().as_millis().min(i64::MAX as u128) as i64;
        let mut activity = self.activity.remove(&t.id).unwrap_or_default();
        let (store, cols) = match &t.source {
            Source::Delta { store, cols } => (store, cols),
            Source::Iceberg { metadata, .. } => {
                let read = iceberg_activity::update(
                    &mut activity,
                    metadata,
                    &self.open,
                    horizon_ms,
                    now,
                    ACTIVITY_BUDGET,
                )
                .await;
                if let Err(e) = read {
                    // Decisions that need write times then say they are unknown.
                    tracing::warn!("janitor: reading recent snapshots of {}: {e}", t.id);
                }
                return activity;
            }
        };
        if let Err(e) = activity
            .update(
                store,
                &t.id,
                t.report.version,
                cols,
                horizon_ms,
                now,
                ACTIVITY_BUDGET,
            )
            .await
        {
            // Decisions that need write times then say they are unknown.
            tracing::warn!("janitor: reading recent commits of {}: {e}", t.id);
        }
        activity
    }

    /// `t`'s overlap depth on the order the janitor keeps, read again when the last read no
    /// longer serves (`TableDepth::serves`); only Delta tables with an order to keep.
    async fn read_depth(&mut self, t: &Loaded, now: i64) -> DepthState {
        let Some(recluster) = self.policy.recluster else {
            return DepthState::NotJudged;
        };
        if !matches!(t.source, Source::Delta { .. }) {
            return DepthState::NotJudged;
        }
        let Some(wanted) = depth_read::wanted(&self.policy, &t.report.log.features) else {
            return DepthState::NotJudged;
        };
        let cached = self.depths.get(&t.id);
        // While its job runs nothing is planned for the table: no read is worth its cost.
        if self.busy(&t.id) {
            return cached.map_or(DepthState::NotJudged, |d| DepthState::Read(d.clone()));
        }
        if let Some(d) = cached
            && d.serves(t.report.version, now, recluster.every)
        {
            return DepthState::Read(d.clone());
        }
        let every_ms = recluster.every.as_millis().min(i64::MAX as u128) as i64;
        if let Some((at, why)) = self.depth_failures.get(&t.id)
            && now.saturating_sub(*at) < every_ms
        {
            return DepthState::Failed(why.clone());
        }
        let read = depth_read::read(
            &t.loc,
            &self.open.storage_options,
            wanted,
            recluster,
            self.policy.small_file_size,
            now,
        )
        .await;
        match read {
            Ok(mut d) => {
                self.depth_failures.remove(&t.id);
                let known: Vec<&PartitionValues> =
                    t.report.partitions.iter().map(|p| &p.values).collect();
                let (over, unmatched) = depth_read::keyed_as(std::mem::take(&mut d.over), &known);
                d.over = over;
                for p in unmatched {
                    tracing::warn!(
                        "janitor: {}: the depth read's partition {} matches none of the log's; it is not judged",
                        t.id,
                        p.label()
                    );
                }
                self.set_floors(t, &d);
                self.depths.insert(t.id.clone(), d.clone());
                DepthState::Read(d)
            }
            Err(e) => {
                tracing::warn!("janitor: reading depth of {}: {e}", t.id);
                self.depths.remove(&t.id);
                let why = crate::secrets::scrub(&e.to_string()).into_owned();
                self.depth_failures.insert(t.id.clone(), (now, why.clone()));
                DepthState::Failed(why)
            }
        }
    }

    /// After a read: the partitions re-clustered since the last one keep the depth they were
    /// left at as their floor while it is past the bound.
    fn set_floors(&mut self, t: &Loaded, d: &depth_read::TableDepth) {
        if let Some(done) = self.reclustered.remove(&t.id) {
            for p in done {
                let left = d.over.get(&p).cloned().unwrap_or_default();
                let floors = self.floors.entry(t.id.clone()).or_default();
                if left.is_empty() {
                    floors.remove(&p);
                } else {
                    floors.insert(p.clone(), left.clone());
                }
                // Kept in the history: a `--once` run from cron starts from it.
                self.emit(Line::Floor {
                    ts: ts(now_ms()),
                    table: t.id.clone(),
                    partition: p,
                    left,
                });
            }
        }
    }

    /// The policy's target for `t`'s jobs (None: the table's own), and why when the policy
    /// chose it by the table's size.
    fn target_for(&self, t: &Loaded) -> (Option<u64>, Option<String>) {
        let auto = (self.policy.target_file_size.is_none()
            && t.report.table_target_file_size.is_none())
        .then(|| policy::auto_target(t.report.stats.bytes));
        let target = self
            .policy
            .target_file_size
            .or(auto.as_ref().map(|(t, _)| *t));
        (target, auto.map(|(_, why)| why))
    }

    /// The policy's `partitions` predicate for `t`, its date macros expanded for `now`.
    fn eligible_for(
        &self,
        t: &Loaded,
        now: i64,
    ) -> Option<std::result::Result<Predicate, policy::PartitionsError>> {
        let f = self.policy.partitions.as_ref()?;
        let today = chrono::DateTime::from_timestamp_millis(now)
            .unwrap_or_default()
            .date_naive();
        Some(
            f.expand(today)
                .map_err(policy::PartitionsProblem::Macro)
                .and_then(|text| {
                    Predicate::parse(&text, &t.report.partition_columns)
                        .map_err(policy::PartitionsProblem::Predicate)
                })
                .map_err(|problem| policy::PartitionsError {
                    line: f.line,
                    problem,
                }),
        )
    }

    /// The job over `t`'s due partitions, with this round's budget and the table's spacing.
    fn job_spec(
        &mut self,
        t: &Loaded,
        due: Vec<DuePartition>,
        purpose: JobPurpose,
        now: i64,
    ) -> JobSpec {
        let throttle = self.throttle_for(t, now);
        // The policy's target, else the table's own, else one by the table's size.
        let (target_file_size, target_reason) = self.target_for(t);
        if matches!(purpose, JobPurpose::Recluster(_)) {
            // The layout is about to change: the next judgement reads it afresh, and sets
            // these partitions' floors.
            self.depths.remove(&t.id);
            self.reclustered
                .insert(t.id.clone(), due.iter().map(|d| d.values.clone()).collect());
        }
        let layout = match &purpose {
            // A clustered table's small files are clustered as they are merged.
            JobPurpose::SmallFiles => self.policy.layout.clone(),
            JobPurpose::Recluster(order) => crate::compact::ordering::LayoutRequest::Order {
                kind: order.kind,
                columns: order.columns.clone(),
                whole_partitions: true,
            },
        };
        let spacer = throttle.budget.commit_spacing_ms.map(|ms| {
            let last = self.last_commits.entry(t.id.clone()).or_default().clone();
            Arc::new(CommitSpacer::sharing(Duration::from_millis(ms), last))
        });
        let work = match &t.source {
            Source::Delta { .. } => Work::Delta(Box::new(CompactRequest {
                selection: Selection::Partitions(due.iter().map(|d| d.values.clone()).collect()),
                target_file_size,
                min_file_size: Some(self.policy.min_file_size),
                parallelism: 1,
                max_bin_bytes: None,
                strategy: self.policy.strategy,
                deleted_rows: self.policy.deleted_rows,
                layout,
                sort_memory: None,
                storage_options: self.open.storage_options.clone(),
            })),
            Source::Iceberg { catalog, .. } => Work::Iceberg(Box::new(iceberg_jobs::IcebergWork {
                req: IceRequest {
                    catalog: catalog.clone(),
                    target_file_size,
                    partitions: due.iter().map(|d| d.values.label()).collect(),
                    max_retries: crate::iceberg::compact::job::MAX_RETRIES,
                    // The policy's order (an Iceberg table has no clustering of its own).
                    order: match layout {
                        crate::compact::ordering::LayoutRequest::Order {
                            kind,
                            columns,
                            whole_partitions,
                        } => Some(crate::iceberg::compact::order::OrderRequest {
                            kind,
                            columns,
                            whole_partitions,
                        }),
                        _ => None,
                    },
                    ..Default::default()
                },
                open: self.open.clone(),
            })),
        };
        JobSpec {
            table: t.id.clone(),
            loc: t.loc.clone(),
            work,
            benefit: benefit_of(&t.report, &due, &purpose),
            target_reason,
            partitions: due,
            purpose,
            rewrite: t.report.log.rewrite,
            thresholds: self.thresholds(),
            ratio: observed_ratio(&t.report.commits),
            rates: self.open.prices.for_scheme(t.loc.url.scheme()),
            executor: self.policy.executor.clone(),
            throttle,
            spacer,
            talk: None,
            state: Arc::new(Mutex::new(JobState {
                since_ms: now,
                ..Default::default()
            })),
        }
    }

    /// The round's record: metrics, and every decision to the history and the sink.
    fn record_table(
        &mut self,
        t: &Loaded,
        job: Option<&JobSpec>,
        lines: &[DecisionLine],
        now: i64,
    ) {
        if let Some(m) = &self.metrics {
            let s = &t.report.stats;
            m.table_read(
                &t.id,
                s.files,
                s.small_files,
                s.health_score,
                job.map_or(0, |j| j.partitions.len() as u64),
                now,
            );
            m.rewrite(&t.id, t.report.log.rewrite);
        }
        for d in lines {
            // A partition not due for the same reason as last cycle is not said again: at
            // thousands of tables those lines would be nearly all of the history.
            let key = (d.table.clone(), d.partition.clone());
            if d.decision == DecisionKind::NotDue {
                if self.said.get(&key) == Some(&d.reason) {
                    continue;
                }
                self.said.insert(key, d.reason.clone());
            } else {
                self.said.remove(&key);
            }
            self.emit(Line::Decision(d.clone()));
        }
    }

    /// One cycle: read, decide, queue the due tables' jobs and start what the budget allows
    /// (`max_jobs` in flight, one per table; `queue` orders them), maintain, record. With `wait`, the cycle waits for its jobs
    /// (`--once`); otherwise they go on in the background and later cycles say so.
    pub async fn cycle(&mut self, cancel: &CancellationToken, wait: bool) -> CycleStats {
        let started = Instant::now();
        self.cycle += 1;
        let mut stats = CycleStats::default();
        let now = now_ms();
        if let Some(m) = &self.metrics {
            m.cycle_started(now);
        }
        let tables = self.tables(&mut stats).await;
        stats.tables = tables.len() as u64;
        self.active_writer = self.throttle.then(|| active_writer(&tables, now)).flatten();
        let mut counts = Counts::default();
        let mut due = Vec::new();
        for t in &tables {
            stats.partitions += t.report.partitions.len() as u64;
            if let Some(job) = self.decide_table(t, now, &mut counts).await.0 {
                due.push(job);
            }
        }
        // Forget activity of tables that are gone.
        let present: std::collections::HashSet<&str> =
            tables.iter().map(|t| t.id.as_str()).collect();
        self.activity.retain(|k, _| present.contains(k.as_str()));
        self.depths.retain(|k, _| present.contains(k.as_str()));
        self.depth_failures
            .retain(|k, _| present.contains(k.as_str()));
        self.reclustered.retain(|k, _| present.contains(k.as_str()));
        self.floors.retain(|k, _| present.contains(k.as_str()));
        self.said.retain(|(t, _), _| present.contains(t.as_str()));
        self.queue.retain_tables(|t| present.contains(t));
        // Checkpoints and vacuums of Delta logs; an Iceberg table's vacuum through its catalog.
        let facts: Vec<maintenance::TableFacts> = tables
            .iter()
            .map(|t| match &t.source {
                Source::Delta { .. } => maintenance::TableFacts::of(&t.loc, &t.id, &t.report),
                Source::Iceberg { catalog, .. } => {
                    maintenance::TableFacts::iceberg(&t.loc, &t.id, catalog)
                }
            })
            .collect();
        drop(tables);
        stats.due = due.iter().map(|j| j.partitions.len() as u64).sum();
        self.cancel = cancel.clone();
        self.queue.age();
        for job in due {
            self.queue.push(job.table.clone(), job.benefit, job);
        }
        self.dispatch();
        self.say_queued();
        if wait {
            self.wait_for_jobs().await;
        }
        self.maintain(&facts, now, cancel).await;
        self.end_cycle(stats, &counts, started)
    }

    /// Checkpoints and vacuums what the policy says is due, a line for each decision.
    async fn maintain(
        &mut self,
        facts: &[maintenance::TableFacts],
        now: i64,
        cancel: &CancellationToken,
    ) {
        let lines = maintenance::maintain(
            facts,
            &self.policy.maintenance,
            &mut self.last_vacuum,
            &self.open,
            now,
            cancel,
        )
        .await;
        for l in lines {
            self.emit(Line::Maintenance(l));
        }
    }

    /// The cycle's record: jobs that ended since the last one, the schedules of tables still
    /// backing off (repeated, so the history's tail always has them), the cycle line.
    fn end_cycle(
        &mut self,
        mut stats: CycleStats,
        counts: &Counts,
        started: Instant,
    ) -> CycleStats {
        let ended = std::mem::take(&mut self.ended);
        stats.jobs = ended.jobs;
        stats.failed_jobs = ended.failed_jobs;
        stats.cancelled = ended.cancelled;
        stats.not_started = ended.not_started;
        stats.running = self.in_flight.len() as u64;
        let end = now_ms();
        let quiet: Vec<String> = self
            .schedules
            .iter()
            .filter(|(t, s)| s.failures > 0 && !ended.ended_tables.contains(*t))
            .map(|(t, _)| t.clone())
            .collect();
        for table in quiet {
            let schedule = self.schedules[&table].clone();
            self.emit(Line::Schedule {
                ts: ts(end),
                table,
                schedule,
            });
        }
        self.emit(Line::Cycle {
            ts: ts(end),
            cycle: self.cycle,
            tables: stats.tables,
            partitions: stats.partitions,
            due: counts.get(DecisionKind::Due),
            recluster: counts.get(DecisionKind::Recluster),
            not_due: counts.get(DecisionKind::NotDue),
            skipped: counts.get(DecisionKind::Skipped),
            backing_off: counts.get(DecisionKind::BackingOff),
            suspended: counts.get(DecisionKind::Suspended),
            running: counts.get(DecisionKind::Running),
            jobs: stats.jobs,
            failed_jobs: stats.failed_jobs,
            jobs_in_flight: stats.running,
            table_errors: stats.table_errors,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        if let Some(m) = &self.metrics {
            m.watched(self.watch_requests.requests());
            let summarized = self.summarized_tables();
            m.kept(self.logs.len() - summarized, summarized);
            m.cycle_ended(now_ms());
        }
        self.refresh();
        stats
    }

    /// Delta tables idle long enough that only their summary is kept (`followed`).
    pub fn summarized_tables(&self) -> usize {
        self.logs.values().filter(|f| f.is_summary()).count()
    }

    /// Sends the fleet as it is now to whoever looks (nothing when no one does).
    fn publish(&self) {
        if let Some(tx) = &self.fleet {
            tx.send_replace(Arc::new(self.fleet_snapshot()));
        }
    }

    /// Every table's row (`fleet`): its job's progress, its place in the queue, its back-off or
    /// error, else why it is idle.
    pub fn fleet_snapshot(&self) -> fleet::FleetSnapshot {
        use fleet::FleetState;
        let now = now_ms();
        let waiting = self.queue.waiting();
        let of = waiting.len();
        let mut queued: HashMap<&str, (usize, String)> = waiting
            .into_iter()
            .enumerate()
            .map(|(i, (q, why))| (q.table.as_str(), (i + 1, why)))
            .collect();
        let backoff = self.backoff();
        let rows = self
            .book
            .iter()
            .map(|(id, b)| {
                let state = if let Some(job) = self.in_flight.get(id) {
                    let s = job.state.lock().map(|s| s.clone()).unwrap_or_default();
                    FleetState::Running {
                        partitions: job.partitions.len(),
                        done: s.done,
                        pace_bytes_per_second: s.pace_bytes_per_second,
                        doing: s.describe(now),
                    }
                } else if let Some((place, why)) = queued.remove(id.as_str()) {
                    FleetState::Queued { place, of, why }
                } else if let Some(error) = &b.error {
                    FleetState::Broken {
                        error: error.clone(),
                    }
                } else {
                    let schedule = self.schedules.get(id);
                    let error = || {
                        schedule
                            .and_then(|s| s.last_error.clone())
                            .unwrap_or_else(|| "unknown".into())
                    };
                    match schedule.map(|s| s.gate(&backoff, now)) {
                        Some(schedule::Gate::BackingOff {
                            failures,
                            retry_in_ms,
                        }) => FleetState::BackingOff {
                            failures,
                            retry_in_ms,
                            error: error(),
                        },
                        Some(schedule::Gate::Suspended { failures, .. }) => FleetState::Suspended {
                            failures,
                            error: error(),
                        },
                        _ => FleetState::Idle {
                            reason: b.reason.clone(),
                        },
                    }
                };
                let spent_usd = b.spent_usd();
                fleet::FleetRow {
                    table: id.clone(),
                    state,
                    debt: b.debt,
                    last_job: b.last_job.clone(),
                    spent_usd,
                    month_usd: fleet::per_month(spent_usd, now.saturating_sub(self.started_ms)),
                }
            })
            .collect();
        fleet::FleetSnapshot {
            at_ms: now,
            cycle: self.cycle,
            since_ms: self.started_ms,
            running: self.in_flight.len(),
            max_jobs: self.policy.max_jobs.max(1),
            rows,
        }
    }

    /// Starts queued jobs while fewer than `max_jobs` are in flight, one per table at a time,
    /// best first (`queue`). A writer paces its own table's job (its throttle), never the
    /// others: a paced job holds one slot.
    fn dispatch(&mut self) {
        let budget = self.policy.max_jobs.max(1);
        while self.in_flight.len() < budget {
            if self.cancel.is_cancelled() {
                return;
            }
            let in_flight = &self.in_flight;
            let quota = self.policy.max_jobs_per_database;
            let Some(next) = self.queue.pop_next(|t| {
                in_flight.contains_key(t) || queue::database_at_quota(t, in_flight.keys(), quota)
            }) else {
                return;
            };
            let mut spec = next.job;
            spec.talk = Some(self.talk.clone());
            // Decided before a writer became active elsewhere: it yields from its start.
            if let Some(other) = self.active_writer.as_ref().filter(|o| **o != spec.table)
                && !spec.throttle.budget.background
            {
                spec.throttle =
                    throttle::yielding(&spec.throttle.writers, other, throttle::cores());
            }
            // Its age counts from its start, not from the decision that queued it.
            if let Ok(mut state) = spec.state.lock() {
                state.since_ms = now_ms();
            }
            self.in_flight.insert(
                spec.table.clone(),
                InFlight {
                    partitions: spec.values(),
                    state: spec.state.clone(),
                },
            );
            let table = spec.table.clone();
            let task =
                self.jobs
                    .spawn(jobs::run_job(spec, self.locks.clone(), self.cancel.clone()));
            self.tasks.insert(task.id(), table);
        }
    }

    /// Each queued job's place and why it waits.
    fn say_queued(&mut self) {
        let now = now_ms();
        let lines: Vec<Line> = self
            .queue
            .waiting()
            .into_iter()
            .map(|(q, why)| {
                let quota = self.policy.max_jobs_per_database;
                let held = match quota {
                    Some(n) if queue::database_at_quota(&q.table, self.in_flight.keys(), quota) => {
                        format!(
                            "; its database {} runs its quota of {n} job(s)",
                            queue::database_of(&q.table)
                        )
                    }
                    _ => String::new(),
                };
                Line::Activity {
                    ts: ts(now),
                    table: q.table.clone(),
                    partitions: q.job.values(),
                    message: format!(
                        "{why}; {} job(s) in flight, at most {} at once{held}",
                        self.in_flight.len(),
                        self.policy.max_jobs.max(1)
                    ),
                }
            })
            .collect();
        for l in lines {
            self.emit(l);
        }
    }
}

/// An Iceberg table as last read through its catalog.
struct IcebergSeen {
    catalog: String,
    metadata: String,
    report: TableReport,
}

impl IcebergSeen {
    fn loaded(&self, loc: &Location, id: &str) -> Loaded {
        Loaded {
            loc: loc.clone(),
            id: id.to_string(),
            report: self.report.clone(),
            source: Source::Iceberg {
                catalog: self.catalog.clone(),
                metadata: self.metadata.clone(),
            },
        }
    }
}

/// A Delta table whose writer is active now (the first found), if any.
fn active_writer(tables: &[Loaded], now: i64) -> Option<String> {
    tables
        .iter()
        .filter(|t| matches!(t.source, Source::Delta { .. }))
        .find(|t| {
            throttle::measure(
                &t.report.commits,
                &t.report.streaming_writers,
                now,
                throttle::WINDOW_MS,
            )
            .active()
        })
        .map(|t| t.id.clone())
}

/// What compacting `due` saves readers (files beyond the ideal count) for the bytes of its
/// small files.
/// What a job saves readers and what it rewrites: small files merged; or, re-clustering, the
/// files a lookup opens fewer for every byte of the partitions (all rewritten).
fn benefit_of(report: &TableReport, due: &[DuePartition], purpose: &JobPurpose) -> Benefit {
    let mut b = Benefit::default();
    for p in &report.partitions {
        let Some(d) = due.iter().find(|d| d.values == p.values) else {
            continue;
        };
        match purpose {
            JobPurpose::SmallFiles => {
                b.files_removed += p.stats.excess_files;
                b.bytes += p.stats.small_bytes;
            }
            JobPurpose::Recluster(_) => {
                b.files_removed += d.lookup_saving.round() as u64;
                b.bytes += p.stats.bytes;
            }
        }
    }
    b
}

/// Decisions of a cycle, counted by kind.
#[derive(Debug, Default)]
struct Counts(HashMap<DecisionKind, u64>);

impl Counts {
    fn add(&mut self, k: DecisionKind) {
        *self.0.entry(k).or_default() += 1;
    }

    fn get(&self, k: DecisionKind) -> u64 {
        self.0.get(&k).copied().unwrap_or(0)
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
}
