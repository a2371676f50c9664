//! Log replay: list `_delta_log/`, start from the newest complete checkpoint, apply the JSON
//! commits after it newest-first (`walker`), then read the checkpoint under them with a
//! projection (`reconcile`).
//!
//! Nothing is written; the data files are never listed or opened.

use crate::options::ReplayOptions;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::listing::{Checkpoint, LogListing};
use super::opened_checkpoint::CheckpointFiles;
use super::reconcile::{CheckpointPart, reconcile_checkpoint};
use super::state::LogState;
use super::walker::{FetchedCommit, Walker};
use crate::error::{EngineError, Result};
use crate::progress::LoadProgress;

/// History-only commits larger than this are summarised from their first bytes.
const HISTORY_HEAD_BYTES: u64 = 64 * 1024;

/// The listing of `_delta_log/` with `_last_checkpoint`'s version.
pub async fn list_log(store: &Arc<dyn ObjectStore>, uri: &str) -> Result<LogListing> {
    let mut listing = list_log_objects(store, uri).await?;
    listing.last_checkpoint_hint = read_hint(store, &listing).await;
    Ok(listing)
}

/// `_last_checkpoint`'s version, when the listing holds the file (only a warning needs it).
async fn read_hint(store: &Arc<dyn ObjectStore>, listing: &LogListing) -> Option<u64> {
    if !listing.has_last_checkpoint_file {
        return None;
    }
    let file = store
        .get(&Path::from("_delta_log/_last_checkpoint"))
        .await
        .ok()?;
    let bytes = file.bytes().await.ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()?
        .get("version")?
        .as_u64()
}

/// The objects of `_delta_log/` (without reading `_last_checkpoint`).
pub async fn list_log_objects(store: &Arc<dyn ObjectStore>, uri: &str) -> Result<LogListing> {
    let mut listing = LogListing::default();
    let prefix = Path::from("_delta_log");
    let mut stream = store.list(Some(&prefix));
    while let Some(meta) = stream
        .try_next()
        .await
        .map_err(|e| EngineError::from_store(uri, "_delta_log/", e))?
    {
        listing.add(meta.location.as_ref(), meta.size, Some(meta.last_modified));
    }
    Ok(listing)
}

/// Where a replay starts and which commit files it reads.
struct ReplayPlan {
    version: u64,
    checkpoint: Option<Checkpoint>,
    /// The first commit after the checkpoint (0 without one).
    first_needed: u64,
    /// Newest first: version, and whether only the file's head is read.
    reads: Vec<(u64, bool)>,
    warnings: Vec<String>,
}

