//! The janitor's fleet: one row per table it watches, with its state (running with its pace and
//! progress, queued with its place and why, backing off, suspended, broken, idle), its debt
//! (small files and bytes), its last job and what it cost to watch and compact. The TUI's
//! tables screen shows it while the janitor runs over a root; the janitor publishes a fresh
//! snapshot after each cycle, each job's end and every second while jobs run.
//!
//! The types and the month's extrapolation are pure; `Book` is what the janitor keeps per table
//! to build a row (a few numbers, never the table's files).

use std::sync::Arc;

use super::history::Outcome;
use crate::compact::counting_store::ByteCounters;
use crate::model::cost::Rates;
use crate::stats::table_report::TableReport;

/// What the janitor is doing with a table.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetState {
    /// Read, nothing due; `reason` is why its nearest partition is not.
    Idle { reason: String },
    /// Due; its job waits for a job slot. `place` is 1-based.
    Queued {
        place: usize,
        of: usize,
        why: String,
    },
    /// Its job runs.
    Running {
        partitions: usize,
        /// Share of its input read, 0.0–1.0.
        done: f64,
        /// The pace it follows (a writer is active); None: unbounded.
        pace_bytes_per_second: Option<u64>,
        doing: String,
    },
    /// Its last jobs failed: it waits before the next.
    BackingOff {
        failures: u32,
        retry_in_ms: i64,
        error: String,
    },
    /// Too many failures in a row: no job until `watch --resume`.
    Suspended { failures: u32, error: String },
    /// Its log could not be read (tried again on its own back-off).
    Broken { error: String },
}

impl FleetState {
    pub fn label(&self) -> &'static str {
        match self {
            FleetState::Idle { .. } => "idle",
            FleetState::Queued { .. } => "queued",
            FleetState::Running { .. } => "running",
            FleetState::BackingOff { .. } => "backing off",
            FleetState::Suspended { .. } => "suspended",
            FleetState::Broken { .. } => "broken",
        }
    }

    /// What needs a look first sorts first: broken, suspended, backing off, running, queued,
    /// idle.
    pub fn urgency(&self) -> u8 {
        match self {
            FleetState::Broken { .. } => 0,
            FleetState::Suspended { .. } => 1,
            FleetState::BackingOff { .. } => 2,
            FleetState::Running { .. } => 3,
            FleetState::Queued { .. } => 4,
            FleetState::Idle { .. } => 5,
        }
    }

    /// Why, in full (the detail line under the list).
    pub fn why(&self) -> &str {
        match self {
            FleetState::Idle { reason } => reason,
            FleetState::Queued { why, .. } => why,
            FleetState::Running { doing, .. } => doing,
            FleetState::BackingOff { error, .. }
            | FleetState::Suspended { error, .. }
            | FleetState::Broken { error } => error,
        }
    }
}

/// What a table's small files cost its readers, as last read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Debt {
    pub files: u64,
    pub bytes: u64,
    pub small_files: u64,
    pub small_bytes: u64,
    /// Files beyond the count its bytes need at the target size.
    pub excess_files: u64,
    /// Its health score (0–100), as `report` scores it.
    pub health: u8,
}

impl Debt {
    pub fn of(report: &TableReport) -> Self {
        let s = &report.stats;
        Debt {
            files: s.files,
            bytes: s.bytes,
            small_files: s.small_files,
            small_bytes: s.small_bytes,
            excess_files: s.excess_files,
            health: s.health_score,
        }
    }
}

/// A table's last janitor job.
#[derive(Debug, Clone, PartialEq)]
pub struct LastJob {
    pub ended_ms: i64,
    pub outcome: Outcome,
    /// What it did, for humans ("compacted 60 files (1.2 MiB) into 1 file ...").
    pub summary: String,
    /// Its measured price; None: it never ran (cancelled before its start).
    pub usd: Option<f64>,
}

/// One table as the fleet view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRow {
    /// The table as the janitor names it (`table_id`).
    pub table: String,
    pub state: FleetState,
    /// None: never read (broken since it was found).
    pub debt: Option<Debt>,
    pub last_job: Option<LastJob>,
    /// Spent on it this run: reading its log and its jobs' requests.
    pub spent_usd: f64,
    /// `spent_usd` at this run's rate over a month (`per_month`).
    pub month_usd: f64,
}

