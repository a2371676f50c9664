//! One bin's commit: the snapshot's manifests and list written next to the table's metadata,
//! then the catalog asked to make it current (a SQL catalog's compare-and-swap, or a REST
//! catalog's commit). A lost race reloads the table and rebuilds the commit on it while every
//! replaced file is still live and no delete file applies; the files of an attempt that did not
//! land are deleted, those of one whose outcome is unknown kept.

use object_store::{PutMode, PutOptions, PutPayload};

use super::IcebergCompactError as E;
use super::catalog::{Catalog, TableId};
use super::job::{Ctx, IceCommit, IceEvent};
use super::manifest_write::build;
use super::plan::{DeleteScope, IceBin};
use super::rest_catalog::RestCommit;
use super::rewrite::{Rewritten, delete_outputs};
use super::snapshot::{
    SnapshotHeader, new_metadata, new_snapshot_id, next_metadata_location, snapshot_json,
};
use super::sql_catalog::SqlCatalog;
use super::table_state::TableState;
use crate::clock::now_ms;
use crate::iceberg::Stores;

pub(super) enum Outcome {
    Committed(IceCommit),
    /// The table moved so that the bin may not commit: its outputs are to be deleted.
    Conflict(String),
    /// An error; the files listed are kept (the commit's outcome is unknown), else the outputs
    /// are to be deleted.
    Failed(String, Vec<String>),
}

