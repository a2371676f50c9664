//! The one place where a compaction writes to a table's log.
//!
//! delta-rs's own commit path is not enough for a compaction: since delta-rs PR #3982 its
//! conflict checker ignores `dataChange=false` removes, so two compactions of the same files both
//! commit and every row is then in the table twice; and its commit call can fail *after* the
//! commit file landed (the post-commit hook that cleans expired logs). So each attempt here:
//!
//! 1. brings the snapshot to the latest version;
//! 2. looks for this bin's own commit id among the versions since the plan (an earlier attempt
//!    whose outcome was unknown may have landed: never commit twice, never undo it);
//! 3. checks that every file the bin removes is still active with the deletion vector it was
//!    read with (none if none: a DELETE that added or changed one since changed its rows; then
//!    the bin does not commit: another commit took its files, and who did is reported);
//! 4. builds the commit for exactly the next version as the table's features ask at that version
//!    (`features`, `commit_actions`: a feature lakehealth cannot honour is refused; row ids,
//!    commit versions and in-commit timestamps are given for that version) and writes it with
//!    the log store's put-if-absent, as delta-rs's commit would but with no retry and no
//!    conflict resolution of its own: a lost race goes back to step 1. No post-commit hook runs
//!    (no checkpoint, no log cleanup): log maintenance is its own action. delta-rs 1.1's commit
//!    refuses writer features it does not know (row tracking, domain metadata, clustering,
//!    in-commit timestamps, type widening), which is why lakehealth writes the file itself.

pub(crate) mod actions;

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use deltalake::DeltaTable;
use deltalake::DeltaTableError;
use deltalake::kernel::transaction::TransactionError;
use deltalake::kernel::{Add, DeletionVectorDescriptor, Remove};
use deltalake::logstore::{CommitOrBytes, LogStore};
use deltalake::protocol::DeltaOperation;
use object_store::ObjectStoreExt;
use serde::Serialize;

use self::actions::{AttemptInput, PrepareError, commit_file};
use super::features;
use crate::delta::log::actions::{commit_info, scan};
use crate::failpoint::{self, Failpoint};
use crate::model::percent::decode as decoded;
use crate::model::trigger::Trigger;

/// The key under which the commit id is stored in `commitInfo`.
pub const COMMIT_ID_KEY: &str = "lakehealth.commitId";

/// Attempts before a bin gives up on a table that keeps moving.
const MAX_ATTEMPTS: u32 = 30;

