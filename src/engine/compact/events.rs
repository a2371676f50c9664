//! Typed progress of a compaction job, sent by the engine over a channel. The TUI jobs panel
//! and `lakehealth compact`'s stderr output are both driven by these.

use serde::Serialize;

/// Cumulative counters of a running job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Progress {
    /// Measured by the counting object store.
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub files_read: u64,
    pub rows: u64,
    pub bins_done: u64,
    pub bins_total: u64,
    pub files_total: u64,
    pub bytes_total: u64,
}

/// One commit that landed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitRecord {
    pub version: u64,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
    pub retries: u64,
    pub partitions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JobEvent {
    Started {
        bins: u64,
        files: u64,
        bytes: u64,
    },
    /// A queued job waited for its partitions and planned again before starting.
    Replanned {
        bins: u64,
        files: u64,
        bytes: u64,
    },
    Progress(Progress),
    BinFinished {
        partition: String,
        files_in: u64,
        files_out: u64,
        bytes_in: u64,
        bytes_out: u64,
        rows: u64,
    },
    Committed(CommitRecord),
    /// A commit failed after delta-rs's retries; its output files were never referenced.
    CommitFailed {
        partitions: Vec<String>,
        error: String,
        orphaned_files: Vec<String>,
    },
    BinFailed {
        partition: String,
        error: String,
    },
    Cancelled {
        orphaned_files: Vec<String>,
    },
    Finished(JobSummary),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobSummary {
    pub table_version_read: u64,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
    pub commits: Vec<CommitRecord>,
    pub cancelled: bool,
    pub errors: Vec<String>,
    /// Files written but never committed (deleted when possible, else left for VACUUM).
    pub orphaned_files: Vec<String>,
    pub seconds: f64,
}
