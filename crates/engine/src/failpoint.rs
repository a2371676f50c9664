//! Failpoints: named steps of a compaction's commit where the process can be made to stop dead,
//! so the crash-consistency tests kill it at exactly that step (not at a moment found by
//! timing). Off unless `LAKEHEALTH_FAILPOINT` names a step: then the process exits at once when
//! it reaches it, with no destructor, no cleanup and no further write, as SIGKILL would leave it.

/// A step of the commit protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failpoint {
    /// An output's name is in the job's durable ledger; the output itself is not created yet.
    LedgerWritten,
    /// A bin's outputs are written and proven; its commit is not attempted yet.
    OutputsWritten,
    /// The bin's log entry (the commit) is written; nothing after it has run.
    LogEntryWritten,
}

/// The exit status of a process stopped by a failpoint (distinct from errors and signals).
pub const EXIT_CODE: i32 = 86;

/// The environment variable that arms one failpoint by name.
pub const ENV: &str = "LAKEHEALTH_FAILPOINT";

impl Failpoint {
    pub fn name(self) -> &'static str {
        match self {
            Failpoint::LedgerWritten => "ledger-written",
            Failpoint::OutputsWritten => "outputs-written",
            Failpoint::LogEntryWritten => "log-entry-written",
        }
    }
}

/// Stops the process here when `point` is the armed failpoint.
pub fn hit(point: Failpoint) {
    if armed(std::env::var(ENV).ok().as_deref(), point) {
        tracing::error!("failpoint {} reached: exiting", point.name());
        std::process::exit(EXIT_CODE);
    }
}

fn armed(value: Option<&str>, point: Failpoint) -> bool {
    value.is_some_and(|v| v.trim() == point.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_failpoint_is_armed() {
        assert!(armed(Some("outputs-written"), Failpoint::OutputsWritten));
        assert!(!armed(Some("outputs-written"), Failpoint::LogEntryWritten));
        assert!(!armed(None, Failpoint::LedgerWritten));
        assert!(!armed(Some(""), Failpoint::LedgerWritten));
    }
}
