//! What a job that was killed leaves behind, and its removal. Before it writes any output, a
//! job records itself in `<table>/_lakehealth/iceberg-jobs/<job>.json` (its id, host, process,
//! start), and it lists each output there before creating it (`Record::list`); its outputs
//! carry the id in their names (`NNNNN-lakehealth-<job>-<uuid>.parquet`) and its snapshots in
//! their summaries (`lakehealth.job-id`). A job that ends removes its record (a bin that does
//! not commit deletes its outputs itself). The next job on the table sweeps the records of dead
//! jobs: an output of such a job is deleted unless it is live in the current snapshot or added
//! by a snapshot of that job still in the metadata (time travel reads it), so nothing committed
//! is ever touched. A job is dead when its process is gone from this host, or, started on
//! another host, when its record is older than `FOREIGN_AGE_MS`.
//!
//! A record is not trusted (`confine`): its job id must be its file's name; it may name only
//! files inside this table, in no table nested in it, behind no link out of it, named as that
//! job's outputs. Records of older versions list folders instead of outputs: in them only
//! files named as the record's own job's outputs are looked at, and a folder outside the table
//! is refused. Whatever is refused is reported (`Sweep::refused`) and never deleted.
//!
//! A record is sealed (`sealed`): the table's writers can write its folder but cannot seal, so
//! a record whose seal does not verify (planted, altered, moved, or unsigned from an earlier
//! version) is refused as a whole and left for a person.

use std::collections::HashSet;

use futures::TryStreamExt;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use super::IcebergCompactError as E;
use super::avro_file::long;
use super::confine::{self, NestedTables, Refused, is_output_of, safe_job_id};
use super::table_state::{TableState, file_path, status};
use crate::compact::liveness::{host, process_alive};
use crate::iceberg::{Stores, is_under};
use crate::sealed::{self, RecordKind, Refusal};

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
    /// Records of older versions: the folders their outputs went to (beside each bin's first
    /// input). Written empty now: `outputs` names each file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<String>,
    /// Every output the job created or was about to create (absolute URIs), each listed
    /// before it is created.
    #[serde(default)]
    pub outputs: Vec<String>,
}

