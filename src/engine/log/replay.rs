//! Log replay: list `_delta_log/`, start from the newest complete checkpoint, apply the JSON
//! commits after it newest-first, and read the checkpoint with a projection.
//!
//! Nothing is written; the data files are never listed or opened.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::actions::{ActionLine, MetaData, Protocol, file_key};
use super::checkpoint::{CheckpointSink, read_checkpoint_file};
use super::listing::LogListing;
use super::partition_key::{PartitionSizes, encode_into};
use super::state::{CommitSummary, LogState, Tombstones, TxnState};
use crate::engine::error::{EngineError, Result};
use crate::engine::progress::LoadProgress;

/// History-only commits larger than this are summarised from their first bytes.
const HISTORY_HEAD_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// How many of the newest commits to summarise for the history panel.
    pub history_commits: usize,
    /// Concurrent object reads.
    pub io_concurrency: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            history_commits: 100,
            io_concurrency: 16,
        }
    }
}

pub async fn list_log(store: &Arc<dyn ObjectStore>, uri: &str) -> Result<LogListing> {
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
    if listing.has_last_checkpoint_file
        && let Ok(r) = store.get(&Path::from("_delta_log/_last_checkpoint")).await
        && let Ok(bytes) = r.bytes().await
    {
        listing.last_checkpoint_hint = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("version").and_then(|v| v.as_u64()));
    }
    Ok(listing)
}

/// The oldest action on a file key among the JSON commits after the checkpoint.
enum Oldest {
    Add,
    /// With the remove's partition key (canonical encoding) and size, when recorded.
    Remove {
        part: Option<String>,
        size: Option<i64>,
    },
}

