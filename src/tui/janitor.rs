//! The janitor in the TUI (`a`): the same engine janitor and policy as `lakehealth watch`
//! decides for the open table every `interval`; its due partitions are flagged in the list with
//! their reason, and their jobs run through the TUI's own job runner, so they show in the jobs
//! panel and cancel (`x`) like manual ones. The "why" view (`w`) lists the last decisions.
//! This is the state and its pure transitions; `App::update` calls them.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::action::{Action, Effect};
use super::app::App;
use super::jobs::JobView;
use crate::engine::compact::executor::Executor;
use crate::engine::compact::job::{PreparedJob, prepare};
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::compact::spacing::{CommitSpacer, LastCommit};
use crate::engine::janitor::decide::DecisionKind;
use crate::engine::janitor::history::{DecisionLine, History, Line};
use crate::engine::janitor::policy::Policy;
use crate::engine::janitor::schedule::Backoff;
use crate::engine::janitor::{DueJob, Janitor};
use crate::engine::location::Location;
use crate::engine::open::OpenOptions;
use crate::engine::stats::table_report::PartitionValues;

/// A partition whose janitor jobs failed in a row.
#[derive(Debug, Clone, PartialEq)]
struct Held {
    failures: u32,
    error: String,
    /// When it may be started again; None: suspended until the janitor is switched off.
    retry_at: Option<Instant>,
}

/// Decisions the why view keeps (newest first).
const KEEP: usize = 200;

/// One decision as the why view lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct WhyEntry {
    /// RFC 3339, as in the history file.
    pub ts: String,
    pub partition: PartitionValues,
    pub rule: String,
    pub decision: DecisionKind,
    pub reason: String,
}

/// Whether the why view keeps `d`: a partition without a single small file is not worth a row
/// every round (most of a table's partitions are like that).
fn worth_a_row(d: &DecisionLine) -> bool {
    !(d.decision == DecisionKind::NotDue && d.small_files == 0)
}

#[derive(Debug)]
pub struct TuiJanitor {
    /// The policy in force, for humans ("built-in default: ..." or the file's).
    pub policy: String,
    pub interval: Duration,
    /// The table it is switched on for (its URI as the app names it), None: off.
    pub table: Option<String>,
    /// The newest decision per partition (the list's flags).
    flags: HashMap<PartitionValues, (DecisionKind, String)>,
    /// Newest first.
    pub why: VecDeque<WhyEntry>,
    /// A decision round is running (its id).
    pub cycle: Option<u64>,
    pub last_cycle: Option<Instant>,
    /// Jobs being planned: id -> partition.
    planning: HashMap<u64, PartitionValues>,
    /// Partitions with a janitor job (planned or running): partition -> job id.
    running: HashMap<PartitionValues, u64>,
    /// Partitions whose last janitor jobs failed: started again only after the policy's
    /// backoff, and never once suspended (it never spins).
    failed: HashMap<PartitionValues, Held>,
    backoff: Backoff,
    /// The last round's error (the table could not be read).
    pub error: Option<String>,
}

impl TuiJanitor {
    pub fn new(policy: &Policy) -> Self {
        Self {
            policy: policy.summary(),
            interval: policy.interval,
            table: None,
            flags: HashMap::new(),
            why: VecDeque::new(),
            cycle: None,
            last_cycle: None,
            planning: HashMap::new(),
            running: HashMap::new(),
            failed: HashMap::new(),
            backoff: Backoff {
                base: policy.backoff_base,
                max: policy.backoff_max,
                max_failures: policy.max_failures,
            },
            error: None,
        }
    }

    pub fn is_on(&self) -> bool {
        self.table.is_some()
    }

    /// Switches on for `table`, or off (flags and failures are forgotten; running jobs keep
    /// running, in the jobs panel, cancellable there).
    pub fn toggle(&mut self, table: &str) -> bool {
        if self.table.is_some() {
            self.table = None;
            self.flags.clear();
            self.failed.clear();
            self.last_cycle = None;
            false
        } else {
            self.table = Some(table.to_string());
            true
        }
    }

