//! Commit spacing while a writer is active. Any commit a writer did not expect makes that
//! writer's next commit fail and retry: delta-rs reads the new version and tries again, which
//! costs it 30–70 ms whatever the other commit's size (measured beside `lakehealth stream`
//! with one-row Python appends: the same spike as after an OPTIMIZE). So while a writer is
//! active, a table's compaction commits are spaced (`janitor::throttle` picks the interval
//! from the writer's commit rate) and only a small share of its commits ever pays the retry.
//! A bin that is ready waits here with its outputs; a cancel ends the wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct CommitSpacer {
    interval: Duration,
    /// When the last compaction commit through this spacer landed (shared by the spacers of
    /// one table's jobs).
    last: LastCommit,
    /// The user lifted the spacing (`lift`): commits go as bins finish.
    lifted: AtomicBool,
}

/// When a table's last compaction commit landed.
pub type LastCommit = Arc<Mutex<Option<Instant>>>;

impl CommitSpacer {
    pub fn new(interval: Duration) -> Self {
        Self::sharing(interval, LastCommit::default())
    }

    /// Spaced from the commits of every other spacer given `last`.
    pub fn sharing(interval: Duration, last: LastCommit) -> Self {
        Self {
            interval,
            last,
            lifted: AtomicBool::new(false),
        }
    }

    /// Commits go as bins finish from now on (the user's key, as `--no-throttle`).
    pub fn lift(&self) {
        self.lifted.store(true, Ordering::Relaxed);
    }

    /// Whether the user lifted the spacing.
    pub fn lifted(&self) -> bool {
        self.lifted.load(Ordering::Relaxed)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How long a commit must still wait at `now` (zero: it may go).
    pub fn remaining(&self, now: Instant) -> Duration {
        if self.lifted.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        let last = self.last.lock().ok().and_then(|l| *l);
        match last {
            // Never `t + interval`: a long interval would overflow the clock.
            Some(t) => self
                .interval
                .saturating_sub(now.saturating_duration_since(t)),
            None => Duration::ZERO,
        }
    }

    /// A commit landed at `now`.
    pub fn committed(&self, now: Instant) {
        if let Ok(mut l) = self.last.lock() {
            *l = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_commit_goes_at_once_and_the_next_waits_out_the_interval() {
        let s = CommitSpacer::new(Duration::from_secs(20));
        let t0 = Instant::now();
        assert_eq!(s.remaining(t0), Duration::ZERO);
        s.committed(t0);
        assert_eq!(
            s.remaining(t0 + Duration::from_secs(5)),
            Duration::from_secs(15)
        );
        assert_eq!(s.remaining(t0 + Duration::from_secs(20)), Duration::ZERO);
        assert_eq!(s.remaining(t0 + Duration::from_secs(30)), Duration::ZERO);
    }

    #[test]
    fn a_tables_next_job_is_spaced_from_the_last_jobs_commit() {
        let last = LastCommit::default();
        let t0 = Instant::now();
        CommitSpacer::sharing(Duration::from_secs(20), last.clone()).committed(t0);
        let next = CommitSpacer::sharing(Duration::from_secs(10), last);
        assert_eq!(
            next.remaining(t0 + Duration::from_secs(4)),
            Duration::from_secs(6)
        );
    }

    #[test]
    fn a_lifted_spacing_lets_the_next_commit_go_at_once() {
        let s = CommitSpacer::new(Duration::from_secs(20));
        let t0 = Instant::now();
        s.committed(t0);
        s.lift();
        assert_eq!(s.remaining(t0 + Duration::from_secs(1)), Duration::ZERO);
    }
}
