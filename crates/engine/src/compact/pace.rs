//! A job's read budget (`janitor::throttle`, then `cadence` while a writer is active): bins
//! sleep so that the bytes they read, inputs and the proof's read-back together, stay at the
//! current rate. The rate may change while the job runs (the writer's cadence sets it); shared
//! by a job's bins. Sleeping leaves the cores to the writers; it never skips work.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::cadence::PaceNote;

#[derive(Debug)]
pub struct Pacer {
    /// Bytes per second; 0: unbounded (full speed).
    rate: AtomicU64,
    /// When the bytes consumed so far fit the rate (a virtual clock: each read moves it on by
    /// its bytes at the rate of the moment).
    due: Mutex<Option<Instant>>,
    /// The latest change and why.
    note: Mutex<Option<PaceNote>>,
    /// The user lifted the pace (`lift`): it stays unbounded whatever the cadence says.
    lifted: AtomicBool,
}

impl Pacer {
    pub fn new(bytes_per_second: u64) -> Self {
        Self {
            rate: AtomicU64::new(bytes_per_second.max(1)),
            due: Mutex::new(None),
            note: Mutex::new(None),
            lifted: AtomicBool::new(false),
        }
    }

    /// The rate now (None: unbounded).
    pub fn rate(&self) -> Option<u64> {
        match self.rate.load(Ordering::Relaxed) {
            0 => None,
            r => Some(r),
        }
    }

    /// A new pace and why (`cadence`). Returns false, changing nothing, once the user lifted
    /// the pace. Checked and stored under the note's lock, so a lift is never undone midway.
    pub fn set(&self, note: PaceNote) -> bool {
        let Ok(mut n) = self.note.lock() else {
            return false;
        };
        if self.lifted.load(Ordering::Relaxed) {
            return false;
        }
        self.rate
            .store(note.bytes_per_second.unwrap_or(0), Ordering::Relaxed);
        *n = Some(note);
        true
    }

    /// Full speed from now on, for `why` (the user's key, as `--no-throttle`): later cadence
    /// changes are ignored. Returns the note now in force.
    pub fn lift(&self, why: &str) -> PaceNote {
        let mut guard = self.note.lock().ok();
        let before = guard.as_ref().and_then(|n| n.as_ref());
        let note = PaceNote {
            bytes_per_second: None,
            why: why.into(),
            raised: before.map_or(0, |n| n.raised),
            cut: before.map_or(0, |n| n.cut),
        };
        self.lifted.store(true, Ordering::Relaxed);
        self.rate.store(0, Ordering::Relaxed);
        if let Some(n) = guard.as_mut() {
            **n = Some(note.clone());
        }
        note
    }

    /// The latest pace change, if any.
    pub fn note(&self) -> Option<PaceNote> {
        self.note.lock().ok().and_then(|n| n.clone())
    }

    /// Moves the virtual clock on by `n` bytes at `rate` from `now`; returns how long to sleep.
    fn advance(&self, n: u64, rate: u64, now: Instant) -> Duration {
        let Ok(mut due) = self.due.lock() else {
            return Duration::ZERO;
        };
        let from = due.map_or(now, |d| d.max(now));
        // Checked: a huge read at a tiny rate must not overflow the clock (it waits long).
        let wait =
            Duration::try_from_secs_f64(n as f64 / rate.max(1) as f64).unwrap_or(Duration::MAX);
        let Some(next) = from.checked_add(wait) else {
            return wait;
        };
        *due = Some(next);
        next.saturating_duration_since(now)
    }

    /// Records `n` bytes read and sleeps until they fit the rate.
    pub async fn consume(&self, n: u64) {
        let Some(rate) = self.rate() else {
            return;
        };
        let wait = self.advance(n, rate, Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_bytes_fit_the_rate_of_the_moment() {
        let p = Pacer::new(1000);
        let t0 = Instant::now();
        assert_eq!(p.advance(500, 1000, t0), Duration::from_millis(500));
        // Still 300 ms of the first read to wait out, then the next 500 bytes.
        assert_eq!(
            p.advance(500, 1000, t0 + Duration::from_millis(200)),
            Duration::from_millis(800)
        );
        // A faster rate: the next bytes take less.
        assert_eq!(
            p.advance(1000, 4000, t0 + Duration::from_millis(1000)),
            Duration::from_millis(250)
        );
        // Idle time is not credited: behind, the wait starts from now.
        assert_eq!(
            p.advance(100, 1000, t0 + Duration::from_secs(10)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn full_speed_never_waits() {
        let p = Pacer::new(1);
        p.set(PaceNote {
            bytes_per_second: None,
            why: "the writer stopped".into(),
            raised: 1,
            cut: 0,
        });
        assert_eq!(p.rate(), None);
        assert_eq!(p.note().map(|n| n.raised), Some(1));
    }

    #[test]
    fn a_lifted_pace_stays_unbounded_whatever_the_cadence_says_after() {
        let p = Pacer::new(1000);
        let note = p.lift("lifted by the user");
        assert_eq!(note.bytes_per_second, None);
        assert_eq!(p.rate(), None);
        let applied = p.set(PaceNote {
            bytes_per_second: Some(10),
            why: "the writer slowed down".into(),
            raised: 0,
            cut: 1,
        });
        assert!(
            !applied,
            "the follower is told, so it stops reporting paces"
        );
        assert_eq!(p.rate(), None, "the cadence must not bring the pace back");
        assert_eq!(p.note().map(|n| n.why), Some("lifted by the user".into()));
    }
}
