//! VACUUM: deletes data files the log removed longer ago than the retention, through delta-rs's
//! `VacuumBuilder` (lite mode: only files named by `remove` tombstones; it writes the
//! `VACUUM START` / `VACUUM END` commits), with guards around it:
//!
//! - **Retention**: the default is the table's `delta.deletedFileRetentionDuration` (7 days);
//!   a shorter one is refused unless the caller overrides the check explicitly (Databricks'
//!   `retentionDurationCheck`). An unparsable property is refused, not defaulted.
//! - **One clock**: the dry run fixes "now"; the real run uses that same instant, so it can only
//!   be more conservative than the time it actually runs at, and it decides exactly as the dry
//!   run did.
//! - **Checked list**: every file delta-rs plans to delete is checked against the snapshot it was
//!   planned from: it must be a tombstone with a deletion timestamp older than the cutoff and not
//!   an active file. delta-rs reads a missing timestamp as 0 (deletable at once); lakehealth
//!   refuses instead, since it cannot tell that file's age.
//! - **Only this table's files**: a tombstone inside a folder that is a table of its own (a
//!   `_delta_log/` or Iceberg `metadata/` in it), or inside any log or `_lakehealth/` folder,
//!   refuses the whole vacuum: a writer of this table could plant it to delete another's files.
//! - **Same list**: before deleting, the plan is made again on the latest version with the dry
//!   run's clock; if it differs from what the dry run showed, nothing is deleted.
//! - Files already gone from storage are not counted (the dry run asks the store), and a vacuum
//!   with nothing to delete writes no commit.
//!
//! Not guarded (delta-rs decides): its `VACUUM START` commit runs delta-rs's default post-commit
//! hook (a checkpoint at the checkpoint interval, and cleanup of log files older than
//! `delta.logRetentionDuration` when `delta.enableExpiredLogCleanup` is not false); the `END`
//! commit is written without them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use deltalake::DeltaTable;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::operations::vacuum::Clock;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{check_write_protocol, open_delta};
use crate::clock::now_ms;
use crate::delta::log::state::Tombstones;
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::duration::exact_secs;
use crate::nested_tables::NestedTables;
use crate::properties::{DELETED_FILE_RETENTION_DURATION, TableProps};
use crate::stats::vacuum::VacuumDebt;

/// What to vacuum with.
#[derive(Debug, Clone, Default)]
pub struct VacuumRequest {
    /// None: the table's `delta.deletedFileRetentionDuration`.
    pub retention: Option<Duration>,
    /// Allows a retention below the table's (`--allow-short-retention`).
    pub allow_short_retention: bool,
    pub storage_options: HashMap<String, String>,
}

/// A file the vacuum deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VacuumFile {
    /// Relative to the table root, as the object store names it.
    pub path: String,
    /// Its size on storage.
    pub bytes: u64,
    /// When the log removed it (ms since the epoch).
    pub removed_at_ms: i64,
}

/// A dry run: exactly what `run_vacuum` deletes, given the same table version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VacuumPlan {
    pub table: String,
    pub version: u64,
    pub retention_ms: u64,
    pub table_retention_ms: u64,
    /// False when a retention below the table's was explicitly allowed.
    pub retention_check: bool,
    /// The instant the plan was made at; the real run decides with it too.
    pub now_ms: i64,
    /// Files removed from the log before this instant are deleted.
    pub cutoff_ms: i64,
    /// Sorted by path.
    pub files: Vec<VacuumFile>,
    pub files_to_delete: u64,
    pub bytes_to_delete: u64,
    /// Past the retention but no longer on storage (an earlier VACUUM deleted them).
    pub already_gone: Vec<String>,
    /// All tombstones of the snapshot, for context (see `stats::vacuum`).
    pub debt: VacuumDebt,
}

/// What a real run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VacuumOutcome {
    pub table: String,
    /// The version the files were checked against.
    pub version_read: u64,
    pub retention_ms: u64,
    pub files_deleted: u64,
    pub bytes_deleted: u64,
    /// Sorted by path.
    pub deleted: Vec<String>,
    /// The commits delta-rs wrote around the deletes (None: nothing was deleted, no commit).
    pub vacuum_start_version: Option<u64>,
    pub vacuum_end_version: Option<u64>,
}

/// Progress of a vacuum job.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum VacuumEvent {
    /// The plan is being made again on the latest version.
    Checking,
    /// The plan still holds: deleting starts (not cancellable from here on).
    Deleting {
        files: u64,
        bytes: u64,
    },
    Done(VacuumOutcome),
}