impl Ledger {
    pub fn new(job: String, now_ms: i64) -> Self {
        Ledger {
            job,
            host: host(),
            pid: std::process::id(),
            started_ms: now_ms,
            folders: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Whether the job that wrote it is gone.
    fn dead(&self, now_ms: i64) -> bool {
        if self.host != host() || self.host.is_empty() {
            return now_ms.saturating_sub(self.started_ms) > FOREIGN_AGE_MS;
        }
        !process_alive(self.pid)
    }
}

/// This job's record as it runs: written before the first output, then again before each.
pub struct Record {
    table_root: String,
    ledger: Ledger,
}

impl Record {
    /// Writes the record of a job starting now.
    pub async fn start(
        stores: &mut Stores<'_>,
        table_root: &str,
        job: String,
        now_ms: i64,
    ) -> Result<Self, E> {
        let r = Record {
            table_root: table_root.to_string(),
            ledger: Ledger::new(job, now_ms),
        };
        write(stores, &r.table_root, &r.ledger).await?;
        Ok(r)
    }

    pub fn job(&self) -> &str {
        &self.ledger.job
    }

    /// Lists `uri` durably; only then may it be created (a kill after this leaves it findable).
    pub async fn list(&mut self, stores: &mut Stores<'_>, uri: &str) -> Result<(), E> {
        self.ledger.outputs.push(uri.to_string());
        if let Err(e) = write(stores, &self.table_root, &self.ledger).await {
            // Not listed: the caller must not create it.
            self.ledger.outputs.pop();
            return Err(e);
        }
        Ok(())
    }
}

fn store_error(path: &str) -> impl FnOnce(object_store::Error) -> E + '_ {
    move |source| E::Store {
        path: path.to_string(),
        source,
    }
}

/// A record's place in the table (what its seal binds): `_lakehealth/iceberg-jobs/<name>`.
fn place(name: &str) -> String {
    format!("_lakehealth/iceberg-jobs/{name}")
}

/// Records `ledger` before the job writes anything.
pub async fn write(stores: &mut Stores<'_>, table_root: &str, ledger: &Ledger) -> Result<(), E> {
    let name = format!("{}.json", ledger.job);
    let uri = format!("{}/{name}", folder(table_root));
    let (store, path) = stores.resolve(&uri)?;
    let keyring = sealed::keyring().map_err(|e| E::Seal {
        file: uri.clone(),
        detail: e.to_string(),
    })?;
    let body =
        sealed::seal(&keyring, RecordKind::IcebergJob, &place(&name), ledger).map_err(|e| {
            E::Seal {
                file: uri.clone(),
                detail: e.to_string(),
            }
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
    remove_local_staging(table_root, &uri);
}

/// On a local table, the staged copies of a record (`<job>.json#N`) a process killed while
/// rewriting it left: object_store's local store writes a put there and renames it, and its
/// listing and paths cannot name such a file, so the file system is asked directly, and each
/// copy deleted beneath the table's folder through no link (`local_fs::beneath`).
fn remove_local_staging(table_root: &str, record_uri: &str) {
    let as_path = |uri: &str| {
        url::Url::parse(uri)
            .ok()
            .filter(|u| u.scheme() == "file")
            .and_then(|u| u.to_file_path().ok())
    };
    let (Some(root), Some(file)) = (
        as_path(&super::confine::folder_url(table_root)),
        as_path(record_uri),
    ) else {
        return;
    };
    let (Some(dir), Some(name)) = (file.parent(), file.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let Ok(rel_dir) = dir.strip_prefix(&root) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let staged = |n: &str| {
        n.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('#'))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    for e in entries.flatten() {
        let Some(n) = e
            .file_name()
            .to_str()
            .filter(|n| staged(n))
            .map(str::to_string)
        else {
            continue;
        };
        let how = crate::local_fs::beneath::Resolve::Kernel;
        if let Err(err) = crate::local_fs::beneath::unlink_beneath(&root, &rel_dir.join(n), how) {
            tracing::warn!("iceberg: cannot remove the staged job record: {err}");
        }
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
    /// Records and paths refused (see `confine`), with why: never deleted.
    pub refused: Vec<String>,
    /// Nothing was deleted: `deleted` is what would be.
    pub dry_run: bool,
}

/// Every record under the table: (its URI, the record or why its seal is refused).
async fn records(
    stores: &mut Stores<'_>,
    table_root: &str,
) -> Result<Vec<(String, Result<Ledger, Refusal>)>, E> {
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
        let opened = match sealed::keyring() {
            Ok(k) => sealed::open::<Ledger>(&k, RecordKind::IcebergJob, &place(&name), &bytes),
            Err(e) => Err(Refusal::NoKey(e.to_string())),
        };
        out.push((uri, opened));
    }
    Ok(out)
}

/// A record's job id must be its file's name (`<job>.json`) and a plain token: else it could
/// claim another job's outputs, or a path.
fn check_job_id(uri: &str, ledger: &Ledger) -> Result<(), Refused> {
    let stem = uri
        .rsplit('/')
        .next()
        .and_then(|n| n.strip_suffix(".json"))
        .unwrap_or_default();
    if stem == ledger.job && safe_job_id(&ledger.job) {
        return Ok(());
    }
    Err(Refused::BadJobId {
        record: uri.to_string(),
        job: ledger.job.clone(),
    })
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

/// What a dead job's record names: its listed outputs, and in each folder an old record
/// lists, the files named as its outputs. A folder outside the table is refused, not listed.
async fn named_files(
    stores: &mut Stores<'_>,
    table_root: &str,
    ledger: &Ledger,
    refused: &mut Vec<Refused>,
) -> Result<Vec<String>, E> {
    let mut out = ledger.outputs.clone();
    let root = confine::folder_url(table_root);
    for folder in &ledger.folders {
        let dir = folder.trim_end_matches('/');
        if !is_under(&root, &format!("{dir}/")) {
            refused.push(Refused::OutsideTable {
                path: folder.clone(),
                root: root.clone(),
            });
            continue;
        }
        let (store, prefix) = stores.resolve(&format!("{dir}/"))?;
        let listed = match store.list_with_delimiter(Some(&prefix)).await {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(source) => {
                return Err(E::Store {
                    path: dir.to_string(),
                    source,
                });
            }
        };
        out.extend(
            listed
                .objects
                .iter()
                .filter_map(|m| m.location.filename())
                .filter(|n| is_output_of(n, &ledger.job))
                .map(|n| format!("{dir}/{n}")),
        );
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether `path` may be deleted as the job's output (see `confine`); else why not.
async fn deletable(
    stores: &mut Stores<'_>,
    nested: &mut NestedTables,
    table_root: &str,
    path: &str,
    job: &str,
) -> Result<(), Refused> {
    confine::named_as_output(table_root, path, job)?;
    confine::refuse_link_out(table_root, path)?;
    nested.refuse_other(stores, table_root, path).await
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
    // Compared by key: a record may spell a live file another way than the metadata does.
    let live: HashSet<String> = state
        .live_data_files()
        .iter()
        .filter_map(|p| confine::path_key(p))
        .collect();
    let mut nested = NestedTables::default();
    for (uri, opened) in records(stores, table_root).await? {
        let ledger = match opened {
            Ok(l) => l,
            Err(why) => {
                tracing::warn!("iceberg: job record {uri}: {why}; refused, nothing deleted");
                s.refused.push(format!(
                    "{uri}: {why}; nothing it names is deleted (left for a person)"
                ));
                continue;
            }
        };
        if let Err(r) = check_job_id(&uri, &ledger) {
            s.refuse(r);
            continue;
        }
        if ledger.job == own || !ledger.dead(now_ms) {
            continue;
        }
        s.dead_jobs.push(ledger.job.clone());
        let committed: HashSet<String> = added_by(stores, state, &ledger.job)
            .await?
            .iter()
            .filter_map(|p| confine::path_key(p))
            .collect();
        let mut refused = Vec::new();
        let named = named_files(stores, table_root, &ledger, &mut refused).await?;
        let mut all_gone = true;
        for f in named {
            if let Err(r) = deletable(stores, &mut nested, table_root, &f, &ledger.job).await {
                refused.push(r);
                continue;
            }
            // A path without a key cannot be compared: taken for live.
            let referenced =
                confine::path_key(&f).is_none_or(|k| live.contains(&k) || committed.contains(&k));
            if referenced {
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
        // A record that named what it may not stays, for someone to look at.
        let clean = refused.is_empty();
        for r in refused {
            s.refuse(r);
        }
        if !dry_run && all_gone && clean {
            let left = super::rewrite::delete_outputs(stores, std::slice::from_ref(&uri)).await;
            if left.is_empty() {
                remove_local_staging(table_root, &uri);
            }
            s.left.extend(left);
        }
    }
    Ok(s)
}

impl Sweep {
    /// Notes a refusal (and says it in the log).
    fn refuse(&mut self, r: Refused) {
        tracing::warn!("iceberg: job records: refused, nothing deleted: {r}");
        self.refused.push(r.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_dead_when_its_process_is_gone_here_or_it_is_a_day_old_elsewhere() {
        let now = 10 * FOREIGN_AGE_MS;
        let mut l = Ledger::new("j".into(), now);
        assert!(!l.dead(now), "this very process");
        l.pid = u32::MAX - 7;
        assert!(l.dead(now), "no such process");
        l.host = "elsewhere".into();
        assert!(!l.dead(now), "another host, young");
        assert!(l.dead(now + FOREIGN_AGE_MS + 1), "another host, a day old");
    }

    #[test]
    fn a_killed_rewrite_of_a_local_record_leaves_a_staged_copy_that_is_removed_with_it() {
        let d = tempfile::tempdir().unwrap();
        for n in [
            "j.json",
            "j.json#1",
            "j.json#12",
            "j.json#x",
            "jj.json#1",
            "k.json#2",
        ] {
            std::fs::write(d.path().join(n), b"{}").unwrap();
        }
        let uri = url::Url::from_file_path(d.path().join("j.json")).unwrap();
        remove_local_staging(d.path().to_str().unwrap(), uri.as_str());
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["j.json", "j.json#x", "jj.json#1", "k.json#2"]);
    }

    #[test]
    fn a_records_job_id_must_be_its_file_name_and_a_plain_token() {
        let dir = "file:///wh/a/_lakehealth/iceberg-jobs";
        let l = |job: &str| Ledger::new(job.into(), 0);
        assert_eq!(check_job_id(&format!("{dir}/abc.json"), &l("abc")), Ok(()));
        for (file, job) in [("abc", "abd"), ("..", ".."), ("x", "../x"), ("", "")] {
            assert!(
                matches!(
                    check_job_id(&format!("{dir}/{file}.json"), &l(job)),
                    Err(Refused::BadJobId { .. })
                ),
                "{file} {job}"
            );
        }
    }

    #[test]
    fn an_old_record_naming_folders_still_reads_and_a_new_one_lists_outputs() {
        let old: Ledger = serde_json::from_str(
            r#"{"job": "j", "host": "h", "pid": 1, "started_ms": 0, "folders": ["/t/data"]}"#,
        )
        .unwrap();
        assert_eq!((old.folders.len(), old.outputs.len()), (1, 0));
        let new = serde_json::to_value(Ledger::new("j".into(), 0)).unwrap();
        assert!(
            new.get("folders").is_none() && new.get("outputs").is_some(),
            "{new}"
        );
    }
}
