//! Runs the app's effects as background work: loads, log watchers, compaction planning,
//! compaction jobs (on their own thread and runtime, see `engine::compact::job`), conversions,
//! maintenance and the janitor. Every task is in one registry by id and kind (`tasks`), and
//! every preview is parked there until it runs or is discarded.
//! Results and progress come back to `App::update` as `Action`s over one channel.

use crate::tui::task_error::TaskError;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::action::{Action, Effect, TaskProgress};
use super::janitor::JanitorRunner;
use crate::engine::compact::budget::Throttle;
use crate::engine::compact::events::{JobEvent, JobSummary};
use crate::engine::compact::executor::Executor;
use crate::engine::compact::job::{CompactRequest, PreparedJob, run_isolated};
use crate::engine::compact::locks::PartitionLocks;
use crate::engine::delta::watch::{LogEvent, WatchOptions, default_poll, follow, follow_from};
use crate::engine::janitor::JobEnd;
use crate::engine::janitor::history::HistoryFile;
use crate::engine::janitor::policy::Policy;
use crate::engine::janitor::throttle;
use crate::engine::location::Location;
use crate::engine::model::partition::PartitionValues;
use crate::engine::open::{Opened, OpenedHandle, open_handle};
use crate::engine::options::OpenOptions;
use crate::engine::parquet_folder::convert::{ConvertPlan, convert, plan_convert};
use crate::engine::table::{OpenedLog, Table};
use crate::tui::maintenance_tasks::MaintenanceTasks;
use crate::tui::preview::PlannedJob;
use crate::tui::tasks::{Parked, TaskKind, Tasks};

pub struct Loader {
    opts: OpenOptions,
    tx: mpsc::UnboundedSender<Action>,
    /// Loads, jobs and watches: one map by id (`tasks`).
    tasks: Tasks,
    /// Previewed compaction jobs, until started or discarded.
    prepared: Parked<PreparedJob>,
    locks: Arc<PartitionLocks>,
    maintenance: MaintenanceTasks,
    /// Where compaction jobs' bins are rewritten.
    executor: Executor,
    janitor: JanitorRunner,
    /// Previewed conversions, until confirmed or discarded.
    convert_plans: Parked<(Location, ConvertPlan)>,
    /// The log of the Delta table loaded last, until its live log starts from it (no second
    /// replay) or another load replaces it: one table's state at most.
    opened_log: Arc<Mutex<Option<OpenedLog>>>,
}

impl Loader {
    pub fn new(opts: OpenOptions, tx: mpsc::UnboundedSender<Action>) -> Self {
        Self::with_locks(opts, tx, Arc::new(PartitionLocks::default()))
    }