/// What the log says took a bin's files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// The version that removed the first missing file, when the log still has it.
    pub version: Option<u64>,
    pub operation: Option<String>,
    /// `engineInfo` (Spark) or `clientVersion` (delta-rs) of that commit.
    pub engine: Option<String>,
    /// Files of the bin no longer active.
    pub missing_files: u64,
    pub files: u64,
    /// The whole reason, where the table format says it otherwise (an Iceberg bin's: a delete
    /// file now applies, its files are no longer live, the table kept moving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(r) = &self.reason {
            return f.write_str(r);
        }
        write!(f, "{} of its {} files", self.missing_files, self.files)?;
        match self.version {
            Some(v) => write!(
                f,
                " were removed by version {v} ({}{})",
                self.operation.as_deref().unwrap_or("unknown operation"),
                self.engine
                    .as_deref()
                    .map(|e| format!(", {e}"))
                    .unwrap_or_default()
            ),
            None => write!(f, " are no longer active"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum CommitOutcome {
    Landed {
        version: u64,
        retries: u64,
    },
    /// The bin's files were taken by another commit: nothing was committed.
    Conflict(Conflict),
    /// Certainly not committed (no attempt may have written it).
    Failed(String),
    /// An attempt failed in a way that may have landed, and the log does not show it (yet): the
    /// outputs must be kept and reported, never deleted.
    Unknown(String),
}

/// One bin's actions, ready to commit.
pub struct BinActions<'a> {
    pub removes: &'a [Remove],
    pub adds: &'a [Add],
    /// The version the bin was planned on: its files were active there.
    pub read_version: u64,
    pub operation: DeltaOperation,
    /// The outputs hold their rows' stable ids and commit versions (`row_tracking`): a table
    /// with row tracking enabled takes no other.
    pub row_ids_materialized: bool,
    /// The table schema (`schemaString`) the outputs were written with: a table whose schema
    /// changed since takes them no more (a widened type, say). None: not checked.
    pub schema: Option<&'a str>,
    /// Who started the job (recorded in commitInfo, `model::trigger`).
    pub trigger: Trigger,
}

/// The paths among `removes` that are not active in `table`'s snapshot with the deletion vector
/// the remove names (none when it names none).
fn missing_files(table: &DeltaTable, removes: &[Remove]) -> Result<Vec<String>, DeltaTableError> {
    let snapshot = table.snapshot()?;
    let mut wanted: HashMap<&str, Option<&DeletionVectorDescriptor>> = removes
        .iter()
        .map(|r| (r.path.as_str(), r.deletion_vector.as_ref()))
        .collect();
    for f in snapshot.log_data() {
        if wanted.is_empty() {
            break;
        }
        let path = f.path();
        if let Some(dv) = wanted.get(path.as_ref())
            && f.deletion_vector_descriptor().as_ref() == *dv
        {
            wanted.remove(path.as_ref());
        }
    }
    Ok(wanted.into_keys().map(str::to_string).collect())
}

/// The version in `(after, upto]` whose commitInfo carries `commit_id`. Err when the log could
/// not be read (the answer is unknown).
async fn find_own_commit(
    log: &dyn LogStore,
    after: u64,
    upto: u64,
    commit_id: &str,
) -> Result<Option<u64>, DeltaTableError> {
    for v in (after + 1..=upto).rev() {
        if let Some(bytes) = log.read_commit_entry(v).await? {
            let id = commit_info(&bytes).and_then(|ci| ci.lakehealth_commit_id);
            if id.as_deref() == Some(commit_id) {
                return Ok(Some(v));
            }
        }
    }
    Ok(None)
}

/// Who removed `path` in `(after, upto]`, from the commits still in the log.
async fn find_remover(
    log: &dyn LogStore,
    after: u64,
    upto: u64,
    path: &str,
) -> (Option<u64>, Option<String>, Option<String>) {
    for v in after + 1..=upto {
        let Ok(Some(bytes)) = log.read_commit_entry(v).await else {
            continue;
        };
        let removed = scan(&bytes).any(|a| a.remove.is_some_and(|r| decoded(&r.path) == path));
        if removed {
            let ci = commit_info(&bytes).unwrap_or_default();
            return (Some(v), ci.operation.clone(), ci.engine());
        }
    }
    (None, None, None)
}

/// `removes` with the `baseRowId` and `defaultRowCommitVersion` of the active adds they
/// remove, as the protocol asks (the adds may have been recommitted since the plan).
fn with_live_row_ids(table: &DeltaTable, removes: &[Remove]) -> Vec<Remove> {
    let mut out = removes.to_vec();
    let Ok(snapshot) = table.snapshot() else {
        return out;
    };
    let at: HashMap<&str, usize> = removes
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i))
        .collect();
    for f in snapshot.log_data() {
        if let Some(&i) = at.get(f.path().as_ref()) {
            // The row ids are only reachable through the whole add action in delta-rs 1.1.
            #[allow(deprecated)]
            let add = f.add_action();
            out[i].base_row_id = add.base_row_id;
            out[i].default_row_commit_version = add.default_row_commit_version;
        }
    }
    out
}

/// How one attempt failed.
#[derive(Debug)]
enum AttemptError {
    /// Certainly not written, and trying again cannot help.
    Refused(String),
    /// Not written; the next attempt may succeed.
    NotWritten(String),
    /// Another commit took the version first.
    LostRace(String),
    /// The write failed in a way that may have landed it.
    MaybeWritten(String),
}