pub async fn replay(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    opts: ReplayOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<LogState> {
    progress(LoadProgress::Listing);
    let listing = list_log(store, uri).await?;
    if listing.log_objects == 0 {
        return Err(EngineError::NotATable {
            uri: uri.into(),
            depth: 0,
        });
    }
    let Some(version) = listing.latest_version() else {
        return Err(EngineError::EmptyLog { uri: uri.into() });
    };
    let mut warnings = Vec::new();
    for cp in listing.incomplete_checkpoints() {
        warnings.push(format!(
            "checkpoint {} is incomplete ({} of {} parts present); it is ignored",
            cp.version,
            cp.files.len(),
            cp.parts_expected
        ));
    }
    if let Some(hint) = listing.last_checkpoint_hint
        && !listing
            .checkpoints
            .get(&hint)
            .is_some_and(|c| c.is_complete())
    {
        warnings.push(format!(
            "_last_checkpoint names version {hint}, but that checkpoint is missing or incomplete; \
                 readers fall back to an older checkpoint or replay JSON commits"
        ));
    }
    let checkpoint = listing.usable_checkpoint(version).cloned();
    let first_needed = checkpoint.as_ref().map_or(0, |c| c.version + 1);

    // Every commit after the checkpoint must exist, or the state cannot be known.
    if let Some(missing) = (first_needed..=version).find(|v| !listing.commits.contains_key(v)) {
        let detail = if checkpoint.is_none() && missing == 0 {
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
        };
        return Err(EngineError::LogGap {
            uri: uri.into(),
            detail,
        });
    }
    let history_from = version.saturating_sub(opts.history_commits.saturating_sub(1) as u64);
    let history_from = history_from.min(first_needed);
    let to_read: Vec<u64> = (history_from..=version)
        .rev()
        .filter(|v| listing.commits.contains_key(v))
        .collect();
    let total = to_read.len();
    let json_bytes_since_checkpoint = listing
        .commits
        .range(first_needed..)
        .map(|(_, (_, s, _))| *s)
        .sum();

    let mut seen: HashSet<String> = HashSet::new();
    // The oldest JSON action on each file key (processing is newest-first, so the last write
    // wins): a key whose oldest action is a remove was live in the checkpoint and must be
    // dropped from it.
    let mut oldest: HashMap<String, Oldest> = HashMap::new();
    let mut partitions = PartitionSizes::default();
    let mut tombstones = Tombstones::default();
    let mut txns: HashMap<String, TxnState> = HashMap::new();
    let mut metadata: Option<MetaData> = None;
    let mut protocol: Option<Protocol> = None;
    let mut commits = Vec::new();
    let mut buf = String::new();

    let wanted: Vec<(u64, String, u64, Option<chrono::DateTime<chrono::Utc>>)> = to_read
        .iter()
        .filter_map(|v| {
            listing
                .commits
                .get(v)
                .map(|(p, size, m)| (*v, p.clone(), *size, *m))
        })
        .collect();
    let fetches = futures::stream::iter(wanted.into_iter().map(|(v, path, size, modified)| {
        let store = store.clone();
        async move {
            let location = Path::from(path.as_str());
            // A commit before the checkpoint only feeds the history panel: a big one (a bulk
            // load of 100k files) is summarised from its head (commitInfo comes first).
            let head_only = v < first_needed && size > HISTORY_HEAD_BYTES;
            let bytes = if head_only {
                store.get_range(&location, 0..HISTORY_HEAD_BYTES).await
            } else {
                match store.get(&location).await {
                    Ok(r) => r.bytes().await,
                    Err(e) => Err(e),
                }
            }
            .map_err(|e| EngineError::from_store(uri, &path, e))?;
            Ok::<_, EngineError>((v, path, modified, bytes, head_only))
        }
    }))
    .buffered(opts.io_concurrency.max(1));
    futures::pin_mut!(fetches);
    let mut done = 0;
    while let Some(item) = fetches.next().await {
        let (v, path, modified, bytes, head_only) = item?;
        let live = v >= first_needed;
        let mut summary = CommitSummary {
            version: v,
            timestamp_ms: modified.map(|m| m.timestamp_millis()),
            operation: String::from("UNKNOWN"),
            files_added: 0,
            files_removed: 0,
            bytes_added: 0,
            bytes_removed: 0,
            data_change: false,
            query_id: None,
            epoch_id: None,
            engine: None,
        };
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if head_only {
            lines.pop(); // the last line was cut by the range read
        }
        let mut metrics_counts = None;
        for (n, line) in lines.into_iter().enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let a: ActionLine =
                serde_json::from_slice(line).map_err(|e| EngineError::CorruptCommit {
                    uri: uri.into(),
                    file: path.clone(),
                    line: n + 1,
                    detail: e.to_string(),
                })?;
            if let Some(add) = a.add {
                summary.files_added += 1;
                summary.bytes_added += add.size.max(0) as u64;
                summary.data_change |= add.data_change.unwrap_or(true);
                if live {
                    let key = file_key(&add.path, add.deletion_vector.as_ref());
                    if seen.insert(key.clone()) {
                        encode_into(
                            &mut buf,
                            add.partition_values
                                .iter()
                                .map(|(k, v)| (k.as_str(), v.as_deref())),
                        );
                        partitions.push(&buf, add.size.max(0) as u64);
                    }
                    oldest.insert(key, Oldest::Add);
                }
            }
            if let Some(rm) = a.remove {
                summary.files_removed += 1;
                summary.bytes_removed += rm.size.unwrap_or(0).max(0) as u64;
                summary.data_change |= rm.data_change.unwrap_or(true);
                if live {
                    let key = file_key(&rm.path, rm.deletion_vector.as_ref());
                    if seen.insert(key.clone()) {
                        tombstones.push(rm.deletion_timestamp, rm.size);
                    }
                    let part = rm.partition_values.as_ref().map(|pv| {
                        encode_into(&mut buf, pv.iter().map(|(k, v)| (k.as_str(), v.as_deref())));
                        buf.clone()
                    });
                    oldest.insert(
                        key,
                        Oldest::Remove {
                            part,
                            size: rm.size,
                        },
                    );
                }
            }
            if live {
                if let (None, Some(md)) = (&metadata, a.meta_data) {
                    metadata = Some(md);
                }
                if let (None, Some(p)) = (&protocol, a.protocol) {
                    protocol = Some(p);
                }
                if let Some(t) = a.txn {
                    txns.entry(t.app_id).or_insert(TxnState {
                        version: t.version,
                        last_updated: t.last_updated,
                    });
                }
            }
            if let Some(ci) = a.commit_info {
                summary.operation = ci.operation.clone().unwrap_or_else(|| "UNKNOWN".into());
                if let Some(ts) = ci.timestamp {
                    summary.timestamp_ms = Some(ts);
                }
                summary.query_id = ci.param("queryId");
                summary.epoch_id = ci.param("epochId").and_then(|s| s.parse().ok());
                summary.engine = ci.engine_info.clone();
                metrics_counts = Some(ci);
            }
        }
        if head_only {
            // Counts of a commit read by its head come from its operationMetrics.
            if let Some(ci) = metrics_counts {
                let m = |keys: &[&str]| keys.iter().find_map(|k| ci.metric(k));
                summary.files_added =
                    m(&["numAddedFiles", "numFiles"]).unwrap_or(summary.files_added);
                summary.files_removed = m(&["numRemovedFiles"]).unwrap_or(summary.files_removed);
                summary.bytes_added =
                    m(&["numAddedBytes", "numOutputBytes"]).unwrap_or(summary.bytes_added);
                summary.bytes_removed = m(&["numRemovedBytes"]).unwrap_or(summary.bytes_removed);
                summary.data_change = ci.operation.as_deref() != Some("OPTIMIZE");
            }
        }
        if commits.len() < opts.history_commits {
            commits.push(summary);
        }
        done += 1;
        progress(LoadProgress::ReadingCommits { done, total });
    }

    // Files the checkpoint holds but later commits removed. When every such remove records its
    // partition and size (Spark and delta-rs always do), they are dropped by (partition, size):
    // the resulting multiset of sizes is exact and the checkpoint's paths are never read.
    // Otherwise the paths are read and matched.
    let mut drop_by_size: HashMap<(String, u64), u32> = HashMap::new();
    let mut drop_by_path: HashSet<String> = HashSet::new();
    let mut need_paths = false;
    for (key, o) in oldest {
        if let Oldest::Remove { part, size } = o {
            match (part, size) {
                (Some(p), Some(s)) if s >= 0 => {
                    *drop_by_size.entry((p, s as u64)).or_default() += 1
                }
                _ => need_paths = true,
            }
            drop_by_path.insert(key);
        }
    }
    if !need_paths {
        drop_by_path.clear();
    } else {
        drop_by_size.clear();
    }

    let mut checkpoint_rows = 0;
    if let Some(cp) = &checkpoint {
        let mut sink = CheckpointSink {
            drop_by_path: &drop_by_path,
            drop_sizes: drop_by_size.keys().map(|(_, s)| *s).collect(),
            drop_by_size,
            partitions: &mut partitions,
            tombstones: &mut tombstones,
            txns: &mut txns,
            metadata: &mut metadata,
            protocol: &mut protocol,
            sidecars: Vec::new(),
            rows: 0,
        };
        let on_rows = |rows| progress(LoadProgress::ReadingCheckpoint { rows });
        for file in &cp.files {
            read_checkpoint_file(store, file, &mut sink, &on_rows)
                .await
                .map_err(|detail| checkpoint_error(uri, file, detail))?;
        }
        let sidecars = std::mem::take(&mut sink.sidecars);
        for sc in sidecars {
            let file = format!("_delta_log/_sidecars/{sc}");
            read_checkpoint_file(store, &file, &mut sink, &on_rows)
                .await
                .map_err(|detail| checkpoint_error(uri, &file, detail))?;
        }
        checkpoint_rows = sink.rows;
    }

    let metadata = metadata.ok_or_else(|| EngineError::LogGap {
        uri: uri.into(),
        detail: "no metaData action in the log (schema and partition columns unknown); \
                 the log is corrupt or was truncated"
            .into(),
    })?;
    progress(LoadProgress::Computing);
    Ok(LogState {
        version,
        checkpoint_version: checkpoint.map(|c| c.version),
        checkpoint_rows,
        metadata,
        protocol,
        partitions,
        tombstones,
        txns,
        commits,
        listing,
        json_bytes_since_checkpoint,
        warnings,
    })
}

fn checkpoint_error(uri: &str, file: &str, detail: String) -> EngineError {
    let lower = detail.to_ascii_lowercase();
    if lower.contains("permission denied") {
        EngineError::PermissionDenied {
            what: format!("{file} in {uri}"),
            detail,
        }
    } else if lower.contains("not found") {
        EngineError::LogGap {
            uri: uri.into(),
            detail: format!("checkpoint file {file} disappeared while reading: {detail}"),
        }
    } else {
        EngineError::CorruptCheckpoint {
            uri: uri.into(),
            file: file.into(),
            detail,
        }
    }
}