    /// Compaction jobs run their bins on `executor`.
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.set_executor(executor);
        self
    }

    pub fn set_executor(&mut self, executor: Executor) {
        self.executor = executor;
    }

    /// A loader whose jobs take `locks`: shared with whatever else compacts in this process, so
    /// no two jobs rewrite one partition at once.
    pub fn with_locks(
        opts: OpenOptions,
        tx: mpsc::UnboundedSender<Action>,
        locks: Arc<PartitionLocks>,
    ) -> Self {
        Self {
            maintenance: MaintenanceTasks::new(opts.clone(), tx.clone()),
            tx,
            tasks: Tasks::default(),
            prepared: Parked::default(),
            janitor: JanitorRunner::new(
                Policy::builtin(opts.thresholds),
                crate::engine::janitor::history::default_path().into(),
            ),
            opts,
            locks,
            executor: Executor::Local,
            convert_plans: Parked::default(),
            opened_log: Arc::default(),
        }
    }

    /// The janitor (`a`) decides by `policy` and appends its decisions to `history`.
    pub fn set_janitor(&mut self, policy: Policy, history: impl Into<HistoryFile>) {
        self.janitor = JanitorRunner::new(policy, history.into());
    }

    pub fn run(&mut self, effect: Effect) {
        match effect {
            Effect::Load { id, uri } => self.load(id, uri),
            Effect::CancelLoad { id } => self.tasks.cancel(id, TaskKind::Load),
            Effect::PlanCompaction {
                id,
                uri,
                partitions,
                purge,
                layout,
                now_ms,
            } => self.plan(id, uri, partitions, purge, layout, now_ms),
            Effect::DiscardPlan { id } => self.prepared.discard(id),
            Effect::StartJob { id, full_speed } => self.start(id, full_speed),
            Effect::LiftPace { id } => self.lift_pace(id),
            Effect::CancelJob { id } => self.tasks.cancel(id, TaskKind::Job),
            Effect::Watch {
                id,
                uri,
                name,
                poll,
            } => self.watch(id, uri, name, poll),
            Effect::StopWatch { id } => self.tasks.cancel(id, TaskKind::Watch),
            Effect::PlanVacuum { id, uri } => self.maintenance.plan_vacuum(id, uri),
            Effect::MeasureSkipping { id, uri, format } => {
                self.maintenance.measure_skipping(id, uri, format)
            }
            Effect::StartVacuum { id } => {
                let cancel = self.tasks.start(id, TaskKind::Maintenance);
                self.maintenance.start_vacuum(id, cancel)
            }
            Effect::DiscardVacuum { id } => self.maintenance.discard(id),
            Effect::Checkpoint { id, uri } => self.maintenance.checkpoint(id, uri),
            Effect::StartFleet { id, root } => self.start_fleet(id, root),
            Effect::StopFleet { id } => self.tasks.cancel(id, TaskKind::Janitor),
            Effect::JanitorCycle { id, uri } => {
                self.janitor
                    .cycle(id, uri, self.opts.clone(), self.tx.clone())
            }
            Effect::JanitorJob { id, uri } => {
                let executor = self.executor.clone();
                let (tx, prepared) = (self.tx.clone(), self.prepared.clone());
                self.janitor.job(id, uri, executor, tx, prepared)
            }
            Effect::PlanConvert { id, uri } => self.plan_convert(id, uri),
            Effect::StartConvert { id } => self.start_convert(id),
            Effect::DiscardConvert { id } => self.convert_plans.discard(id),
            Effect::PlanIceberg {
                id,
                uri,
                catalog,
                partitions,
            } => self.iceberg(id, uri, catalog, partitions, true),
            Effect::StartIceberg {
                id,
                uri,
                catalog,
                partitions,
            } => self.iceberg(id, uri, catalog, partitions, false),
        }
    }

    /// Follows a table's log until `StopWatch` (or quit); every event becomes `Action::Log`.
    fn watch(&mut self, id: u64, uri: String, name: String, poll: Option<std::time::Duration>) {
        let token = self.tasks.start(id, TaskKind::Watch);
        let opened_log = self.opened_log.clone();
        let opts = self.opts.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let loc = match Location::parse(&uri) {
                Ok(l) => l,
                Err(e) => {
                    let event = LogEvent::Error {
                        kind: e.kind(),
                        message: e.to_string(),
                        retry_in: std::time::Duration::ZERO,
                    };
                    let _ = tx.send(Action::Log { watch: id, event });
                    return;
                }
            };
            let poll = poll.unwrap_or_else(|| default_poll(&loc));
            // The table just loaded is followed on from the state its report was built from.
            let opened = take_log(&opened_log).filter(|l| l.uri() == loc.display());
            let (etx, mut erx) = mpsc::unbounded_channel();
            let forward = async {
                while let Some(event) = erx.recv().await {
                    if tx.send(Action::Log { watch: id, event }).is_err() {
                        break;
                    }
                }
            };
            let following = async {
                match opened {
                    Some(log) => {
                        let watcher = log.watcher(WatchOptions::new(&opts, poll));
                        follow_from(watcher, etx, token).await
                    }
                    None => follow(&loc, name, &opts, poll, etx, token).await,
                }
            };
            tokio::join!(following, forward);
        });
    }

    /// An Iceberg compaction through its catalog: a dry run (the plan), or the job (its
    /// summary line).
    fn iceberg(
        &mut self,
        id: u64,
        uri: String,
        catalog: String,
        partitions: Vec<String>,
        dry_run: bool,
    ) {
        use crate::engine::iceberg::compact::job::{IceRequest, compact_iceberg};
        let opts = self.opts.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let req = IceRequest {
                catalog,
                partitions,
                dry_run,
                max_retries: crate::engine::iceberg::compact::job::MAX_RETRIES,
                ..Default::default()
            };
            let result = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                compact_iceberg(&loc, &req, &opts, &|_| {})
                    .await
                    .map_err(TaskError::from)
            }
            .await;
            let action = if dry_run {
                Action::IcebergPlanReady {
                    id,
                    result: result.map(Box::new),
                }
            } else {
                Action::IcebergCompacted {
                    id,
                    result: result.map(|s| s.summary_line()),
                }
            };
            let _ = tx.send(action);
        });
    }

    fn plan_convert(&mut self, id: u64, uri: String) {
        let opts = self.opts.clone();
        let tx = self.tx.clone();
        let plans = self.convert_plans.clone();
        tokio::spawn(async move {
            let result = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                let plan = plan_convert(&loc, &opts, &[], &|_| {})
                    .await
                    .map_err(TaskError::from)?;
                plans.park(id, (loc, plan.clone()));
                Ok(Box::new(plan))
            }
            .await;
            let _ = tx.send(Action::ConvertPlanReady { id, result });
        });
    }

    fn start_convert(&mut self, id: u64) {
        let opts = self.opts.clone();
        let tx = self.tx.clone();
        let planned = self.convert_plans.take(id);
        tokio::spawn(async move {
            let result = match planned {
                Some((loc, plan)) => convert(&loc, &plan, &opts).await.map_err(TaskError::from),
                None => Err("the previewed conversion is gone; preview it again".into()),
            };
            let _ = tx.send(Action::Converted { id, result });
        });
    }

    fn load(&mut self, id: u64, uri: String) {
        let token = self.tasks.start(id, TaskKind::Load);
        let opts = self.opts.clone();
        let tx = self.tx.clone();
        let opened_log = self.opened_log.clone();
        tokio::spawn(async move {
            let progress_tx = tx.clone();
            let progress = move |p: crate::engine::progress::LoadProgress| {
                let _ = progress_tx.send(Action::Progress {
                    task: id,
                    progress: TaskProgress::Load(p),
                });
            };
            let work = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                let opened = open_handle(&loc, &opts, &progress)
                    .await
                    .map_err(TaskError::from)?;
                Ok(match opened {
                    OpenedHandle::Table(t) => {
                        let (report, log) = t.into_report_and_log();
                        park_log(&opened_log, log);
                        Opened::Table(Box::new(report))
                    }
                    OpenedHandle::Root(r) => {
                        park_log(&opened_log, None);
                        Opened::Root(r)
                    }
                })
            };
            tokio::select! {
                _ = token.cancelled() => {}
                result = work => {
                    let _ = tx.send(Action::Loaded { load: id, result });
                }
            }
        });
    }

    fn plan(
        &mut self,
        id: u64,
        uri: String,
        partitions: Vec<PartitionValues>,
        purge: bool,
        layout: crate::engine::compact::ordering::LayoutRequest,
        now_ms: i64,
    ) {
        let opts = self.opts.clone();
        let executor = self.executor.clone();
        let tx = self.tx.clone();
        let prepared = self.prepared.clone();
        tokio::spawn(async move {
            let work = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                // Opened once: the report and delta-rs's snapshot read the log once.
                let table = Table::open(&loc, &opts, &|_| {})
                    .await
                    .map_err(TaskError::from)?;
                let report = table.report().clone();
                let mut req =
                    CompactRequest::for_partitions(partitions, opts.storage_options.clone());
                req.deleted_rows.purge = purge;
                req.layout = layout;
                let mut job = table
                    .prepare_compaction(&req, opts.thresholds)
                    .await
                    .map_err(TaskError::from)?;
                job.exec.executor = executor;
                // Ingestion first, as `compact` without `--parallelism` and the janitor do.
                job.set_throttle(throttle::for_table(
                    &report.commits,
                    &report.streaming_writers,
                    now_ms,
                ));
                Ok::<_, TaskError>(job)
            };
            park_plan(&prepared, id, work.await, &tx);
        });
    }

    /// Starts the parked job `id`; its first event is the pace it starts at (the writers'
    /// throttle, or full speed when the user chose it in the preview).
    fn start(&mut self, id: u64, full_speed: bool) {
        let mut job = self.prepared.take(id);
        if full_speed && let Some(job) = job.as_mut() {
            job.set_throttle(Throttle::full_speed_by_request(throttle::cores()));
        }
        // A janitor job's end is recorded by the engine janitor too, whatever the path.
        let janitor = self.janitor.take(id);
        let Some(job) = job else {
            // No runner will report on this job: end it here, once, so it is not left queued.
            let summary = JobSummary {
                errors: vec!["the previewed plan is gone; preview the compaction again".into()],
                ..Default::default()
            };
            if let Some(j) = janitor {
                tokio::spawn(j.end(JobEnd::never_started()));
            }
            let progress = TaskProgress::Job(Box::new(JobEvent::Finished(summary)));
            let _ = self.tx.send(Action::Progress { task: id, progress });
            return;
        };
        let cancel = self.tasks.start(id, TaskKind::Job);
        self.tasks.set_brakes(id, job.brakes());
        if let Some(t) = &job.throttle {
            let progress = TaskProgress::Job(Box::new(JobEvent::Pace(t.pace_note())));
            let _ = self.tx.send(Action::Progress { task: id, progress });
        }
        let tx = self.tx.clone();
        let locks = self.locks.clone();
        let (etx, mut erx) = mpsc::unbounded_channel();
        let observe = janitor.as_ref().map(|j| j.observer());
        tokio::spawn(async move {
            while let Some(event) = erx.recv().await {
                if let Some(observe) = &observe {
                    observe(&event);
                }
                let progress = TaskProgress::Job(Box::new(event));
                if tx.send(Action::Progress { task: id, progress }).is_err() {
                    break;
                }
            }
        });
        let handle = tokio::spawn(async move {
            // The runner sends the job's one `Finished` event on every path (a job cancelled
            // while it waits for a lock, a failed replan, a runtime that cannot start), so
            // nothing is added here: a second final event would contradict the first.
            let summary = run_isolated(job, locks, cancel, etx).await;
            if let Some(j) = janitor {
                j.end(JobEnd::ran(summary)).await;
            }
        });
        self.tasks.attach(id, handle);
    }

    /// Lifts job `id`'s pace and commit spacing (the user's `f`); its new pace comes back as
    /// its event. A job that already ended has nothing to lift.
    fn lift_pace(&mut self, id: u64) {
        let Some(brakes) = self.tasks.brakes(id) else {
            return;
        };
        let progress = TaskProgress::Job(Box::new(JobEvent::Pace(brakes.lift())));
        let _ = self.tx.send(Action::Progress { task: id, progress });
    }

    /// The janitor over the root `root` as task `id`, with the janitor's policy and history
    /// and the loader's executor (`tui::fleet`).
    fn start_fleet(&mut self, id: u64, root: String) {
        let cancel = self.tasks.start(id, TaskKind::Janitor);
        let mut policy = self.janitor.policy().clone();
        policy.executor = self.executor.clone();
        let run = super::fleet::runner::FleetRun {
            id,
            root,
            policy,
            history: self.janitor.history().clone(),
            opts: self.opts.clone(),
        };
        let handle = super::fleet::runner::start(run, cancel, self.tx.clone());
        self.tasks.attach(id, handle);
    }

    /// Jobs still running (they stop before their next commit once cancelled), the janitor
    /// over a root counted as one.
    pub fn active_jobs(&self) -> usize {
        self.tasks.active(TaskKind::Job) + self.tasks.active(TaskKind::Janitor)
    }

    /// Waits up to `limit` for cancelled jobs to stop, so no output is left half-written.
    pub async fn wait_jobs(&mut self, limit: std::time::Duration) {
        let mut tasks = self.tasks.take_handles(TaskKind::Job);
        tasks.extend(self.tasks.take_handles(TaskKind::Janitor));
        let _ = tokio::time::timeout(limit, futures::future::join_all(tasks)).await;
    }

    /// On quit: stop loads and jobs (jobs stop before their next commit).
    pub fn cancel_all(&mut self) {
        // A vacuum that has not begun deleting deletes nothing.
        self.tasks.cancel_all();
    }
}

/// Keeps a prepared job for `StartJob` and sends its plan (or why it could not be planned) as
/// `PlanReady`: the one way a manual or a janitor job reaches the preview.
pub(super) fn park_plan(
    prepared: &Parked<PreparedJob>,
    id: u64,
    result: Result<PreparedJob, TaskError>,
    tx: &mpsc::UnboundedSender<Action>,
) {
    let result = result.map(|job| {
        let planned = Box::new(PlannedJob {
            plan: job.plan.clone(),
            throttle: job.throttle.clone(),
        });
        prepared.park(id, job);
        planned
    });
    let _ = tx.send(Action::PlanReady { id, result });
}

/// Keeps `log` for the watch that follows the load (replacing any other table's).
fn park_log(slot: &Mutex<Option<OpenedLog>>, log: Option<OpenedLog>) {
    if let Ok(mut s) = slot.lock() {
        *s = log;
    }
}

fn take_log(slot: &Mutex<Option<OpenedLog>>) -> Option<OpenedLog> {
    slot.lock().ok().and_then(|mut s| s.take())
}
