//! The janitor's state in the app: flags, the why list, the round and the job in flight. Pure
//! transitions; `App::update` calls them. Back-off is the engine janitor's (per table, as in
//! `watch`): a held table's partitions come decided "backing off" or "suspended", with why.

use crate::tui::task_error::TaskError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::engine::janitor::decide::DecisionKind;
use crate::engine::janitor::history::DecisionLine;
use crate::engine::janitor::policy::Policy;
use crate::engine::model::partition::PartitionValues;

/// A decision round's result, as the app receives it.
#[derive(Debug, Clone)]
pub struct Round {
    pub decisions: Vec<DecisionLine>,
    /// The partitions of the table's job the round decided (the runner holds the job until
    /// the app starts it); None: nothing due, or its job is still in flight.
    pub job: Option<Vec<PartitionValues>>,
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
    /// The table's janitor job (being planned or running): its id. One at a time, as in
    /// `watch`; it goes on when the janitor is switched off (cancellable in the jobs panel).
    job: Option<u64>,
    /// The last round's error (the table could not be read).
    pub error: Option<String>,
    /// Partitions a commit compacted while the round in flight was deciding: it read the table
    /// before, so its "due" for them is stale on arrival.
    compacted_in_flight: HashSet<PartitionValues>,
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
            job: None,
            error: None,
            compacted_in_flight: HashSet::new(),
        }
    }

    pub fn is_on(&self) -> bool {
        self.table.is_some()
    }

    /// Switches on for `table`, or off (flags are forgotten; a running job keeps running, in
    /// the jobs panel, cancellable there).
    pub fn toggle(&mut self, table: &str) -> bool {
        if self.table.is_some() {
            self.table = None;
            self.flags.clear();
            self.compacted_in_flight.clear();
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
        self.flags.get(p).filter(|(k, _)| k.is_due())
    }

    /// A round's decisions arrived: flags and the why list follow them. Returns whether to
    /// start the job the round decided (the round is current, the janitor on, no job of its
    /// own in flight).
    pub fn decided(&mut self, id: u64, now: Instant, result: Result<Round, TaskError>) -> bool {
        if self.cycle != Some(id) {
            return false;
        }
        self.cycle = None;
        self.last_cycle = Some(now);
        // Compacted while this round decided: whatever it answers, the next round reads after.
        let compacted = std::mem::take(&mut self.compacted_in_flight);
        if !self.is_on() {
            return false;
        }
        let round = match result {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e.message);
                return false;
            }
        };
        self.error = None;
        self.flags = round
            .decisions
            .iter()
            .map(|d| (d.partition.clone(), (d.decision, d.reason.clone())))
            .collect();
        for p in compacted {
            self.unflag_due(&p);
        }
        for d in round.decisions.into_iter().filter(worth_a_row) {
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
        round.job.is_some() && self.job.is_none()
    }

    /// The round's job is being planned as `id`.
    pub fn starting(&mut self, id: u64) {
        self.job = Some(id);
    }

    /// Whether `id` is the janitor's job.
    pub fn owns(&self, id: u64) -> bool {
        self.job == Some(id)
    }

    /// The janitor's job `id` ended (or never started). Its result, and the table's back-off
    /// after a failure, are the engine janitor's: the next round's decisions show them.
    pub fn job_ended(&mut self, id: u64) {
        if self.owns(id) {
            self.job = None;
        }
    }

    /// A commit of any job compacted `partitions` of the table at `uri`: their "due" flags are
    /// stale until the next round decides them again, so they go now.
    pub fn compacted(&mut self, uri: &str, partitions: &[PartitionValues]) {
        if self.table.as_deref() != Some(uri) {
            return;
        }
        for p in partitions {
            self.unflag_due(p);
            if self.cycle.is_some() {
                self.compacted_in_flight.insert(p.clone());
            }
        }
    }

    fn unflag_due(&mut self, p: &PartitionValues) {
        if self.flags.get(p).is_some_and(|(k, _)| k.is_due()) {
            self.flags.remove(p);
        }
    }

    /// The line the table view shows while it is on.
    pub fn status(&self) -> Option<String> {
        self.table.as_ref()?;
        let due = self.flags.values().filter(|(d, _)| d.is_due()).count();
        let mut s = format!(
            "janitor on: {} due, {} job(s) · policy: {}",
            due,
            usize::from(self.job.is_some()),
            self.policy
        );
        if let Some(e) = &self.error {
            s.push_str(&format!(" · cannot read the table: {e}"));
        }
        // The table's gate, as the engine janitor words it (the same for all its partitions).
        let held = self
            .flags
            .values()
            .find(|(k, _)| matches!(k, DecisionKind::BackingOff | DecisionKind::Suspended));
        if let Some((_, reason)) = held {
            let gate = reason.split("; ").next().unwrap_or(reason);
            s.push_str(&format!(" · {gate}"));
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::thresholds::Thresholds;

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

    fn round(lines: &[DecisionLine], job: bool) -> Result<Round, TaskError> {
        Ok(Round {
            decisions: lines.to_vec(),
            job: job.then(|| vec![pv("1")]),
        })
    }

    #[test]
    fn due_partitions_are_flagged_and_the_tables_job_starts_once_and_back_off_shows_as_decided() {
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
        assert!(j.decided(7, now, round(&lines, true)), "its job starts");
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
        assert!(!j.decided(70, now, round(&again, false)));
        assert_eq!(j.why.len(), 2, "{:?}", j.why);
        j.last_cycle = Some(now);
        assert!(!j.due_for_cycle(now), "not before the interval");
        j.starting(9);
        assert!(j.owns(9));
        assert!(j.status().unwrap().contains("1 job(s)"));
        // A round that decides a job while the app's own is in flight starts nothing.
        j.cycle = Some(8);
        assert!(!j.decided(8, now, round(&lines, true)));
        j.job_ended(9);
        assert!(!j.owns(9));
        // The engine's back-off (per table) arrives as decisions: no job, and the status says
        // why in the engine's words.
        let held = vec![line(
            "1",
            DecisionKind::BackingOff,
            "backing off: 1 failure in a row, next try in 30 s; 60 small files >= 50 (default)",
        )];
        j.cycle = Some(10);
        assert!(!j.decided(10, now, round(&held, false)));
        assert!(
            j.flag(&pv("1")).is_none(),
            "a held partition is not flagged due"
        );
        let status = j.status().unwrap();
        assert!(
            status.ends_with(" · backing off: 1 failure in a row, next try in 30 s"),
            "{status}"
        );
        assert!(!j.toggle("t"), "off");
        assert!(j.flag(&pv("1")).is_none());
    }

    #[test]
    fn a_commit_clears_the_due_flag_of_the_partitions_it_compacted_until_the_next_round() {
        let mut j = janitor();
        j.toggle("t");
        j.cycle = Some(3);
        let lines = vec![
            line(
                "1",
                DecisionKind::Due,
                "due: 60 small files >= 50 (default)",
            ),
            line(
                "2",
                DecisionKind::Due,
                "due: 55 small files >= 50 (default)",
            ),
        ];
        j.decided(3, Instant::now(), round(&lines, true));
        j.compacted("another table", &[pv("1")]);
        assert!(
            j.flag(&pv("1")).is_some(),
            "another table's commit changes nothing"
        );
        j.compacted("t", &[pv("1")]);
        assert!(
            j.flag(&pv("1")).is_none(),
            "compacted: not flagged any more"
        );
        assert!(
            j.flag(&pv("2")).is_some(),
            "the other partition keeps its flag"
        );
        assert!(j.status().unwrap().starts_with("janitor on: 1 due"));
    }

    #[test]
    fn a_stale_round_is_ignored() {
        let mut j = janitor();
        j.toggle("t");
        j.cycle = Some(2);
        assert!(!j.decided(1, Instant::now(), round(&[], true)));
        assert_eq!(j.cycle, Some(2));
    }

    #[test]
    fn a_round_that_read_the_table_before_a_commit_does_not_bring_its_due_flag_back() {
        let mut j = janitor();
        let now = Instant::now();
        assert!(j.toggle("t"));
        let due = vec![line(
            "1",
            DecisionKind::Due,
            "due: 60 small files >= 50 (default)",
        )];
        j.cycle = Some(1);
        j.decided(1, now, round(&due, false));
        assert!(j.flag(&pv("1")).is_some());
        // The next round starts, then a commit compacts the partition before it answers.
        j.cycle = Some(2);
        j.compacted("t", &[pv("1")]);
        assert!(j.flag(&pv("1")).is_none());
        j.decided(2, now, round(&due, false));
        assert!(
            j.flag(&pv("1")).is_none(),
            "the stale round's due is dropped"
        );
        // A round started after the commit decides afresh.
        j.cycle = Some(3);
        j.decided(3, now, round(&due, false));
        assert!(j.flag(&pv("1")).is_some());
    }
}
