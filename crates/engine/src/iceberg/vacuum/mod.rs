//! VACUUM of an Iceberg table, through its catalog: snapshots older than the retention are
//! expired (Iceberg's `expire_snapshots`: `retain`, `expire`), then the files in the table's
//! folder that no retained snapshot references and that were last modified before the
//! retention are deleted (Iceberg's `remove_orphan_files`: `reachable`, `files`).
//!
//! - **Retention**: the default is the table's `history.expire.max-snapshot-age-ms` (5 days);
//!   a shorter one is refused unless explicitly allowed. The newest
//!   `history.expire.min-snapshots-to-keep` (1) of the current ancestry and every ref's head are
//!   kept.
//! - **One clock**: the dry run fixes "now"; the real run decides with it, and expires and
//!   deletes only what the dry run listed (fewer when the table moved, never more).
//! - **Referenced from the latest metadata**: the files are listed first, then the catalog's
//!   current metadata is read, so a snapshot committed meanwhile keeps its files.
//! - **Never deleted**: metadata files (`*.metadata.json`, `version-hint.text`: a writer's
//!   commit in flight, time travel by metadata file), lakehealth's records (`_lakehealth/`),
//!   the outputs of a compaction job whose record is still there (its sweep decides), a file
//!   no snapshot ever named modified within the retention or `MIN_ORPHAN_AGE` (1 h; a writer
//!   may be about to commit it: only files of expired snapshots go at once), files of
//!   a table nested in this one's folder or in a log folder (`nested_tables`), and anything
//!   outside the table's folder. Local deletes go beneath the table through no link
//!   (`local_fs`).

pub mod expire;
pub mod files;
pub mod reachable;
pub mod retain;

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use self::files::{Cutoffs, Kept, classify, list_folder};
use self::retain::{SnapshotAge, retained};
use super::compact::IcebergCompactError as E;
use super::compact::catalog::{Catalog, TableId};
use super::compact::commit::put_new;
use super::compact::job::check_inside;
use super::compact::rest_catalog::RestCommit;
use super::compact::snapshot::next_metadata_location;
use super::compact::table_state::TableState;
use crate::clock::now_ms;
use crate::iceberg::Stores;
use crate::location::Location;
use crate::model::duration::exact_secs;
use crate::options::OpenOptions;
use object_store::ObjectStoreExt;

/// Iceberg's `history.expire.max-snapshot-age-ms` and its default (5 days).
pub const MAX_SNAPSHOT_AGE: &str = "history.expire.max-snapshot-age-ms";
pub const DEFAULT_MAX_SNAPSHOT_AGE: Duration = Duration::from_secs(5 * 86_400);
/// Iceberg's `history.expire.min-snapshots-to-keep` and its default.
pub const MIN_SNAPSHOTS_TO_KEEP: &str = "history.expire.min-snapshots-to-keep";

/// A file no snapshot names is kept this long at least, whatever the retention: a writer may
/// have written it and not yet committed (as Delta's orphans, `maintenance::orphans`).
pub const MIN_ORPHAN_AGE: Duration = Duration::from_secs(3600);

/// Commit attempts before an expiry gives up on a table that keeps moving.
const MAX_ATTEMPTS: u32 = 5;

#[derive(Debug, Clone, Default)]
pub struct IceVacuumRequest {
    /// The catalog the expiry commits through.
    pub catalog: String,
    /// `NAMESPACE.NAME`; None: the catalog's table at the folder.
    pub table: Option<String>,
    /// None: the table's `history.expire.max-snapshot-age-ms`.
    pub retention: Option<Duration>,
    pub allow_short_retention: bool,
}

/// A file the vacuum deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IceVacuumFile {
    /// As the store lists it, an absolute URI.
    pub path: String,
    pub bytes: u64,
    pub modified_ms: i64,
}

/// A dry run: what the vacuum expires and deletes, and what it keeps that no snapshot needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IceVacuumPlan {
    pub table: String,
    pub catalog_table: String,
    pub metadata_location: String,
    pub retention_ms: u64,
    pub table_retention_ms: u64,
    /// False when a retention below the table's was explicitly allowed.
    pub retention_check: bool,
    pub min_snapshots_to_keep: usize,
    pub now_ms: i64,
    pub cutoff_ms: i64,
    /// Snapshot ids, sorted.
    pub snapshots_to_expire: Vec<i64>,
    pub snapshots_kept: Vec<i64>,
    /// Sorted by path.
    pub files: Vec<IceVacuumFile>,
    pub files_to_delete: u64,
    pub bytes_to_delete: u64,
    /// Unreferenced files kept, with why.
    pub kept: Vec<Kept>,
}

