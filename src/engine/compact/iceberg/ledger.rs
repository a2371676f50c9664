//! What a job that was killed leaves behind, and its removal. Before it writes any output, a
//! job records itself in `<table>/_lakehealth/iceberg-jobs/<job>.json` (its id, host, process,
//! start, and the folders its outputs go to); its outputs carry the id in their names
//! (`NNNNN-lakehealth-<job>-<uuid>.parquet`) and its snapshots in their summaries
//! (`lakehealth.job-id`). A job that ends removes its record (a bin that does not commit deletes
//! its outputs itself). The next job on the table sweeps the records of dead jobs: an output of
//! such a job is deleted unless it is live in the current snapshot or added by a snapshot of
//! that job still in the metadata (time travel reads it), so nothing committed is ever touched.
//! A job is dead when its process is gone from this host, or, started on another host, when
//! its record is older than `FOREIGN_AGE_MS`.

use std::collections::HashSet;

use futures::TryStreamExt;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use super::IcebergCompactError as E;
use super::avro_file::long;
use super::table_state::{TableState, file_path, status};
use crate::engine::formats::iceberg::Stores;

/// The summary key of a job's snapshots.
pub const JOB_KEY: &str = "lakehealth.job-id";

/// A record from another host is taken for dead after a day (no job runs that long).
pub const FOREIGN_AGE_MS: i64 = 24 * 3600 * 1000;

/// Where the records of a table's jobs live.
fn folder(table_root: &str) -> String {
    format!(
        "{}/_lakehealth/iceberg-jobs",
        table_root.trim_end_matches('/')
    )
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ledger {
    pub job: String,
    pub host: String,
    pub pid: u32,
    pub started_ms: i64,
    /// The folders its outputs are written to (beside each bin's first input).
    pub folders: Vec<String>,
}

impl Ledger {
    pub fn new(job: String, folders: Vec<String>, now_ms: i64) -> Self {
        Ledger {
            job,
            host: host(),
            pid: std::process::id(),
            started_ms: now_ms,
            folders,
        }
    }

    /// Whether the job that wrote it is gone.
    fn dead(&self, now_ms: i64) -> bool {
        if self.host != host() || self.host.is_empty() {
            return now_ms.saturating_sub(self.started_ms) > FOREIGN_AGE_MS;
        }
        !process_alive(self.pid)
    }

    /// An output's name marks its job.
    fn owns(&self, name: &str) -> bool {
        name.contains(&format!("-lakehealth-{}-", self.job)) && name.ends_with(".parquet")
    }
}

/// This machine's name (Linux); empty when unknown (then only age makes a record dead).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// A lakehealth process with this id runs here (a reused id of another program is not).
fn process_alive(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => String::from_utf8_lossy(&cmd).contains("lakehealth"),
        // Without /proc nothing can be told: alive, so that nothing is deleted.
        Err(_) => !std::path::Path::new("/proc/self").exists(),
    }
}

fn store_error(path: &str) -> impl FnOnce(object_store::Error) -> E + '_ {
    move |source| E::Store {
        path: path.to_string(),
        source,
    }
}

/// Records `ledger` before the job writes anything.
pub async fn write(stores: &mut Stores<'_>, table_root: &str, ledger: &Ledger) -> Result<(), E> {
    let uri = format!("{}/{}.json", folder(table_root), ledger.job);
    let (store, path) = stores.resolve(&uri)?;
    let body = serde_json::to_vec_pretty(ledger).map_err(|source| E::Json {
        file: uri.clone(),
        source,
    })?;
    store
        .put(&path, PutPayload::from(body))
        .await
        .map_err(store_error(&uri))?;
    Ok(())
}

/// Removes the job's record (it ended: its bins cleaned up after themselves).
pub async fn remove(stores: &mut Stores<'_>, table_root: &str, job: &str) {
    let uri = format!("{}/{job}.json", folder(table_root));
    if let Ok((store, path)) = stores.resolve(&uri)
        && let Err(e) = store.delete(&path).await
        && !matches!(e, object_store::Error::NotFound { .. })
    {
        tracing::warn!("iceberg: cannot remove the job record {uri}: {e}");
    }
}

/// What a sweep did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sweep {
    /// Jobs found dead, whose leftovers were looked at.
    pub dead_jobs: Vec<String>,
    /// Their outputs no snapshot references: deleted (a dry run: to delete).
    pub deleted: Vec<String>,
    /// Their outputs a snapshot references: kept.
    pub kept: u64,
    /// Files or records that could not be deleted or read (left for remove_orphan_files).
    pub left: Vec<String>,
    /// Nothing was deleted: `deleted` is what would be.
    pub dry_run: bool,
}

/// Every record under the table: (its URI, the record).
async fn records(stores: &mut Stores<'_>, table_root: &str) -> Result<Vec<(String, Ledger)>, E> {
    let dir = folder(table_root);
    let (store, prefix) = stores.resolve(&format!("{dir}/"))?;
    let listed: Vec<_> = match store.list(Some(&prefix)).try_collect().await {
        Ok(l) => l,
        Err(object_store::Error::NotFound { .. }) => return Ok(Vec::new()),
        Err(source) => return Err(E::Store { path: dir, source }),
    };
    let mut out = Vec::new();
    for m in listed {
        let Some(name) = m.location.filename().map(str::to_string) else {
            continue;
        };
        if !name.ends_with(".json") {
            continue;
        }
        let uri = format!("{dir}/{name}");
        let (bytes, _) = stores.read(table_root, "job record", &uri).await?;
        match serde_json::from_slice::<Ledger>(&bytes) {
            Ok(l) => out.push((uri, l)),
            Err(e) => tracing::warn!("iceberg: ignoring the unreadable job record {uri}: {e}"),
        }
    }
    Ok(out)
}

