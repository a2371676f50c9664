//! Ingestion first: a compaction must not slow the table's writers. The writers are measured
//! from the log (data-changing commits over a recent window, streaming queries' `txn` app ids):
//! while one is active a job rewrites one bin at a time at a bounded read rate, so it takes
//! about a share of one core; when none is, it uses every core. Pure: the commits, the
//! streaming writers and the clock are passed in. `lakehealth compact` (without
//! `--parallelism`) and the janitor use the same rule.

use serde::Serialize;

pub use crate::compact::budget::{Budget, Throttle};
use crate::delta::log::state::CommitSummary;
use crate::size::format_bytes;
use crate::stats::writers::StreamingWriter;

/// How far back a commit makes a writer "active".
pub const WINDOW_MS: i64 = 60_000;

/// Input bytes per second a job may read while a writer is active (its outputs are read back
/// for the proof at the same rate). About a third of one core's rewrite speed on the machine
/// the benchmark runs on (`bench/compact.sh`), so a writer keeps a core and more.
pub const ACTIVE_READ_RATE: u64 = 24 * 1024 * 1024;

/// While a writer is active, one compaction commit per this many of its commits: each one
/// makes the writer's next commit retry (`compact::spacing`), so at most 5 % of them do: its
/// p90 stays put (its p99 shows the retries). Every bin ready by then goes into that commit
/// (`compact::execute`), so the spacing bounds commits, not partitions: a writer committing
/// twice a second gets a compaction commit every 10 s, one committing 10 times a second one
/// every 2 s.
pub const WRITER_COMMITS_PER_COMPACTION_COMMIT: f64 = 20.0;

/// Below this writer commit rate commits are not spaced: a retry costs tens of milliseconds,
/// small beside the seconds between such a writer's commits (a Spark trigger, a batch load).
pub const MIN_SPACED_COMMITS_PER_SECOND: f64 = 1.0;

/// The longest a compaction commit waits for the spacing (a slow writer would otherwise hold
/// a finished bin for hours).
pub const MAX_COMMIT_SPACING_MS: u64 = 60_000;

/// The writers seen in the log's recent commits.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Writers {
    /// Data-changing commits (appends, updates, deletes: not compactions, which change no
    /// data) in the window.
    pub commits: u64,
    pub window_ms: i64,
    /// Streaming queries (`txn` app ids) that committed in the window.
    pub app_ids: Vec<String>,
    /// The newest data-changing commit seen, if any.
    pub last_write_ms: Option<i64>,
    /// The oldest data-changing commit in the window (with `last_write_ms`, the span the
    /// commit rate is measured over: the log's recent commits may not cover the whole window).
    pub first_in_window_ms: Option<i64>,
    /// A writer that keeps committing: a streaming query (a `txn` app id), or data commits
    /// over at least `STEADY_SPAN_MS` that have not stopped (the last one no older than three
    /// of its intervals). A burst that ended (a backfill, a batch load) is not.
    pub steady: bool,
    /// The writer's rhythm: the median interval between its recent data commits (None with
    /// fewer than two).
    pub rhythm_ms: Option<i64>,
    /// Still writing: its last data commit is no older than `STOPPED_AFTER_RHYTHMS` of its
    /// intervals (at least `MIN_STOP_MS`), or a streaming query's batch is that recent. A load
    /// that has stopped is not a writer, however recent it was.
    pub still_writing: bool,
    /// Milliseconds since the last data commit, when there was one.
    pub idle_ms: Option<i64>,
}

/// A writer has stopped once this many of its intervals passed without a commit.
pub const STOPPED_AFTER_RHYTHMS: i64 = 5;

/// ... and at least this long (jitter of a fast writer).
pub const MIN_STOP_MS: i64 = 1_000;

/// The median of the intervals between `times` (any order); None with fewer than two.
fn median_interval(times: &[i64]) -> Option<i64> {
    let mut t = times.to_vec();
    t.sort_unstable();
    let mut gaps: Vec<i64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    Some(gaps[gaps.len() / 2])
}

/// Whether a writer with `rhythm_ms` whose last commit was `idle_ms` ago is still writing.
fn still_going(rhythm_ms: i64, idle_ms: i64) -> bool {
    idle_ms <= (STOPPED_AFTER_RHYTHMS * rhythm_ms).max(MIN_STOP_MS)
}