/// The retention to use, and whether the table's minimum is enforced.
pub fn resolve_retention(
    uri: &str,
    requested: Option<Duration>,
    table: Duration,
    allow_short: bool,
) -> Result<(Duration, bool)> {
    let Some(r) = requested else {
        return Ok((table, true));
    };
    if r >= table {
        return Ok((r, true));
    }
    if allow_short {
        return Ok((r, false));
    }
    Err(EngineError::InvalidRequest(format!(
        "{uri}: a retention of {} is below the table's {DELETED_FILE_RETENTION_DURATION} ({}); \
         VACUUM refuses it, because readers of older versions and running writers may still use \
         files removed that recently. Use a retention of at least {}, or pass \
         --allow-short-retention if no reader or writer can need them (Databricks: \
         spark.databricks.delta.retentionDurationCheck.enabled = false).",
        exact_secs(r),
        exact_secs(table),
        exact_secs(table)
    )))
}

/// A tombstone as the guard sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tomb {
    pub removed_at_ms: i64,
    pub size: Option<i64>,
}

/// Checks delta-rs's list against the snapshot: each path must be a tombstone removed before
/// `cutoff_ms` (with a real timestamp) and not an active file. Returns the checked tombstones,
/// or the reasons it refuses.
pub fn check_candidates(
    planned: &[String],
    tombstones: &HashMap<String, Tomb>,
    active: &HashSet<String>,
    cutoff_ms: i64,
) -> std::result::Result<Vec<(String, Tomb)>, Vec<String>> {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for p in planned {
        if p.starts_with('/') || p.contains("://") {
            bad.push(format!("{p} is not a path inside the table"));
            continue;
        }
        if active.contains(p) {
            bad.push(format!("{p} is an active file of the current snapshot"));
            continue;
        }
        match tombstones.get(p) {
            None => bad.push(format!("{p} is not a removed file of the log")),
            Some(t) if t.removed_at_ms <= 0 => bad.push(format!(
                "{p} was removed without a deletion timestamp, so its age is unknown"
            )),
            Some(t) if t.removed_at_ms >= cutoff_ms => bad.push(format!(
                "{p} was removed at {} ms, inside the retention",
                t.removed_at_ms
            )),
            Some(t) => ok.push((p.clone(), *t)),
        }
    }
    if bad.is_empty() { Ok(ok) } else { Err(bad) }
}

#[derive(Debug)]
struct FixedClock(i64);

impl Clock for FixedClock {
    fn current_timestamp_millis(&self) -> i64 {
        self.0
    }
}

fn derr(uri: &str, what: &str, e: deltalake::DeltaTableError) -> EngineError {
    EngineError::from_delta(uri, what, e)
}

/// The object-store path delta-rs deletes for a log path (it keeps percent-encoding).
fn store_path(p: &str) -> String {
    Path::parse(p).unwrap_or_else(|_| Path::from(p)).to_string()
}

fn chrono_ms(d: Duration) -> chrono::Duration {
    chrono::Duration::milliseconds(d.as_millis().min(i64::MAX as u128) as i64)
}

