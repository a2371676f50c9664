//! A job's read budget (`janitor::throttle`): bins sleep so that the bytes they read, inputs
//! and the proof's read-back together, stay at most `rate` per second since the job started.
//! Shared by a job's bins. Sleeping leaves the cores to the writers; it never skips work.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Pacer {
    rate: u64,
    /// The first read (a job may wait for its partitions before it reads anything).
    start: OnceLock<Instant>,
    bytes: AtomicU64,
}

impl Pacer {
    pub fn new(bytes_per_second: u64) -> Self {
        Self {
            rate: bytes_per_second.max(1),
            start: OnceLock::new(),
            bytes: AtomicU64::new(0),
        }
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// How long to wait after `total` bytes, `elapsed` after the start.
    fn wait_for(&self, total: u64, elapsed: Duration) -> Duration {
        Duration::from_secs_f64(total as f64 / self.rate as f64).saturating_sub(elapsed)
    }

    /// Records `n` bytes read and sleeps until they fit the rate.
    pub async fn consume(&self, n: u64) {
        let start = *self.start.get_or_init(Instant::now);
        let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        let wait = self.wait_for(total, start.elapsed());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_bytes_fit_the_rate() {
        let p = Pacer::new(1000);
        assert_eq!(p.wait_for(500, Duration::ZERO), Duration::from_millis(500));
        assert_eq!(
            p.wait_for(500, Duration::from_millis(200)),
            Duration::from_millis(300)
        );
        assert_eq!(
            p.wait_for(500, Duration::from_secs(1)),
            Duration::ZERO,
            "behind: no wait"
        );
    }
}