/// How long data commits must have kept coming to count as a steady writer (without a `txn`).
pub const STEADY_SPAN_MS: i64 = 5_000;

impl Writers {
    pub fn active(&self) -> bool {
        self.still_writing
    }

    /// For humans: which writer was seen and why it counts as writing or stopped.
    pub fn describe(&self) -> String {
        let who = if self.app_ids.is_empty() {
            String::new()
        } else {
            format!(" (streaming queries: {})", self.app_ids.join(", "))
        };
        // Tenths of a second for a writer's rhythm; whole units for ages past a minute.
        let secs = |ms: i64| {
            if ms < 60_000 {
                format!("{:.1} s", ms as f64 / 1000.0)
            } else {
                crate::model::duration::whole_units_ms(ms)
            }
        };
        match (self.rhythm_ms, self.idle_ms) {
            (Some(r), Some(idle)) if self.still_writing => format!(
                "writer active: {:.1} data commit(s)/s, one every {}, the last {} ago{who}",
                self.commits_per_second(),
                secs(r),
                secs(idle)
            ),
            (Some(r), Some(idle)) => format!(
                "no active writer: the last data commit was {} ago, more than {STOPPED_AFTER_RHYTHMS} of its {} intervals (a load that stopped)",
                secs(idle),
                secs(r)
            ),
            (None, Some(idle)) if !self.still_writing => format!(
                "no active writer: one data commit, {} ago (no rhythm to keep)",
                secs(idle)
            ),
            _ if self.still_writing => format!("writer active{who}"),
            _ => "no writer in the recent log".into(),
        }
    }

    pub fn commits_per_minute(&self) -> f64 {
        if self.window_ms <= 0 {
            return 0.0;
        }
        self.commits as f64 * 60_000.0 / self.window_ms as f64
    }

    /// Data commits per second: over the span they cover when there are two or more, else
    /// over the whole window.
    pub fn commits_per_second(&self) -> f64 {
        if let (Some(a), Some(b)) = (self.first_in_window_ms, self.last_write_ms)
            && self.commits >= 2
            && b > a
        {
            return (self.commits - 1) as f64 * 1000.0 / (b - a) as f64;
        }
        self.commits_per_minute() / 60.0
    }

    /// The spacing of compaction commits while this writer is active; None for a writer too
    /// slow for a retry to matter, or one that is not steady.
    pub fn commit_spacing_ms(&self) -> Option<u64> {
        let rate = self.commits_per_second();
        if rate < MIN_SPACED_COMMITS_PER_SECOND || !self.steady {
            return None;
        }
        let ms = (WRITER_COMMITS_PER_COMPACTION_COMMIT / rate * 1000.0) as u64;
        Some(ms.min(MAX_COMMIT_SPACING_MS))
    }
}

/// The budget of a job started by hand (`compact` without `--parallelism`, the TUI's preview)
/// on a table whose log shows `commits` and `streaming` writers at `now_ms`: the janitor's rule.
pub fn for_table(
    commits: &[CommitSummary],
    streaming: &[StreamingWriter],
    now_ms: i64,
) -> Throttle {
    let w = measure(commits, streaming, now_ms, WINDOW_MS);
    choose(&w, cores(), ACTIVE_READ_RATE)
}

