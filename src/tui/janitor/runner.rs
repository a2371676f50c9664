//! The loader's side of the janitor: one engine janitor with the policy (created when first
//! switched on; its decisions and results also go to the history file). A round's job is held
//! until the app starts it, planned with the engine's pipeline, run by the loader's job runner,
//! and its end recorded by the engine janitor whatever the path.

use crate::tui::task_error::TaskError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use super::state::Round;
use crate::engine::compact::events::JobEvent;
use crate::engine::compact::executor::Executor;
use crate::engine::compact::job::PreparedJob;
use crate::engine::janitor::history::{HistoryFile, Line};
use crate::engine::janitor::policy::Policy;
use crate::engine::janitor::{CallerJob, Janitor, JobEnd, Planned};
use crate::engine::location::Location;
use crate::engine::options::OpenOptions;
use crate::tui::action::Action;
use crate::tui::tasks::Parked;

type Shared = Arc<tokio::sync::Mutex<Option<Janitor>>>;

pub struct JanitorRunner {
    policy: Policy,
    history: HistoryFile,
    janitor: Shared,
    /// The last round's job per table URI, until the app starts it (a newer round replaces
    /// it; one never started was never marked in flight).
    ready: Arc<Mutex<HashMap<String, CallerJob>>>,
    /// Jobs planned and handed to the job runner, by job id, until it starts them.
    planned: Arc<Mutex<HashMap<u64, CallerJob>>>,
}

/// A janitor job the job runner runs: `observe` its events, `end` it once.
pub struct RunningJob {
    job: CallerJob,
    janitor: Shared,
}

impl RunningJob {
    pub fn observer(&self) -> impl Fn(&JobEvent) + Send + 'static {
        self.job.observer()
    }

    /// Records its end with the engine janitor (result lines, the table's back-off).
    pub async fn end(self, end: JobEnd) {
        if let Some(j) = self.janitor.lock().await.as_mut() {
            j.record(self.job, end);
        }
    }
}

impl JanitorRunner {
    /// The policy and history the janitor over a root uses too (`tui::fleet`).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn history(&self) -> &HistoryFile {
        &self.history
    }

    pub fn new(policy: Policy, history: HistoryFile) -> Self {
        Self {
            policy,
            history,
            janitor: Arc::default(),
            ready: Arc::default(),
            planned: Arc::default(),
        }
    }

    /// A decision round for `uri`; comes back as `Action::JanitorDecided`.
    pub fn cycle(&self, id: u64, uri: String, opts: OpenOptions, tx: UnboundedSender<Action>) {
        let (slot, ready, policy, path) = (
            self.janitor.clone(),
            self.ready.clone(),
            self.policy.clone(),
            self.history.clone(),
        );
        tokio::spawn(async move {
            let work = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                let mut guard = slot.lock().await;
                if guard.is_none() {
                    let history = path.open().map_err(|e| {
                        TaskError::from(format!(
                            "cannot open the history file {}: {e}",
                            path.path.display()
                        ))
                    })?;
                    *guard = Some(Janitor::new(
                        vec![loc.clone()],
                        policy,
                        opts,
                        history,
                        Box::new(|_: &Line| {}),
                        false,
                    ));
                }
                let Some(j) = guard.as_mut() else {
                    return Err("the janitor did not start".into());
                };
                let d = j.decide_only(&loc).await.map_err(TaskError::from)?;
                let partitions = d.job.as_ref().map(CallerJob::partitions);
                if let Ok(mut m) = ready.lock() {
                    match d.job {
                        Some(job) => m.insert(uri.clone(), job),
                        None => m.remove(&uri),
                    };
                }
                Ok(Round {
                    decisions: d.decisions,
                    job: partitions,
                })
            };
            let result = work.await;
            let _ = tx.send(Action::JanitorDecided { id, result });
        });
    }

    /// Plans the round's job for `uri` as `id`, to run its bins on `executor` as manual jobs
    /// do; the plan comes back as `PlanReady` and is kept in `prepared` for `StartJob`. A plan
    /// with nothing to do, or none, is recorded as the job's end at once.
    pub fn job(
        &self,
        id: u64,
        uri: String,
        executor: Executor,
        tx: UnboundedSender<Action>,
        prepared: Parked<PreparedJob>,
    ) {
        let job = self.ready.lock().ok().and_then(|mut m| m.remove(&uri));
        let (slot, planned) = (self.janitor.clone(), self.planned.clone());
        tokio::spawn(async move {
            let Some(mut job) = job else {
                let result = Err("the janitor no longer has a job for the table".into());
                let _ = tx.send(Action::PlanReady { id, result });
                return;
            };
            job.set_executor(executor);
            if let Some(j) = slot.lock().await.as_mut() {
                j.started(&mut job);
            }
            match job.plan().await {
                Planned::Ready(p) => {
                    if let Ok(mut m) = planned.lock() {
                        m.insert(id, job);
                    }
                    crate::tui::loader::park_plan(&prepared, id, Ok(*p), &tx);
                }
                Planned::Ended(end) => {
                    let text = end
                        .error()
                        .map_or_else(|| "nothing to compact".to_string(), str::to_string);
                    if let Some(j) = slot.lock().await.as_mut() {
                        j.record(job, *end);
                    }
                    let _ = tx.send(Action::PlanReady {
                        id,
                        result: Err(text.into()),
                    });
                }
            }
        });
    }

    /// The janitor's job `id`, if it is one, for the job runner that starts it.
    pub fn take(&self, id: u64) -> Option<RunningJob> {
        let job = self.planned.lock().ok()?.remove(&id)?;
        Some(RunningJob {
            job,
            janitor: self.janitor.clone(),
        })
    }
}
