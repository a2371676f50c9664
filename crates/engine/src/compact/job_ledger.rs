//! A compaction job's durable ledger, so a job killed at any step leaves nothing the next job
//! cannot clean up. Every Delta compaction writes through a `LedgerStore`: before any output
//! exists its table-relative name is added to `<table>/_lakehealth/local-jobs/<job>.<pid>@<host>.ledger`
//! and that write has landed. A job that ends with every output committed or deleted removes
//! its ledger; one that cannot (an output it failed to delete, a commit whose outcome is
//! unknown) keeps it.
//!
//! Before a job executes, it sweeps the ledgers of dead jobs (the process is gone from this
//! host, or, written on another host, the ledger is older than a day): each listed output that
//! the table neither holds nor remembers as removed (its tombstones, which time travel and
//! VACUUM's retention still need) is deleted, then the ledger. An entry that is not a plain
//! Parquet file inside the table (an absolute path, `..`, the log, lakehealth's own state), or
//! whose name does not carry the ledger's job id (`model::output_name`: every output is named
//! so), is refused and reported, never deleted.
//!
//! A ledger is a file in the table's folder, which the table's writers can write: it is acted
//! on only when its seal verifies (`sealed`). A ledger without a valid seal (planted, altered,
//! moved from another job, or an unsigned one of an earlier version) is reported as refused
//! and left for a person; nothing it names is deleted.

use std::collections::HashSet;
use std::sync::Arc;

use deltalake::DeltaTable;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;

use super::liveness::{host, process_alive};
use super::rewrite::object_key;
use crate::compact::ledger_store::{
    LedgerReadError, LedgerStore, OutputLedger, STATE_DIR, read_ledger,
};
use crate::model::output_name::carries_job;
use crate::nested_tables::NestedTables;

/// Where the ledgers of a table's local jobs live, relative to the table.
fn folder() -> String {
    format!("{STATE_DIR}/local-jobs")
}

/// A ledger from another host is taken for dead after a day (no job runs that long).
pub const FOREIGN_AGE_MS: i64 = 24 * 3600 * 1000;

/// Whose ledger a key is: parsed from `<job>.<pid>@<host>.ledger`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    job: String,
    pid: u32,
    host: String,
}

impl Owner {
    fn this_process(job: &str) -> Self {
        Owner {
            job: job.to_string(),
            pid: std::process::id(),
            host: host(),
        }
    }

    fn file_name(&self) -> String {
        format!("{}.{}@{}.ledger", self.job, self.pid, self.host)
    }

    fn parse(name: &str) -> Option<Self> {
        let stem = name.strip_suffix(".ledger")?;
        let (job, rest) = stem.split_once('.')?;
        let (pid, host) = rest.split_once('@')?;
        let safe =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        (safe(job) && !host.contains('/')).then_some(())?;
        Some(Owner {
            job: job.to_string(),
            pid: pid.parse().ok()?,
            host: host.to_string(),
        })
    }

    /// Whether the job that wrote it is gone (`modified_ms`: the ledger's last write).
    fn dead(&self, modified_ms: i64, now_ms: i64) -> bool {
        if self.host.is_empty() || self.host != host() {
            return now_ms.saturating_sub(modified_ms) > FOREIGN_AGE_MS;
        }
        self.pid != std::process::id() && !process_alive(self.pid)
    }
}

/// A new job's id: a plain token, as output names and ledger names carry it.
pub fn new_job_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The ledger store of job `job` on the table at `root` (its prefix within `inner`).
pub fn ledger_store(inner: Arc<dyn ObjectStore>, root: Path, job: &str) -> Arc<LedgerStore> {
    let key = Path::from(format!(
        "{}/{}",
        folder(),
        Owner::this_process(job).file_name()
    ));
    Arc::new(LedgerStore::new(inner, root, &key, job))
}

/// Whether a ledger entry names a plain Parquet file inside the table, outside its log and
/// lakehealth's state: the only kind of path a sweep may delete.
pub fn deletable_entry(entry: &str) -> bool {
    let parts: Vec<&str> = entry.split('/').collect();
    !entry.is_empty()
        && !entry.starts_with('/')
        && !entry.contains('\\')
        && entry.ends_with(".parquet")
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != "..")
        && parts
            .first()
            .is_some_and(|p| *p != "_delta_log" && *p != STATE_DIR)
}

/// What a sweep found and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sweep {
    /// Jobs found dead, whose ledgers were settled.
    pub dead_jobs: Vec<String>,
    /// Their uncommitted outputs, deleted.
    pub deleted: Vec<String>,
    /// Entries refused (not a Parquet file inside the table), with the ledger that named them.
    pub refused: Vec<String>,
    /// Outputs or ledgers that could not be read or deleted (tried again by the next job).
    pub left: Vec<String>,
}

/// Paths the table still references: its active files and its tombstones (object-store form).
async fn referenced(table: &DeltaTable) -> Result<HashSet<String>, deltalake::DeltaTableError> {
    let state = table.snapshot()?;
    let mut paths: HashSet<String> = state
        .log_data()
        .into_iter()
        .map(|f| f.object_store_path().to_string())
        .collect();
    let log_store = table.log_store();
    let tombs: Vec<String> = state
        .all_tombstones(log_store.as_ref())
        .map_ok(|t| object_key(&t.path()).to_string())
        .try_collect()
        .await?;
    paths.extend(tombs);
    Ok(paths)
}

