//! One partition, one decision, always with its reason: due, not due, skipped (outside the
//! policy's partitions, not written recently, inside the quiet period), or held back by the
//! table's failures (backing off, suspended). Pure: facts and the clock are passed in.

// Forecasts run `decide` on the future, so they live with it. A child of `decide` because
// `janitor/mod.rs` is being edited in parallel; it can become `janitor::forecast` with one
// `pub mod` line there.

use serde::Serialize;

use super::activity::LastWrite;
use super::clustering::Verdict;
use super::policy::Policy;
use super::schedule::Gate;
use crate::model::duration::{whole_units, whole_units_ms};
use crate::model::partition::PartitionValues;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Due for a compaction of its small files.
    Due,
    /// Due for a job that rewrites it whole in the order the janitor keeps: its files overlap
    /// past the policy's `max_depth` (`clustering`).
    Recluster,
    NotDue,
    Skipped,
    BackingOff,
    Suspended,
    /// The partition's table has a job in flight over it (running or waiting for its commit
    /// slot): not planned twice.
    Running,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub kind: DecisionKind,
    pub reason: String,
}

impl DecisionKind {
    /// Due for a job of either kind.
    pub fn is_due(self) -> bool {
        matches!(self, DecisionKind::Due | DecisionKind::Recluster)
    }
}

impl Decision {
    fn new(kind: DecisionKind, reason: String) -> Self {
        Self { kind, reason }
    }
}

/// What is known about a partition when deciding.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub values: &'a PartitionValues,
    pub files: u64,
    /// Files below the policy's small-file size.
    pub small_files: u64,
    pub last_write: LastWrite,
    /// Small files added within the age rule's age and still live (None: the log is not
    /// known back that far, or the policy has no age rule).
    pub recent_small_files: Option<u64>,
    /// How far back the log's commits were read (None: not at all).
    pub known_for_ms: Option<i64>,
    /// Past `max_depth` on the order the janitor keeps (None: within it, or not judged).
    pub clustering: Option<&'a Verdict>,
    /// Why depth could not be judged this cycle (its read failed).
    pub depth_unread: Option<&'a str>,
}

/// Whether the policy's `partitions` predicate selects the partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eligible {
    Yes,
    /// Not selected by this predicate (as expanded).
    Outside(String),
    /// The predicate does not apply to the table (a column it does not have).
    Invalid(String),
}

fn files(n: u64) -> String {
    format!("{n} small file{}", if n == 1 { "" } else { "s" })
}

fn known(f: &Facts) -> String {
    match f.known_for_ms {
        Some(ms) => format!("the log read so far covers {}", whole_units_ms(ms)),
        None => "the log's commits could not be read".into(),
    }
}

/// The rules alone: due for small files, else for re-clustering, else not due; and why.
fn rule(p: &Policy, f: &Facts) -> Decision {
    let d = small_files_rule(p, f);
    if d.kind == DecisionKind::Due {
        return d;
    }
    match (f.clustering, f.depth_unread) {
        (Some(v), _) if v.due => Decision::new(DecisionKind::Recluster, v.reason()),
        (Some(v), _) => Decision::new(d.kind, format!("{}; {}", d.reason, v.reason())),
        (None, Some(why)) => {
            Decision::new(d.kind, format!("{}; depth not judged: {why}", d.reason))
        }
        (None, None) => d,
    }
}

/// The small-file rule: due or not due, and why.
fn small_files_rule(p: &Policy, f: &Facts) -> Decision {
    let (n, min) = (f.small_files, p.min_small_files);
    if n >= min {
        return Decision::new(
            DecisionKind::Due,
            format!("due: {} >= {min} ({})", files(n), p.rule()),
        );
    }
    let not_due = format!("not due: {} < {min}", files(n));
    let Some(aged) = p.aged else {
        return Decision::new(DecisionKind::NotDue, not_due);
    };
    if n < aged.min_small_files {
        return Decision::new(DecisionKind::NotDue, not_due);
    }
    let age = whole_units(aged.age);
    match f.recent_small_files {
        // More small files than arrived within the age: one of them is older.
        Some(recent) if n > recent => Decision::new(
            DecisionKind::Due,
            format!(
                "due: {} >= {}, the oldest older than {age} ({})",
                files(n),
                aged.min_small_files,
                p.rule()
            ),
        ),
        Some(_) => Decision::new(
            DecisionKind::NotDue,
            format!("{not_due}; all of them are younger than {age}"),
        ),
        None => Decision::new(
            DecisionKind::NotDue,
            format!(
                "{not_due}; the age of the oldest is unknown ({}, the age rule needs {age})",
                known(f)
            ),
        ),
    }
}

