//! What a job may use: bins at once, read rate, CPU priority, commit spacing, and the writer's
//! rhythm its pace follows (`cadence`). The janitor's throttle chooses it from the writers it
//! sees in the log; `compact` applies it (`job::PreparedJob::set_budget`).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Bins rewritten at once (one core each).
    pub parallelism: usize,
    /// Bytes read per second to start with, None: unbounded.
    pub read_bytes_per_second: Option<u64>,
    /// The job's threads at the lowest CPU priority (`compact::priority`), so a writer on the
    /// same machine gets a core the moment it wants one.
    pub background: bool,
    /// Compaction commits on the table at most one per this (`compact::spacing`); None: as
    /// bins finish.
    pub commit_spacing_ms: Option<u64>,
    /// The writer's interval between commits before the job: with a read rate, the pace
    /// follows the writer's cadence from there (`compact::cadence`). None: the rate stays.
    pub writer_rhythm_ms: Option<u64>,
}

impl Budget {
    /// Every core, unbounded.
    pub fn full(cores: usize) -> Self {
        Budget {
            parallelism: cores.max(1),
            read_bytes_per_second: None,
            background: false,
            commit_spacing_ms: None,
            writer_rhythm_ms: None,
        }
    }
}