/// Every table the janitor watches, at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetSnapshot {
    pub at_ms: i64,
    pub cycle: u64,
    /// When the run started.
    pub since_ms: i64,
    /// Jobs running, and the most that may.
    pub running: usize,
    pub max_jobs: usize,
    /// In no particular order (the viewer sorts).
    pub rows: Vec<FleetRow>,
}

impl FleetSnapshot {
    pub fn row(&self, table: &str) -> Option<&FleetRow> {
        let t = table_key(table);
        self.rows.iter().find(|r| r.table == t)
    }

    pub fn month_usd(&self) -> f64 {
        self.rows.iter().map(|r| r.month_usd).sum()
    }

    /// Whether the month's figures come from less than `EXTRAPOLATE_FROM` of running (they
    /// then assume the first hour's pace holds, backlog included).
    pub fn early(&self) -> bool {
        self.at_ms.saturating_sub(self.since_ms) < EXTRAPOLATE_FROM_MS
    }
}

/// A table's URI as fleet rows name it (`table_id`: no trailing slash), to match a list's rows.
pub fn table_key(uri: &str) -> &str {
    uri.trim_end_matches('/')
}

const MONTH_MS: f64 = 30.0 * 24.0 * 3_600_000.0;
/// A run shorter than this is extrapolated as if it had run this long: a minute's backlog
/// compaction is not a month's pace.
pub const EXTRAPOLATE_FROM_MS: i64 = 3_600_000;

/// `usd` spent over `elapsed_ms`, at that rate over 30 days (at least an hour of running counted).
pub fn per_month(usd: f64, elapsed_ms: i64) -> f64 {
    let elapsed = elapsed_ms.max(EXTRAPOLATE_FROM_MS) as f64;
    usd * MONTH_MS / elapsed
}

/// What the janitor keeps per table for its fleet row.
#[derive(Debug, Default)]
pub struct Book {
    pub debt: Option<Debt>,
    /// Why its nearest partition is not due (last decided).
    pub reason: String,
    pub last_job: Option<LastJob>,
    pub jobs_usd: f64,
    /// The requests reading its log makes.
    pub watch: Arc<ByteCounters>,
    /// The prices of its store.
    pub rates: Option<Rates>,
    /// Its last read failed with this (cleared by a read).
    pub error: Option<String>,
}

impl Book {
    /// Spent on the table so far: its log reads and its jobs.
    pub fn spent_usd(&self) -> f64 {
        let watch = self.rates.map_or(0.0, |r| r.usd(&self.watch.requests()));
        watch + self.jobs_usd
    }
}

/// The reason shown for an idle table: the decision of the partition with the most small files
/// (its nearest to due), else the first.
pub fn idle_reason(lines: &[super::history::DecisionLine]) -> String {
    lines
        .iter()
        .max_by_key(|d| d.small_files)
        .map(|d| {
            if d.partition.0.is_empty() {
                d.reason.clone()
            } else {
                format!("{}: {}", d.partition.label(), d.reason)
            }
        })
        .unwrap_or_else(|| "no partition".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_extrapolated_from_the_run_and_never_from_less_than_an_hour() {
        // $1 in 2 hours: $360 in 30 days.
        assert!((per_month(1.0, 2 * 3_600_000) - 360.0).abs() < 1e-9);
        // $1 in one minute counts as $1 an hour, not $60.
        assert!((per_month(1.0, 60_000) - 720.0).abs() < 1e-9);
        assert_eq!(per_month(0.0, 0), 0.0);
    }

    #[test]
    fn what_needs_a_look_sorts_first() {
        let broken = FleetState::Broken { error: "x".into() };
        let running = FleetState::Running {
            partitions: 1,
            done: 0.5,
            pace_bytes_per_second: None,
            doing: "x".into(),
        };
        let idle = FleetState::Idle { reason: "x".into() };
        assert!(broken.urgency() < running.urgency());
        assert!(running.urgency() < idle.urgency());
    }

    #[test]
    fn a_snapshot_finds_a_table_with_or_without_its_trailing_slash() {
        let s = FleetSnapshot {
            rows: vec![FleetRow {
                table: "s3://b/lake/t1".into(),
                state: FleetState::Idle { reason: "r".into() },
                debt: None,
                last_job: None,
                spent_usd: 0.0,
                month_usd: 0.0,
            }],
            ..Default::default()
        };
        assert!(s.row("s3://b/lake/t1/").is_some());
        assert!(s.row("s3://b/lake/t2").is_none());
    }
}