/// Settles the ledgers of dead jobs on `table` (see the module's text). Never fails: what cannot
/// be done is in `left` and is tried again by the next job.
pub async fn sweep(table: &DeltaTable, now_ms: i64) -> Sweep {
    let mut out = Sweep::default();
    let store = table.object_store();
    let prefix = Path::from(folder());
    let listed: Vec<object_store::ObjectMeta> = match store.list(Some(&prefix)).try_collect().await
    {
        Ok(l) => l,
        Err(object_store::Error::NotFound { .. }) => return out,
        Err(e) => {
            out.left.push(format!("{prefix}: {e}"));
            return out;
        }
    };
    let dead: Vec<(Owner, Path)> = listed
        .into_iter()
        .filter_map(|m| {
            let owner = Owner::parse(m.location.filename()?)?;
            owner
                .dead(m.last_modified.timestamp_millis(), now_ms)
                .then_some((owner, m.location))
        })
        .collect();
    if dead.is_empty() {
        return out;
    }
    let live = match referenced(table).await {
        Ok(r) => r,
        Err(e) => {
            out.left
                .push(format!("the table's files could not be read: {e}"));
            return out;
        }
    };
    for (owner, key) in dead {
        settle(&store, &key, &owner, &live, &mut out).await;
    }
    out
}

/// Deletes one dead ledger's uncommitted outputs, then the ledger when nothing is left.
async fn settle(
    store: &Arc<dyn ObjectStore>,
    key: &Path,
    owner: &Owner,
    live: &HashSet<String>,
    out: &mut Sweep,
) {
    let entries: Vec<String> = match read_ledger(store, key).await {
        Ok(Some(OutputLedger { job, outputs })) if job == owner.job => outputs,
        Ok(Some(OutputLedger { job, .. })) => {
            tracing::warn!("job ledger {key} is sealed for job {job}: refused");
            out.refused.push(format!(
                "{key}: sealed for job {job}, not the job its name says; left for a person"
            ));
            return;
        }
        Ok(None) => return,
        Err(LedgerReadError::Refused(why)) => {
            tracing::warn!("job ledger {key}: {why}; refused, nothing it names is deleted");
            out.refused.push(format!(
                "{key}: {why}; nothing it names is deleted (remove it by hand once checked)"
            ));
            return;
        }
        Err(e) => {
            out.left.push(format!("{key}: {e}"));
            return;
        }
    };
    out.dead_jobs.push(owner.job.clone());
    let left_before = out.left.len();
    // A delete refused for a link in its path keeps the ledger, for a person to look at.
    let mut kept = false;
    let mut tables = NestedTables::new(store.clone());
    for entry in entries {
        let named = carries_job(&entry, &owner.job);
        if !named || !deletable_entry(&entry) || tables.foreign(&object_key(&entry)).await.is_some()
        {
            tracing::warn!(
                "job ledger {key} names {entry:?}, not an output of this table: refused"
            );
            out.refused.push(format!("{entry} (in {key})"));
            continue;
        }
        let path = object_key(&entry);
        if live.contains(path.as_ref()) {
            continue;
        }
        match store.delete(&path).await {
            Ok(()) => out.deleted.push(entry),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => match crate::local_fs::refusal(&e) {
                Some(why) => {
                    tracing::warn!("job ledger {key}: {why}");
                    out.refused.push(format!("{why} (in {key})"));
                    kept = true;
                }
                None => out.left.push(format!("{entry}: {e}")),
            },
        }
    }
    // With something left, the ledger stays so that the next job tries again.
    if !kept
        && out.left.len() == left_before
        && let Err(e) = store.delete(key).await
    {
        out.left.push(format!("{key}: {e}"));
    }
}

/// Removes a finished job's ledger: every output it lists was committed or deleted.
pub async fn remove(ledger: &LedgerStore) {
    if let Err(e) = ledger.remove().await {
        tracing::warn!("cannot remove the job ledger: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_name_says_whose_it_is() {
        let o = Owner {
            job: "0a1b".into(),
            pid: 42,
            host: "node-7.example".into(),
        };
        assert_eq!(Owner::parse(&o.file_name()), Some(o));
        assert_eq!(Owner::parse("x.ledger"), None);
        assert_eq!(Owner::parse("../x.1@h.ledger"), None);
        assert_eq!(Owner::parse("j.notapid@h.ledger"), None);
    }

    #[test]
    fn only_parquet_files_inside_the_table_may_be_deleted() {
        assert!(deletable_entry("d=1/part-0.parquet"));
        assert!(deletable_entry("ab/part-0.snappy.parquet"));
        for bad in [
            "",
            "/etc/passwd.parquet",
            "../other/part-0.parquet",
            "d=1/../../x.parquet",
            "_delta_log/00000000000000000001.checkpoint.parquet",
            "_lakehealth/jobs/x.parquet",
            "d=1/notes.txt",
            "d=1//x.parquet",
            "d=1\\..\\x.parquet",
        ] {
            assert!(!deletable_entry(bad), "{bad}");
        }
    }

    #[test]
    fn a_ledger_of_this_process_is_never_dead_and_a_foreign_one_after_a_day() {
        let me = Owner::this_process("j");
        assert!(!me.dead(0, i64::MAX));
        let foreign = Owner {
            job: "j".into(),
            pid: 1,
            host: "some-other-host-that-is-not-this-one".into(),
        };
        assert!(!foreign.dead(1_000, 1_000 + FOREIGN_AGE_MS));
        assert!(foreign.dead(1_000, 2_000 + FOREIGN_AGE_MS));
    }
}
