//! Forecasts from the live log: how fast small files arrive in each partition (from the commits
//! the watcher applied), how many commits land per interval (the rate sparkline), and when the
//! janitor's policy will make a partition due at that rate. Pure: the clock is passed in.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use serde::Serialize;

use crate::delta::log::tail::AppliedCommit;
use crate::janitor::activity::LastWrite;
use crate::janitor::decide::{DecisionKind, Eligible, Facts, decide};
use crate::janitor::policy::Policy;
use crate::janitor::schedule::Gate;
use crate::model::partition::PartitionValues;

/// Rates are measured over this much of the recent past (or since following began, if later).
pub const RATE_WINDOW: Duration = Duration::from_secs(3600);
/// Shorter observations give no rate (one commit a moment after starting is not a rate).
const MIN_SPAN_MS: i64 = 1000;

/// Arrivals seen while following a table.
#[derive(Debug, Clone)]
pub struct Arrivals {
    window_ms: i64,
    /// When following began: rates are measured from here at the earliest.
    since_ms: i64,
    /// (commit time, small files added with a data change), oldest first, per partition.
    small: HashMap<PartitionValues, VecDeque<(i64, u64)>>,
    /// Commit times, oldest first.
    commits: VecDeque<i64>,
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

impl Arrivals {
    pub fn new(since_ms: i64, window: Duration) -> Self {
        Self {
            window_ms: ms(window).max(1),
            since_ms,
            small: HashMap::new(),
            commits: VecDeque::new(),
        }
    }

    /// Commits known from the history (for the sparkline only: their partitions are unknown).
    pub fn seed_commit_times(&mut self, times: impl IntoIterator<Item = i64>) {
        let mut t: Vec<i64> = times.into_iter().collect();
        t.extend(self.commits.drain(..));
        t.sort_unstable();
        t.dedup();
        self.commits = t.into();
    }

    /// Records an applied commit: the files below `small_below` it added with a data change
    /// (a compaction's outputs are not arrivals). `now_ms` stands in for a commit without a
    /// time.
    pub fn record(&mut self, c: &AppliedCommit, small_below: u64, now_ms: i64) {
        let ts = c.summary.timestamp_ms.unwrap_or(now_ms);
        let at = self.commits.partition_point(|t| *t <= ts);
        self.commits.insert(at, ts);
        for d in c.partitions.iter().filter(|d| d.data_change) {
            let n = d.added_sizes.iter().filter(|s| **s < small_below).count() as u64;
            if n > 0 {
                self.small
                    .entry(d.values.clone())
                    .or_default()
                    .push_back((ts, n));
            }
        }
        self.prune(now_ms);
    }

    fn prune(&mut self, now_ms: i64) {
        let from = now_ms.saturating_sub(self.window_ms);
        while self.commits.front().is_some_and(|t| *t < from) {
            self.commits.pop_front();
        }
        self.small.retain(|_, q| {
            while q.front().is_some_and(|(t, _)| *t < from) {
                q.pop_front();
            }
            !q.is_empty()
        });
    }

    /// The span rates are measured over: since following began, at most the window.
    fn span_ms(&self, now_ms: i64) -> Option<i64> {
        let from = self.since_ms.max(now_ms.saturating_sub(self.window_ms));
        let span = now_ms.saturating_sub(from);
        (span >= MIN_SPAN_MS).then_some(span)
    }

    /// Small files arriving per hour in partition `p`; None until following has lasted a moment.
    pub fn small_files_per_hour(&self, p: &PartitionValues, now_ms: i64) -> Option<f64> {
        let span = self.span_ms(now_ms)?;
        let from = now_ms - span;
        let n: u64 = self.small.get(p).map_or(0, |q| {
            q.iter().filter(|(t, _)| *t >= from).map(|(_, n)| n).sum()
        });
        Some(n as f64 * 3_600_000.0 / span as f64)
    }

