//! The decide step of the janitor's pipeline (read → decide → run → record), for one table: from
//! what was read (its partitions' sizes, its recent writes, the table's gate, the job in flight)
//! a decision per partition and the partitions its next job takes. Pure: no I/O and no state,
//! so `watch`, the TUI (through `Janitor::decide_only`) and the tests see the same decisions.

use super::activity::Activity;
use std::collections::HashMap;

use super::clustering::{ColumnDepth, Verdict, judge, outputs};
use super::decide::{Decision, DecisionKind, Eligible, Facts, decide};
use super::depth_read::DepthState;
use super::history::{DecisionLine, ts};
use super::jobs::{DuePartition, JobPurpose};
use super::policy::{PartitionsError, Policy};
use super::schedule::Gate;
use crate::compact::selection::Predicate;
use crate::model::partition::PartitionValues;

/// A partition as the decision needs it.
pub(super) struct PartitionSizes<'a> {
    pub values: &'a PartitionValues,
    pub files: u64,
    pub small_files: u64,
    pub bytes: u64,
}

/// The table's job in flight: its partitions, and what it is doing (for their reason).
pub(super) struct Busy<'a> {
    pub partitions: &'a [PartitionValues],
    pub doing: String,
}

/// What was read of one table for this round.
pub(super) struct TableRead<'a> {
    pub table: &'a str,
    pub partitions: Vec<PartitionSizes<'a>>,
    pub activity: &'a Activity,
    /// The policy's `partitions` predicate for this table (None: every partition).
    pub eligible_for: Option<&'a Result<Predicate, PartitionsError>>,
    pub gate: &'a Gate,
    pub busy: Option<Busy<'a>>,
    /// Small files added since then count as recent (the age rule), when the policy has one.
    pub age_since: Option<i64>,
    /// The partitions' overlap on the order the janitor keeps (`max_depth`).
    pub depth: &'a DepthState,
    /// The size the table's jobs write files at (how many files a rewrite would write).
    pub target_file_size: u64,
    /// Each re-clustered partition's depth its last re-clustering left, when still past the
    /// bound (`clustering::judge`'s floor).
    pub floors: Option<&'a HashMap<PartitionValues, Vec<ColumnDepth>>>,
}

/// One table's round: a decision line per partition, and the due partitions its next job takes
/// (none while a job of the table is in flight: those partitions say `running`, the others
/// `queued`).
pub(super) struct Round {
    pub lines: Vec<DecisionLine>,
    pub due: Vec<DuePartition>,
    pub purpose: JobPurpose,
}

/// A table's next job is of one kind: re-clustering first when a partition is due for it (it
/// is rare: due again only once the depth has grown back), else its small files. The other
/// kind's due partitions wait for the next round, and say so.
pub(super) fn decide_table(policy: &Policy, r: &TableRead, now: i64) -> Round {
    let decided: Vec<(&PartitionSizes, Decision, Option<f64>)> = r
        .partitions
        .iter()
        .map(|p| {
            let (d, saving) = decide_partition(policy, r, p, now);
            (p, d, saving)
        })
        .collect();
    let recluster = decided
        .iter()
        .any(|(_, d, _)| d.kind == DecisionKind::Recluster);
    let (taken, purpose, waits) = match r.depth {
        DepthState::Read(t) if recluster => (
            DecisionKind::Recluster,
            JobPurpose::Recluster(t.order.clone()),
            "; queued: the table's re-clustering job goes first",
        ),
        _ => (DecisionKind::Due, JobPurpose::SmallFiles, ""),
    };
    let mut out = Round {
        lines: Vec::new(),
        due: Vec::new(),
        purpose,
    };
    for (p, Decision { kind, mut reason }, saving) in decided {
        if kind == taken && r.busy.is_none() {
            out.due.push(DuePartition {
                values: p.values.clone(),
                reason: reason.clone(),
                lookup_saving: saving.unwrap_or(0.0),
            });
        } else if kind.is_due() && r.busy.is_none() {
            reason.push_str(waits);
        }
        out.lines.push(DecisionLine {
            ts: ts(now),
            table: r.table.to_string(),
            partition: p.values.clone(),
            rule: policy.rule().into(),
            decision: kind,
            reason,
            files: p.files,
            small_files: p.small_files,
            bytes: p.bytes,
        });
    }
    out
}

