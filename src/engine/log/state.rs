//! What a log replay produces: the live files grouped by partition, tombstones, streaming
//! writers' transactions, metadata, and a summary of recent commits.

use std::collections::HashMap;

use serde::Serialize;

use super::actions::{MetaData, Protocol};
use super::listing::LogListing;
use super::partition_key::PartitionSizes;

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
}
