//! When a table may be compacted again after failures: exponential back-off, then suspension
//! after too many failures in a row (AWS Glue suspends after 4). A pure state machine: the
//! clock is passed in (milliseconds since the epoch), so it is tested without waiting.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::duration::whole_units_ms;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    /// Suspended at this many failures in a row.
    pub max_failures: u32,
}

impl Backoff {
    /// Wait after `failures` failures in a row: base x 2^(failures-1), at most `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let factor = 2u32.saturating_pow(failures - 1);
        self.base.saturating_mul(factor).min(self.max)
    }
}

/// A table's failure record. Persisted as `schedule` lines of the history, so a `--once` run
/// from cron keeps backing off where the last run left it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSchedule {
    /// Failed cycles in a row (a cycle with a failed job; a success resets).
    pub failures: u32,
    pub last_failure_ms: Option<i64>,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Ready,
    BackingOff {
        failures: u32,
        retry_in_ms: i64,
    },
    Suspended {
        failures: u32,
        last_error: Option<String>,
    },
}

impl Gate {
    /// The reason a due partition is held back, None when it is not.
    pub fn reason(&self) -> Option<String> {
        match self {
            Gate::Ready => None,
            Gate::BackingOff {
                failures,
                retry_in_ms,
            } => Some(format!(
                "backing off: {failures} failure{} in a row, next try in {}",
                if *failures == 1 { "" } else { "s" },
                whole_units_ms(*retry_in_ms)
            )),
            Gate::Suspended {
                failures,
                last_error,
            } => Some(format!(
                "suspended: {failures} failures in a row (last: {}); run `watch --resume` to try again",
                last_error.as_deref().unwrap_or("unknown")
            )),
        }
    }
}

impl TableSchedule {
    pub fn gate(&self, b: &Backoff, now_ms: i64) -> Gate {
        if self.failures == 0 {
            return Gate::Ready;
        }
        if self.failures >= b.max_failures {
            return Gate::Suspended {
                failures: self.failures,
                last_error: self.last_error.clone(),
            };
        }
        let since = self.last_failure_ms.unwrap_or(i64::MIN);
        let wait = b.delay(self.failures).as_millis().min(i64::MAX as u128) as i64;
        let retry_at = since.saturating_add(wait);
        if now_ms < retry_at {
            Gate::BackingOff {
                failures: self.failures,
                retry_in_ms: retry_at - now_ms,
            }
        } else {
            Gate::Ready
        }
    }

    pub fn record_success(&mut self) {
        *self = TableSchedule::default();
    }

    pub fn record_failure(&mut self, now_ms: i64, error: String) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure_ms = Some(now_ms);
        self.last_error = Some(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn b() -> Backoff {
        Backoff {
            base: Duration::from_secs(60),
            max: Duration::from_secs(5 * 60),
            max_failures: 4,
        }
    }

    #[test]
    fn delay_doubles_from_the_base_and_is_capped() {
        let b = b();
        assert_eq!(b.delay(0), Duration::ZERO);
        assert_eq!(b.delay(1), Duration::from_secs(60));
        assert_eq!(b.delay(2), Duration::from_secs(120));
        assert_eq!(b.delay(3), Duration::from_secs(240));
        assert_eq!(b.delay(4), Duration::from_secs(300), "capped");
        assert_eq!(b.delay(200), Duration::from_secs(300), "no overflow");
    }

    #[test]
    fn failures_back_off_exponentially_then_suspend_and_a_success_resets() {
        let b = b();
        let mut s = TableSchedule::default();
        let t0 = 1_000_000_000;
        assert_eq!(s.gate(&b, t0), Gate::Ready);

        s.record_failure(t0, "read failed".into());
        assert_eq!(
            s.gate(&b, t0 + 10_000),
            Gate::BackingOff {
                failures: 1,
                retry_in_ms: 50_000
            }
        );
        assert_eq!(s.gate(&b, t0 + MIN), Gate::Ready, "after base x 1");

        s.record_failure(t0 + MIN, "read failed".into());
        assert!(matches!(
            s.gate(&b, t0 + 2 * MIN),
            Gate::BackingOff { failures: 2, .. }
        ));
        assert_eq!(s.gate(&b, t0 + 3 * MIN), Gate::Ready, "after base x 2");

        s.record_failure(t0 + 3 * MIN, "write failed".into());
        let g = s.gate(&b, t0 + 3 * MIN);
        assert_eq!(
            g,
            Gate::BackingOff {
                failures: 3,
                retry_in_ms: 4 * MIN
            }
        );
        assert_eq!(
            g.reason().unwrap(),
            "backing off: 3 failures in a row, next try in 4 min"
        );
        assert_eq!(s.gate(&b, t0 + 7 * MIN), Gate::Ready, "after base x 4");

        s.record_failure(t0 + 7 * MIN, "commit failed: disk full".into());
        let g = s.gate(&b, t0 + 1000 * MIN);
        assert!(
            matches!(g, Gate::Suspended { failures: 4, .. }),
            "never retried: {g:?}"
        );
        let r = g.reason().unwrap();
        assert!(
            r.starts_with("suspended: 4 failures in a row (last: commit failed: disk full)"),
            "{r}"
        );

        s.record_success();
        assert_eq!(s, TableSchedule::default());
        assert_eq!(s.gate(&b, t0 + 1000 * MIN), Gate::Ready);
    }

    #[test]
    fn one_failure_suspends_when_max_failures_is_one() {
        let b = Backoff {
            max_failures: 1,
            ..b()
        };
        let mut s = TableSchedule::default();
        s.record_failure(0, "x".into());
        assert!(matches!(s.gate(&b, i64::MAX), Gate::Suspended { .. }));
    }

    #[test]
    fn a_clock_that_went_backwards_keeps_backing_off() {
        let b = b();
        let mut s = TableSchedule::default();
        s.record_failure(10 * MIN, "x".into());
        assert!(matches!(
            s.gate(&b, 0),
            Gate::BackingOff { failures: 1, .. }
        ));
    }
}