pub fn decide(p: &Policy, f: &Facts, eligible: &Eligible, gate: &Gate, now_ms: i64) -> Decision {
    let skipped = |r: String| Decision::new(DecisionKind::Skipped, r);
    match eligible {
        Eligible::Yes => {}
        Eligible::Outside(pred) => return skipped(format!("skipped: outside partitions ({pred})")),
        Eligible::Invalid(e) => {
            return skipped(format!(
                "skipped: the policy's partitions predicate does not apply to this table: {e}"
            ));
        }
    }
    let ago = |t: i64| whole_units_ms(now_ms.saturating_sub(t));
    if let Some(w) = p.written_within {
        let w_ms = w.as_millis().min(i64::MAX as u128) as i64;
        let within = whole_units(w);
        let outside = match f.last_write {
            LastWrite::At(t) if now_ms.saturating_sub(t) <= w_ms => None,
            LastWrite::At(t) => Some(format!(
                "skipped: last written {} ago, not within {within}",
                ago(t)
            )),
            LastWrite::NotSince(t) if now_ms.saturating_sub(t) >= w_ms => {
                Some(format!("skipped: not written within {within}"))
            }
            LastWrite::NotSince(_) | LastWrite::Unknown => Some(format!(
                "skipped: no write seen, but whether it was written within {within} is unknown ({})",
                known(f)
            )),
            LastWrite::Never => Some(format!(
                "skipped: not written within {within} (no data written since the table was created)"
            )),
        };
        if let Some(r) = outside {
            return skipped(r);
        }
    }
    let d = rule(p, f);
    if !d.kind.is_due() {
        return d;
    }
    let why = d.reason.trim_start_matches("due: ").to_string();
    if let Some(q) = p.quiet_period {
        let q_ms = q.as_millis().min(i64::MAX as u128) as i64;
        let quiet = whole_units(q);
        let busy = match f.last_write {
            LastWrite::At(t) if now_ms.saturating_sub(t) < q_ms => Some(format!(
                "skipped: written {} ago, quiet period {quiet}",
                ago(t)
            )),
            LastWrite::NotSince(t) if now_ms.saturating_sub(t) < q_ms => Some(format!(
                "skipped: last write unknown, quiet period {quiet} ({})",
                known(f)
            )),
            LastWrite::Unknown => Some(format!(
                "skipped: last write unknown, quiet period {quiet} ({})",
                known(f)
            )),
            _ => None,
        };
        if let Some(r) = busy {
            return skipped(format!("{r}; {why}"));
        }
    }
    match (gate, gate.reason()) {
        (Gate::BackingOff { .. }, Some(r)) => {
            Decision::new(DecisionKind::BackingOff, format!("{r}; {why}"))
        }
        (Gate::Suspended { .. }, Some(r)) => {
            Decision::new(DecisionKind::Suspended, format!("{r}; {why}"))
        }
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::janitor::policy::AgedRule;
    use crate::model::thresholds::Thresholds;
    use crate::size::{GIB, MIB};

    const S: i64 = 1000;
    const NOW: i64 = 1_000_000 * S;

    fn policy(text: &str) -> Policy {
        let base = Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        };
        Policy::parse(text, "p.toml", base).unwrap()
    }

    fn facts(values: &PartitionValues, small: u64, last: LastWrite) -> Facts<'_> {
        Facts {
            values,
            files: small + 3,
            small_files: small,
            last_write: last,
            recent_small_files: None,
            known_for_ms: Some(3600 * S),
            clustering: None,
            depth_unread: None,
        }
    }

    fn pv() -> PartitionValues {
        PartitionValues(vec![("ingestion_date".into(), Some("2026-11-30".into()))])
    }

    fn d(p: &Policy, f: &Facts) -> Decision {
        decide(p, f, &Eligible::Yes, &Gate::Ready, NOW)
    }

    #[test]
    fn due_and_not_due_say_the_count_and_the_threshold() {
        let p = policy("preset = \"databricks-auto-compaction\"");
        let v = pv();
        let r = d(&p, &facts(&v, 212, LastWrite::Unknown));
        assert_eq!(r.kind, DecisionKind::Due);
        assert_eq!(
            r.reason,
            "due: 212 small files >= 50 (databricks-auto-compaction)"
        );
        let r = d(&p, &facts(&v, 31, LastWrite::Unknown));
        assert_eq!(
            (r.kind, r.reason.as_str()),
            (DecisionKind::NotDue, "not due: 31 small files < 50")
        );
        let r = d(&p, &facts(&v, 1, LastWrite::Unknown));
        assert_eq!(r.reason, "not due: 1 small file < 50");
        let r = d(&p, &facts(&v, 50, LastWrite::Unknown));
        assert_eq!(r.kind, DecisionKind::Due, "at the threshold");
        let g = policy("preset = \"glue\"");
        assert_eq!(
            d(&g, &facts(&v, 100, LastWrite::Unknown)).kind,
            DecisionKind::NotDue
        );
        assert_eq!(
            d(&g, &facts(&v, 101, LastWrite::Unknown)).kind,
            DecisionKind::Due
        );
    }

    #[test]
    fn a_partition_with_few_small_files_past_the_depth_bound_is_due_for_re_clustering() {
        let p = policy(
            "strategy = \"zorder\"\ncolumns = [\"sensor\", \"ts\"]\nmax_depth = 4\nquiet_period = \"60s\"",
        );
        let v = pv();
        let verdict = |due| Verdict {
            due,
            column: "sensor".into(),
            now: 12.0,
            expected: if due { 3.0 } else { 10.0 },
            max_depth: 4.0,
            order: "z-order by sensor, ts".into(),
        };
        let (due, no_gain) = (verdict(true), verdict(false));
        let mut f = facts(&v, 2, LastWrite::At(NOW - 3600 * S));
        f.clustering = Some(&due);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::Recluster);
        assert!(
            r.reason
                .starts_with("due for re-clustering: a lookup on sensor opens 12.0 files"),
            "{}",
            r.reason
        );
        // Small files first: their job is due, the depth waits for a later cycle.
        let mut many = facts(&v, 212, LastWrite::At(NOW - 3600 * S));
        many.clustering = Some(&due);
        assert_eq!(d(&p, &many).kind, DecisionKind::Due);
        // The time rules hold for re-clustering too.
        let mut busy = facts(&v, 2, LastWrite::At(NOW - 4 * S));
        busy.clustering = Some(&due);
        let r = d(&p, &busy);
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert!(
            r.reason
                .contains("quiet period 60 s; due for re-clustering"),
            "{}",
            r.reason
        );
        // No gain, or no read: not due, and the reason says why.
        f.clustering = Some(&no_gain);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::NotDue);
        assert!(r.reason.contains("expected to leave 10.0"), "{}", r.reason);
        f.clustering = None;
        f.depth_unread = Some("reading file statistics failed");
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::NotDue);
        assert!(
            r.reason
                .ends_with("; depth not judged: reading file statistics failed"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn a_table_whose_write_times_could_not_be_read_says_so_where_a_time_rule_needs_them() {
        let p = policy("quiet_period = \"60s\"");
        let v = pv();
        let mut f = facts(&v, 80, LastWrite::Unknown);
        f.known_for_ms = None;
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert!(
            r.reason.starts_with("skipped: last write unknown, quiet period 60 s (the log's commits could not be read)"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn quiet_period_skips_a_due_partition_written_recently() {
        let p = policy("quiet_period = \"60s\"");
        let v = pv();
        let r = d(&p, &facts(&v, 212, LastWrite::At(NOW - 4 * S)));
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert_eq!(
            r.reason,
            "skipped: written 4 s ago, quiet period 60 s; 212 small files >= 50 (default)"
        );
        assert_eq!(
            d(&p, &facts(&v, 212, LastWrite::At(NOW - 61 * S))).kind,
            DecisionKind::Due
        );
        assert_eq!(
            d(&p, &facts(&v, 212, LastWrite::NotSince(NOW - 600 * S))).kind,
            DecisionKind::Due
        );
        assert_eq!(
            d(&p, &facts(&v, 212, LastWrite::Never)).kind,
            DecisionKind::Due
        );
        // The log read does not reach back a quiet period: unknown, so left alone.
        let mut f = facts(&v, 212, LastWrite::NotSince(NOW - 20 * S));
        f.known_for_ms = Some(20 * S);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert!(
            r.reason.contains("last write unknown") && r.reason.contains("covers 20 s"),
            "{}",
            r.reason
        );
        // Not due stays "not due" whatever the writes.
        let r = d(&p, &facts(&v, 3, LastWrite::At(NOW - S)));
        assert_eq!(r.kind, DecisionKind::NotDue);
    }

    #[test]
    fn written_within_keeps_only_recently_written_partitions() {
        let p = policy("written_within = \"6h\"");
        let v = pv();
        assert_eq!(
            d(&p, &facts(&v, 212, LastWrite::At(NOW - 3600 * S))).kind,
            DecisionKind::Due
        );
        let r = d(&p, &facts(&v, 212, LastWrite::At(NOW - 9 * 3600 * S)));
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert_eq!(r.reason, "skipped: last written 9 h ago, not within 6 h");
        let r = d(&p, &facts(&v, 212, LastWrite::NotSince(NOW - 7 * 3600 * S)));
        assert_eq!(r.reason, "skipped: not written within 6 h");
        let mut f = facts(&v, 212, LastWrite::NotSince(NOW - 600 * S));
        f.known_for_ms = Some(600 * S);
        let r = d(&p, &f);
        assert!(
            r.reason.contains("unknown") && r.reason.contains("covers 10 min"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn partitions_outside_the_predicate_are_skipped_with_it() {
        let p = Policy::builtin(Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        });
        let v = pv();
        let f = facts(&v, 500, LastWrite::Unknown);
        let r = decide(
            &p,
            &f,
            &Eligible::Outside("ingestion_date >= '2026-11-28'".into()),
            &Gate::Ready,
            NOW,
        );
        assert_eq!(r.kind, DecisionKind::Skipped);
        assert_eq!(
            r.reason,
            "skipped: outside partitions (ingestion_date >= '2026-11-28')"
        );
        let r = decide(
            &p,
            &f,
            &Eligible::Invalid("\"x\" is not a partition column".into()),
            &Gate::Ready,
            NOW,
        );
        assert!(
            r.reason.contains("does not apply") && r.reason.contains("\"x\""),
            "{}",
            r.reason
        );
    }

    #[test]
    fn amoro_is_due_at_twelve_fragments_or_two_once_the_oldest_is_an_hour_old() {
        let p = policy("preset = \"amoro\"");
        assert_eq!(
            p.aged,
            Some(AgedRule {
                min_small_files: 2,
                age: Duration::from_secs(3600)
            })
        );
        let v = pv();
        assert_eq!(
            d(&p, &facts(&v, 12, LastWrite::Unknown)).reason,
            "due: 12 small files >= 12 (amoro)"
        );
        // 3 fragments, 1 of them added within the hour: 2 are older.
        let mut f = facts(&v, 3, LastWrite::Unknown);
        f.recent_small_files = Some(1);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::Due);
        assert_eq!(
            r.reason,
            "due: 3 small files >= 2, the oldest older than 60 min (amoro)"
        );
        f.recent_small_files = Some(3);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::NotDue);
        assert_eq!(
            r.reason,
            "not due: 3 small files < 12; all of them are younger than 60 min"
        );
        f.recent_small_files = None;
        f.known_for_ms = Some(20 * 60 * S);
        let r = d(&p, &f);
        assert_eq!(r.kind, DecisionKind::NotDue);
        assert!(
            r.reason.contains("age of the oldest is unknown") && r.reason.contains("covers 20 min"),
            "{}",
            r.reason
        );
        let mut f = facts(&v, 1, LastWrite::Unknown);
        f.recent_small_files = Some(0);
        assert_eq!(d(&p, &f).reason, "not due: 1 small file < 12");
    }

    #[test]
    fn failures_hold_back_due_partitions_only() {
        let p = policy("");
        let v = pv();
        let back = Gate::BackingOff {
            failures: 3,
            retry_in_ms: 8 * 60 * S,
        };
        let r = decide(
            &p,
            &facts(&v, 212, LastWrite::Unknown),
            &Eligible::Yes,
            &back,
            NOW,
        );
        assert_eq!(r.kind, DecisionKind::BackingOff);
        assert_eq!(
            r.reason,
            "backing off: 3 failures in a row, next try in 8 min; 212 small files >= 50 (default)"
        );
        let r = decide(
            &p,
            &facts(&v, 2, LastWrite::Unknown),
            &Eligible::Yes,
            &back,
            NOW,
        );
        assert_eq!(r.kind, DecisionKind::NotDue);
        let sus = Gate::Suspended {
            failures: 4,
            last_error: Some("cannot read x.parquet".into()),
        };
        let r = decide(
            &p,
            &facts(&v, 212, LastWrite::Unknown),
            &Eligible::Yes,
            &sus,
            NOW,
        );
        assert_eq!(r.kind, DecisionKind::Suspended);
        assert!(
            r.reason
                .starts_with("suspended: 4 failures in a row (last: cannot read x.parquet)"),
            "{}",
            r.reason
        );
    }
}