    /// Whether a decision round should start now.
    pub fn due_for_cycle(&self, now: Instant) -> bool {
        self.is_on()
            && self.cycle.is_none()
            && self
                .last_cycle
                .is_none_or(|t| now.duration_since(t) >= self.interval)
    }

    pub fn flag(&self, p: &PartitionValues) -> Option<&(DecisionKind, String)> {
        self.flags.get(p).filter(|(k, _)| *k == DecisionKind::Due)
    }

    /// A round's decisions arrived: flags and the why list follow them. Returns the due
    /// partitions to start a job for (none running for them, none failed before).
    pub fn decided(
        &mut self,
        id: u64,
        now: Instant,
        result: Result<(Vec<DecisionLine>, Vec<PartitionValues>), String>,
    ) -> Vec<PartitionValues> {
        if self.cycle != Some(id) {
            return Vec::new();
        }
        self.cycle = None;
        self.last_cycle = Some(now);
        if !self.is_on() {
            return Vec::new();
        }
        let (lines, due) = match result {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e);
                return Vec::new();
            }
        };
        self.error = None;
        self.flags = lines
            .iter()
            .map(|d| (d.partition.clone(), (d.decision, d.reason.clone())))
            .collect();
        for d in lines.into_iter().filter(worth_a_row) {
            // The same decision for the same reason again: one row, at its newest time (so a
            // table decided every 10 s does not grow the list by its partitions each time).
            self.why.retain(|w| {
                !(w.partition == d.partition && w.decision == d.decision && w.reason == d.reason)
            });
            self.why.push_front(WhyEntry {
                ts: d.ts,
                partition: d.partition,
                rule: d.rule,
                decision: d.decision,
                reason: d.reason,
            });
        }
        self.why.truncate(KEEP);
        let held = |p: &PartitionValues| {
            self.failed
                .get(p)
                .is_some_and(|h| h.retry_at.is_none_or(|t| now < t))
        };
        due.into_iter()
            .filter(|p| !self.running.contains_key(p) && !held(p))
            .collect()
    }

    /// A job for `p` is being planned as `id`.
    pub fn planning(&mut self, id: u64, p: PartitionValues) {
        self.running.insert(p.clone(), id);
        self.planning.insert(id, p);
    }

    /// Whether `id` is a janitor job being planned; it is no longer.
    pub fn planned(&mut self, id: u64) -> Option<PartitionValues> {
        self.planning.remove(&id)
    }

    /// The janitor's job `id` ended at `now` (None: it never started); `error` when it failed:
    /// the partition is held for the policy's backoff, then suspended after `max_failures` in a
    /// row. A success forgets its failures.
    pub fn job_ended(&mut self, id: u64, error: Option<String>, now: Instant) {
        let Some(p) = self
            .running
            .iter()
            .find(|(_, j)| **j == id)
            .map(|(p, _)| p.clone())
        else {
            return;
        };
        self.running.remove(&p);
        let Some(error) = error else {
            self.failed.remove(&p);
            return;
        };
        if !self.is_on() {
            return;
        }
        let failures = self.failed.get(&p).map_or(0, |h| h.failures) + 1;
        let retry_at =
            (failures < self.backoff.max_failures).then(|| now + self.backoff.delay(failures));
        self.failed.insert(
            p,
            Held {
                failures,
                error,
                retry_at,
            },
        );
    }

    pub fn owns(&self, id: u64) -> bool {
        self.running.values().any(|j| *j == id)
    }

    /// The line the table view shows while it is on.
    pub fn status(&self) -> Option<String> {
        self.table.as_ref()?;
        let due = self
            .flags
            .values()
            .filter(|(k, _)| *k == DecisionKind::Due)
            .count();
        let mut s = format!(
            "janitor on: {due} due, {} job(s) · policy: {}",
            self.running.len(),
            self.policy
        );
        if let Some(e) = &self.error {
            s.push_str(&format!(" · cannot read the table: {e}"));
        }
        let suspended = self
            .failed
            .values()
            .filter(|h| h.retry_at.is_none())
            .count();
        let backing_off = self.failed.len() - suspended;
        if backing_off > 0 {
            s.push_str(&format!(
                " · {backing_off} partition(s) backing off after a failed job"
            ));
        }
        if let Some(h) = self.failed.values().find(|h| h.retry_at.is_none()) {
            s.push_str(&format!(
                " · {suspended} partition(s) suspended after {} failed jobs (switch off and on to retry; last error: {})",
                self.backoff.max_failures, h.error
            ));
        }
        Some(s)
    }
}

