//! Orphan files: Parquet files in a Delta table's folders that no version of its log references
//! (neither an active file nor a removed one the log still lists) and that no writer can still
//! commit. A compaction or a writer killed between writing an output and committing it leaves
//! them; readers never see them, and only their bytes are lost. `report` counts them, `vacuum`
//! deletes those older than its retention (as Delta's VACUUM deletes untracked files).
//!
//! What is never offered:
//! - anything under a hidden folder (`_`/`.` prefixed, as Delta's VACUUM skips them: the log,
//!   `_lakehealth/` bookkeeping, `_change_data/`), except partition folders (`_col=value`) of
//!   the table's partition columns; files that are not Parquet (deletion vectors, `.crc`);
//! - outputs a lakehealth job lists under `_lakehealth/jobs/` (a worker's ledger or result):
//!   `compact --pickup` commits or deletes them, so deleting them here could leave a commit
//!   pointing at nothing;
//! - files of a partition a compaction job of this process is rewriting (`locks`);
//! - files younger than `MIN_ORPHAN_AGE` (or the vacuum's retention, if longer): a writer in
//!   another process may be about to commit them;
//! - on a local file system, files reached through a symbolic link (a linked folder can lead
//!   out of the table root, or to another folder's live files);
//! - files of another table inside this one's folder (a folder holding its own `_delta_log/`
//!   or Iceberg `metadata/*.metadata.json`): that table's log, not this one's, says whether
//!   they are live.
//!
//! The folders are listed before the log is read: a file committed meanwhile is then seen as
//! referenced, never as an orphan.

use crate::stats::details::{OrphanFile, OrphanScan};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::vacuum::snapshot_files;
use super::{check_write_protocol, open_delta};
use crate::compact::ledger_store::STATE_DIR;
use crate::compact::locks::held_partitions;
use crate::detect::{is_data_file, is_hidden};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::model::partition::PartitionValues;
use crate::model::percent::decode as decoded;
use crate::open::Opened;
use crate::stats::table_report::TableReport;

/// Unreferenced files younger than this are never orphans: a writer may still commit them.
pub const MIN_ORPHAN_AGE: Duration = Duration::from_secs(3600);

/// Orphans a report lists by name (the counts cover all of them).
pub const REPORT_LISTED: usize = 20;

/// The folder value Hive and Delta writers use for NULL.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Where an unreferenced data file belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    Referenced,
    Owned(String),
    OtherTable,
    InFlight,
    BehindSymlink,
    Recent,
    Orphan,
}

/// What a file is checked against.
struct Known {
    /// Log paths (active and removed), as written and percent-decoded.
    referenced: HashSet<String>,
    /// Outputs lakehealth jobs list, as written and percent-decoded, by job.
    owned: HashMap<String, String>,
    partition_columns: Vec<String>,
    /// Partitions a compaction of this process is rewriting.
    held: Vec<PartitionValues>,
    /// Folders below the root that are tables of their own (`nested_roots`).
    nested: Vec<String>,
    now_ms: i64,
    min_age_ms: u64,
}

impl Known {
    fn contains(set: &HashSet<String>, rel: &str) -> bool {
        set.contains(rel) || set.contains(&decoded(rel))
    }

    fn owner(&self, rel: &str) -> Option<&String> {
        self.owned
            .get(rel)
            .or_else(|| self.owned.get(&decoded(rel)))
    }

    /// A data file outside hidden folders (a partition folder of a `_`-named column is not
    /// hidden, as in Delta's VACUUM).
    fn is_table_file(&self, rel: &str) -> bool {
        let mut parts: Vec<&str> = rel.split('/').collect();
        let Some(name) = parts.pop() else {
            return false;
        };
        is_data_file(name)
            && parts.iter().all(|f| {
                !is_hidden(f)
                    || self.partition_columns.iter().any(|c| {
                        f.strip_prefix(c.as_str())
                            .is_some_and(|r| r.starts_with('='))
                    })
            })
    }

    /// The partition a file's folders name, in partition-column order; None when they do not
    /// name every column.
    fn partition_of(&self, rel: &str) -> Option<PartitionValues> {
        let mut folders: Vec<(String, String)> = Vec::new();
        let mut parts: Vec<&str> = rel.split('/').collect();
        parts.pop();
        for f in parts {
            if let Some((k, v)) = f.split_once('=') {
                folders.push((decoded(k), decoded(v)));
            }
        }
        self.partition_columns
            .iter()
            .map(|c| {
                folders.iter().find(|(k, _)| k == c).map(|(_, v)| {
                    let v = (v != HIVE_NULL && !v.is_empty()).then(|| v.clone());
                    (c.clone(), v)
                })
            })
            .collect::<Option<Vec<_>>>()
            .map(PartitionValues)
    }