pub async fn replay(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    opts: ReplayOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<LogState> {
    progress(LoadProgress::Listing);
    let listing = list_log_objects(store, uri).await?;
    replay_listed(store, uri, listing, opts, progress).await
}

/// `replay` from a listing of `_delta_log/` already made (`list_log_objects`), as format
/// detection makes one.
pub async fn replay_listed(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    mut listing: LogListing,
    opts: ReplayOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<LogState> {
    let mut plan = plan_replay(&listing, uri, &opts)?;
    let mut walker = Walker::new(plan.first_needed, plan.version, opts.history_commits);
    // The checkpoint's footers and `_last_checkpoint` are fetched while the commits are read:
    // on object storage, round trips fewer.
    let open_ahead = async {
        match &plan.checkpoint {
            Some(cp) => Some(CheckpointFiles::open_ahead(store, cp).await),
            None => None,
        }
    };
    let (commits, opened, hint) = futures::join!(
        read_commits(store, uri, &listing, &plan, &opts, &mut walker, progress),
        open_ahead,
        read_hint(store, &listing),
    );
    commits?;
    listing.last_checkpoint_hint = hint;
    plan.warnings.extend(hint_warning(&listing));
    let cp_part = match (&plan.checkpoint, opened) {
        (Some(cp), Some(mut opened)) => {
            reconcile_checkpoint(&mut opened, uri, cp, &walker.files, progress).await?
        }
        _ => CheckpointPart::default(),
    };
    progress(LoadProgress::Computing);
    finish(uri, listing, plan, walker, cp_part)
}

/// Picks the checkpoint, checks that every commit after it exists, and decides what to read.
fn plan_replay(listing: &LogListing, uri: &str, opts: &ReplayOptions) -> Result<ReplayPlan> {
    if listing.log_objects == 0 {
        return Err(EngineError::NotATable {
            uri: uri.into(),
            depth: 0,
        });
    }
    let Some(version) = listing.latest_version() else {
        return Err(EngineError::EmptyLog { uri: uri.into() });
    };
    let warnings = checkpoint_warnings(listing);
    let checkpoint = listing.usable_checkpoint(version).cloned();
    let first_needed = checkpoint.as_ref().map_or(0, |c| c.version + 1);
    // Every commit after the checkpoint must exist, or the state cannot be known.
    if let Some(missing) = (first_needed..=version).find(|v| !listing.commits.contains_key(v)) {
        return Err(EngineError::LogGap {
            uri: uri.into(),
            detail: gap_detail(
                listing,
                checkpoint.is_none(),
                missing,
                first_needed,
                version,
            ),
        });
    }
    let reads = plan_reads(listing, version, first_needed, opts);
    Ok(ReplayPlan {
        version,
        checkpoint,
        first_needed,
        reads,
        warnings,
    })
}

fn checkpoint_warnings(listing: &LogListing) -> Vec<String> {
    listing
        .incomplete_checkpoints()
        .map(|cp| {
            format!(
                "checkpoint {} is incomplete ({} of {} parts present); it is ignored",
                cp.version,
                cp.files.len(),
                cp.parts_expected
            )
        })
        .collect()
}

fn hint_warning(listing: &LogListing) -> Option<String> {
    let hint = listing.last_checkpoint_hint?;
    let complete = listing
        .checkpoints
        .get(&hint)
        .is_some_and(|c| c.is_complete());
    (!complete).then(|| {
        format!(
            "_last_checkpoint names version {hint}, but that checkpoint is missing or incomplete; \
             readers fall back to an older checkpoint or replay JSON commits"
        )
    })
}

fn gap_detail(
    listing: &LogListing,
    no_checkpoint: bool,
    missing: u64,
    first_needed: u64,
    version: u64,
) -> String {
    if no_checkpoint && missing == 0 {
        let incomplete: Vec<String> = listing
            .incomplete_checkpoints()
            .map(|c| {
                format!(
                    "{} ({}/{} parts)",
                    c.version,
                    c.files.len(),
                    c.parts_expected
                )
            })
            .collect();
        format!(
            "commit 0 is gone and no complete checkpoint exists{}; the table cannot be reconstructed. \
             Restore the missing checkpoint parts or log files.",
            if incomplete.is_empty() {
                String::new()
            } else {
                format!(" (incomplete checkpoints: {})", incomplete.join(", "))
            }
        )
    } else {
        format!(
            "commit {missing:020}.json is missing between version {first_needed} and {version}. \
             Restore it from a backup; readers of this table will fail too."
        )
    }
}

/// Newest first. Commits after the checkpoint are read in full. Older ones are read in full
/// while they stay within the findings scan budget (their removes are checked for files
/// removed twice), then, inside the history window, a big one only by its head.
fn plan_reads(
    listing: &LogListing,
    version: u64,
    first_needed: u64,
    opts: &ReplayOptions,
) -> Vec<(u64, bool)> {
    let history_from = version
        .saturating_sub(opts.history_commits.saturating_sub(1) as u64)
        .min(first_needed);
    let mut reads: Vec<(u64, bool)> = (first_needed..=version).rev().map(|v| (v, false)).collect();
    let (mut scan_bytes, mut scan_commits) = (0u64, 0usize);
    let mut scanning = true;
    let mut expect = first_needed.checked_sub(1);
    for (&v, (_, size, _)) in listing.commits.range(..first_needed).rev() {
        // A missing commit breaks the unbroken range the findings can speak for.
        scanning &= expect == Some(v);
        expect = v.checked_sub(1);
        scanning &= scan_commits < opts.scan_commits && scan_bytes + size <= opts.scan_bytes;
        if scanning {
            scan_commits += 1;
            scan_bytes += size;
            reads.push((v, false));
        } else if v >= history_from {
            // A commit before the checkpoint only feeds the history panel: a big one (a bulk
            // load of 100k files) is summarised from its head (commitInfo comes first).
            reads.push((v, *size > HISTORY_HEAD_BYTES));
        } else {
            break;
        }
    }
    reads
}

async fn read_commits(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    listing: &LogListing,
    plan: &ReplayPlan,
    opts: &ReplayOptions,
    walker: &mut Walker,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<()> {
    let wanted: Vec<(u64, String, bool, Option<i64>)> = plan
        .reads
        .iter()
        .filter_map(|&(v, head_only)| {
            listing
                .commits
                .get(&v)
                .map(|(p, _, m)| (v, p.clone(), head_only, m.map(|m| m.timestamp_millis())))
        })
        .collect();
    let total = wanted.len();
    let fetches = futures::stream::iter(wanted.into_iter().map(
        |(version, path, head_only, modified_ms)| {
            let store = store.clone();
            async move {
                let location = Path::from(path.as_str());
                let bytes = if head_only {
                    store.get_range(&location, 0..HISTORY_HEAD_BYTES).await
                } else {
                    match store.get(&location).await {
                        Ok(r) => r.bytes().await,
                        Err(e) => Err(e),
                    }
                }
                .map_err(|e| EngineError::from_store(uri, &path, e))?;
                Ok::<_, EngineError>(FetchedCommit {
                    version,
                    path,
                    modified_ms,
                    bytes,
                    head_only,
                })
            }
        },
    ))
    .buffered(opts.io_concurrency.max(1));
    futures::pin_mut!(fetches);
    let mut done = 0;
    while let Some(item) = fetches.next().await {
        walker.apply_commit(uri, item?)?;
        done += 1;
        progress(LoadProgress::ReadingCommits { done, total });
    }
    Ok(())
}

/// The JSON commits' state over the checkpoint's.
fn finish(
    uri: &str,
    listing: LogListing,
    plan: ReplayPlan,
    mut walker: Walker,
    cp: CheckpointPart,
) -> Result<LogState> {
    let checkpoint_version = plan.checkpoint.as_ref().map(|c| c.version);
    let (repeated_removes, origins, fully_read_from) =
        walker.finish_runs(&cp.tombstoned_again, checkpoint_version);
    let mut warnings = plan.warnings;
    warnings.extend(walker.implausible.warning());
    let mut partitions = walker.partitions;
    partitions.extend(cp.partitions);
    let mut tombstones = walker.tombstones;
    tombstones.entries.extend(cp.tombstones.entries);
    let mut txns = walker.txns;
    for (app, t) in cp.meta.txns {
        txns.entry(app).or_insert(t);
    }
    let metadata = walker
        .metadata
        .or(cp.meta.metadata)
        .ok_or_else(|| EngineError::LogGap {
            uri: uri.into(),
            detail: "no metaData action in the log (schema and partition columns unknown); \
                 the log is corrupt or was truncated"
                .into(),
        })?;
    let missing = metadata.missing_required();
    if !missing.is_empty() {
        warnings.push(format!(
            "the table's metaData has no {} (the protocol requires it; Spark reads such tables with the schema of the data files): sizes and partitions are reported from the log, but lakehealth cannot compact the table",
            missing.join(" and no ")
        ));
    }
    let json_bytes_since_checkpoint = listing
        .commits
        .range(plan.first_needed..)
        .map(|(_, (_, s, _))| *s)
        .sum();
    Ok(LogState {
        version: plan.version,
        checkpoint_version,
        checkpoint_rows: cp.meta.rows,
        metadata,
        protocol: walker.protocol.or(cp.meta.protocol),
        partitions,
        tombstones,
        txns,
        commits: walker.commits,
        listing,
        json_bytes_since_checkpoint,
        warnings,
        repeated_removes,
        origins,
        fully_read_from,
        checkpoint_paths_read: cp.read_all_paths,
    })
}