pub(crate) fn table_retention(uri: &str, table: &DeltaTable) -> Result<Duration> {
    let snapshot = table
        .snapshot()
        .map_err(|e| derr(uri, "reading the table properties", e))?;
    let props = TableProps::parse(
        snapshot
            .metadata()
            .configuration()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    if let Some(bad) = props
        .invalid()
        .iter()
        .find(|p| p.key == DELETED_FILE_RETENTION_DURATION)
    {
        return Err(EngineError::InvalidProperty {
            uri: uri.to_string(),
            source: bad.clone(),
            remedy: "VACUUM cannot know which files are old enough",
        });
    }
    Ok(props.deleted_file_retention())
}

/// The snapshot's tombstones (by object-store path) and active file paths.
pub(crate) async fn snapshot_files(
    uri: &str,
    table: &DeltaTable,
) -> Result<(HashMap<String, Tomb>, HashSet<String>)> {
    let state = table
        .snapshot()
        .map_err(|e| derr(uri, "reading the snapshot", e))?;
    let active: HashSet<String> = state
        .log_data()
        .into_iter()
        .map(|f| f.object_store_path().to_string())
        .collect();
    let log_store = table.log_store();
    let tombs: Vec<(String, Tomb)> = state
        .all_tombstones(log_store.as_ref())
        .map_ok(|t| {
            (
                store_path(&t.path()),
                Tomb {
                    removed_at_ms: t.deletion_timestamp().unwrap_or(0),
                    size: t.size(),
                },
            )
        })
        .try_collect()
        .await
        .map_err(|e| derr(uri, "reading the removed files", e))?;
    let mut map = HashMap::with_capacity(tombs.len());
    for (p, t) in tombs {
        // The newest removal of a path decides its age.
        map.entry(p)
            .and_modify(|old: &mut Tomb| {
                if t.removed_at_ms > old.removed_at_ms {
                    *old = t;
                }
            })
            .or_insert(t);
    }
    Ok((map, active))
}

/// delta-rs's dry run at `now_ms`, checked by `check_candidates`.
/// Also returns the tombstones of files not active again (delta-rs keeps the tombstone of a
/// path added back; the report's vacuum debt does not count it).
async fn checked_candidates(
    uri: &str,
    table: &DeltaTable,
    retention: Duration,
    enforce: bool,
    now_ms: i64,
) -> Result<(Vec<(String, Tomb)>, Vec<Tomb>)> {
    let (tombstones, active) = snapshot_files(uri, table).await?;
    let (_, metrics) = table
        .clone()
        .vacuum()
        .with_retention_period(chrono_ms(retention))
        .with_enforce_retention_duration(enforce)
        .with_clock(Arc::new(FixedClock(now_ms)))
        .with_dry_run(true)
        .await
        .map_err(|e| derr(uri, "planning the vacuum (delta-rs dry run)", e))?;
    let cutoff = now_ms - retention.as_millis().min(i64::MAX as u128) as i64;
    let refused = |bad: Vec<String>| {
        EngineError::InvalidRequest(format!(
            "{uri}: VACUUM refused: delta-rs would delete {} file(s) lakehealth cannot prove safe to delete: {}{}. Nothing was deleted.",
            bad.len(),
            bad.iter().take(3).cloned().collect::<Vec<_>>().join("; "),
            if bad.len() > 3 { "; ..." } else { "" }
        ))
    };
    let checked =
        check_candidates(&metrics.files_deleted, &tombstones, &active, cutoff).map_err(refused)?;
    // A tombstone is the table writer's word: it may name a file of a table nested in this
    // one's folder, or a log, which this table's log has no say over.
    let paths: Vec<Path> = checked
        .iter()
        .map(|(p, _)| Path::parse(p.as_str()).unwrap_or_else(|_| Path::from(p.as_str())))
        .collect();
    let store = table.log_store().object_store(None);
    let foreign = NestedTables::new(store).foreign_of(&paths).await;
    if !foreign.is_empty() {
        return Err(refused(
            foreign
                .iter()
                .map(|(p, why)| format!("{p} is not this table's to delete: {why}"))
                .collect(),
        ));
    }
    let removed = tombstones
        .iter()
        .filter(|(p, _)| !active.contains(*p))
        .map(|(_, t)| *t)
        .collect();
    Ok((checked, removed))
}

/// Makes the plan: what a vacuum with `req` would delete now, and changes nothing.
pub async fn plan_vacuum(loc: &Location, req: &VacuumRequest) -> Result<VacuumPlan> {
    crate::root_links::refuse_links_leaving(loc, "vacuum")?;
    let uri = loc.display();
    let table = open_delta(loc, &req.storage_options, "opening the table for VACUUM").await?;
    check_write_protocol(&table, &uri, "VACUUM", true)?;
    let version = table.version().unwrap_or_default();
    let table_ret = table_retention(&uri, &table)?;
    let (retention, enforce) =
        resolve_retention(&uri, req.retention, table_ret, req.allow_short_retention)?;
    let now = now_ms();
    let (checked, tombstones) = checked_candidates(&uri, &table, retention, enforce, now).await?;
    // Ask the store which files are still there, and their real sizes.
    let store: Arc<dyn ObjectStore> = table.log_store().object_store(None);
    let uri = uri.as_str();
    let heads: Vec<(String, Tomb, Option<u64>)> = futures::stream::iter(checked)
        .map(|(p, t)| {
            let store = store.clone();
            async move {
                // `p` is already an object-store path (percent-encoding kept): parse, not encode.
                let at = Path::parse(p.as_str()).unwrap_or_else(|_| Path::from(p.as_str()));
                match store.head(&at).await {
                    Ok(meta) => Ok((p, t, Some(meta.size))),
                    Err(object_store::Error::NotFound { .. }) => Ok((p, t, None)),
                    Err(e) => Err(EngineError::from_store(uri, &format!("checking {p}"), e)),
                }
            }
        })
        .buffer_unordered(16)
        .try_collect()
        .await?;
    let mut files = Vec::new();
    let mut already_gone = Vec::new();
    for (path, t, size) in heads {
        match size {
            Some(bytes) => files.push(VacuumFile {
                path,
                bytes,
                removed_at_ms: t.removed_at_ms,
            }),
            None => already_gone.push(path),
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    already_gone.sort();
    let mut debt_input = Tombstones::default();
    for t in &tombstones {
        debt_input.push(Some(t.removed_at_ms).filter(|&ts| ts > 0), t.size);
    }
    let retention_ms = retention.as_millis().min(u64::MAX as u128) as u64;
    Ok(VacuumPlan {
        table: uri.to_string(),
        version,
        retention_ms,
        table_retention_ms: table_ret.as_millis().min(u64::MAX as u128) as u64,
        retention_check: enforce,
        now_ms: now,
        // Saturating: `retention_ms as i64` wraps negative past 2^63 ms (a cutoff in the future).
        cutoff_ms: now.saturating_sub(i64::try_from(retention_ms).unwrap_or(i64::MAX)),
        files_to_delete: files.len() as u64,
        bytes_to_delete: files.iter().map(|f| f.bytes).sum(),
        files,
        already_gone,
        debt: VacuumDebt::compute(&debt_input, retention.as_secs_f64() / 3600.0, now),
    })
}

/// Finds the version of the `VACUUM START` commit just before `end`, reading back at most to
/// `after` (exclusive).
async fn start_version(store: &Arc<dyn ObjectStore>, end: u64, after: u64) -> Option<u64> {
    let mut v = end;
    while v > after + 1 && end - v < 16 {
        v -= 1;
        let path = Path::from(format!("_delta_log/{v:020}.json"));
        let bytes = store.get(&path).await.ok()?.bytes().await.ok()?;
        let is_start = crate::delta::log::actions::commit_info(&bytes)
            .is_some_and(|ci| ci.operation.as_deref() == Some("VACUUM START"));
        if is_start {
            return Some(v);
        }
    }
    None
}

/// Runs the vacuum `plan` describes: the plan is made again on the latest version with the
/// plan's clock, and only if it lists the same files does delta-rs delete them.
pub async fn run_vacuum(
    loc: &Location,
    req: &VacuumRequest,
    plan: &VacuumPlan,
    cancel: &CancellationToken,
    on_event: &(dyn Fn(VacuumEvent) + Send + Sync),
) -> Result<VacuumOutcome> {
    crate::root_links::refuse_links_leaving(loc, "vacuum")?;
    let uri = loc.display();
    let cancelled = || {
        EngineError::InvalidRequest(format!(
            "{uri}: VACUUM cancelled before it started; nothing was deleted"
        ))
    };
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    if plan.files.is_empty() {
        let outcome = nothing_deleted(&uri, plan, plan.version);
        on_event(VacuumEvent::Done(outcome.clone()));
        return Ok(outcome);
    }
    on_event(VacuumEvent::Checking);
    let table = open_delta(loc, &req.storage_options, "opening the table for VACUUM").await?;
    check_write_protocol(&table, &uri, "VACUUM", true)?;
    let version = table.version().unwrap_or_default();
    check_plan_still_holds(&uri, &table, plan, version).await?;
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    on_event(VacuumEvent::Deleting {
        files: plan.files_to_delete,
        bytes: plan.bytes_to_delete,
    });
    let props = CommitProperties::default()
        .with_create_checkpoint(false)
        .with_cleanup_expired_logs(Some(false))
        .with_metadata([(
            "lakehealth.operation".to_string(),
            serde_json::Value::from("vacuum"),
        )]);
    let (after, metrics) = table
        .clone()
        .vacuum()
        .with_retention_period(chrono_ms(Duration::from_millis(plan.retention_ms)))
        .with_enforce_retention_duration(plan.retention_check)
        .with_clock(Arc::new(FixedClock(plan.now_ms)))
        .with_commit_properties(props)
        .await
        .map_err(|e| derr(&uri, "VACUUM (delta-rs)", e))?;
    let (deleted, bytes_deleted) = deleted_of_plan(plan, metrics.files_deleted);
    let end = after.version();
    let store: Arc<dyn ObjectStore> = after.log_store().object_store(None);
    let start = match end {
        Some(end) if end > version => start_version(&store, end, version).await,
        _ => None,
    };
    let outcome = VacuumOutcome {
        files_deleted: deleted.len() as u64,
        bytes_deleted,
        deleted,
        vacuum_start_version: start,
        vacuum_end_version: end.filter(|&e| e > version),
        ..nothing_deleted(&uri, plan, version)
    };
    on_event(VacuumEvent::Done(outcome.clone()));
    Ok(outcome)
}

/// The outcome of a vacuum of `plan` that deleted nothing, having read `version_read`.
fn nothing_deleted(uri: &str, plan: &VacuumPlan, version_read: u64) -> VacuumOutcome {
    VacuumOutcome {
        table: uri.to_string(),
        version_read,
        retention_ms: plan.retention_ms,
        files_deleted: 0,
        bytes_deleted: 0,
        deleted: Vec::new(),
        vacuum_start_version: None,
        vacuum_end_version: None,
    }
}

/// The plan made again on the latest version (`version`) with the plan's clock must list the
/// same files; else nothing is deleted.
async fn check_plan_still_holds(
    uri: &str,
    table: &DeltaTable,
    plan: &VacuumPlan,
    version: u64,
) -> Result<()> {
    let retention = Duration::from_millis(plan.retention_ms);
    let (checked, _) =
        checked_candidates(uri, table, retention, plan.retention_check, plan.now_ms).await?;
    let now_set: HashSet<&str> = checked.iter().map(|(p, _)| p.as_str()).collect();
    let planned: HashSet<&str> = plan
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain(plan.already_gone.iter().map(String::as_str))
        .collect();
    if now_set == planned {
        return Ok(());
    }
    let added = now_set.difference(&planned).count();
    let dropped = planned.difference(&now_set).count();
    Err(EngineError::InvalidRequest(format!(
        "{uri}: the table moved from version {} to {version} since the dry run, and VACUUM would now delete a different set of files ({added} more, {dropped} fewer). Nothing was deleted; run the dry run again.",
        plan.version
    )))
}

/// The planned files delta-rs reports deleted (in path order) and their bytes.
fn deleted_of_plan(plan: &VacuumPlan, files_deleted: Vec<String>) -> (Vec<String>, u64) {
    let deleted_set: HashSet<String> = files_deleted.into_iter().collect();
    let by_path: BTreeMap<&str, u64> = plan
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.bytes))
        .collect();
    let deleted: Vec<String> = by_path
        .keys()
        .filter(|p| deleted_set.contains(**p))
        .map(|p| p.to_string())
        .collect();
    let bytes_deleted = deleted.iter().filter_map(|p| by_path.get(p.as_str())).sum();
    (deleted, bytes_deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn retention_defaults_to_the_table_and_refuses_less_without_the_override() {
        assert_eq!(
            resolve_retention("/t", None, 7 * DAY, false).unwrap(),
            (7 * DAY, true)
        );
        assert_eq!(
            resolve_retention("/t", Some(8 * DAY), 7 * DAY, false).unwrap(),
            (8 * DAY, true)
        );
        let e = resolve_retention("/t", Some(Duration::from_secs(3600)), 7 * DAY, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a retention of 1h is below"), "{e}");
        assert!(
            e.contains("delta.deletedFileRetentionDuration (7days)"),
            "{e}"
        );
        assert!(e.contains("--allow-short-retention"), "{e}");
        assert_eq!(
            resolve_retention("/t", Some(Duration::from_secs(3600)), 7 * DAY, true).unwrap(),
            (Duration::from_secs(3600), false)
        );
    }

    #[test]
    fn the_guard_refuses_active_young_unknown_untracked_and_outside_files() {
        let tomb = |ts| Tomb {
            removed_at_ms: ts,
            size: Some(1),
        };
        let tombstones: HashMap<String, Tomb> = [
            ("old".to_string(), tomb(100)),
            ("young".to_string(), tomb(1_000)),
            ("no_ts".to_string(), tomb(0)),
            ("readded".to_string(), tomb(100)),
        ]
        .into();
        let active: HashSet<String> = ["readded".to_string()].into();
        let ok = check_candidates(&["old".into()], &tombstones, &active, 500).unwrap();
        assert_eq!(ok, vec![("old".to_string(), tomb(100))]);
        for (p, why) in [
            ("young", "inside the retention"),
            ("no_ts", "without a deletion timestamp"),
            ("readded", "active file"),
            ("stray", "not a removed file"),
            ("/etc/x.parquet", "not a path inside the table"),
            ("file:///t/x.parquet", "not a path inside the table"),
        ] {
            let bad =
                check_candidates(&["old".into(), p.into()], &tombstones, &active, 500).unwrap_err();
            assert_eq!(bad.len(), 1, "{bad:?}");
            assert!(bad[0].contains(why), "{p}: {bad:?}");
        }
    }
}