/// Commits `bin` on `state` (reloaded after a lost race; the new state after a commit).
pub(super) async fn commit_bin(
    ctx: &mut Ctx<'_>,
    state: &mut TableState,
    bin: &IceBin,
    out: &Rewritten,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Outcome {
    let mut attempt = 0;
    loop {
        let commit = match try_commit(ctx, state, bin, out, attempt).await {
            Attempt::Landed(c) => c,
            Attempt::Ended(outcome) => return outcome,
            Attempt::Lost => {
                attempt += 1;
                if let Some(end) = after_lost_race(ctx, state, bin, attempt, events).await {
                    return end;
                }
                continue;
            }
        };
        // The next bin builds on this commit (or on whatever the catalog has by then).
        match TableState::load(&mut ctx.stores, &ctx.uri, &commit.metadata_location).await {
            Ok(s) => *state = s,
            Err(e) => tracing::warn!("reloading after a commit: {e}"),
        }
        return Outcome::Committed(commit);
    }
}

/// What one commit attempt came to.
enum Attempt {
    Landed(IceCommit),
    /// The table moved since the attempt was built: nothing of it is referenced (deleted).
    Lost,
    Ended(Outcome),
}

/// One attempt on `state`: its manifests and list written, the snapshot built, the catalog
/// asked to swap it in.
async fn try_commit(
    ctx: &mut Ctx<'_>,
    state: &TableState,
    bin: &IceBin,
    out: &Rewritten,
    attempt: u32,
) -> Attempt {
    if DeleteScope::of(state).applies(bin.spec_id, &bin.partition) {
        return Attempt::Ended(Outcome::Conflict(
            "a delete file now applies to the bin's partition; its rows would come back".into(),
        ));
    }
    let snapshot_id = new_snapshot_id(state);
    let sequence = state.last_sequence_number() + 1;
    let (list_path, mut ours) =
        match write_manifests(ctx, state, bin, out, snapshot_id, sequence).await {
            Ok(w) => w,
            Err(end) => return Attempt::Ended(end),
        };
    let header = SnapshotHeader {
        snapshot_id,
        sequence,
        list_path: &list_path,
        now_ms: now_ms(),
        job: &ctx.job,
    };
    let snapshot = snapshot_json(state, bin, &out.outputs, &header);
    if let Some(hook) = &ctx.req.before_commit {
        hook(bin, attempt);
    }
    let new_location = match swap(ctx, state, &snapshot, snapshot_id, &mut ours).await {
        Swap::Won(l) => l,
        Swap::Lost => {
            delete_outputs(&mut ctx.stores, &ours).await;
            return Attempt::Lost;
        }
        Swap::NotCommitted(e) => {
            delete_outputs(&mut ctx.stores, &ours).await;
            return Attempt::Ended(Outcome::Failed(e, Vec::new()));
        }
        Swap::Unknown(e) => {
            return Attempt::Ended(Outcome::Failed(
                format!("{e}; the commit's outcome is unknown, its files are kept"),
                ours,
            ));
        }
    };
    Attempt::Landed(IceCommit {
        partition: bin.label.clone(),
        snapshot_id,
        sequence_number: sequence,
        metadata_location: new_location,
        files_removed: bin.files.len() as u64,
        files_added: out.outputs.len() as u64,
        bytes_removed: bin.bytes(),
        bytes_added: out.bytes(),
        rows: out.fingerprint.rows,
        retries: attempt,
        fingerprint: out.fingerprint,
    })
}

/// The attempt's manifests and manifest list, written beside the table's metadata (never over
/// an existing file). Returns the list's path and every file written.
async fn write_manifests(
    ctx: &mut Ctx<'_>,
    state: &TableState,
    bin: &IceBin,
    out: &Rewritten,
    snapshot_id: i64,
    sequence: i64,
) -> Result<(String, Vec<String>), Outcome> {
    let Some((dir, _)) = state.metadata_location.rsplit_once('/') else {
        return Err(Outcome::Failed(
            "the metadata location has no folder".into(),
            Vec::new(),
        ));
    };
    let files = match build(
        state,
        bin,
        &out.outputs,
        snapshot_id,
        sequence,
        &format!("{dir}/"),
    ) {
        Ok(f) => f,
        Err(E::Conflict(reason)) => return Err(Outcome::Conflict(reason)),
        Err(e) => return Err(Outcome::Failed(e.to_string(), Vec::new())),
    };
    let mut ours: Vec<String> = files.manifests.iter().map(|m| m.path.clone()).collect();
    ours.push(files.list_path.clone());
    let mut puts: Vec<(String, Vec<u8>)> = files
        .manifests
        .into_iter()
        .map(|m| (m.path, m.bytes))
        .collect();
    puts.push((files.list_path.clone(), files.list_bytes));
    if let Err(e) = put_new(&mut ctx.stores, puts).await {
        delete_outputs(&mut ctx.stores, &ours).await;
        return Err(Outcome::Failed(e.to_string(), Vec::new()));
    }
    Ok((files.list_path, ours))
}

/// Asks the table's catalog to make `snapshot` current, on `state`'s snapshot.
async fn swap(
    ctx: &mut Ctx<'_>,
    state: &TableState,
    snapshot: &serde_json::Value,
    snapshot_id: i64,
    ours: &mut Vec<String>,
) -> Swap {
    match &ctx.catalog {
        Catalog::Sql(c) => sql_swap(c, &ctx.table, &mut ctx.stores, state, snapshot, ours).await,
        Catalog::Rest(c) => {
            let parent = state.snapshot().map(|s| s.snapshot_id);
            let uuid = state.table_uuid();
            match c
                .commit(&ctx.table, uuid, parent, snapshot, snapshot_id)
                .await
            {
                RestCommit::Committed(l) => Swap::Won(l),
                RestCommit::Conflict => Swap::Lost,
                RestCommit::Refused(e) => Swap::NotCommitted(e),
                RestCommit::Unknown(e) => Swap::Unknown(e),
            }
        }
    }
}

/// After a lost race: the table reloaded for the next attempt, or the bin's end (too many
/// attempts, or the table cannot be read).
async fn after_lost_race(
    ctx: &mut Ctx<'_>,
    state: &mut TableState,
    bin: &IceBin,
    attempt: u32,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Option<Outcome> {
    if attempt > ctx.req.max_retries {
        return Some(Outcome::Conflict(format!(
            "the table kept moving: {attempt} commit attempts lost the race"
        )));
    }
    events(&IceEvent::Retrying {
        partition: bin.label.clone(),
        attempt,
    });
    let reloaded = match ctx.catalog.current(&ctx.table).await {
        Ok(cur) => TableState::load(&mut ctx.stores, &ctx.uri, &cur).await,
        Err(e) => Err(E::from(e)),
    };
    match reloaded {
        Ok(s) => {
            *state = s;
            None
        }
        Err(e) => Some(Outcome::Failed(e.to_string(), Vec::new())),
    }
}

/// What a commit attempt got from the catalog.
enum Swap {
    /// Committed: the new metadata location.
    Won(String),
    /// The table moved since the commit was built.
    Lost,
    /// Not committed, for another reason.
    NotCommitted(String),
    /// It may or may not have committed.
    Unknown(String),
}

/// A SQL catalog commit: the new metadata file, then the compare-and-swap of the table's row.
/// After an error the row is read again: only a row still naming the base proves nothing
/// committed.
async fn sql_swap(
    c: &SqlCatalog,
    table: &TableId,
    stores: &mut Stores<'_>,
    state: &TableState,
    snapshot: &serde_json::Value,
    ours: &mut Vec<String>,
) -> Swap {
    let new_location = next_metadata_location(state);
    let json = match new_metadata(state, snapshot) {
        Ok(j) => j,
        Err(e) => return Swap::NotCommitted(e.to_string()),
    };
    if let Err(e) = put_new(stores, vec![(new_location.clone(), json)]).await {
        return Swap::NotCommitted(e.to_string());
    }
    ours.push(new_location.clone());
    let expected = &state.metadata_location;
    match c.swap(table, expected, &new_location).await {
        Ok(true) => Swap::Won(new_location),
        Ok(false) => Swap::Lost,
        Err(e) => match c.current(table).await {
            Ok(cur) if cur == new_location => Swap::Won(new_location),
            Ok(cur) if cur == *expected => Swap::NotCommitted(e.to_string()),
            _ => Swap::Unknown(e.to_string()),
        },
    }
}

/// Writes new objects, never over an existing one.
pub(crate) async fn put_new(
    stores: &mut Stores<'_>,
    puts: Vec<(String, Vec<u8>)>,
) -> Result<(), E> {
    for (uri, bytes) in puts {
        let (store, path) = stores.resolve(&uri)?;
        store
            .put_opts(
                &path,
                PutPayload::from(bytes),
                PutOptions {
                    mode: PutMode::Create,
                    ..Default::default()
                },
            )
            .await
            .map_err(|source| E::Store { path: uri, source })?;
    }
    Ok(())
}