    /// A file of a partition being rewritten here (any file, when its folders are ambiguous).
    fn in_flight(&self, rel: &str) -> bool {
        if self.held.is_empty() {
            return false;
        }
        match self.partition_of(rel) {
            Some(p) => self.held.contains(&p),
            None => true,
        }
    }

    /// `through_symlink` is asked only for files that would otherwise be offered.
    fn classify(
        &self,
        rel: &str,
        modified_ms: i64,
        through_symlink: &dyn Fn(&str) -> bool,
    ) -> Class {
        if Self::contains(&self.referenced, rel) {
            return Class::Referenced;
        }
        if self.nested.iter().any(|t| {
            rel.strip_prefix(t.as_str())
                .is_some_and(|r| r.starts_with('/'))
        }) {
            return Class::OtherTable;
        }
        if let Some(job) = self.owner(rel) {
            return Class::Owned(job.clone());
        }
        if through_symlink(rel) {
            return Class::BehindSymlink;
        }
        if self.in_flight(rel) {
            return Class::InFlight;
        }
        let age = self.now_ms.saturating_sub(modified_ms);
        if age < 0 || (age as u64) < self.min_age_ms {
            return Class::Recent;
        }
        Class::Orphan
    }
}

/// True when `rel` (an object-store path below the local `root`) passes through a symbolic
/// link, or cannot be checked.
fn through_symlink(root: &std::path::Path, rel: &str) -> bool {
    let mut p = root.to_path_buf();
    for part in rel.split('/') {
        p.push(decoded(part));
        match std::fs::symlink_metadata(&p) {
            Ok(m) if !m.file_type().is_symlink() => {}
            _ => return true,
        }
    }
    false
}

/// The local table root, for the symlink check (None for object stores: they have none).
fn local_root(loc: &Location) -> Option<std::path::PathBuf> {
    loc.is_local()
        .then(|| loc.url.to_file_path().ok())
        .flatten()
}

/// Folders below the root that are tables of their own, from a listing: those holding a
/// `_delta_log/` or an Iceberg `metadata/*.metadata.json`.
fn nested_roots(listed: &[ObjectMeta]) -> Vec<String> {
    let mut roots = std::collections::BTreeSet::new();
    for m in listed {
        let parts: Vec<&str> = m.location.as_ref().split('/').collect();
        for (i, p) in parts.iter().enumerate().skip(1) {
            let delta = *p == "_delta_log";
            let iceberg = *p == "metadata"
                && i + 2 == parts.len()
                && parts[i + 1].ends_with(".metadata.json");
            if delta || iceberg {
                roots.insert(parts[..i].join("/"));
                break;
            }
        }
    }
    roots.into_iter().collect()
}

/// Every Parquet file below the table root outside `_delta_log/`, `_lakehealth/` and other
/// hidden top-level folders (but `_col=value` folders are kept: they may be partitions), and
/// the folders that are tables of their own (`nested_roots`).
async fn list_data_files(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
) -> Result<(Vec<ObjectMeta>, Vec<String>)> {
    let what = "listing the table's folders for orphan files";
    let top = store
        .list_with_delimiter(None)
        .await
        .map_err(|e| EngineError::from_store(uri, what, e))?;
    let mut out: Vec<ObjectMeta> = top.objects;
    for prefix in top.common_prefixes {
        let name = prefix.filename().unwrap_or_default();
        if is_hidden(name) && !name.contains('=') {
            continue;
        }
        let mut listing = store.list(Some(&prefix));
        while let Some(m) = listing
            .try_next()
            .await
            .map_err(|e| EngineError::from_store(uri, what, e))?
        {
            out.push(m);
        }
    }
    let nested = nested_roots(&out);
    out.retain(|m| m.location.filename().is_some_and(is_data_file));
    Ok((out, nested))
}