impl App {
    /// `a`: switches the janitor on for the open table (a decision round starts at once) or off.
    pub(super) fn toggle_janitor(&mut self) -> Vec<Effect> {
        let Some(uri) = self.table.as_ref().map(|t| t.uri.clone()) else {
            return vec![];
        };
        if self.janitor.toggle(&uri) {
            self.janitor_tick()
        } else {
            vec![]
        }
    }

    /// Starts a decision round when the policy's interval has passed (and the table shown is
    /// still the one it is on for; another table switches it off).
    pub(super) fn janitor_tick(&mut self) -> Vec<Effect> {
        let shown = self.table.as_ref().map(|t| t.uri.clone());
        if self.janitor.is_on() && self.janitor.table != shown {
            self.janitor.toggle("");
            return vec![];
        }
        if !self.janitor.due_for_cycle(self.clock.now()) {
            return vec![];
        }
        let Some(uri) = shown else { return vec![] };
        let id = self.next_id();
        self.janitor.cycle = Some(id);
        vec![Effect::JanitorCycle { id, uri }]
    }

    pub(super) fn janitor_decided(
        &mut self,
        id: u64,
        result: Result<(Vec<DecisionLine>, Vec<PartitionValues>), String>,
    ) -> Vec<Effect> {
        let now = self.clock.now();
        let start = self.janitor.decided(id, now, result);
        let Some(uri) = self.janitor.table.clone() else {
            return vec![];
        };
        start
            .into_iter()
            .map(|partition| {
                let id = self.next_id();
                self.janitor.planning(id, partition.clone());
                Effect::JanitorJob {
                    id,
                    uri: uri.clone(),
                    partition,
                }
            })
            .collect()
    }

    /// The janitor's job for `p` was planned: it runs like a manual job (jobs panel, `x`).
    pub(super) fn janitor_planned(
        &mut self,
        id: u64,
        p: PartitionValues,
        result: Result<Box<CompactionPlan>, String>,
    ) -> Vec<Effect> {
        match result {
            Ok(plan) if plan.bins > 0 => {
                let uri = self.janitor.table.clone().unwrap_or_default();
                let number = self.job_number();
                self.jobs.push(JobView::new(id, number, uri, &plan));
                vec![Effect::StartJob { id }]
            }
            Ok(_) => {
                // Another compactor got there first: nothing left to merge.
                self.janitor.job_ended(id, None, self.clock.now());
                vec![Effect::DiscardPlan { id }]
            }
            Err(e) => {
                let error = format!("{}: planning failed: {e}", p.label());
                self.janitor.job_ended(id, Some(error), self.clock.now());
                vec![Effect::DiscardPlan { id }]
            }
        }
    }
}

/// The runner's side (`Loader`): one engine janitor with the policy, created when first
/// switched on, whose decisions also go to the history file; the due partitions' jobs are
/// planned with its requests (the policy's sizes, the throttle's budget).
pub struct JanitorRunner {
    policy: Policy,
    history: PathBuf,
    janitor: Arc<tokio::sync::Mutex<Option<Janitor>>>,
    due: Arc<Mutex<HashMap<(String, PartitionValues), DueJob>>>,
    /// Each table's last compaction commit: its jobs' commits are spaced from one another.
    last_commits: Arc<Mutex<HashMap<String, LastCommit>>>,
}