/// What a real run did.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct IceVacuumOutcome {
    pub table: String,
    /// The metadata the files were checked against (after the expiry).
    pub metadata_location: String,
    pub snapshots_expired: Vec<i64>,
    pub files_deleted: u64,
    pub bytes_deleted: u64,
    /// Sorted.
    pub deleted: Vec<String>,
    /// Listed by the dry run but referenced, changed or gone when checked again: kept.
    pub skipped: Vec<String>,
    /// Deletes that failed or were refused (a link), with why.
    pub failed: Vec<String>,
}

/// The table found in its catalog, loaded.
struct Opened<'a> {
    catalog: Catalog,
    id: TableId,
    stores: Stores<'a>,
    state: TableState,
    uri: String,
    root: String,
}

async fn open<'a>(
    folder: &Location,
    req: &IceVacuumRequest,
    opts: &'a OpenOptions,
) -> Result<Opened<'a>, E> {
    crate::root_links::refuse_links_leaving(folder, "vacuum")?;
    let catalog = Catalog::open(&req.catalog)?;
    let (id, location) = catalog
        .find(folder.url.as_str(), req.table.as_deref())
        .await?;
    let uri = folder.display();
    let mut stores = Stores::beneath(opts, folder);
    let state = TableState::load(&mut stores, &uri, &location).await?;
    check_inside(folder, &state, opts)?;
    let root = format!("{}/", folder.url.as_str().trim_end_matches('/'));
    Ok(Opened {
        catalog,
        id,
        stores,
        state,
        uri,
        root,
    })
}

/// The table's retention, and its minimum of snapshots kept.
fn table_settings(uri: &str, state: &TableState) -> Result<(Duration, usize), E> {
    let props = &state.meta.properties;
    let bad = |key: &str, v: &str| {
        E::Unsupported(format!(
            "{uri}: the table property {key} = {v:?} is not a whole number; VACUUM cannot know which snapshots to keep"
        ))
    };
    let age = match props.get(MAX_SNAPSHOT_AGE) {
        Some(v) => Duration::from_millis(
            v.trim()
                .parse::<u64>()
                .map_err(|_| bad(MAX_SNAPSHOT_AGE, v))?,
        ),
        None => DEFAULT_MAX_SNAPSHOT_AGE,
    };
    let keep = match props.get(MIN_SNAPSHOTS_TO_KEEP) {
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map_err(|_| bad(MIN_SNAPSHOTS_TO_KEEP, v))?
            .max(1),
        None => 1,
    };
    Ok((age, keep))
}

/// The retention to use, and whether the table's minimum is enforced.
fn resolve_retention(
    uri: &str,
    requested: Option<Duration>,
    table: Duration,
    allow_short: bool,
) -> Result<(Duration, bool), E> {
    match requested {
        None => Ok((table, true)),
        Some(r) if r >= table => Ok((r, true)),
        Some(r) if allow_short => Ok((r, false)),
        Some(r) => Err(E::Unsupported(format!(
            "{uri}: a retention of {} is below the table's {MAX_SNAPSHOT_AGE} ({}); VACUUM refuses it, because readers of older snapshots and writers committing now may still need files that recent. Use a retention of at least {}, or pass --allow-short-retention if no reader or writer can need them.",
            exact_secs(r),
            exact_secs(table),
            exact_secs(table)
        ))),
    }
}