/// One partition's decision, and the files a lookup would open fewer were it re-clustered
/// (None: not judged for depth).
fn decide_partition(
    policy: &Policy,
    r: &TableRead,
    p: &PartitionSizes,
    now: i64,
) -> (Decision, Option<f64>) {
    if let Some(b) = r.busy.as_ref().filter(|b| b.partitions.contains(p.values)) {
        let d = Decision {
            kind: DecisionKind::Running,
            reason: b.doing.clone(),
        };
        return (d, None);
    }
    let eligible = match r.eligible_for {
        None => Eligible::Yes,
        Some(Ok(pred)) if pred.matches(&p.values.0) => Eligible::Yes,
        Some(Ok(pred)) => Eligible::Outside(pred.text.clone()),
        Some(Err(e)) => Eligible::Invalid(e.to_string()),
    };
    let a = r.activity;
    let verdict: Option<Verdict> = match r.depth {
        DepthState::Read(t) => t.over.get(p.values).and_then(|depths| {
            let floor = r.floors.and_then(|f| f.get(p.values));
            judge(
                &t.order,
                policy.recluster.map_or(f64::INFINITY, |c| c.max_depth),
                depths,
                outputs(p.bytes, r.target_file_size),
                floor.map_or(&[], Vec::as_slice),
            )
        }),
        _ => None,
    };
    let facts = Facts {
        values: p.values,
        files: p.files,
        small_files: p.small_files,
        last_write: a.last_write(p.values),
        recent_small_files: r
            .age_since
            .and_then(|since| a.recent_small_files(p.values, policy.small_file_size, since)),
        known_for_ms: a.known_for_ms(now),
        clustering: verdict.as_ref(),
        depth_unread: match r.depth {
            DepthState::Failed(why) => Some(why),
            DepthState::Read(t) => t.note.as_deref(),
            DepthState::NotJudged => None,
        },
    };
    let saving = verdict.as_ref().map(|v| (v.now - v.expected).max(0.0));
    let d = decide(policy, &facts, &eligible, r.gate, now);
    let d = match (&r.busy, d.kind) {
        (Some(_), DecisionKind::Due | DecisionKind::Recluster) => Decision {
            reason: format!(
                "{}; queued: the table's running job ends first (one job per table at a time)",
                d.reason
            ),
            ..d
        },
        _ => d,
    };
    (d, saving)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::thresholds::Thresholds;

    fn pv(d: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(d.into()))])
    }

    #[test]
    fn due_partitions_go_to_the_job_unless_one_runs_then_they_are_running_or_queued() {
        let policy = Policy::builtin(Thresholds {
            target_file_size: 128 << 20,
            small_file_size: 128 << 20,
            max_file_size: 1 << 30,
        });
        let (a, b, c) = (pv("a"), pv("b"), pv("c"));
        let sizes = |v| PartitionSizes {
            values: v,
            files: 60,
            small_files: if v == &c { 3 } else { 60 },
            bytes: 1,
        };
        let activity = Activity::default();
        let read = |busy| TableRead {
            table: "t",
            partitions: vec![sizes(&a), sizes(&b), sizes(&c)],
            activity: &activity,
            eligible_for: None,
            gate: &Gate::Ready,
            busy,
            age_since: None,
            depth: &DepthState::NotJudged,
            target_file_size: 128 << 20,
            floors: None,
        };
        let r = decide_table(&policy, &read(None), 0);
        let kinds: Vec<_> = r.lines.iter().map(|l| l.decision).collect();
        assert_eq!(
            kinds,
            [DecisionKind::Due, DecisionKind::Due, DecisionKind::NotDue]
        );
        assert_eq!(
            r.due.iter().map(|d| &d.values).collect::<Vec<_>>(),
            [&a, &b]
        );

        let running = [a.clone()];
        let busy = Busy {
            partitions: &running,
            doing: "running: its job started 3 s ago".into(),
        };
        let r = decide_table(&policy, &read(Some(busy)), 0);
        assert!(r.due.is_empty(), "nothing is planned twice");
        assert_eq!(r.lines[0].decision, DecisionKind::Running);
        assert_eq!(r.lines[0].reason, "running: its job started 3 s ago");
        assert_eq!(r.lines[1].decision, DecisionKind::Due);
        assert!(
            r.lines[1].reason.ends_with(
                "queued: the table's running job ends first (one job per table at a time)"
            )
        );

        let held = Gate::BackingOff {
            failures: 1,
            retry_in_ms: 30_000,
        };
        let r = decide_table(
            &policy,
            &TableRead {
                gate: &held,
                ..read(None)
            },
            0,
        );
        assert!(r.due.is_empty());
        assert_eq!(r.lines[0].decision, DecisionKind::BackingOff);
    }

    #[test]
    fn a_deep_partition_is_re_clustered_whole_before_the_tables_small_file_job() {
        use crate::compact::ordering::OrderKind;
        use crate::janitor::clustering::{ColumnDepth, KeptOrder};
        use crate::janitor::depth_read::TableDepth;
        let policy = Policy::parse(
            "strategy = \"zorder\"\ncolumns = [\"sensor\", \"ts\"]\nmax_depth = 4",
            "p.toml",
            Thresholds {
                target_file_size: 100,
                small_file_size: 10,
                max_file_size: 1000,
            },
        )
        .unwrap();
        let (a, b) = (pv("a"), pv("b"));
        let order = KeptOrder {
            kind: OrderKind::ZOrder,
            columns: vec!["sensor".into(), "ts".into()],
            clustered: false,
        };
        let deep = vec![ColumnDepth {
            column: "sensor".into(),
            mean: 16.0,
        }];
        let depth = DepthState::Read(TableDepth {
            version: 1,
            read_ms: 0,
            order: order.clone(),
            over: [(a.clone(), deep)].into(),
            partitions: 2,
            note: None,
        });
        let activity = Activity::default();
        let read = |small_b| TableRead {
            table: "t",
            // 16 files of 100 bytes: rewritten into 16, z-ordered depth about 4.
            partitions: vec![
                PartitionSizes {
                    values: &a,
                    files: 16,
                    small_files: 0,
                    bytes: 1600,
                },
                PartitionSizes {
                    values: &b,
                    files: 60,
                    small_files: small_b,
                    bytes: 600,
                },
            ],
            activity: &activity,
            eligible_for: None,
            gate: &Gate::Ready,
            busy: None,
            age_since: None,
            depth: &depth,
            target_file_size: 100,
            floors: None,
        };
        let r = decide_table(&policy, &read(0), 0);
        assert_eq!(r.lines[0].decision, DecisionKind::Recluster);
        assert_eq!(r.lines[1].decision, DecisionKind::NotDue);
        assert_eq!(r.purpose, JobPurpose::Recluster(order.clone()));
        assert_eq!(r.due.iter().map(|d| &d.values).collect::<Vec<_>>(), [&a]);
        // b's small files are due too: the re-clustering goes first (a small-file job is due
        // again every few cycles on a streamed table; it would never give way), b waits.
        let r = decide_table(&policy, &read(60), 0);
        assert_eq!(r.purpose, JobPurpose::Recluster(order));
        assert_eq!(r.due.iter().map(|d| &d.values).collect::<Vec<_>>(), [&a]);
        assert_eq!(r.lines[1].decision, DecisionKind::Due);
        assert!(
            r.lines[1]
                .reason
                .ends_with("queued: the table's re-clustering job goes first"),
            "{}",
            r.lines[1].reason
        );
    }
}