/// Paths added by the snapshots of `job` that are still in the metadata.
async fn added_by(
    stores: &mut Stores<'_>,
    state: &TableState,
    job: &str,
) -> Result<HashSet<String>, E> {
    let mut out = HashSet::new();
    let table = state.meta.location.clone();
    for snap in state
        .meta
        .snapshots
        .iter()
        .filter(|s| s.summary.get(JOB_KEY).is_some_and(|j| j == job))
    {
        let Some(list_uri) = &snap.manifest_list else {
            continue;
        };
        let list = super::table_state::read_avro(stores, &table, "manifest list", list_uri).await?;
        for row in &list.rows {
            if long(row, "added_snapshot_id") != Some(snap.snapshot_id) {
                continue;
            }
            let Some(path) = super::avro_file::string(row, "manifest_path") else {
                continue;
            };
            let manifest = super::table_state::read_avro(stores, &table, "manifest", &path).await?;
            // ADDED entries (status 1) are the snapshot's own files.
            out.extend(
                manifest
                    .rows
                    .iter()
                    .filter(|e| status(e) == Some(1))
                    .filter_map(file_path),
            );
        }
    }
    Ok(out)
}

/// The files in `folder` whose names mark them as `ledger`'s outputs (absolute URIs).
async fn outputs_in(
    stores: &mut Stores<'_>,
    folder_uri: &str,
    ledger: &Ledger,
) -> Result<Vec<String>, E> {
    let dir = folder_uri.trim_end_matches('/');
    let (store, prefix) = stores.resolve(&format!("{dir}/"))?;
    let listed = store
        .list_with_delimiter(Some(&prefix))
        .await
        .map_err(store_error(dir))?;
    Ok(listed
        .objects
        .iter()
        .filter_map(|m| m.location.filename())
        .filter(|n| ledger.owns(n))
        .map(|n| format!("{dir}/{n}"))
        .collect())
}

/// Sweeps what dead jobs left (see the module's doc). `own`: this job's id, never swept.
pub async fn sweep(
    stores: &mut Stores<'_>,
    state: &TableState,
    table_root: &str,
    own: &str,
    dry_run: bool,
    now_ms: i64,
) -> Result<Sweep, E> {
    let mut s = Sweep {
        dry_run,
        ..Default::default()
    };
    let live = state.live_data_files();
    for (uri, ledger) in records(stores, table_root).await? {
        if ledger.job == own || !ledger.dead(now_ms) {
            continue;
        }
        s.dead_jobs.push(ledger.job.clone());
        let committed = added_by(stores, state, &ledger.job).await?;
        let mut all_gone = true;
        for dir in &ledger.folders {
            for f in outputs_in(stores, dir, &ledger).await? {
                if live.contains(&f)
                    || committed.contains(&f)
                    || referenced_as_path(&f, &live, &committed)
                {
                    s.kept += 1;
                    continue;
                }
                if dry_run {
                    s.deleted.push(f);
                    continue;
                }
                let left = super::rewrite::delete_outputs(stores, std::slice::from_ref(&f)).await;
                if left.is_empty() {
                    s.deleted.push(f);
                } else {
                    all_gone = false;
                    s.left.extend(left);
                }
            }
        }
        if !dry_run && all_gone {
            let left = super::rewrite::delete_outputs(stores, std::slice::from_ref(&uri)).await;
            s.left.extend(left);
        }
    }
    Ok(s)
}

/// Metadata may write a local file as `/x/y` or `file:///x/y`: either form counts.
fn referenced_as_path(f: &str, live: &HashSet<String>, committed: &HashSet<String>) -> bool {
    let other = match f.strip_prefix("file://") {
        Some(p) => p.to_string(),
        None if f.starts_with('/') => format!("file://{f}"),
        None => return false,
    };
    live.contains(&other) || committed.contains(&other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_dead_when_its_process_is_gone_here_or_it_is_a_day_old_elsewhere() {
        let now = 10 * FOREIGN_AGE_MS;
        let mut l = Ledger::new("j".into(), vec![], now);
        assert!(!l.dead(now), "this very process");
        l.pid = u32::MAX - 7;
        assert!(l.dead(now), "no such process");
        l.host = "elsewhere".into();
        assert!(!l.dead(now), "another host, young");
        assert!(l.dead(now + FOREIGN_AGE_MS + 1), "another host, a day old");
    }

    #[test]
    fn only_the_jobs_own_parquet_outputs_are_its_files() {
        let l = Ledger::new("abc".into(), vec![], 0);
        assert!(l.owns("00001-lakehealth-abc-0f0f.parquet"));
        assert!(!l.owns("00001-lakehealth-abd-0f0f.parquet"));
        assert!(!l.owns("00001-lakehealth-abc-0f0f.metadata.json"));
        assert!(!l.owns("00000-0-data.parquet"));
    }
}