fn backoff(attempt: u32) -> Duration {
    // Jittered so two racing compactors do not retry in lockstep.
    let base = 20u64 << attempt.min(6);
    let jitter = uuid::Uuid::new_v4().as_u128() as u64 % (base + 1);
    Duration::from_millis(base / 2 + jitter)
}

/// Validates and commits one bin; see the module docs. `table` is brought up to date.
pub async fn commit_bin(table: &mut DeltaTable, bin: &BinActions<'_>) -> CommitOutcome {
    failpoint::hit(Failpoint::OutputsWritten);
    let commit_id = uuid::Uuid::new_v4().to_string();
    let log = table.log_store();
    // Set once an attempt failed after it may have written the commit, and never cleared: a
    // write that timed out can still land later, so from then on every attempt first looks
    // for it, and the outputs are never deleted on a mere "not found".
    let mut maybe_landed: Option<String> = None;
    let mut last_error = String::new();
    for attempt in 0..MAX_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        if let Err(e) = table.update_incremental(None).await {
            last_error = format!("reading the latest version: {e}");
            continue;
        }
        let latest = table.version().unwrap_or_default();
        let missing = match missing_files(table, bin.removes) {
            Ok(m) => m,
            Err(e) => {
                last_error = format!("validating the bin: {e}");
                continue;
            }
        };
        // A write of ours that may have landed, or files another commit took (a store's retry
        // of a put that had landed reports ours as lost): the log decides, before any output
        // could be deleted.
        if maybe_landed.is_some() || !missing.is_empty() {
            match find_own_commit(log.as_ref(), bin.read_version, latest, &commit_id).await {
                Ok(Some(version)) => {
                    return CommitOutcome::Landed {
                        version,
                        retries: attempt as u64,
                    };
                }
                Ok(None) => {}
                Err(e) => {
                    last_error = format!("checking whether the commit landed: {e}");
                    maybe_landed.get_or_insert_with(|| last_error.clone());
                    continue;
                }
            }
        }
        if !missing.is_empty() {
            let conflict = taken_by(log.as_ref(), bin, latest, &missing).await;
            return match maybe_landed {
                // Not ours (checked above), but a write of ours may still be in flight.
                Some(why) => CommitOutcome::Unknown(format!(
                    "{why}; then another commit took the bin's files ({conflict})"
                )),
                None => CommitOutcome::Conflict(conflict),
            };
        }
        match try_commit(table, bin, &commit_id).await {
            Ok(version) => {
                return CommitOutcome::Landed {
                    version,
                    retries: attempt as u64,
                };
            }
            Err(AttemptError::Refused(e)) if maybe_landed.is_none() => {
                return CommitOutcome::Failed(e);
            }
            Err(
                AttemptError::Refused(e) | AttemptError::NotWritten(e) | AttemptError::LostRace(e),
            ) => last_error = e,
            Err(AttemptError::MaybeWritten(e)) => {
                maybe_landed.get_or_insert_with(|| e.clone());
                last_error = e;
            }
        }
    }
    // Out of attempts: one last look for our commit if an attempt may have landed.
    match maybe_landed {
        None => CommitOutcome::Failed(format!(
            "gave up after {MAX_ATTEMPTS} attempts: {last_error}"
        )),
        Some(why) => last_look(log.as_ref(), bin, &commit_id, &why, &last_error).await,
    }
}

/// What took a bin's files: the commit that removed the first of `missing`, when the log still
/// has it.
async fn taken_by(
    log: &dyn LogStore,
    bin: &BinActions<'_>,
    latest: u64,
    missing: &[String],
) -> Conflict {
    let (version, operation, engine) = match missing.first() {
        Some(first) => find_remover(log, bin.read_version, latest, first).await,
        None => (None, None, None),
    };
    Conflict {
        version,
        operation,
        engine,
        missing_files: missing.len() as u64,
        files: bin.removes.len() as u64,
        reason: None,
    }
}

