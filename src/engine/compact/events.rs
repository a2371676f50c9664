//! Typed progress of a compaction job, sent by the engine over a channel. The TUI jobs panel
//! and `lakehealth compact`'s stderr output are both driven by these.

use serde::Serialize;

use super::commit::Conflict;
use super::fingerprint::Fingerprint;
use crate::engine::stats::table_report::PartitionValues;

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
    pub partitions: Vec<PartitionValues>,
    /// Content fingerprint of the rows the commit moved (equal in inputs and outputs).
    pub fingerprint: Fingerprint,
}

/// A bin that did not commit because another commit took its files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictRecord {
    pub partition: PartitionValues,
    #[serde(flatten)]
    pub conflict: Conflict,
    /// Bins planned again for the partition from the newer snapshot (0: nothing left to do).
    pub replanned_bins: u64,
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
        partition: PartitionValues,
        files_in: u64,
        files_out: u64,
        bytes_in: u64,
        bytes_out: u64,
        rows: u64,
    },
    Committed(CommitRecord),
    /// Another commit took files of a bin: it did not commit, its outputs were deleted.
    Conflict(ConflictRecord),
    /// A commit certainly did not land; its output files were never referenced.
    CommitFailed {
        partitions: Vec<PartitionValues>,
        error: String,
        orphaned_files: Vec<String>,
    },
    /// A commit attempt failed in a way that may have landed and the log could not tell: its
    /// outputs are kept (deleting them could break a landed commit) and listed here.
    CommitUnknown {
        partitions: Vec<PartitionValues>,
        error: String,
        kept_files: Vec<String>,
    },
    BinFailed {
        partition: PartitionValues,
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
    /// Bins refused because another commit took their files.
    pub conflicts: Vec<ConflictRecord>,
    /// Files written but never committed (deleted when possible, else left for VACUUM).
    pub orphaned_files: Vec<String>,
    /// Outputs of commits whose outcome is unknown: kept, not deleted.
    pub unknown_outcome_files: Vec<String>,
    /// Time spent reading outputs back to prove their content (the cost of the check).
    pub verify_seconds: f64,
    pub seconds: f64,
}
