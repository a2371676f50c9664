//! Picking up after a coordinator that stopped (crash, restart, lost cluster): every worker
//! result still under the table's `_lakehealth/jobs/` is settled exactly once.
//!
//! - outputs already active in the table: the coordinator's commit landed; only the result
//!   file is removed;
//! - a finished bin whose inputs are all still active: committed now, with the same
//!   validation as any bin (`commit_bin`);
//! - otherwise (inputs taken by another commit, a failed bin, a worker that never finished):
//!   its outputs are deleted, never an active file.
//!
//! A commit whose outcome is unknown keeps its outputs and its result file. Run it only when no
//! other coordinator is compacting the table with a remote executor (its results would be
//! settled under it).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use deltalake::DeltaTable;
use deltalake::protocol::DeltaOperation;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;

use super::spec::{BinReport, Outcome, STATE_DIR};
use super::worker::{delete_outputs, read_json};
use crate::engine::compact::commit::{BinActions, CommitOutcome, commit_bin};
use crate::engine::error::{EngineError, Result};

/// What pickup did, bin by bin.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PickupSummary {
    /// Versions committed from finished results.
    pub committed: Vec<u64>,
    /// Results whose commit had already landed.
    pub already_committed: u64,
    /// Results not committed (inputs taken, the bin failed or never finished), with why.
    pub discarded: Vec<String>,
    /// Output files deleted.
    pub deleted_outputs: u64,
    /// Output files kept: a commit whose outcome is unknown, or a delete that failed.
    pub kept_outputs: Vec<String>,
}

/// The table's active paths, as the log writes them and percent-decoded.
fn active_paths(table: &DeltaTable, uri: &str) -> Result<HashSet<String>> {
    let snapshot = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(uri, "reading the snapshot", e))?;
    Ok(snapshot
        .log_data()
        .into_iter()
        .map(|f| f.path().to_string())
        .collect())
}

fn decoded(p: &str) -> String {
    percent_encoding::percent_decode_str(p)
        .decode_utf8_lossy()
        .into_owned()
}

fn is_active(active: &HashSet<String>, path: &str) -> bool {
    active.contains(path) || active.contains(&decoded(path))
}

/// One bin's files in a job folder.
#[derive(Default)]
struct BinFiles {
    result: Option<Path>,
    ledger: Option<Path>,
    other: Vec<Path>,
}

/// Settles every result under `_lakehealth/jobs/`; `table` is brought to the latest version.
pub async fn pickup(table: &mut DeltaTable, uri: &str) -> Result<PickupSummary> {
    let store = table.object_store();
    let mut summary = PickupSummary::default();
    let prefix = Path::from(format!("{STATE_DIR}/jobs"));
    let mut bins: BTreeMap<String, BinFiles> = BTreeMap::new();
    let mut listing = store.list(Some(&prefix));
    while let Some(m) = listing.next().await {
        let m = m.map_err(|e| EngineError::from_store(uri, "listing _lakehealth/jobs", e))?;
        let key = m.location.to_string();
        if let Some(stem) = key.strip_suffix(".result.json") {
            bins.entry(stem.to_string()).or_default().result = Some(m.location);
        } else if let Some(stem) = key.strip_suffix(".outputs.json") {
            bins.entry(stem.to_string()).or_default().ledger = Some(m.location);
        } else {
            bins.entry(key).or_default().other.push(m.location);
        }
    }
    drop(listing);
    for files in bins.into_values() {
        settle(table, uri, &store, files, &mut summary).await?;
    }
    Ok(summary)
}

async fn settle(
    table: &mut DeltaTable,
    uri: &str,
    store: &Arc<dyn ObjectStore>,
    files: BinFiles,
    summary: &mut PickupSummary,
) -> Result<()> {
    table
        .update_incremental(None)
        .await
        .map_err(|e| EngineError::from_delta(uri, "reading the latest version", e))?;
    let report = match &files.result {
        Some(k) => read_json::<BinReport>(store, uri, k).await.ok().flatten(),
        None => None,
    };
    let mut keep_result = false;
    let mut to_delete: Vec<String> = Vec::new();
    match report.map(|r| (r.bin_id, r.table_version, r.outcome)) {
        Some((
            bin_id,
            read_version,
            Outcome::Done {
                adds,
                removes,
                bytes_in: _,
                ..
            },
        )) => {
            let active = active_paths(table, uri)?;
            if adds.iter().any(|a| is_active(&active, &a.path)) {
                summary.already_committed += 1;
            } else {
                let bin = BinActions {
                    removes: &removes,
                    adds: &adds,
                    read_version,
                    operation: DeltaOperation::Optimize {
                        predicate: None,
                        target_size: 0,
                    },
                };
                match commit_bin(table, &bin).await {
                    CommitOutcome::Landed { version, .. } => summary.committed.push(version),
                    CommitOutcome::Conflict(c) => {
                        summary.discarded.push(format!("bin {bin_id}: {c}"));
                        to_delete = adds.iter().map(|a| a.path.clone()).collect();
                    }
                    CommitOutcome::Failed(e) => {
                        summary
                            .discarded
                            .push(format!("bin {bin_id}: commit failed: {e}"));
                        to_delete = adds.iter().map(|a| a.path.clone()).collect();
                    }
                    CommitOutcome::Unknown(e) => {
                        summary
                            .discarded
                            .push(format!("bin {bin_id}: commit outcome unknown: {e}"));
                        summary
                            .kept_outputs
                            .extend(adds.iter().map(|a| a.path.clone()));
                        keep_result = true;
                    }
                }
            }
        }
        Some((bin_id, _, Outcome::Failed { error, outputs, .. })) => {
            summary.discarded.push(format!("bin {bin_id}: {error}"));
            to_delete = outputs;
        }
        None => {}
    }
    // A worker that never finished (or a failed one) leaves its ledger: those outputs go too.
    if !keep_result
        && let Some(k) = &files.ledger
        && let Ok(Some(listed)) = read_json::<Vec<String>>(store, uri, k).await
    {
        if files.result.is_none() {
            summary
                .discarded
                .push(format!("{k}: the worker never finished"));
        }
        to_delete.extend(listed);
    }
    if !to_delete.is_empty() {
        // Never an active file, whatever a result or ledger says (the latest version: a commit
        // just made here included).
        table
            .update_incremental(None)
            .await
            .map_err(|e| EngineError::from_delta(uri, "reading the latest version", e))?;
        let active = active_paths(table, uri)?;
        to_delete.retain(|p| !is_active(&active, p));
        to_delete.sort();
        to_delete.dedup();
        let left = delete_outputs(store, &to_delete).await;
        summary.deleted_outputs += (to_delete.len() - left.len()) as u64;
        summary.kept_outputs.extend(left);
    }
    if !keep_result {
        for k in files
            .result
            .iter()
            .chain(files.ledger.iter())
            .chain(files.other.iter())
        {
            let _ = store.delete(k).await;
        }
    }
    Ok(())
}
