//! Spark's Parquet file sink: `_spark_metadata/` is its log of valid files. One file per batch
//! (named by batch id; first line the version `v1`, then one JSON object per file: `path` as a
//! full URI, `size`, `isDir`, `modificationTime`, `blockReplication`, `blockSize`, `action`
//! `add`/`delete`); every 10th batch is compacted into `N.compact`, holding every live entry.
//! The valid files are the latest compact's plus the later batches'. Files in the folder that
//! the log does not name were left by failed batches: orphans, which Spark's readers never see.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Deserialize;
use url::Url;

use crate::clock::now_ms;
use crate::delta::log::partition_key::PartitionSizes;
use crate::delta::log::state::{CommitSummary, TxnState};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::options::OpenOptions;
use crate::parquet_folder::hive::PartitionParser;
use crate::parquet_folder::scan::{Entry, classify, list_folder};
use crate::parquet_folder::{FolderState, listing_warnings};
use crate::progress::LoadProgress;
use crate::size::format_bytes;
use crate::stats::details::{FileGroup, FolderDetails};
use crate::stats::table_report::TableReport;

pub const SINK_LOG: &str = "_spark_metadata";
/// The writer named in the streaming-writers panel (a sink log names no query).
pub const SINK_WRITER: &str = "spark file sink (_spark_metadata)";

/// One line of a sink log file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SinkEntry {
    pub path: String,
    pub size: i64,
    #[serde(default)]
    pub is_dir: bool,
    pub action: String,
}

/// One batch file of the log.
#[derive(Debug, Clone)]
pub struct BatchFile {
    pub batch: u64,
    pub compact: bool,
    pub path: Path,
    pub last_modified: DateTime<Utc>,
}

/// `12` → batch 12, `20.compact` → compacted batch 20; anything else (`.0.crc`, temp files) None.
pub fn parse_batch_name(name: &str) -> Option<(u64, bool)> {
    let (digits, compact) = match name.strip_suffix(".compact") {
        Some(d) => (d, true),
        None => (name, false),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, compact))
}

/// Parses a batch file: the version line (`v1`; a newer one is refused), then entries.
pub fn parse_batch(uri: &str, file: &str, text: &str) -> Result<Vec<SinkEntry>> {
    let mut lines = text.lines();
    let version = lines.next().unwrap_or_default().trim();
    let v: u32 = version
        .strip_prefix('v')
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| EngineError::CorruptCommit {
            uri: uri.into(),
            file: file.into(),
            line: 1,
            detail: format!("expected a version line such as v1, found {version:?}"),
        })?;
    if v > 1 {
        return Err(EngineError::Unsupported {
            uri: uri.into(),
            detail: format!(
                "{file} is written in sink log version v{v}; lakehealth reads v1 (a newer Spark wrote it)"
            ),
        });
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: SinkEntry = serde_json::from_str(line).map_err(|e| EngineError::CorruptCommit {
            uri: uri.into(),
            file: file.into(),
            line: i + 2,
            detail: e.to_string(),
        })?;
        out.push(e);
    }
    Ok(out)
}