/// After the last attempt, when one of them may have written the commit (`why`): landed if the
/// log shows our commit id, else unknown (never failed: the outputs must be kept).
async fn last_look(
    log: &dyn LogStore,
    bin: &BinActions<'_>,
    commit_id: &str,
    why: &str,
    last_error: &str,
) -> CommitOutcome {
    let found = match log.get_latest_version(bin.read_version).await {
        Ok(latest) => find_own_commit(log, bin.read_version, latest, commit_id).await,
        Err(e) => Err(e),
    };
    match found {
        Ok(Some(version)) => CommitOutcome::Landed {
            version,
            retries: MAX_ATTEMPTS as u64,
        },
        Ok(None) => CommitOutcome::Unknown(format!(
            "{why}; not in the log after {MAX_ATTEMPTS} attempts ({last_error})"
        )),
        Err(e) => CommitOutcome::Unknown(format!(
            "{why}; the log could not be read to check whether it landed ({e})"
        )),
    }
}

/// One attempt at exactly `table.version() + 1`, written by the log store's put-if-absent (no
/// retry, no post-commit hook), its actions built for the table's features at that version.
async fn try_commit(
    table: &DeltaTable,
    bin: &BinActions<'_>,
    commit_id: &str,
) -> Result<u64, AttemptError> {
    let features = features::of_table(table)
        .map_err(|e| AttemptError::NotWritten(e.to_string()))?
        .map_err(|e| AttemptError::Refused(e.to_string()))?;
    if features.materialize.is_some() && !bin.row_ids_materialized {
        return Err(AttemptError::Refused(
            "row tracking is enabled on the table and these outputs do not hold the rows' ids; nothing was committed".into(),
        ));
    }
    let snapshot = table
        .snapshot()
        .map_err(|e| AttemptError::NotWritten(e.to_string()))?;
    if let Some(written) = bin.schema
        && snapshot.metadata().schema_string().as_str() != written
    {
        return Err(AttemptError::Refused(
            "the table's schema changed since the outputs were written with it; nothing was committed".into(),
        ));
    }
    let removes = if features.row_ids || features.row_commit_versions {
        with_live_row_ids(table, bin.removes)
    } else {
        bin.removes.to_vec()
    };
    let version = table
        .version()
        .map(|v| v + 1)
        .ok_or_else(|| AttemptError::NotWritten("no version loaded".into()))?;
    let metadata: HashMap<String, serde_json::Value> = [
        (
            COMMIT_ID_KEY.to_string(),
            serde_json::Value::String(commit_id.to_string()),
        ),
        (
            Trigger::KEY.to_string(),
            serde_json::Value::String(bin.trigger.name().to_string()),
        ),
    ]
    .into();
    let input = AttemptInput {
        removes: &removes,
        adds: bin.adds,
        operation: bin.operation.clone(),
        app_metadata: metadata,
        version,
    };
    let bytes = commit_file(table, &features, input)
        .await
        .map_err(|e| match e {
            PrepareError::NoRowCount { .. } | PrepareError::Serialize(_) => {
                AttemptError::Refused(e.to_string())
            }
            _ => AttemptError::NotWritten(e.to_string()),
        })?;
    let log = table.log_store();
    match write_commit(log.as_ref(), version, bytes).await {
        Err(AttemptError::LostRace(why)) => {
            own_or_lost(log.as_ref(), version, commit_id, why).await
        }
        Err(AttemptError::MaybeWritten(why)) => {
            read_back_after_error(log.as_ref(), version, commit_id, why).await
        }
        Err(e) => Err(e),
        Ok(()) => {
            failpoint::hit(Failpoint::LogEntryWritten);
            Ok(version)
        }
    }
}

