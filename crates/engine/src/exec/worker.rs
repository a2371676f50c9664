//! One bin on a remote worker (`lakehealth worker --spec`): exactly the local executor's
//! `rewrite_bin` (size-based roll, schema conform, statistics, fingerprint read back), then the
//! result written durably under the job's folder for the coordinator. A worker never commits.
//!
//! Every output is listed in a ledger before it is created (`ledger`), so a worker killed at
//! any instant (a stopped Ray job, a lost node) leaves a complete list of what to delete; a retried task first deletes what the
//! earlier attempt wrote, and a task whose result already says "done" returns it unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio_util::sync::CancellationToken;

use super::spec::{BinReport, BinSpec, Outcome, WorkerMetrics};
use crate::compact::ledger_store::{LedgerReadError, LedgerStore, read_ledger};
pub use crate::compact::rewrite::delete_outputs;
use crate::compact::rewrite::{
    BinError, BinFailure, BinOutput, Counters, RewriteOptions, rewrite_bin,
};
use crate::compact::schema::file_schema;
use crate::compact::table::{CompactionTable, open_for_job};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::sealed::{self, RecordKind, Refusal};

/// A sealed record (`sealed`) at `key` of the table's store (rooted at the table): None when
/// there is none, Some(Err) with why when its seal does not verify (it is never acted on).
pub async fn read_record<T: serde::de::DeserializeOwned>(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    kind: RecordKind,
    key: &Path,
) -> Result<Option<std::result::Result<T, Refusal>>> {
    let bytes = match store.get(key).await {
        Ok(r) => r
            .bytes()
            .await
            .map_err(|e| EngineError::from_store(uri, &format!("reading {key}"), e))?,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(EngineError::from_store(uri, &format!("reading {key}"), e)),
    };
    let keyring = match sealed::keyring() {
        Ok(k) => k,
        Err(e) => return Ok(Some(Err(Refusal::NoKey(e.to_string())))),
    };
    Ok(Some(sealed::open(&keyring, kind, key.as_ref(), &bytes)))
}

/// Writes `value` sealed as a `kind` record at `key` (relative to the table root).
pub async fn write_record<T: serde::Serialize>(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    kind: RecordKind,
    key: &Path,
    value: &T,
) -> Result<()> {
    let keyring = sealed::keyring()
        .map_err(|e| EngineError::InvalidRequest(format!("{uri}: cannot seal {key}: {e}")))?;
    let bytes = sealed::seal(&keyring, kind, key.as_ref(), value)
        .map_err(|e| EngineError::InvalidRequest(format!("{uri}: sealing {key}: {e}")))?;
    store
        .put(key, PutPayload::from(bytes))
        .await
        .map(|_| ())
        .map_err(|e| EngineError::from_store(uri, &format!("writing {key}"), e))
}

/// The variable the Ray driver sets to its own process id: the worker's parent for as long as
/// its task runs.
pub const PARENT_ENV: &str = "LAKEHEALTH_WORKER_PARENT";