/// The path of a logged file relative to the table (`None`: outside the table's folder). Spark
/// logs full URIs (`s3a://bucket/t/part-0.parquet`, `file:/tmp/t/...`); the scheme is not
/// compared (s3a and s3 name the same objects), the bucket and the folder are.
pub fn relative_path(table: &Url, logged: &str) -> Option<String> {
    let (host, path) = match Url::parse(logged) {
        Ok(u) if u.scheme().len() > 1 => (u.host_str().map(str::to_string), u.path().to_string()),
        // No scheme: an absolute path, or one relative to the table.
        _ if logged.starts_with('/') => (None, logged.to_string()),
        _ => return Some(Path::from_url_path(logged).ok()?.to_string()),
    };
    if host.is_some() && host.as_deref() != table.host_str() {
        return None;
    }
    let full = Path::from_url_path(&path).ok()?;
    let root = Path::from_url_path(table.path()).ok()?;
    let parts: Vec<String> = full
        .prefix_match(&root)?
        .map(|p| p.as_ref().to_string())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// What the log says: the valid files (relative path → size), batches as commits, its size.
pub struct SinkLog {
    pub latest: u64,
    pub latest_compact: Option<u64>,
    pub active: HashMap<String, u64>,
    /// Logged files outside the table's folder (they cannot be listed).
    pub outside: FileGroup,
    /// Newest first.
    pub commits: Vec<CommitSummary>,
    pub log_bytes: u64,
    pub log_objects: u64,
}

pub async fn read_sink_log(
    store: &Arc<dyn ObjectStore>,
    loc: &Location,
    history: usize,
    io_concurrency: usize,
) -> Result<SinkLog> {
    let uri = loc.display();
    let (batches, log_bytes, log_objects) = list_batches(store, &uri).await?;
    let Some(latest) = batches.keys().next_back().copied() else {
        return Err(EngineError::EmptyLog { uri });
    };
    let latest_compact = batches.values().rev().find(|b| b.compact).map(|b| b.batch);
    let first = latest_compact.unwrap_or(0);
    if let Some(missing) = (first..=latest).find(|b| !batches.contains_key(b)) {
        return Err(EngineError::LogGap {
            uri,
            detail: format!(
                "_spark_metadata/ has batch {latest} but not batch {missing}{}; the valid files cannot be known. Restore the missing batch file",
                match latest_compact {
                    Some(c) => format!(" (after the compacted batch {c})"),
                    None => " (and no compacted batch)".into(),
                }
            ),
        });
    }
    // Batches the state needs, and older ones still present for the history panel.
    let oldest_history = (latest + 1).saturating_sub(history as u64);
    let wanted: Vec<BatchFile> = batches
        .into_values()
        .filter(|b| b.batch >= first || b.batch >= oldest_history)
        .collect();
    let read = read_batches(store, &uri, wanted, io_concurrency).await?;
    let (active, outside) = replay_batches(loc, &read, first);
    let mut commits: Vec<CommitSummary> = read.iter().map(|(b, e)| summary(b, e)).collect();
    commits.reverse();
    commits.truncate(history.max(1));
    Ok(SinkLog {
        latest,
        latest_compact,
        active,
        outside,
        commits,
        log_bytes,
        log_objects,
    })
}

/// The log's batch files by batch (a compacted one wins over its plain file), and the bytes
/// and objects of the log folder.
async fn list_batches(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
) -> Result<(BTreeMap<u64, BatchFile>, u64, u64)> {
    let mut batches: BTreeMap<u64, BatchFile> = BTreeMap::new();
    let (mut log_bytes, mut log_objects) = (0, 0);
    let mut listed = store.list(Some(&Path::from(SINK_LOG)));
    while let Some(meta) = listed
        .try_next()
        .await
        .map_err(|e| EngineError::from_store(uri, "_spark_metadata/", e))?
    {
        log_bytes += meta.size;
        log_objects += 1;
        let Some((batch, compact)) = meta.location.filename().and_then(parse_batch_name) else {
            continue;
        };
        let f = BatchFile {
            batch,
            compact,
            path: meta.location.clone(),
            last_modified: meta.last_modified,
        };
        // A batch compacted while its plain file is still there: the compact one is the state.
        match batches.get(&batch) {
            Some(b) if b.compact => {}
            _ => {
                batches.insert(batch, f);
            }
        }
    }
    Ok((batches, log_bytes, log_objects))
}

/// Reads and parses the batch files, concurrently; in batch order.
async fn read_batches(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    wanted: Vec<BatchFile>,
    io_concurrency: usize,
) -> Result<Vec<(BatchFile, Vec<SinkEntry>)>> {
    let mut read: Vec<(BatchFile, Vec<SinkEntry>)> = futures::stream::iter(wanted)
        .map(|b| {
            let store = store.clone();
            let uri = uri.to_string();
            async move {
                let bytes = store
                    .get(&b.path)
                    .await
                    .map_err(|e| EngineError::from_store(&uri, "reading _spark_metadata/", e))?
                    .bytes()
                    .await
                    .map_err(|e| EngineError::from_store(&uri, "reading _spark_metadata/", e))?;
                let text = String::from_utf8_lossy(&bytes);
                let entries = parse_batch(&uri, b.path.as_ref(), &text)?;
                Ok::<_, EngineError>((b, entries))
            }
        })
        .buffer_unordered(io_concurrency.max(1))
        .try_collect()
        .await?;
    read.sort_by_key(|(b, _)| b.batch);
    Ok(read)
}

/// The files the batches from `first` on leave active: those under the table by their path
/// in it, with their sizes, and those outside it.
fn replay_batches(
    loc: &Location,
    read: &[(BatchFile, Vec<SinkEntry>)],
    first: u64,
) -> (HashMap<String, u64>, FileGroup) {
    let mut active: HashMap<String, u64> = HashMap::new();
    let mut outside_paths: HashMap<String, u64> = HashMap::new();
    for (_, entries) in read.iter().filter(|(b, _)| b.batch >= first) {
        for e in entries.iter().filter(|e| !e.is_dir) {
            let size = e.size.max(0) as u64;
            match (relative_path(&loc.url, &e.path), e.action.as_str()) {
                (Some(rel), "add") => {
                    active.insert(rel, size);
                }
                (Some(rel), "delete") => {
                    active.remove(&rel);
                }
                (None, "add") => {
                    outside_paths.insert(e.path.clone(), size);
                }
                (None, "delete") => {
                    outside_paths.remove(&e.path);
                }
                _ => {}
            }
        }
    }
    let mut outside = FileGroup::default();
    for (p, size) in outside_paths {
        outside.add(&p, size);
    }
    (active, outside)
}

/// A batch as a commit of the history panel; its time is when the batch file was written.
fn summary(b: &BatchFile, entries: &[SinkEntry]) -> CommitSummary {
    let (mut fa, mut fr, mut ba, mut br) = (0, 0, 0, 0);
    for e in entries.iter().filter(|e| !e.is_dir) {
        let size = e.size.max(0) as u64;
        match e.action.as_str() {
            "add" => (fa, ba) = (fa + 1, ba + size),
            "delete" => (fr, br) = (fr + 1, br + size),
            _ => {}
        }
    }
    CommitSummary {
        version: b.batch,
        timestamp_ms: Some(b.last_modified.timestamp_millis()),
        operation: if b.compact {
            "SINK BATCH (log compacted)".into()
        } else {
            "SINK BATCH".into()
        },
        files_added: fa,
        files_removed: fr,
        bytes_added: ba,
        bytes_removed: br,
        data_change: true,
        query_id: Some(SINK_WRITER.into()),
        epoch_id: Some(b.batch as i64),
        engine: Some("Spark file sink".into()),
        trigger: None,
    }
}

/// The sink's valid files as the statistics need them, the folder's other files apart.
pub struct SinkScan {
    pub log: SinkLog,
    pub partitions: PartitionSizes,
    pub parser: PartitionParser,
    pub details: FolderDetails,
}

/// Reads the log, then streams the folder listing: a listed Parquet file the log names is
/// active (its size from the log), any other is an orphan; logged files never listed are
/// missing.
pub async fn scan_sink(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
    // Each file the log lists and the folder holds: its path, the log's size, the folder's.
    mut keep: impl FnMut(&str, u64, u64),
) -> Result<SinkScan> {
    let uri = loc.display();
    progress(LoadProgress::Listing);
    let mut log = read_sink_log(
        store,
        loc,
        opts.replay.history_commits,
        opts.replay.io_concurrency,
    )
    .await?;
    let mut parser = PartitionParser::default();
    let mut partitions = PartitionSizes::default();
    let mut details = FolderDetails::default();
    let mut orphans = FileGroup::default();
    details.listing = list_folder(store, &uri, !loc.is_local(), progress, |meta| {
        match classify(meta.location.as_ref()) {
            Entry::Data(rel) => match log.active.remove(rel) {
                Some(size) => {
                    partitions.push(parser.key_of(rel), size);
                    keep(rel, size, meta.size);
                }
                None => orphans.add(rel, meta.size),
            },
            Entry::Hidden(rel) if rel.starts_with("_spark_metadata/") => {}
            Entry::Hidden(rel) => details.hidden_files.add(rel, meta.size),
            Entry::Other(rel) => match log.active.remove(rel) {
                // The sink names its files; whatever it names is data, extension or not.
                Some(size) => {
                    partitions.push(parser.key_of(rel), size);
                    keep(rel, size, meta.size);
                }
                None => details.other_files.add(rel, meta.size),
            },
        }
    })
    .await?;
    let mut missing = std::mem::take(&mut log.outside);
    let mut left: Vec<(String, u64)> = log.active.drain().collect();
    left.sort();
    for (rel, size) in left {
        missing.add(&rel, size);
    }
    details.orphans = Some(orphans);
    details.missing = Some(missing);
    Ok(SinkScan {
        log,
        partitions,
        parser,
        details,
    })
}

pub async fn load_spark_sink(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    let scan = scan_sink(loc, store, opts, progress, |_, _, _| {}).await?;
    progress(LoadProgress::Computing);
    let SinkScan {
        log,
        partitions,
        parser,
        details,
    } = scan;
    let mut warnings = listing_warnings(&details, &parser);
    if let Some(o) = details.orphans.as_ref().filter(|o| o.files > 0) {
        warnings.push(format!(
            "{} Parquet files ({}) are not in the sink log (left by failed batches): Spark's readers never see them; they are counted apart as orphans, e.g. {}",
            o.files,
            format_bytes(o.bytes),
            o.examples.join(", ")
        ));
    }
    if let Some(m) = details.missing.as_ref().filter(|m| m.files > 0) {
        warnings.push(format!(
            "{} files the sink log lists ({}) are not in the folder: Spark's readers fail on them, e.g. {}",
            m.files,
            format_bytes(m.bytes),
            m.examples.join(", ")
        ));
    }
    let last = log.commits.first().and_then(|c| c.timestamp_ms);
    let txns = HashMap::from([(
        SINK_WRITER.to_string(),
        TxnState {
            version: log.latest as i64,
            last_updated: last,
        },
    )]);
    let state = FolderState {
        version: log.latest,
        checkpoint_version: log.latest_compact,
        partition_columns: parser.columns,
        partitions,
        commits: log.commits,
        txns,
        log_bytes: log.log_bytes,
        log_objects: log.log_objects,
        warnings,
    };
    let mut report = TableReport::from_state(
        TableFormat::SparkFileSink,
        loc.display(),
        loc.name(),
        &state.into_log_state(),
        opts.thresholds,
        now_ms(),
    );
    report.folder = Some(details);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_names() {
        assert_eq!(parse_batch_name("12"), Some((12, false)));
        assert_eq!(parse_batch_name("19.compact"), Some((19, true)));
        assert_eq!(parse_batch_name(".12.crc"), None);
        assert_eq!(parse_batch_name("12.tmp"), None);
        assert_eq!(parse_batch_name(".compact"), None);
    }

    #[test]
    fn parses_a_batch_as_spark_writes_it_and_refuses_newer_versions() {
        let text = "v1\n{\"path\":\"file:///tmp/t/k=a/part-0.parquet\",\"size\":10,\"isDir\":false,\"modificationTime\":1,\"blockReplication\":1,\"blockSize\":33554432,\"action\":\"add\"}\n";
        let e = parse_batch("t", "0", text).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].size, 10);
        assert!(matches!(
            parse_batch("t", "0", "v2\n"),
            Err(EngineError::Unsupported { .. })
        ));
        assert!(matches!(
            parse_batch("t", "0", "v1\n{bad"),
            Err(EngineError::CorruptCommit { line: 2, .. })
        ));
    }

    #[test]
    fn logged_uris_become_table_relative_paths() {
        let t = Url::parse("file:///tmp/t/").unwrap();
        assert_eq!(
            relative_path(&t, "file:///tmp/t/k=a%20b/part-0.parquet").as_deref(),
            Some("k=a b/part-0.parquet")
        );
        assert_eq!(
            relative_path(&t, "file:/tmp/t/part-0.parquet").as_deref(),
            Some("part-0.parquet")
        );
        assert_eq!(relative_path(&t, "file:///tmp/other/part-0.parquet"), None);
        let s = Url::parse("s3://bucket/lake/t/").unwrap();
        assert_eq!(
            relative_path(&s, "s3a://bucket/lake/t/d=1/p.parquet").as_deref(),
            Some("d=1/p.parquet")
        );
        assert_eq!(relative_path(&s, "s3a://other/lake/t/d=1/p.parquet"), None);
    }
}