/// The write of `version` failed (a full disk, a timeout): the version is read back at once, so
/// the outcome is known wherever it can be. Ours: landed. Another's: a lost race. Absent on a
/// local file system: not written (a failed local write has nothing in flight, so a full or
/// read-only disk is a plain failure and the outputs can go). Absent on an object store, or
/// unreadable: unknown, since a request the client gave up on can still land.
async fn read_back_after_error(
    log: &dyn LogStore,
    version: u64,
    commit_id: &str,
    why: String,
) -> Result<u64, AttemptError> {
    match written_by_us(log, version, commit_id).await {
        Ok(Some(true)) => Ok(version),
        Ok(Some(false)) => Err(AttemptError::LostRace(format!(
            "{why}; version {version} was then found written by another commit"
        ))),
        Ok(None) if log.config().location().scheme() == "file" => Err(AttemptError::NotWritten(
            format!("{why}; version {version} is not in the log (read back: not written)"),
        )),
        Ok(None) => Err(AttemptError::MaybeWritten(format!(
            "{why}; version {version} is not in the log yet, but the request may still land"
        ))),
        Err(e) => Err(AttemptError::MaybeWritten(format!(
            "{why}; reading version {version} back to check: {e}"
        ))),
    }
}

/// Whether `version` is in the log (None: absent) and carries our commit id.
async fn written_by_us(
    log: &dyn LogStore,
    version: u64,
    commit_id: &str,
) -> deltalake::DeltaResult<Option<bool>> {
    Ok(log.read_commit_entry(version).await?.map(|bytes| {
        commit_info(&bytes)
            .and_then(|ci| ci.lakehealth_commit_id)
            .as_deref()
            == Some(commit_id)
    }))
}

/// `version` already exists: ours when it carries our commit id (an object store may retry a
/// conditional put that had landed and then report the retry's refusal), else a lost race.
async fn own_or_lost(
    log: &dyn LogStore,
    version: u64,
    commit_id: &str,
    why: String,
) -> Result<u64, AttemptError> {
    match written_by_us(log, version, commit_id).await {
        Ok(Some(true)) => Ok(version),
        Ok(Some(false)) => Err(AttemptError::LostRace(why)),
        Ok(None) => Err(AttemptError::MaybeWritten(format!(
            "{why}, yet version {version} cannot be found"
        ))),
        Err(e) => Err(AttemptError::MaybeWritten(format!(
            "{why}; reading version {version} to see whose it is: {e}"
        ))),
    }
}

/// Writes a commit file as exactly `version`, as delta-rs's own commit does for this log store:
/// the bytes by a conditional put, or a temporary file copied if absent.
async fn write_commit(log: &dyn LogStore, version: u64, bytes: Bytes) -> Result<(), AttemptError> {
    let operation_id = uuid::Uuid::new_v4();
    let commit = if ["LakeFSLogStore", "DefaultLogStore"].contains(&log.name().as_str()) {
        CommitOrBytes::LogBytes(bytes)
    } else {
        let tmp = object_store::path::Path::from_iter([
            "_delta_log",
            &format!("_commit_{}.json.tmp", uuid::Uuid::new_v4()),
        ]);
        log.object_store(Some(operation_id))
            .put(&tmp, bytes.into())
            .await
            .map_err(|e| AttemptError::NotWritten(format!("writing the commit file: {e}")))?;
        CommitOrBytes::TmpCommit(tmp)
    };
    match log
        .write_commit_entry(version, commit.clone(), operation_id)
        .await
    {
        Ok(()) => Ok(()),
        Err(TransactionError::VersionAlreadyExists(v)) => {
            // Certainly not ours: the temporary file (if any) can go.
            let _ = log.abort_commit_entry(version, commit, operation_id).await;
            Err(AttemptError::LostRace(format!(
                "version {v} already exists"
            )))
        }
        Err(e) => Err(AttemptError::MaybeWritten(e.to_string())),
    }
}
