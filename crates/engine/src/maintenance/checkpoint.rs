//! Checkpoint: writes a checkpoint of the table's current version with delta-rs
//! (`checkpoints::create_checkpoint`, the kernel's checkpoint writer, which also updates
//! `_delta_log/_last_checkpoint`), so readers replay one Parquet file instead of every JSON
//! commit since the last checkpoint. Nothing else: no log cleanup.
//!
//! A checkpoint keeps only the tombstones inside `delta.deletedFileRetentionDuration`: files
//! removed longer ago drop out of the log state, and VACUUM (which finds files by their
//! tombstones) no longer sees them. The outcome counts them, so a caller can vacuum first.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;

use super::{check_write_protocol, open_delta_listed};
use crate::compact::table::StoreWrapper;
use crate::delta::log::listing::LogListing;
use crate::delta::log::replay::list_log;
use crate::error::{EngineError, Result};
use crate::location::Location;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointOutcome {
    pub table: String,
    /// The version the checkpoint is of (written now, or already there).
    pub version: u64,
    /// The newest complete checkpoint before this run.
    pub previous_checkpoint: Option<u64>,
    /// Commits a reader replayed on top of `previous_checkpoint` before this run.
    pub commits_since_previous: u64,
    /// False: one was not needed (the version already has a checkpoint).
    pub written: bool,
    /// The checkpoint's files under the table root, and their total size.
    pub files: Vec<String>,
    pub bytes: u64,
    pub reason: String,
    /// Files removed longer ago than the retention, not yet vacuumed by tombstone: a new
    /// checkpoint drops their tombstones (VACUUM first to delete them).
    pub expired_tombstones: u64,
}

/// The complete checkpoint of `version` in `listing`: its files and their total size.
async fn files_of(
    store: &Arc<dyn ObjectStore>,
    listing: &LogListing,
    version: u64,
) -> Option<(Vec<String>, u64)> {
    let c = listing
        .checkpoints
        .get(&version)
        .filter(|c| c.is_complete())?;
    let mut bytes = 0;
    for f in &c.files {
        if let Ok(meta) = store.head(&Path::from(f.as_str())).await {
            bytes += meta.size;
        }
    }
    Some((c.files.clone(), bytes))
}

/// Whether a checkpoint of `latest` is needed, and why (pure, for the janitor and the tests).
pub fn needed(latest: u64, previous: Option<u64>) -> (bool, String) {
    match previous {
        Some(p) if p >= latest => (
            false,
            format!("not needed: version {latest} already has a checkpoint"),
        ),
        Some(p) => (
            true,
            format!("{} commits since the checkpoint at version {p}", latest - p),
        ),
        None => (
            true,
            format!(
                "no checkpoint yet: readers replay {} JSON commits",
                latest + 1
            ),
        ),
    }
}

/// Writes a checkpoint of the current version, unless it already has one.
pub async fn checkpoint(
    loc: &Location,
    storage_options: &HashMap<String, String>,
) -> Result<CheckpointOutcome> {
    checkpoint_with(loc, storage_options, None).await
}

/// `checkpoint` with the store wrapped (tests count its requests). The log is read once: the
/// listing that finds the previous checkpoint and delta-rs's snapshot share it.
pub async fn checkpoint_with(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    wrap: Option<&StoreWrapper>,
) -> Result<CheckpointOutcome> {
    let uri = loc.display();
    let store = loc.open_store(storage_options)?;
    let (table, listing) = open_delta_listed(
        loc,
        storage_options,
        "opening the table for a checkpoint",
        wrap,
    )
    .await?;
    check_write_protocol(&table, &uri, "checkpoint", true)?;
    let version = table.version().unwrap_or_default();
    let previous = listing.usable_checkpoint(version).map(|c| c.version);
    let commits_since_previous = previous.map_or(version + 1, |p| version - p);
    let (need, mut reason) = needed(version, previous);
    let retention = super::vacuum::table_retention(&uri, &table)?;
    let (tombstones, active) = super::vacuum::snapshot_files(&uri, &table).await?;
    let cutoff = crate::clock::now_ms() - retention.as_millis().min(i64::MAX as u128) as i64;
    let expired_tombstones = tombstones
        .iter()
        .filter(|(p, t)| t.removed_at_ms < cutoff && !active.contains(*p))
        .count() as u64;
    if need && expired_tombstones > 0 {
        reason.push_str(&format!(
            "; {expired_tombstones} files removed longer ago than the retention drop out of the log state (VACUUM no longer finds them: vacuum before checkpointing)"
        ));
    }
    if !need {
        let (files, bytes) = files_of(&store, &listing, version)
            .await
            .unwrap_or_default();
        return Ok(CheckpointOutcome {
            table: uri,
            version,
            previous_checkpoint: previous,
            commits_since_previous,
            written: false,
            files,
            bytes,
            reason,
            expired_tombstones,
        });
    }
    deltalake::checkpoints::create_checkpoint(&table, None)
        .await
        .map_err(|e| EngineError::from_delta(&uri, "writing the checkpoint", e))?;
    let after = list_log(&store, &uri).await?;
    let Some((files, bytes)) = files_of(&store, &after, version).await else {
        return Err(EngineError::LogGap {
            uri,
            detail: format!(
                "delta-rs reported a checkpoint of version {version} written, but _delta_log/ lists no complete checkpoint of it"
            ),
        });
    };
    Ok(CheckpointOutcome {
        table: uri,
        version,
        previous_checkpoint: previous,
        commits_since_previous,
        written: true,
        files,
        bytes,
        reason: format!("written: {reason}"),
        expired_tombstones,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_is_needed_unless_the_version_has_one() {
        assert_eq!(
            needed(12, Some(12)),
            (
                false,
                "not needed: version 12 already has a checkpoint".into()
            )
        );
        assert_eq!(
            needed(12, Some(10)),
            (true, "2 commits since the checkpoint at version 10".into())
        );
        assert_eq!(
            needed(3, None),
            (
                true,
                "no checkpoint yet: readers replay 4 JSON commits".into()
            )
        );
    }
}