/// Measures the writers of the last `window_ms` before `now_ms`. Compactions (OPTIMIZE, by
/// lakehealth or anyone, `dataChange=false`) are not writers: they never wait on each other
/// the way an append does.
pub fn measure(
    commits: &[CommitSummary],
    streaming: &[StreamingWriter],
    now_ms: i64,
    window_ms: i64,
) -> Writers {
    let since = now_ms.saturating_sub(window_ms);
    let writes: Vec<i64> = commits
        .iter()
        .filter(|c| c.data_change && c.operation != "OPTIMIZE")
        .filter_map(|c| c.timestamp_ms)
        .collect();
    let in_window = || writes.iter().copied().filter(|t| *t >= since);
    let mut w = Writers {
        commits: in_window().count() as u64,
        window_ms,
        app_ids: Vec::new(),
        last_write_ms: writes.iter().copied().max(),
        first_in_window_ms: in_window().min(),
        steady: false,
        rhythm_ms: None,
        still_writing: false,
        idle_ms: None,
    };
    // The rhythm from the most recent data commits (the history may reach past the window).
    let mut recent = writes.clone();
    recent.sort_unstable();
    let tail = &recent[recent.len().saturating_sub(RHYTHM_COMMITS)..];
    w.rhythm_ms = median_interval(tail);
    w.idle_ms = w.last_write_ms.map(|t| (now_ms - t).max(0));
    let commits_going = matches!((w.rhythm_ms, w.idle_ms), (Some(r), Some(i)) if still_going(r, i));
    // A streaming query's batches: by its own rate when the history holds it, else by the
    // window (a busy table's history may hold none of its commits).
    w.app_ids = streaming
        .iter()
        .filter(|s| {
            let Some(last) = s.last_updated_ms else {
                return false;
            };
            let idle = (now_ms - last).max(0);
            match s.batches_per_minute.filter(|b| *b > 0.0) {
                Some(bpm) => still_going((60_000.0 / bpm) as i64, idle),
                None => last >= since,
            }
        })
        .map(|s| s.app_id.clone())
        .collect();
    w.app_ids.sort();
    w.still_writing = commits_going || !w.app_ids.is_empty();
    w.steady = !w.app_ids.is_empty() || {
        let span = w.last_write_ms.unwrap_or(0) - w.first_in_window_ms.unwrap_or(0);
        let gap = now_ms - w.last_write_ms.unwrap_or(i64::MIN / 2);
        let interval_ms = 1000.0 / w.commits_per_second().max(1e-9);
        span >= STEADY_SPAN_MS && (gap as f64) <= (3.0 * interval_ms).max(3000.0)
    };
    w
}

/// How many of the latest data commits set the rhythm.
const RHYTHM_COMMITS: usize = 20;

/// The budget for a job given the writers: one bin at a time at `active_rate` while any writer
/// is active, every core when none is.
pub fn choose(w: &Writers, cores: usize, active_rate: u64) -> Throttle {
    let cores = cores.max(1);
    if w.active() {
        let spacing = w.commit_spacing_ms();
        Throttle {
            budget: Budget {
                parallelism: 1,
                read_bytes_per_second: Some(active_rate.max(1)),
                background: true,
                commit_spacing_ms: spacing,
                writer_rhythm_ms: w.rhythm_ms.map(|r| r.max(1) as u64),
            },
            reason: format!(
                "{}; 1 bin at a time at the lowest CPU priority, reading {}/s at first{}{}",
                w.describe(),
                format_bytes(active_rate),
                if w.rhythm_ms.is_some() {
                    ", then paced by the writer's cadence"
                } else {
                    ""
                },
                spacing_text(spacing)
            ),
            writers: w.describe(),
        }
    } else {
        Throttle {
            budget: Budget::full(cores),
            reason: format!(
                "{}: {cores} bin(s) at a time (every core), unthrottled",
                w.describe()
            ),
            writers: w.describe(),
        }
    }
}

/// The budget of a table without an active writer while `other` has one: its job yields the
/// machine's cores to that writer (one bin at a time at the lowest CPU priority) but is not
/// paced or held back: a writer paces its own table's job only.
pub fn yielding(writers: &str, other: &str, cores: usize) -> Throttle {
    Throttle {
        budget: Budget {
            parallelism: 1,
            background: true,
            ..Budget::full(cores)
        },
        reason: format!(
            "{writers}; a writer is active on {other}: 1 bin at a time at the lowest CPU priority, unpaced (that writer has the cores first)"
        ),
        writers: writers.to_string(),
    }
}

fn spacing_text(spacing_ms: Option<u64>) -> String {
    match spacing_ms {
        Some(ms) => format!(
            ", one compaction commit per {:.0} s (each makes the writer retry once)",
            ms as f64 / 1000.0
        ),
        None => ", commits as bins finish".into(),
    }
}

/// `reason` with its spacing clause replaced by `spacing_ms`'s (a policy's own spacing).
pub fn with_spacing(reason: &str, spacing_ms: Option<u64>) -> String {
    let head = reason
        .split(", one compaction commit per")
        .next()
        .unwrap_or(reason);
    format!("{head}{}", spacing_text(spacing_ms))
}

