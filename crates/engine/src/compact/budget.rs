//! What a job may use: bins at once, read rate, CPU priority, commit spacing, and the writer's
//! rhythm its pace follows (`cadence`). The janitor's throttle chooses it from the writers it
//! sees in the log; `compact` applies it (`job::PreparedJob::set_throttle`).

use std::sync::Arc;

use serde::Serialize;

use super::cadence::PaceNote;
use super::pace::Pacer;
use super::spacing::CommitSpacer;

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

/// A budget and why it was chosen (`janitor::throttle::choose`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttle {
    pub budget: Budget,
    /// For humans: why this budget.
    pub reason: String,
    /// For humans: what it yields to (the writers seen, or why none counts); the start of
    /// `reason`, without the budget's machine-dependent figures.
    pub writers: String,
}

impl Throttle {
    /// Every core, unbounded, because the user asked for it (`--no-throttle`, the TUI's key).
    pub fn full_speed_by_request(cores: usize) -> Self {
        let budget = Budget::full(cores);
        Throttle {
            reason: format!(
                "full speed as asked: {} bin(s) at a time, unbounded, whatever the writers do",
                budget.parallelism
            ),
            writers: "full speed as asked, whatever the writers do".into(),
            budget,
        }
    }

    /// The pace a job starts at, as its events report pace changes: paced, the whole reason;
    /// unbounded, what it yields to (nothing: every core).
    pub fn pace_note(&self) -> PaceNote {
        let why = match self.budget.read_bytes_per_second {
            Some(_) => self.reason.clone(),
            None => format!("every core: {}", self.writers),
        };
        PaceNote {
            bytes_per_second: self.budget.read_bytes_per_second,
            why,
            raised: 0,
            cut: 0,
        }
    }
}

/// What holds a running job back (its read pace, its commit spacing), kept apart from the job
/// so the user can lift it while the job runs.
#[derive(Debug, Clone, Default)]
pub struct Brakes {
    pub pace: Option<Arc<Pacer>>,
    pub spacing: Option<Arc<CommitSpacer>>,
}

impl Brakes {
    /// Whether anything holds the job back.
    pub fn engaged(&self) -> bool {
        self.pace.as_ref().is_some_and(|p| p.rate().is_some())
            || self.spacing.as_ref().is_some_and(|s| !s.lifted())
    }

    /// Reads unbounded and commits as bins finish from now on; the bins at once and the CPU
    /// priority stay as the job started (a process cannot raise its own priority back). Returns
    /// the pace note now in force.
    pub fn lift(&self) -> PaceNote {
        let why = "lifted by the user: reads unbounded, commits as bins finish (bins at once and CPU priority as started)";
        if let Some(s) = &self.spacing {
            s.lift();
        }
        match &self.pace {
            Some(p) => p.lift(why),
            None => PaceNote {
                bytes_per_second: None,
                why: why.into(),
                raised: 0,
                cut: 0,
            },
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

    #[test]
    fn lifting_the_brakes_frees_both_the_pace_and_the_commit_spacing() {
        let brakes = Brakes {
            pace: Some(Arc::new(Pacer::new(1024))),
            spacing: Some(Arc::new(CommitSpacer::new(std::time::Duration::from_secs(
                30,
            )))),
        };
        assert!(brakes.engaged());
        let t0 = std::time::Instant::now();
        if let Some(s) = &brakes.spacing {
            s.committed(t0);
        }
        let note = brakes.lift();
        assert_eq!(note.bytes_per_second, None);
        assert_eq!(brakes.pace.as_ref().and_then(|p| p.rate()), None);
        assert_eq!(
            brakes.spacing.as_ref().map(|s| s.remaining(t0)),
            Some(std::time::Duration::ZERO)
        );
    }
}
