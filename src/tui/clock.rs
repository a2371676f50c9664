//! The app's notion of now. The running TUI reads the system clock; tests and screenshots freeze
//! it, so "3d ago", elapsed times and throughput render the same on every run.

use std::time::Instant;

#[derive(Debug, Clone, Copy)]
pub enum Clock {
    System,
    /// Always `at` (monotonic) and `wall_ms` (Unix milliseconds).
    Frozen {
        at: Instant,
        wall_ms: i64,
    },
}

impl Clock {
    pub fn frozen(wall_ms: i64) -> Self {
        Clock::Frozen {
            at: Instant::now(),
            wall_ms,
        }
    }

    pub fn now(&self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Frozen { at, .. } => *at,
        }
    }

    /// Unix milliseconds, for "ago" columns.
    pub fn wall_ms(&self) -> i64 {
        match self {
            Clock::System => crate::engine::clock::now_ms(),
            Clock::Frozen { wall_ms, .. } => *wall_ms,
        }
    }
}