/// The outputs every job folder under `_lakehealth/jobs/` lists (ledgers and results), by job;
/// and the job files that could not be read.
async fn job_outputs(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
) -> Result<(HashMap<String, String>, Vec<String>)> {
    let prefix = Path::from(format!("{STATE_DIR}/jobs"));
    let keys: Vec<Path> = store
        .list(Some(&prefix))
        .map_ok(|m| m.location)
        .try_collect()
        .await
        .map_err(|e| EngineError::from_store(uri, "listing _lakehealth/jobs", e))?;
    let mut owned = HashMap::new();
    let mut unreadable = Vec::new();
    for key in keys {
        let k = key.to_string();
        if !(k.ends_with(".outputs.json") || k.ends_with(".result.json")) {
            continue;
        }
        let job = k.split('/').nth(2).unwrap_or_default().to_string();
        let bytes = match store.get(&key).await {
            Ok(r) => r.bytes().await,
            Err(e) => Err(e),
        };
        let value = match bytes {
            Ok(b) => serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .map(inside_seal),
            // Settled meanwhile: its outputs were committed or deleted.
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(_) => None,
        };
        let Some(paths) = value.as_ref().and_then(listed_outputs) else {
            unreadable.push(k);
            continue;
        };
        for p in paths {
            owned.insert(decoded(&p), job.clone());
            owned.insert(p, job.clone());
        }
    }
    Ok((owned, unreadable))
}

/// The record inside a sealed envelope (`sealed`), unverified: what it names is only ever
/// kept from deletion here, never deleted, so a record need not be genuine to be heeded.
fn inside_seal(v: serde_json::Value) -> serde_json::Value {
    match v.get("payload").and_then(|p| p.as_str()) {
        Some(text) if v.get("sealed").is_some() => {
            serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
        }
        _ => v,
    }
}

/// The outputs a ledger (a list of paths, or `outputs[]`) or a result (`adds[].path`,
/// `outputs[]`) names.
fn listed_outputs(v: &serde_json::Value) -> Option<Vec<String>> {
    let strings = |a: &serde_json::Value| -> Option<Vec<String>> {
        a.as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    if v.is_array() {
        return strings(v);
    }
    let obj = v.as_object()?;
    let mut out = Vec::new();
    if let Some(adds) = obj.get("adds") {
        for a in adds.as_array()? {
            out.push(a.get("path")?.as_str()?.to_string());
        }
    }
    if let Some(o) = obj.get("outputs") {
        out.extend(strings(o)?);
    }
    Some(out)
}

/// Lists the table's folders and checks every data file against the latest version of the log,
/// the job folders and this process's compactions. Changes nothing.
pub async fn scan_orphans(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    now_ms: i64,
    min_age: Duration,
) -> Result<OrphanScan> {
    let uri = loc.display();
    let store = loc.open_store(storage_options)?;
    // Listing first, the log last: a file committed meanwhile counts as referenced.
    let (listed, nested) = list_data_files(&store, &uri).await?;
    let (owned, unreadable_job_files) = job_outputs(&store, &uri).await?;
    let held = held_partitions(&uri);
    let table = open_delta(loc, storage_options, "reading the log for orphan files").await?;
    let version = table.version().unwrap_or_default();
    let partition_columns = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(&uri, "reading the table's metadata", e))?
        .metadata()
        .partition_columns()
        .to_vec();
    let (tombstones, active) = snapshot_files(&uri, &table).await?;
    let mut referenced = HashSet::with_capacity(2 * (tombstones.len() + active.len()));
    for p in active.into_iter().chain(tombstones.into_keys()) {
        referenced.insert(decoded(&p));
        referenced.insert(p);
    }
    let known = Known {
        referenced,
        owned,
        partition_columns,
        held,
        nested,
        now_ms,
        min_age_ms: min_age.as_millis().min(u64::MAX as u128) as u64,
    };
    let root = local_root(loc);
    let symlinked = |rel: &str| root.as_deref().is_some_and(|r| through_symlink(r, rel));
    let mut scan = OrphanScan {
        version,
        scanned_at_ms: now_ms,
        min_age_ms: known.min_age_ms,
        unreadable_job_files,
        ..OrphanScan::default()
    };
    let mut jobs = std::collections::BTreeSet::new();
    for m in listed {
        let rel = m.location.to_string();
        if !known.is_table_file(&rel) {
            continue;
        }
        let modified_ms = m.last_modified.timestamp_millis();
        match known.classify(&rel, modified_ms, &symlinked) {
            Class::Referenced => {}
            Class::Owned(job) => {
                scan.job_owned.add(&rel, m.size);
                jobs.insert(job);
            }
            Class::OtherTable => scan.in_other_tables.add(&rel, m.size),
            Class::InFlight => scan.in_flight.add(&rel, m.size),
            Class::BehindSymlink => scan.behind_symlinks.add(&rel, m.size),
            Class::Recent => scan.recent.add(&rel, m.size),
            Class::Orphan => {
                scan.files += 1;
                scan.bytes = scan.bytes.saturating_add(m.size);
                scan.orphans.push(OrphanFile {
                    path: rel,
                    bytes: m.size,
                    modified_ms,
                });
            }
        }
    }
    scan.orphans.sort_by(|a, b| a.path.cmp(&b.path));
    scan.jobs = jobs.into_iter().collect();
    Ok(scan)
}