impl JanitorRunner {
    pub fn new(policy: Policy, history: PathBuf) -> Self {
        Self {
            policy,
            history,
            janitor: Arc::default(),
            due: Arc::default(),
            last_commits: Arc::default(),
        }
    }

    /// The commit spacing of `uri`'s next job, shared with its earlier jobs.
    fn spacer(&self, uri: &str, spacing_ms: Option<u64>) -> Option<Arc<CommitSpacer>> {
        let ms = spacing_ms?;
        let mut map = self.last_commits.lock().ok()?;
        let last = map.entry(uri.to_string()).or_default().clone();
        Some(Arc::new(CommitSpacer::sharing(
            Duration::from_millis(ms),
            last,
        )))
    }

    pub fn cycle(&self, id: u64, uri: String, opts: OpenOptions, tx: UnboundedSender<Action>) {
        let (slot, due, policy, path) = (
            self.janitor.clone(),
            self.due.clone(),
            self.policy.clone(),
            self.history.clone(),
        );
        tokio::spawn(async move {
            let work = async {
                let loc = Location::parse(&uri).map_err(|e| e.to_string())?;
                let mut guard = slot.lock().await;
                if guard.is_none() {
                    let history = History::open(&path).map_err(|e| {
                        format!("cannot open the history file {}: {e}", path.display())
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
                    return Err("the janitor did not start".to_string());
                };
                let d = j.decide_only(&loc).await.map_err(|e| e.to_string())?;
                let partitions: Vec<PartitionValues> =
                    d.due.iter().map(|j| j.values.clone()).collect();
                if let Ok(mut m) = due.lock() {
                    m.retain(|(u, _), _| *u != uri);
                    for j in d.due {
                        m.insert((uri.clone(), j.values.clone()), j);
                    }
                }
                Ok((d.decisions, partitions))
            };
            let result = work.await;
            let _ = tx.send(Action::JanitorDecided { id, result });
        });
    }

    /// Plans the due partition's job, to run its bins on `executor` as manual jobs do; the plan
    /// comes back as `PlanReady` and is kept in `prepared` for `StartJob`, as a previewed
    /// manual job is.
    pub fn job(
        &self,
        id: u64,
        uri: String,
        partition: PartitionValues,
        executor: Executor,
        tx: UnboundedSender<Action>,
        prepared: Arc<Mutex<HashMap<u64, PreparedJob>>>,
    ) {
        let due = self
            .due
            .lock()
            .ok()
            .and_then(|m| m.get(&(uri.clone(), partition.clone())).cloned());
        let spacer = due
            .as_ref()
            .and_then(|d| self.spacer(&uri, d.throttle.budget.commit_spacing_ms));
        tokio::spawn(async move {
            let work = async {
                let due = due.ok_or("the janitor no longer finds the partition due")?;
                let loc = Location::parse(&uri).map_err(|e| e.to_string())?;
                let mut job = prepare(&loc, &due.request, due.thresholds, due.ratio)
                    .await
                    .map_err(|e| e.to_string())?;
                job.set_budget(due.throttle.budget);
                job.exec.commit_spacing = spacer;
                job.exec.executor = executor;
                Ok::<_, String>(job)
            };
            super::loader::park_plan(&prepared, id, work.await, &tx);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stats::file_sizes::Thresholds;

    fn pv(d: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(d.into()))])
    }

    fn line(d: &str, kind: DecisionKind, reason: &str) -> DecisionLine {
        DecisionLine {
            ts: "2026-11-30T00:00:00.000Z".into(),
            table: "t".into(),
            partition: pv(d),
            rule: "default".into(),
            decision: kind,
            reason: reason.into(),
            files: 60,
            small_files: 60,
            bytes: 1,
        }
    }

    fn janitor() -> TuiJanitor {
        let t = Thresholds {
            target_file_size: 128 << 20,
            small_file_size: 128 << 20,
            max_file_size: 1 << 30,
        };
        TuiJanitor::new(&Policy::builtin(t))
    }

    #[test]
    fn due_partitions_are_flagged_and_started_once_and_a_failed_one_backs_off_then_suspends() {
        let mut j = janitor();
        let now = Instant::now();
        assert!(!j.due_for_cycle(now), "off");
        assert!(j.toggle("t"));
        assert!(j.due_for_cycle(now));
        j.cycle = Some(7);
        let lines = vec![
            line(
                "1",
                DecisionKind::Due,
                "due: 60 small files >= 50 (default)",
            ),
            line("2", DecisionKind::NotDue, "not due: 3 small files < 50"),
        ];
        let start = j.decided(7, now, Ok((lines.clone(), vec![pv("1")])));
        assert_eq!(start, vec![pv("1")]);
        assert_eq!(
            j.flag(&pv("1")).unwrap().1,
            "due: 60 small files >= 50 (default)"
        );
        assert!(
            j.flag(&pv("2")).is_none(),
            "only due partitions are flagged"
        );
        assert_eq!(j.why.len(), 2);
        // The same decisions again, and a partition without small files: no new rows.
        let mut again = lines.clone();
        again.push(DecisionLine {
            small_files: 0,
            ..line("3", DecisionKind::NotDue, "not due: 0 small files < 50")
        });
        j.cycle = Some(70);
        j.last_cycle = None;
        j.decided(70, now, Ok((again, vec![])));
        assert_eq!(j.why.len(), 2, "{:?}", j.why);
        j.last_cycle = Some(now);
        assert!(!j.due_for_cycle(now), "not before the interval");
        j.planning(9, pv("1"));
        assert_eq!(j.planned(9), Some(pv("1")));
        assert!(j.owns(9));
        // The next round: the job still runs, nothing new starts.
        j.cycle = Some(8);
        assert!(
            j.decided(8, now, Ok((lines.clone(), vec![pv("1")])))
                .is_empty()
        );
        j.job_ended(9, Some("boom".into()), now);
        j.cycle = Some(10);
        assert!(
            j.decided(10, now, Ok((lines.clone(), vec![pv("1")])))
                .is_empty(),
            "held after a failure"
        );
        assert!(j.status().unwrap().contains("1 partition(s) backing off"));
        // Retried once the policy's backoff has passed; suspended after max_failures in a row.
        let mut t = now;
        for failures in 1..j.backoff.max_failures {
            t += j.backoff.delay(failures);
            j.cycle = Some(20 + failures as u64);
            let start = j.decided(20 + failures as u64, t, Ok((lines.clone(), vec![pv("1")])));
            assert_eq!(start, vec![pv("1")], "retried after failure {failures}");
            j.planning(100 + failures as u64, pv("1"));
            j.job_ended(100 + failures as u64, Some("boom".into()), t);
        }
        j.cycle = Some(99);
        let later = t + j.backoff.max * 2;
        assert!(
            j.decided(99, later, Ok((lines, vec![pv("1")]))).is_empty(),
            "suspended"
        );
        let status = j.status().unwrap();
        assert!(
            status.contains("1 partition(s) suspended after 4 failed jobs")
                && status.contains("boom"),
            "{status}"
        );
        assert!(!j.toggle("t"), "off");
        assert!(j.flag(&pv("1")).is_none());
    }

    #[test]
    fn a_stale_round_is_ignored() {
        let mut j = janitor();
        j.toggle("t");
        j.cycle = Some(2);
        assert!(
            j.decided(1, Instant::now(), Ok((vec![], vec![pv("1")])))
                .is_empty()
        );
        assert_eq!(j.cycle, Some(2));
    }
}
