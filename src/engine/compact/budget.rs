//! What a job may use: bins at once, read rate, CPU priority, commit spacing, and the writer's
//! rhythm its pace follows (`cadence`). The janitor's throttle chooses it from the writers it
//! sees in the log; `compact` applies it (`job::PreparedJob::set_budget`).

use serde::Serialize;

/// The most bins a job rewrites at once. Each runs on its own worker thread with its own
/// buffers; past a few hundred the machine runs out of threads or memory long before the store
/// runs out of bandwidth (`--parallelism 100000` used to abort the process).
pub const MAX_PARALLELISM: usize = 256;

/// `n` bins at once, within 1..=MAX_PARALLELISM.
pub fn bounded_parallelism(n: usize) -> usize {
    n.clamp(1, MAX_PARALLELISM)
}

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
            parallelism: bounded_parallelism(cores),
            read_bytes_per_second: None,
            background: false,
            commit_spacing_ms: None,
            writer_rhythm_ms: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_is_kept_within_one_and_the_maximum() {
        assert_eq!(bounded_parallelism(0), 1);
        assert_eq!(bounded_parallelism(8), 8);
        assert_eq!(bounded_parallelism(100_000), MAX_PARALLELISM);
        assert_eq!(Budget::full(usize::MAX).parallelism, MAX_PARALLELISM);
    }
}