/// Adds the orphan scan (at most `REPORT_LISTED` names) and its finding to a Delta table's
/// report; a scan that fails is a warning on the report, not an error.
pub async fn attach_orphans(
    report: &mut TableReport,
    loc: &Location,
    storage_options: &HashMap<String, String>,
) {
    let now = crate::clock::now_ms();
    match scan_orphans(loc, storage_options, now, MIN_ORPHAN_AGE).await {
        Ok(scan) => {
            report.findings.extend(scan.finding());
            report.orphans = Some(scan.truncated(REPORT_LISTED));
        }
        Err(e) => report
            .warnings
            .push(format!("orphan files could not be checked: {e}")),
    }
}

/// `attach_orphans` for every Delta table opened (4 tables at a time under a root).
pub async fn attach_orphans_to(opened: &mut Opened, storage_options: &HashMap<String, String>) {
    let tables: Vec<&mut TableReport> = match opened {
        Opened::Table(t) => vec![t.as_mut()],
        Opened::Root(r) => r.tables.iter_mut().collect(),
    };
    futures::stream::iter(tables)
        .filter(|t| std::future::ready(t.format == TableFormat::Delta))
        .for_each_concurrent(4, |t| async move {
            match Location::parse(&t.uri) {
                Ok(loc) => attach_orphans(t, &loc, storage_options).await,
                Err(e) => t
                    .warnings
                    .push(format!("orphan files could not be checked: {e}")),
            }
        })
        .await;
}

/// What a vacuum deletes besides the log's removed files: the orphans older than its retention
/// (never younger than `MIN_ORPHAN_AGE`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrphanPlan {
    /// Orphans last modified before this instant are deleted.
    pub cutoff_ms: i64,
    pub files_to_delete: u64,
    pub bytes_to_delete: u64,
    /// Why nothing is deleted although orphans were found.
    pub refused: Option<String>,
    /// The scan at the vacuum's clock with its retention as the minimum age: `orphans` are the
    /// files to delete, `recent` the unreferenced files inside the retention (kept).
    pub scan: OrphanScan,
}

/// What deleting the planned orphans did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OrphanOutcome {
    pub files_deleted: u64,
    pub bytes_deleted: u64,
    /// Sorted by path.
    pub deleted: Vec<String>,
    /// Planned, but no longer orphans when checked again (committed, owned or gone meanwhile).
    pub skipped: Vec<String>,
    /// Deletes that failed, with why.
    pub failed: Vec<String>,
}

/// The minimum age a vacuum with `retention` applies to orphans.
pub fn orphan_min_age(retention: Duration) -> Duration {
    retention.max(MIN_ORPHAN_AGE)
}

/// The orphans a vacuum at `now_ms` with `retention` (already checked against the table's)
/// deletes. Changes nothing.
pub async fn plan_orphans(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    now_ms: i64,
    retention: Duration,
) -> Result<OrphanPlan> {
    let min_age = orphan_min_age(retention);
    let scan = scan_orphans(loc, storage_options, now_ms, min_age).await?;
    let refused = (!scan.unreadable_job_files.is_empty() && scan.files > 0).then(|| {
        format!(
            "{} job file(s) under {STATE_DIR}/jobs/ could not be read (e.g. {}), so which outputs \
             their jobs own is unknown; no orphan is deleted until `lakehealth compact --pickup` \
             settles them or they are removed",
            scan.unreadable_job_files.len(),
            scan.unreadable_job_files[0]
        )
    });
    let (files, bytes) = match refused {
        Some(_) => (0, 0),
        None => (scan.files, scan.bytes),
    };
    Ok(OrphanPlan {
        cutoff_ms: now_ms.saturating_sub(min_age.as_millis().min(i64::MAX as u128) as i64),
        files_to_delete: files,
        bytes_to_delete: bytes,
        refused,
        scan,
    })
}

