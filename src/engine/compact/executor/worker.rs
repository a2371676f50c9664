//! One bin on a remote worker (`lakehealth worker --spec`): exactly the local executor's
//! `rewrite_bin` (size-based roll, schema conform, statistics, fingerprint read back), then the
//! result written durably under the job's folder for the coordinator. A worker never commits.
//!
//! Outputs are recorded in a ledger as they are flushed, so a worker killed midway (a stopped
//! Ray job, a lost node) leaves a list of what to delete; a retried task first deletes what the
//! earlier attempt wrote, and a task whose result already says "done" returns it unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio_util::sync::CancellationToken;

use super::spec::{BinReport, BinSpec, Outcome, WorkerMetrics};
use crate::engine::compact::execute::file_schema;
use crate::engine::compact::rewrite::{
    BinError, BinFailure, Counters, RewriteOptions, object_key, rewrite_bin,
};
use crate::engine::compact::table::open_for_compaction;
use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;

/// Reads a JSON file from the table's store; None when it does not exist.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    key: &Path,
) -> Result<Option<T>> {
    let bytes = match store.get(key).await {
        Ok(r) => r
            .bytes()
            .await
            .map_err(|e| EngineError::from_store(uri, &format!("reading {key}"), e))?,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(EngineError::from_store(uri, &format!("reading {key}"), e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| EngineError::InvalidRequest(format!("{uri}: {key} is not valid: {e}")))
}

pub async fn write_json<T: serde::Serialize>(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    key: &Path,
    value: &T,
) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| EngineError::InvalidRequest(format!("serialising {key}: {e}")))?;
    store
        .put(key, PutPayload::from(bytes))
        .await
        .map(|_| ())
        .map_err(|e| EngineError::from_store(uri, &format!("writing {key}"), e))
}

/// Deletes `paths` (table-relative); returns those that could not be deleted.
pub async fn delete_outputs(store: &Arc<dyn ObjectStore>, paths: &[String]) -> Vec<String> {
    let mut left = Vec::new();
    for p in paths {
        match store.delete(&object_key(p)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(_) => left.push(p.clone()),
        }
    }
    left
}

/// Cancels the bin when the process that started this worker goes away (a stopped Ray task
/// leaves its subprocess behind): no output is written after the job was stopped for long.
#[cfg(unix)]
fn cancel_when_orphaned(cancel: CancellationToken) {
    let parent = std::os::unix::process::parent_id();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if std::os::unix::process::parent_id() != parent {
                cancel.cancel();
                // The bin stops at its next input file; a file larger than this takes too long.
                tokio::time::sleep(Duration::from_secs(20)).await;
                std::process::exit(3);
            }
        }
    });
}

#[cfg(not(unix))]
fn cancel_when_orphaned(_cancel: CancellationToken) {}

/// Keeps the ledger object in step with the outputs flushed so far, until `stop`.
fn keep_ledger(
    store: Arc<dyn ObjectStore>,
    uri: String,
    key: Path,
    ledger: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut written = 0usize;
        loop {
            let now: Vec<String> = ledger.lock().map(|l| l.clone()).unwrap_or_default();
            if now.len() != written && write_json(&store, &uri, &key, &now).await.is_ok() {
                written = now.len();
            }
            if stop.is_cancelled() {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    })
}

/// Runs `spec`'s bin and writes its result; returns the result. Err only when the table or the
/// job folder cannot be used at all (nothing was written then).
pub async fn run_spec(
    spec: &BinSpec,
    storage_options: &HashMap<String, String>,
) -> Result<BinReport> {
    let started = Instant::now();
    let loc = Location::parse(&spec.table_uri)?;
    let ct = open_for_compaction(&loc, storage_options).await?;
    let uri = ct.uri.clone();
    let store = ct.table.object_store();
    if let Some(r) = read_json::<BinReport>(&store, &uri, &spec.result_key()).await?
        && matches!(r.outcome, Outcome::Done { .. })
    {
        return Ok(r);
    }
    // An earlier attempt of this bin was stopped midway: its outputs are never committed.
    if let Some(old) = read_json::<Vec<String>>(&store, &uri, &spec.ledger_key()).await? {
        delete_outputs(&store, &old).await;
    }
    let compression = spec.compression.parse().map_err(|e| {
        EngineError::InvalidRequest(format!("codec {:?} in the spec: {e}", spec.compression))
    })?;
    let schema = file_schema(&ct.table)
        .map_err(|e| EngineError::InvalidRequest(format!("{uri}: reading the schema: {e}")))?;
    let cancel = CancellationToken::new();
    cancel_when_orphaned(cancel.clone());
    let orphaned = cancel.clone();
    let ledger: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = CancellationToken::new();
    let keeper = keep_ledger(
        store.clone(),
        uri.clone(),
        spec.ledger_key(),
        ledger.clone(),
        stop.clone(),
    );
    let counters = Arc::new(Counters::default());
    let r = rewrite_bin(
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
        },
        cancel,
        counters.clone(),
        ledger,
    )
    .await;
    let cancel = orphaned;
    stop.cancel();
    let _ = keeper.await;
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
    let (outcome, verify_seconds) = match r {
        Ok(out) => (
            Outcome::Done {
                rows: out.rows,
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
                outputs: delete_outputs(&store, &e.outputs).await,
            },
            0.0,
        ),
    };
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
    write_json(&store, &uri, &spec.result_key(), &report).await?;
    Ok(report)
}