    /// Partitions that had small files arrive within the window.
    pub fn arriving(&self) -> impl Iterator<Item = &PartitionValues> {
        self.small.keys()
    }

    /// Commits per bucket of `bucket` for the `buckets` buckets ending at `now_ms`, oldest
    /// first (a commit timed in the future counts in the newest bucket).
    pub fn commit_counts(&self, now_ms: i64, bucket: Duration, buckets: usize) -> Vec<u64> {
        let b = ms(bucket).max(1);
        let mut out = vec![0u64; buckets];
        for &t in &self.commits {
            let age = now_ms.saturating_sub(t).max(0) / b;
            if let Some(i) = usize::try_from(age).ok().filter(|a| *a < buckets) {
                out[buckets - 1 - i] += 1;
            }
        }
        out
    }
}

/// When the policy makes a partition due.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "due", rename_all = "snake_case")]
pub enum DueIn {
    /// Due now, by the policy's rule (its reason).
    Now { reason: String },
    /// At the current arrival rate, in about this long.
    In { seconds: u64 },
    /// No small files arrive: arrivals will not make it due.
    NotByArrivals,
    /// The arrival rate is not known yet.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    pub small_files_per_hour: Option<f64>,
    pub due: DueIn,
}

/// The forecast of a partition holding `small_files` small files (by the policy's threshold)
/// of `files`, with small files arriving at `per_hour`. Only the policy's rule is forecast: its
/// partition predicate, quiet period and the table's back-off are the janitor's to apply when
/// the time comes. With an age rule (`amoro`), the partition is due at the latest `age` after
/// it holds the rule's fewer files.
pub fn forecast(
    policy: &Policy,
    values: &PartitionValues,
    files: u64,
    small_files: u64,
    per_hour: Option<f64>,
    now_ms: i64,
) -> Forecast {
    let rule_only = Policy {
        partitions: None,
        written_within: None,
        quiet_period: None,
        ..policy.clone()
    };
    let facts = Facts {
        values,
        files,
        small_files,
        last_write: LastWrite::Unknown,
        recent_small_files: None,
        known_for_ms: None,
        clustering: None,
        depth_unread: None,
    };
    let d = decide(&rule_only, &facts, &Eligible::Yes, &Gate::Ready, now_ms);
    let due = match (d.kind, per_hour) {
        (DecisionKind::Due, _) => DueIn::Now { reason: d.reason },
        (_, None) => DueIn::Unknown,
        (_, Some(r)) if r <= 0.0 => DueIn::NotByArrivals,
        (_, Some(r)) => {
            let secs_to = |n: u64| n.saturating_sub(small_files) as f64 * 3600.0 / r;
            let mut secs = secs_to(policy.min_small_files);
            if let Some(a) = policy.aged {
                secs = secs.min(secs_to(a.min_small_files) + a.age.as_secs_f64());
            }
            DueIn::In {
                seconds: secs.ceil() as u64,
            }
        }
    };
    Forecast {
        small_files_per_hour: per_hour,
        due,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::log::state::CommitSummary;
    use crate::delta::log::tail::PartitionDelta;
    use crate::model::thresholds::Thresholds;
    use crate::size::{GIB, MIB};

    const T0: i64 = 1_800_000_000_000;
    const MIN: i64 = 60_000;

    fn pv(d: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(d.into()))])
    }

    fn commit(ts: i64, parts: &[(&str, &[u64], bool)]) -> AppliedCommit {
        AppliedCommit {
            summary: CommitSummary {
                version: 1,
                timestamp_ms: Some(ts),
                operation: "WRITE".into(),
                files_added: 0,
                files_removed: 0,
                bytes_added: 0,
                bytes_removed: 0,
                data_change: true,
                query_id: None,
                epoch_id: None,
                engine: None,
                trigger: None,
            },
            partitions: parts
                .iter()
                .map(|(d, sizes, data_change)| PartitionDelta {
                    values: pv(d),
                    files_added: sizes.len() as u64,
                    files_removed: 0,
                    bytes_added: sizes.iter().sum(),
                    bytes_removed: 0,
                    added_sizes: sizes.to_vec(),
                    data_change: *data_change,
                })
                .collect(),
        }
    }

    fn policy(text: &str) -> Policy {
        let base = Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        };
        Policy::parse(text, "p.toml", base).unwrap()
    }

    #[test]
    fn rate_counts_small_data_files_over_the_time_followed() {
        let mut a = Arrivals::new(T0, RATE_WINDOW);
        // 10 minutes: 3 commits of small files in d=1, one big file, one compaction output.
        a.record(&commit(T0 + MIN, &[("1", &[10, 20], true)]), 100, T0 + MIN);
        a.record(
            &commit(T0 + 2 * MIN, &[("1", &[30, 500], true)]),
            100,
            T0 + 2 * MIN,
        );
        a.record(
            &commit(T0 + 3 * MIN, &[("1", &[40], false)]),
            100,
            T0 + 3 * MIN,
        );
        a.record(
            &commit(T0 + 4 * MIN, &[("2", &[1], true)]),
            100,
            T0 + 4 * MIN,
        );
        let now = T0 + 10 * MIN;
        // 3 small files in 10 minutes: 18 an hour.
        assert_eq!(a.small_files_per_hour(&pv("1"), now), Some(18.0));
        assert_eq!(a.small_files_per_hour(&pv("2"), now), Some(6.0));
        assert_eq!(a.small_files_per_hour(&pv("3"), now), Some(0.0));
        assert_eq!(a.small_files_per_hour(&pv("1"), T0 + 500), None);
        // Two hours later the window (one hour) holds none of them.
        let later = T0 + 130 * MIN;
        a.record(&commit(later, &[]), 100, later);
        assert_eq!(a.small_files_per_hour(&pv("1"), later), Some(0.0));
    }

    #[test]
    fn commit_counts_bucket_the_recent_commits_oldest_first() {
        let mut a = Arrivals::new(T0, RATE_WINDOW);
        a.seed_commit_times([T0 - 25_000, T0 - 1_000]);
        a.record(&commit(T0 + 3_000, &[]), 100, T0 + 3_000);
        a.record(&commit(T0 + 4_000, &[]), 100, T0 + 4_000);
        let now = T0 + 5_000;
        assert_eq!(
            a.commit_counts(now, Duration::from_secs(10), 4),
            vec![1, 0, 0, 3]
        );
    }

    #[test]
    fn due_time_follows_the_rate_and_the_policy() {
        let p = policy("preset = \"databricks-auto-compaction\"");
        let v = pv("1");
        // 20 small files, 50 make it due: 30 more at 60 an hour is half an hour.
        let f = forecast(&p, &v, 25, 20, Some(60.0), T0);
        assert_eq!(f.due, DueIn::In { seconds: 1800 });
        assert!(matches!(
            forecast(&p, &v, 60, 55, Some(60.0), T0).due,
            DueIn::Now { reason } if reason.starts_with("due: 55 small files >= 50")
        ));
        assert_eq!(
            forecast(&p, &v, 25, 20, Some(0.0), T0).due,
            DueIn::NotByArrivals
        );
        assert_eq!(forecast(&p, &v, 25, 20, None, T0).due, DueIn::Unknown);
        // Amoro: 12 small files, or 2 once the oldest is an hour old. With 1 small file and 6
        // an hour: the second arrives in 10 minutes, due at the latest an hour after that.
        let amoro = policy("preset = \"amoro\"");
        let f = forecast(&amoro, &v, 1, 1, Some(6.0), T0);
        assert_eq!(
            f.due,
            DueIn::In {
                seconds: 600 + 3600
            }
        );
        // Fast arrivals reach 12 before the age rule would.
        let f = forecast(&amoro, &v, 1, 1, Some(600.0), T0);
        assert_eq!(f.due, DueIn::In { seconds: 66 });
    }
}
