//! What a log replay produces: the live files grouped by partition, tombstones, streaming
//! writers' transactions, metadata, and a summary of recent commits.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::actions::{MetaData, Protocol};
use super::listing::LogListing;
use super::partition_key::PartitionSizes;
use crate::model::trigger::Trigger;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxnState {
    pub version: i64,
    pub last_updated: Option<i64>,
}

/// Removed files still named by the log: they stay on storage until VACUUM deletes them.
#[derive(Debug, Default)]
pub struct Tombstones {
    /// (deletion timestamp ms, size) per tombstone; size is optional in the protocol.
    pub entries: Vec<(Option<i64>, Option<i64>)>,
}

impl Tombstones {
    pub fn push(&mut self, deletion_ts: Option<i64>, size: Option<i64>) {
        self.entries.push((deletion_ts, size));
    }
}

/// One commit of the history panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitSummary {
    pub version: u64,
    /// Milliseconds since the epoch (commitInfo.timestamp, else the file's modification time).
    pub timestamp_ms: Option<i64>,
    pub operation: String,
    pub files_added: u64,
    pub files_removed: u64,
    pub bytes_added: u64,
    pub bytes_removed: u64,
    /// Any add/remove with dataChange=true (false for OPTIMIZE).
    pub data_change: bool,
    /// Streaming query id and batch id, for STREAMING UPDATE commits.
    pub query_id: Option<String>,
    pub epoch_id: Option<i64>,
    pub engine: Option<String>,
    /// A lakehealth compaction's trigger (janitor or by hand); None for anyone else's commit.
    pub trigger: Option<Trigger>,
}

/// Operation and writer of one commit, for findings that name commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitOrigin {
    pub operation: String,
    /// `engineInfo`, else `clientVersion`.
    pub engine: Option<String>,
    /// A commit that removes a file and adds others rewrote its rows (OPTIMIZE, UPDATE...).
    pub files_added: u64,
}

/// A file removed by more than one commit with no add of it in between. A remove that rewrites
/// a file (OPTIMIZE) adds its rows elsewhere, so every remove after the first one re-added rows
/// that were already in the table again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedRemove {
    /// Versions of the commits that removed it, oldest first (at least two, or one when
    /// `removed_by_checkpoint` is set).
    pub versions: Vec<u64>,
    /// The first remove was not among the commits read, but the checkpoint of this version
    /// already listed the file as removed.
    pub removed_by_checkpoint: Option<u64>,
    /// From the remove actions, when they record it.
    pub size: Option<u64>,
}

#[derive(Debug)]
pub struct LogState {
    pub version: u64,
    pub checkpoint_version: Option<u64>,
    pub checkpoint_rows: u64,
    pub metadata: MetaData,
    pub protocol: Option<Protocol>,
    pub partitions: PartitionSizes,
    pub tombstones: Tombstones,
    pub txns: HashMap<String, TxnState>,
    /// Newest first.
    pub commits: Vec<CommitSummary>,
    pub listing: LogListing,
    /// Bytes of JSON commits a reader replays on top of the checkpoint.
    pub json_bytes_since_checkpoint: u64,
    pub warnings: Vec<String>,
    /// Files removed more than once, from the commits read in full (and the checkpoint's
    /// tombstones for those removed again after it).
    pub repeated_removes: Vec<RepeatedRemove>,
    /// Operation and writer of the commits named in `repeated_removes`.
    pub origins: BTreeMap<u64, CommitOrigin>,
    /// Every commit from this version to `version` was read in full; None when the newest was not.
    pub fully_read_from: Option<u64>,
    /// All paths of the checkpoint were read: a remove after it could not be matched by
    /// partition and size (the slow, exact fallback).
    pub checkpoint_paths_read: bool,
}