/// Orphans modified before this go: the retention, at least `MIN_ORPHAN_AGE`.
fn orphan_cutoff(now_ms: i64, retention: Duration) -> i64 {
    now_ms.saturating_sub(millis(retention.max(MIN_ORPHAN_AGE)))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Snapshot ids named by the metadata's refs (branches and tags).
fn ref_heads(json: &Value) -> Vec<i64> {
    let mut heads: Vec<i64> = json
        .get("refs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(_, r)| r.get("snapshot-id").and_then(Value::as_i64))
        .collect();
    heads.extend(json.get("current-snapshot-id").and_then(Value::as_i64));
    heads
}

/// What an expiry at `cutoff_ms` removes from `state`.
fn to_expire(state: &TableState, cutoff_ms: i64, min_keep: usize) -> BTreeSet<i64> {
    let ages: Vec<SnapshotAge> = state
        .meta
        .snapshots
        .iter()
        .map(|s| SnapshotAge {
            id: s.snapshot_id,
            parent: s.parent_snapshot_id,
            timestamp_ms: s.timestamp_ms,
        })
        .collect();
    let current = state.meta.current_snapshot_id.filter(|&id| id >= 0);
    retained(&ages, current, &ref_heads(&state.json), cutoff_ms, min_keep).expired
}

/// Makes the plan: changes nothing.
pub async fn plan_iceberg_vacuum(
    folder: &Location,
    req: &IceVacuumRequest,
    opts: &OpenOptions,
) -> Result<IceVacuumPlan, E> {
    let mut t = open(folder, req, opts).await?;
    let (table_ret, min_keep) = table_settings(&t.uri, &t.state)?;
    let (retention, enforce) =
        resolve_retention(&t.uri, req.retention, table_ret, req.allow_short_retention)?;
    let now = now_ms();
    let cutoff = now.saturating_sub(millis(retention));
    let expire = to_expire(&t.state, cutoff, min_keep);
    let after = expire::expired_metadata(&t.state.json, &t.state.metadata_location, &expire, now)?;
    let listed = list_folder(&mut t.stores, &t.root, &t.uri).await?;
    let location = t.state.metadata_location.clone();
    let referenced = reachable::referenced(&mut t.stores, &t.uri, &location, &after).await?;
    let before = reachable::referenced(&mut t.stores, &t.uri, &location, &t.state.json).await?;
    let cut = Cutoffs {
        referenced: &referenced,
        expired_refs: &before,
        orphan_cutoff_ms: orphan_cutoff(now, retention),
    };
    let c = classify(&mut t.stores, &t.root, listed, &cut).await?;
    let snapshots_kept = t
        .state
        .meta
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|id| !expire.contains(id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(IceVacuumPlan {
        table: t.uri,
        catalog_table: t.id.to_string(),
        metadata_location: t.state.metadata_location,
        retention_ms: u64::try_from(millis(retention)).unwrap_or(0),
        table_retention_ms: u64::try_from(millis(table_ret)).unwrap_or(0),
        retention_check: enforce,
        min_snapshots_to_keep: min_keep,
        now_ms: now,
        cutoff_ms: cutoff,
        snapshots_to_expire: expire.into_iter().collect(),
        snapshots_kept,
        files_to_delete: c.delete.len() as u64,
        bytes_to_delete: c.delete.iter().map(|f| f.bytes).sum(),
        files: c.delete,
        kept: c.kept,
    })
}

/// Runs the vacuum `plan` describes, with its clock: the snapshots it lists that the latest
/// metadata would still expire are expired (one commit), then the files it lists that are
/// still unreferenced and unchanged are deleted.
pub async fn run_iceberg_vacuum(
    folder: &Location,
    req: &IceVacuumRequest,
    opts: &OpenOptions,
    plan: &IceVacuumPlan,
) -> Result<IceVacuumOutcome, E> {
    let mut t = open(folder, req, opts).await?;
    let before = reachable::referenced(
        &mut t.stores,
        &t.uri,
        &t.state.metadata_location.clone(),
        &t.state.json.clone(),
    )
    .await?;
    let planned: BTreeSet<i64> = plan.snapshots_to_expire.iter().copied().collect();
    let expired = expire_snapshots(&mut t, &planned, plan).await?;
    // Listed before the metadata is read: a snapshot committed in between keeps its files.
    let listed = list_folder(&mut t.stores, &t.root, &t.uri).await?;
    let current = t.catalog.current(&t.id).await?;
    let latest = TableState::load(&mut t.stores, &t.uri, &current).await?;
    let referenced = reachable::referenced(
        &mut t.stores,
        &t.uri,
        &latest.metadata_location,
        &latest.json,
    )
    .await?;
    let retention = Duration::from_millis(plan.retention_ms);
    let cut = Cutoffs {
        referenced: &referenced,
        expired_refs: &before,
        orphan_cutoff_ms: orphan_cutoff(plan.now_ms, retention),
    };
    let c = classify(&mut t.stores, &t.root, listed, &cut).await?;
    let now_deletable: std::collections::HashMap<&str, &IceVacuumFile> =
        c.delete.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut out = IceVacuumOutcome {
        table: t.uri.clone(),
        metadata_location: latest.metadata_location.clone(),
        snapshots_expired: expired.into_iter().collect(),
        ..Default::default()
    };
    for f in &plan.files {
        match now_deletable.get(f.path.as_str()) {
            Some(now) if now.bytes == f.bytes && now.modified_ms == f.modified_ms => {}
            _ => {
                out.skipped.push(f.path.clone());
                continue;
            }
        }
        let (store, path) = t.stores.resolve(&f.path)?;
        match store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                out.deleted.push(f.path.clone());
                out.bytes_deleted += f.bytes;
            }
            Err(e) => out.failed.push(match crate::local_fs::refusal(&e) {
                Some(why) => format!("{}: {why}", f.path),
                None => format!("{}: {e}", f.path),
            }),
        }
    }
    out.deleted.sort();
    out.files_deleted = out.deleted.len() as u64;
    Ok(out)
}

/// Expires the planned snapshots the latest metadata still would (at the plan's cutoff), in one
/// commit retried on a lost race; returns those expired.
async fn expire_snapshots(
    t: &mut Opened<'_>,
    planned: &BTreeSet<i64>,
    plan: &IceVacuumPlan,
) -> Result<BTreeSet<i64>, E> {
    for _ in 0..MAX_ATTEMPTS {
        let (_, min_keep) = table_settings(&t.uri, &t.state)?;
        let now: BTreeSet<i64> = to_expire(&t.state, plan.cutoff_ms, min_keep)
            .intersection(planned)
            .copied()
            .collect();
        if now.is_empty() {
            return Ok(now);
        }
        match swap(t, &now, plan.now_ms).await? {
            Some(location) => {
                t.state = TableState::load(&mut t.stores, &t.uri, &location).await?;
                return Ok(now);
            }
            None => {
                let cur = t.catalog.current(&t.id).await?;
                t.state = TableState::load(&mut t.stores, &t.uri, &cur).await?;
            }
        }
    }
    Err(E::Conflict(format!(
        "{}: the table kept moving: {MAX_ATTEMPTS} expiry commits lost the race; nothing was deleted",
        t.uri
    )))
}

/// One expiry commit of `ids` on `t.state`: the new metadata location, or None when the table
/// moved first.
async fn swap(t: &mut Opened<'_>, ids: &BTreeSet<i64>, now: i64) -> Result<Option<String>, E> {
    match &t.catalog {
        Catalog::Sql(c) => {
            let json =
                expire::expired_metadata(&t.state.json, &t.state.metadata_location, ids, now)?;
            let bytes = serde_json::to_vec_pretty(&json).map_err(|source| E::Json {
                file: "new metadata".into(),
                source,
            })?;
            let location = next_metadata_location(&t.state);
            put_new(&mut t.stores, vec![(location.clone(), bytes)]).await?;
            let expected = &t.state.metadata_location;
            match c.swap(&t.id, expected, &location).await {
                Ok(true) => Ok(Some(location)),
                Ok(false) => Ok(None),
                Err(e) => match c.current(&t.id).await {
                    Ok(cur) if cur == location => Ok(Some(location)),
                    _ => Err(E::Catalog(e)),
                },
            }
        }
        Catalog::Rest(c) => {
            let parent = t.state.snapshot().map(|s| s.snapshot_id);
            let updates = vec![serde_json::json!({
                "action": "remove-snapshots",
                "snapshot-ids": ids.iter().collect::<Vec<_>>(),
            })];
            match c.update(&t.id, t.state.table_uuid(), parent, updates).await {
                RestCommit::Committed(l) => Ok(Some(l)),
                RestCommit::Conflict => Ok(None),
                RestCommit::Refused(e) | RestCommit::Unknown(e) => Err(E::Unsupported(format!(
                    "{}: the catalog did not expire the snapshots: {e}; nothing was deleted",
                    t.uri
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_below_the_tables_is_refused_unless_allowed() {
        let day = Duration::from_secs(86_400);
        assert_eq!(
            resolve_retention("t", None, 5 * day, false).unwrap(),
            (5 * day, true)
        );
        let e = resolve_retention("t", Some(Duration::ZERO), 5 * day, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(MAX_SNAPSHOT_AGE) && e.contains("--allow-short-retention"),
            "{e}"
        );
        assert_eq!(
            resolve_retention("t", Some(Duration::ZERO), 5 * day, true).unwrap(),
            (Duration::ZERO, false)
        );
    }

    #[test]
    fn every_refs_head_and_the_current_snapshot_are_heads() {
        let j = serde_json::json!({
            "current-snapshot-id": 3,
            "refs": {"main": {"snapshot-id": 3}, "audit": {"snapshot-id": 1, "type": "tag"}}
        });
        let mut h = ref_heads(&j);
        h.sort();
        assert_eq!(h, [1, 3, 3]);
    }
}