/// Deletes the orphans `plan` lists that are still orphans when checked again with the plan's
/// clock (a file committed or claimed by a job since is kept). Never a file outside the plan.
pub async fn delete_orphans(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    plan: &OrphanPlan,
    cancel: &CancellationToken,
) -> Result<OrphanOutcome> {
    let mut outcome = OrphanOutcome::default();
    if plan.refused.is_some() || plan.scan.orphans.is_empty() {
        return Ok(outcome);
    }
    let uri = loc.display();
    let table = open_delta(
        loc,
        storage_options,
        "opening the table to delete orphan files",
    )
    .await?;
    check_write_protocol(&table, &uri, "deleting orphan files", false)?;
    let now = scan_orphans(
        loc,
        storage_options,
        plan.scan.scanned_at_ms,
        Duration::from_millis(plan.scan.min_age_ms),
    )
    .await?;
    if !now.unreadable_job_files.is_empty() {
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: job files under {STATE_DIR}/jobs/ became unreadable since the dry run (e.g. {}); no orphan was deleted",
            now.unreadable_job_files[0]
        )));
    }
    let still: HashSet<&str> = now.orphans.iter().map(|f| f.path.as_str()).collect();
    if cancel.is_cancelled() {
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: VACUUM cancelled before deleting orphan files; none was deleted"
        )));
    }
    let store = loc.open_store(storage_options)?;
    let root = local_root(loc);
    for f in &plan.scan.orphans {
        // Checked again right before the delete: a folder swapped for a link meanwhile.
        let linked = root.as_deref().is_some_and(|r| through_symlink(r, &f.path));
        if !still.contains(f.path.as_str()) || linked {
            outcome.skipped.push(f.path.clone());
            continue;
        }
        let at = Path::parse(&f.path).unwrap_or_else(|_| Path::from(f.path.as_str()));
        match store.delete(&at).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                outcome.files_deleted += 1;
                outcome.bytes_deleted = outcome.bytes_deleted.saturating_add(f.bytes);
                outcome.deleted.push(f.path.clone());
            }
            Err(e) => outcome.failed.push(format!("{}: {e}", f.path)),
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn known(held: Vec<PartitionValues>) -> Known {
        Known {
            referenced: ["d=1/active.parquet", "d=1/removed%20x.parquet"]
                .iter()
                .flat_map(|p| [p.to_string(), decoded(p)])
                .collect(),
            owned: [("d=1/ledgered.parquet".to_string(), "job-1".to_string())].into(),
            partition_columns: vec!["d".into()],
            held,
            nested: vec!["d=1/nested".into()],
            now_ms: 100 * HOUR,
            min_age_ms: HOUR as u64,
        }
    }

    fn no_links(_: &str) -> bool {
        false
    }

    #[test]
    fn only_old_unreferenced_unowned_data_files_are_orphans() {
        let k = known(vec![]);
        let old = 10 * HOUR;
        let c = |p: &str, at: i64| k.classify(p, at, &no_links);
        assert_eq!(c("d=1/active.parquet", old), Class::Referenced);
        // The listing shows the decoded name of a percent-encoded log path.
        assert_eq!(c("d=1/removed x.parquet", old), Class::Referenced);
        assert_eq!(c("d=1/ledgered.parquet", old), Class::Owned("job-1".into()));
        assert_eq!(c("d=1/killed.parquet", 100 * HOUR - 60_000), Class::Recent);
        // A clock ahead of ours: not known to be old.
        assert_eq!(c("d=1/killed.parquet", 101 * HOUR), Class::Recent);
        assert_eq!(c("d=1/killed.parquet", old), Class::Orphan);
        let linked = k.classify("d=1/killed.parquet", old, &|_| true);
        assert_eq!(linked, Class::BehindSymlink);
        assert_eq!(c("d=1/nested/part-0.parquet", old), Class::OtherTable);
        assert_eq!(c("d=1/nested-not/part-0.parquet", old), Class::Orphan);
    }

    #[test]
    fn folders_holding_a_delta_log_or_iceberg_metadata_are_tables_of_their_own() {
        let meta = |p: &str| ObjectMeta {
            location: Path::from(p),
            last_modified: chrono::DateTime::default(),
            size: 1,
            e_tag: None,
            version: None,
        };
        let listed: Vec<ObjectMeta> = [
            "d=1/part-0.parquet",
            "d=1/inner/_delta_log/00000000000000000000.json",
            "d=1/inner/part-0.parquet",
            "ice/metadata/00001-x.metadata.json",
            "ice/data/x.parquet",
            "d=2/metadata/notes.txt",
        ]
        .iter()
        .map(|p| meta(p))
        .collect();
        assert_eq!(nested_roots(&listed), vec!["d=1/inner", "ice"]);
    }

    #[test]
    fn hidden_folders_and_non_parquet_files_are_not_table_files_but_underscore_partitions_are() {
        let mut k = known(vec![]);
        k.partition_columns = vec!["_p".into()];
        for p in [
            "_delta_log/00000000000000000000.json",
            "_delta_log/x.parquet",
            "_lakehealth/jobs/j/part-1.parquet",
            "_change_data/d=1/c.parquet",
            "d=1/_temporary/0/part.parquet",
            ".hidden/part.parquet",
            "d=1/.part.parquet.crc",
            "deletion_vector_1.bin",
            "_other=1/part.parquet",
        ] {
            assert!(!k.is_table_file(p), "{p}");
        }
        for p in ["part.parquet", "d=1/part.PARQUET", "_p=1/part.parquet"] {
            assert!(k.is_table_file(p), "{p}");
        }
    }

    #[test]
    fn files_of_a_partition_this_process_is_compacting_are_in_flight() {
        let p = |v: Option<&str>| PartitionValues(vec![("d".into(), v.map(str::to_string))]);
        let k = known(vec![p(Some("a b")), p(None)]);
        let old = 10 * HOUR;
        let c = |path: &str| k.classify(path, old, &no_links);
        assert_eq!(c("d=a%20b/out.parquet"), Class::InFlight);
        assert_eq!(
            c("d=__HIVE_DEFAULT_PARTITION__/out.parquet"),
            Class::InFlight
        );
        assert_eq!(c("d=2/out.parquet"), Class::Orphan);
        // Folders that do not name the partition: it could be any, so it is kept.
        assert_eq!(c("elsewhere/out.parquet"), Class::InFlight);
        assert_eq!(
            known(vec![]).classify("out.parquet", old, &no_links),
            Class::Orphan
        );
    }

    #[test]
    fn a_sealed_ledger_names_its_outputs_too() {
        let inner = serde_json::json!({"job": "j", "outputs": ["d=1/a.parquet"]});
        let sealed = serde_json::json!({"sealed": 1, "kind": "output-ledger", "key_id": "k", "mac": "m", "payload": inner.to_string()});
        assert_eq!(
            listed_outputs(&inside_seal(sealed)).unwrap(),
            vec!["d=1/a.parquet".to_string()]
        );
        let garbled = serde_json::json!({"sealed": 1, "payload": "not json"});
        assert!(
            listed_outputs(&inside_seal(garbled)).is_none(),
            "unreadable"
        );
    }

    #[test]
    fn ledgers_and_results_name_their_outputs_and_anything_else_is_unreadable() {
        let ledger = serde_json::json!(["d=1/a.parquet", "d=1/b%20c.parquet"]);
        assert_eq!(
            listed_outputs(&ledger).unwrap(),
            vec!["d=1/a.parquet", "d=1/b%20c.parquet"]
        );
        let done = serde_json::json!({"status": "done", "adds": [{"path": "d=1/o.parquet"}], "removes": [{"path": "d=1/in.parquet"}]});
        assert_eq!(listed_outputs(&done).unwrap(), vec!["d=1/o.parquet"]);
        let failed = serde_json::json!({"status": "failed", "outputs": ["d=1/f.parquet"]});
        assert_eq!(listed_outputs(&failed).unwrap(), vec!["d=1/f.parquet"]);
        for bad in [
            serde_json::json!("x"),
            serde_json::json!([1]),
            serde_json::json!({"adds": [{"nopath": 1}]}),
        ] {
            assert!(listed_outputs(&bad).is_none(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_path_through_a_linked_folder_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("d=1")).unwrap();
        std::fs::write(d.path().join("d=1/a.parquet"), b"x").unwrap();
        std::fs::write(outside.path().join("b.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("d=2")).unwrap();
        std::os::unix::fs::symlink(
            d.path().join("d=1/a.parquet"),
            d.path().join("d=1/link.parquet"),
        )
        .unwrap();
        assert!(!through_symlink(d.path(), "d=1/a.parquet"));
        assert!(through_symlink(d.path(), "d=2/b.parquet"));
        assert!(through_symlink(d.path(), "d=1/link.parquet"));
        assert!(through_symlink(d.path(), "d=1/missing.parquet"));
    }
}