/// The process this worker belongs to: the one `PARENT_ENV` names (so a task stopped before
/// the worker even started is noticed), else the parent it started with.
#[cfg(unix)]
fn expected_parent() -> u32 {
    std::env::var(PARENT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(std::os::unix::process::parent_id)
}

#[cfg(unix)]
fn orphaned(parent: u32) -> bool {
    std::os::unix::process::parent_id() != parent
}

/// Cancels the bin when the process that started this worker goes away (a stopped Ray task
/// leaves its subprocess behind): no output is written after the job was stopped for long.
/// Checked at once too: on S3 opening the table takes seconds, and a task stopped meanwhile
/// must not find its worker starting the bin afterwards.
#[cfg(unix)]
fn cancel_when_orphaned(cancel: CancellationToken, parent: u32) {
    if orphaned(parent) {
        cancel.cancel();
    }
    tokio::spawn(async move {
        loop {
            if orphaned(parent) {
                cancel.cancel();
                // The bin stops at its next input file; a file larger than this takes too long.
                tokio::time::sleep(Duration::from_secs(20)).await;
                std::process::exit(3);
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
}

#[cfg(not(unix))]
fn expected_parent() -> u32 {
    0
}

#[cfg(not(unix))]
fn orphaned(_parent: u32) -> bool {
    false
}

#[cfg(not(unix))]
fn cancel_when_orphaned(_cancel: CancellationToken, _parent: u32) {}

/// The table's folder within the store delta-rs opens for its URL (as delta-rs prefixes it).
fn table_root(loc: &Location) -> Result<Path> {
    match object_store::ObjectStoreScheme::parse(&loc.url) {
        Ok((_, path)) => Ok(path),
        Err(e) => Err(EngineError::InvalidRequest(format!(
            "{}: not a storage URL: {e}",
            loc.display()
        ))),
    }
}

/// The (unwritten) report of a worker whose task was gone before it started the bin.
fn gone_before_start(spec: &BinSpec, started: Instant) -> BinReport {
    BinReport {
        job_id: spec.job_id.clone(),
        bin_id: spec.bin_id,
        table_uri: spec.table_uri.clone(),
        table_version: spec.table_version,
        partition: spec.partition.clone(),
        metrics: WorkerMetrics {
            seconds: started.elapsed().as_secs_f64(),
            ..WorkerMetrics::default()
        },
        outcome: Outcome::Failed {
            kind: BinFailure::Cancelled.kind(),
            error: "the task that started this worker is gone; nothing was written".into(),
            outputs: Vec::new(),
        },
    }
}

/// Runs `spec`'s bin and writes its result; returns the result. Err only when the table or the
/// job folder cannot be used at all (nothing was written then).
///
/// A worker whose task is gone (`orphaned`) writes no result: its coordinator has settled the
/// bin already (or a retry of the task owns its result key now), its outputs are deleted here,
/// and any it could not delete stay listed in the ledger for `pickup`.
pub async fn run_spec(
    spec: &BinSpec,
    storage_options: &HashMap<String, String>,
) -> Result<BinReport> {
    let started = Instant::now();
    let parent = expected_parent();
    let cancel = CancellationToken::new();
    cancel_when_orphaned(cancel.clone(), parent);
    let loc = Location::parse(&spec.table_uri)?;
    let (ct, ledger) = open_with_ledger(&loc, spec, storage_options).await?;
    // Gone while the table opened: a retry of the task may be running on this bin's ledger and
    // result already, so nothing of it is touched.
    if cancel.is_cancelled() || orphaned(parent) {
        return Ok(gone_before_start(spec, started));
    }
    let ledger =
        ledger.lock().ok().and_then(|s| s.clone()).ok_or_else(|| {
            EngineError::InvalidRequest("the output ledger was not set up".into())
        })?;
    let uri = ct.uri.clone();
    let store = ct.table.object_store();
    // A result of an earlier attempt is taken only when this installation sealed it.
    if let Some(Ok(r)) =
        read_record::<BinReport>(&store, &uri, RecordKind::BinResult, &spec.result_key()).await?
        && matches!(r.outcome, Outcome::Done { .. })
    {
        return Ok(r);
    }
    keep_spec(&store, &uri, spec).await?;
    // An earlier attempt of this bin was stopped midway: its outputs are never committed.
    match read_ledger(&store, &spec.ledger_key()).await {
        Ok(Some(old)) if old.job == spec.job_id => {
            let stale = earlier_outputs(spec, &ct, old.outputs)?;
            ledger.keep(delete_outputs(&store, &stale).await).await;
        }
        Ok(None) => {}
        Ok(Some(old)) => tracing::warn!(
            "worker: {uri}: {} is sealed for job {}, not this bin's: nothing of it is deleted",
            spec.ledger_key(),
            old.job
        ),
        Err(LedgerReadError::Refused(why)) => tracing::warn!(
            "worker: {uri}: {}: {why}; nothing it names is deleted",
            spec.ledger_key()
        ),
        Err(LedgerReadError::Store(e)) => {
            return Err(EngineError::from_store(
                &uri,
                &format!("reading {}", spec.ledger_key()),
                e,
            ));
        }
    }
    let counters = Arc::new(Counters::default());
    let r = rewrite(spec, &ct, cancel.clone(), counters.clone()).await?;
    // Orphaned right as the bin finished: the coordinator has given up on it, so nothing of it
    // may stay.
    let r = match r {
        Ok(out) if cancel.is_cancelled() => Err(BinError {
            partition: out.partition.clone(),
            failure: BinFailure::Cancelled,
            outputs: out.output_paths(),
        }),
        r => r,
    };
    let (outcome, verify_seconds) = outcome_of(r, &store, &ledger).await;
    let report = BinReport {
        job_id: spec.job_id.clone(),
        bin_id: spec.bin_id,
        table_uri: spec.table_uri.clone(),
        table_version: spec.table_version,
        partition: spec.partition.clone(),
        metrics: WorkerMetrics {
            bytes_read: ct.counters.read(),
            bytes_written: ct.counters.written(),
            files_read: counters
                .files_read
                .load(std::sync::atomic::Ordering::Relaxed),
            seconds: started.elapsed().as_secs_f64(),
            verify_seconds,
        },
        outcome,
    };
    if cancel.is_cancelled() || orphaned(parent) {
        return Ok(report);
    }
    write_record(
        &store,
        &uri,
        RecordKind::BinResult,
        &spec.result_key(),
        &report,
    )
    .await?;
    Ok(report)
}

/// Of what the ledger of an earlier attempt lists, what may go: a ledger is a file anyone can
/// write, so only paths that can be this bin's outputs (`trust`) and are not in the table.
fn earlier_outputs(
    spec: &BinSpec,
    ct: &CompactionTable,
    listed: Vec<String>,
) -> Result<Vec<String>> {
    let active = super::pickup::active_paths(&ct.table, &ct.uri)?;
    let (ok, refused) = super::trust::only_outputs(spec, listed);
    for r in refused {
        tracing::warn!("worker: {}: not deleted: {r}", ct.uri);
    }
    Ok(ok
        .into_iter()
        .filter(|p| !super::pickup::is_active(&active, p))
        .collect())
}

/// Where the bin's ledger store is kept once the table's store is wrapped.
type LedgerSlot = Arc<Mutex<Option<Arc<LedgerStore>>>>;

/// Opens the table with every store wrapped in the bin's ledger: every output is listed in the
/// ledger before it exists (see `ledger`).
async fn open_with_ledger(
    loc: &Location,
    spec: &BinSpec,
    storage_options: &HashMap<String, String>,
) -> Result<(CompactionTable, LedgerSlot)> {
    let slot: LedgerSlot = Arc::default();
    let (key, slot2) = (spec.ledger_key(), slot.clone());
    let job = spec.job_id.clone();
    let root = table_root(loc)?;
    let wrap = move |inner: Arc<dyn ObjectStore>| -> Arc<dyn ObjectStore> {
        let l = Arc::new(LedgerStore::new(inner, root.clone(), &key, &job));
        if let Ok(mut s) = slot2.lock() {
            *s = Some(l.clone());
        }
        l
    };
    // The table's own job ledger names outputs for the same job.
    let ct = open_for_job(loc, storage_options, Some(&wrap), &spec.job_id).await?;
    Ok((ct, slot))
}

/// The spec beside its result, written before any output (kept from a first attempt, so every
/// output is newer): pickup commits only results that answer it, and deletes only files that
/// can be its outputs.
async fn keep_spec(store: &Arc<dyn ObjectStore>, uri: &str, spec: &BinSpec) -> Result<()> {
    match read_record::<BinSpec>(store, uri, RecordKind::BinSpec, &spec.spec_key()).await? {
        None => write_record(store, uri, RecordKind::BinSpec, &spec.spec_key(), spec).await,
        Some(Ok(stored)) if stored == *spec => Ok(()),
        Some(Ok(_)) => Err(EngineError::InvalidRequest(format!(
            "{uri}: {} holds another spec for this bin; a worker never runs a bin twice \
             with different specs",
            spec.spec_key()
        ))),
        Some(Err(why)) => Err(EngineError::InvalidRequest(format!(
            "{uri}: {} holds a spec this installation did not seal ({why}); the bin is not \
             run beside it (remove it by hand once checked)",
            spec.spec_key()
        ))),
    }
}

/// Rewrites the bin as the spec says. Err: the spec or the table cannot be read; Ok(Err):
/// the rewrite failed.
async fn rewrite(
    spec: &BinSpec,
    ct: &CompactionTable,
    cancel: CancellationToken,
    counters: Arc<Counters>,
) -> Result<std::result::Result<BinOutput, BinError>> {
    let uri = &ct.uri;
    let compression = spec.compression.parse().map_err(|e| {
        EngineError::InvalidRequest(format!("codec {:?} in the spec: {e}", spec.compression))
    })?;
    let schema = file_schema(&ct.table)
        .map_err(|e| EngineError::InvalidRequest(format!("{uri}: reading the schema: {e}")))?;
    Ok(rewrite_bin(
        ct.table.clone(),
        spec.values(),
        spec.bin(),
        schema,
        RewriteOptions {
            target_file_size: spec.target_file_size,
            compression,
            compression_ratio: spec.compression_ratio,
            // The cluster's workers are not paced: the throttle is for a shared local machine.
            pace: None,
            order: spec.order.clone(),
            clustering_provider: spec.clustering_provider.clone(),
            sort_memory: spec.sort_memory,
            output_job: spec.job_id.clone(),
        },
        cancel,
        counters,
        Arc::default(),
    )
    .await)
}

/// The bin's outcome and its verification time; a failed bin's outputs are deleted.
async fn outcome_of(
    r: std::result::Result<BinOutput, BinError>,
    store: &Arc<dyn ObjectStore>,
    ledger: &LedgerStore,
) -> (Outcome, f64) {
    match r {
        Ok(out) => (
            Outcome::Done {
                rows: out.rows,
                deleted_rows: out.deleted_rows,
                bytes_in: out.bytes_in,
                fingerprint: out.fingerprint,
                removes: out.removes,
                adds: out.adds,
            },
            out.verify_seconds,
        ),
        Err(e) => (
            Outcome::Failed {
                kind: e.failure.kind(),
                error: e.failure.to_string(),
                // The ledger also lists an output whose write failed midway.
                outputs: delete_outputs(store, &[e.outputs, ledger.entries().await].concat()).await,
            },
            0.0,
        ),
    }
}