/// The cores of this machine (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_beside_another_tables_writer_yields_the_cores_but_is_not_paced() {
        let quiet = measure(&[], &[], 1_000_000, WINDOW_MS);
        assert!(!quiet.active());
        let t = yielding(&quiet.describe(), "s3://b/lake/db1/stream", 8);
        assert_eq!(t.budget.parallelism, 1);
        assert!(t.budget.background, "lowest CPU priority");
        assert_eq!(t.budget.read_bytes_per_second, None, "not paced");
        assert_eq!(t.budget.commit_spacing_ms, None);
        assert!(
            t.reason
                .contains("a writer is active on s3://b/lake/db1/stream"),
            "{}",
            t.reason
        );
    }

    fn commit(ts: i64, op: &str, data_change: bool) -> CommitSummary {
        CommitSummary {
            version: 0,
            timestamp_ms: Some(ts),
            operation: op.into(),
            files_added: 1,
            files_removed: 0,
            bytes_added: 1,
            bytes_removed: 0,
            data_change,
            query_id: None,
            epoch_id: None,
            engine: None,
            trigger: None,
        }
    }

    fn stream(app: &str, ts: i64) -> StreamingWriter {
        StreamingWriter {
            app_id: app.into(),
            last_batch: 1,
            last_updated_ms: Some(ts),
            window_commits: 1,
            batches_per_minute: None,
        }
    }

    const NOW: i64 = 10_000_000;

    #[test]
    fn a_writer_still_committing_makes_the_job_one_bin_at_a_bounded_rate() {
        let commits = [
            commit(NOW - 3_000, "WRITE", true),
            commit(NOW - 1_000, "WRITE", true),
        ];
        let w = measure(&commits, &[], NOW, WINDOW_MS);
        assert!(w.active());
        assert_eq!(
            (w.commits, w.rhythm_ms, w.idle_ms),
            (2, Some(2_000), Some(1_000))
        );
        let t = choose(&w, 8, ACTIVE_READ_RATE);
        assert_eq!(
            t.budget,
            Budget {
                parallelism: 1,
                read_bytes_per_second: Some(ACTIVE_READ_RATE),
                background: true,
                commit_spacing_ms: None,
                writer_rhythm_ms: Some(2_000),
            }
        );
        assert!(
            t.reason.starts_with(
                "writer active: 0.5 data commit(s)/s, one every 2.0 s, the last 1.0 s ago"
            ),
            "{}",
            t.reason
        );
    }

    #[test]
    fn a_batch_load_that_stopped_is_not_a_writer_however_recent() {
        // 100 commits 100 ms apart, the last 3 s ago: 30 of its intervals without a commit.
        let load: Vec<_> = (0..100)
            .map(|i| commit(NOW - 3_000 - i * 100, "WRITE", true))
            .collect();
        let w = measure(&load, &[], NOW, WINDOW_MS);
        assert_eq!(w.commits, 100, "all in the window");
        assert!(!w.active(), "{w:?}");
        let t = choose(&w, 2, ACTIVE_READ_RATE);
        assert_eq!(t.budget.parallelism, 2);
        assert!(
            t.reason
                .starts_with("no active writer: the last data commit was 3.0 s ago"),
            "{}",
            t.reason
        );
        // The same writer 400 ms after its last commit is still writing.
        let w = measure(&load, &[], NOW - 2_600, WINDOW_MS);
        assert!(w.active(), "{w:?}");
        // A single append has no rhythm: not a writer.
        let one = measure(&[commit(NOW - 500, "WRITE", true)], &[], NOW, WINDOW_MS);
        assert!(!one.active());
        // A streaming query known to commit every 10 s is writing 30 s after its last batch
        // only if that is within 5 of its intervals.
        let mut q = stream("q", NOW - 30_000);
        q.batches_per_minute = Some(6.0);
        assert!(measure(&[], &[q.clone()], NOW, WINDOW_MS).active());
        q.last_updated_ms = Some(NOW - 55_000);
        assert!(!measure(&[], &[q], NOW, WINDOW_MS).active());
    }

    #[test]
    fn no_writer_uses_every_core_unthrottled() {
        let old = commit(NOW - WINDOW_MS - 1, "WRITE", true);
        let w = measure(&[old], &[stream("q", NOW - WINDOW_MS - 1)], NOW, WINDOW_MS);
        assert!(!w.active(), "{w:?}");
        assert_eq!(w.last_write_ms, Some(NOW - WINDOW_MS - 1));
        let t = choose(&w, 4, ACTIVE_READ_RATE);
        assert_eq!(
            t.budget,
            Budget {
                parallelism: 4,
                read_bytes_per_second: None,
                background: false,
                commit_spacing_ms: None,
                writer_rhythm_ms: None,
            }
        );
        assert!(t.reason.contains("every core"), "{}", t.reason);
        assert_eq!(choose(&w, 0, 1).budget.parallelism, 1, "unknown cores: one");
    }

    #[test]
    fn compactions_are_not_writers() {
        // Our own (or anyone's) OPTIMIZE commits change no data: a table only compacted
        // recently is idle.
        let w = measure(
            &[
                commit(NOW - 1_000, "OPTIMIZE", false),
                commit(NOW - 2_000, "OPTIMIZE", true),
            ],
            &[],
            NOW,
            WINDOW_MS,
        );
        assert!(!w.active(), "{w:?}");
    }

    #[test]
    fn a_streaming_query_counts_by_its_txn_even_without_a_commit_summary() {
        // The history window may hold none of its commits (a busy table), but its txn is new.
        let w = measure(
            &[],
            &[stream("b", NOW - 1_000), stream("a", NOW - 2_000)],
            NOW,
            WINDOW_MS,
        );
        assert!(w.active());
        assert_eq!(w.app_ids, vec!["a".to_string(), "b".to_string()]);
        let t = choose(&w, 2, 1024 * 1024);
        assert_eq!(t.budget.parallelism, 1);
        assert!(t.reason.contains("streaming queries: a, b"), "{}", t.reason);
        assert!(t.reason.contains("MiB/s"), "{}", t.reason);
    }

    #[test]
    fn commit_rate_is_per_minute_over_the_window() {
        let commits: Vec<_> = (0..30)
            .map(|i| commit(NOW - i * 1_000, "STREAMING UPDATE", true))
            .collect();
        let w = measure(&commits, &[], NOW, 30_000);
        assert_eq!(
            w.commits, 30,
            "every commit of the last 30 s, the boundary included"
        );
        assert!((w.commits_per_minute() - 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_writer_committing_ten_times_a_second_spaces_compaction_commits_by_2_s() {
        // The log's last 100 commits cover 10 s of the 60 s window.
        let commits: Vec<_> = (0..100)
            .map(|i| commit(NOW - 10_000 + i * 100, "STREAMING UPDATE", true))
            .collect();
        let w = measure(&commits, &[], NOW, WINDOW_MS);
        assert!((w.commits_per_second() - 10.0).abs() < 0.2, "{w:?}");
        let t = choose(&w, 2, ACTIVE_READ_RATE);
        let spacing = t.budget.commit_spacing_ms.unwrap();
        assert!((1_900..=2_100).contains(&spacing), "{spacing}");
        assert!(
            t.reason.contains("one compaction commit per 2 s"),
            "{}",
            t.reason
        );
        let every = |ms: i64| -> Vec<_> {
            (0..20)
                .map(|i| commit(NOW - 20 * ms + i * ms, "WRITE", true))
                .collect()
        };
        // 2 commits a second: a compaction commit every 10 s (one writer commit in 20 retries).
        let two = measure(&every(500), &[], NOW, WINDOW_MS);
        assert_eq!(two.commit_spacing_ms(), Some(10_000));
        // A burst of commits that ended (a backfill, a batch load; no txn): not spaced.
        let burst: Vec<_> = (0..80)
            .map(|i| commit(NOW - 4_000 + i * 40, "WRITE", true))
            .collect();
        let burst = measure(&burst, &[], NOW, WINDOW_MS);
        assert!(
            burst.commits_per_second() > 20.0 && !burst.steady,
            "{burst:?}"
        );
        assert_eq!(burst.commit_spacing_ms(), None);
        // The same burst from a streaming query is steady.
        let from_query = measure(&commits, &[stream("q", NOW - 100)], NOW, WINDOW_MS);
        assert!(from_query.steady);
        // A writer committing every 5 s (a Spark trigger): too slow to space for.
        let slow = measure(&every(5_000), &[], NOW, WINDOW_MS);
        assert_eq!(slow.commit_spacing_ms(), None);
        assert!(
            choose(&slow, 2, ACTIVE_READ_RATE)
                .reason
                .contains("commits as bins finish")
        );
    }
}
