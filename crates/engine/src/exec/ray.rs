//! The Ray executor: bins run as tasks of a Ray job, submitted and followed through the Jobs
//! REST API. Each batch of bins (the plan's, then any planned again after a conflict) is one
//! job: its package holds the driver (`assets/ray_driver.py`) and the bins' specs; the worker
//! binary is a second, content-addressed package uploaded once per cluster. The driver prints a
//! line per finished bin; the coordinator then reads the bin's durable result from the table's
//! `_lakehealth/jobs/<job>/` and hands it to the committer like a local bin.
//!
//! Cancel stops the Ray job; once it has stopped, every bin without a committed result is
//! reported cancelled with the outputs its ledger lists (the coordinator deletes them). The job
//! folder is removed at the end only when every Ray job reached a final state: otherwise a
//! worker may still write, and `pickup` cleans up later.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::package::{Entry, content_hash, package_name, zip};
use super::ray_api::{JobInfo, RayClient, RayError};
use super::spec::{BinReport, BinSpec, job_prefix, ledger_key, result_key};
use super::trust::{self, check_result};
use super::worker::read_record;
use crate::compact::executor::{BinResult, RayOptions, RunContext, Work};
use crate::compact::ledger_store::read_ledger;
use crate::compact::rewrite::{BinError, BinFailure, removes_for};
use crate::model::partition::PartitionValues;
use crate::sealed::RecordKind;

/// The driver every job runs.
const DRIVER: &str = include_str!("../../../../assets/ray_driver.py");

/// The prefix of the driver's progress lines.
const LINE_PREFIX: &str = "LAKEHEALTH_BIN ";

/// How often status and logs are polled.
const POLL: Duration = Duration::from_millis(500);

/// Consecutive failed polls after which the cluster counts as lost (about 30 s).
const MAX_POLL_FAILURES: u32 = 60;

/// How long a stopped job may take to reach its final state.
const STOP_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
struct Line {
    bin: u64,
    status: String,
    #[serde(default)]
    error: Option<String>,
}

/// A bin on its way through a Ray job.
struct Pending {
    values: PartitionValues,
    files: u64,
    /// What the bin was given: its result must answer it (`trust::check_result`).
    spec: BinSpec,
}

pub(crate) fn spawn(
    opts: RayOptions,
    ctx: RunContext,
    mut work: mpsc::UnboundedReceiver<Work>,
    results: mpsc::Sender<BinResult>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let job_id = format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S"),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let client = RayClient::new(&opts.address).map_err(|e| e.to_string());
        let mut batches = JoinSet::new();
        let mut next_bin = 0u64;
        let mut submission = 0u64;
        while let Some(first) = work.recv().await {
            let mut batch = vec![first];
            while let Ok(w) = work.try_recv() {
                batch.push(w);
            }
            let numbered: Vec<(u64, Work)> = batch
                .into_iter()
                .map(|w| {
                    next_bin += 1;
                    (next_bin, w)
                })
                .collect();
            submission += 1;
            let run = Batch {
                opts: opts.clone(),
                ctx: ctx.clone(),
                job_id: job_id.clone(),
                submission,
                results: results.clone(),
            };
            match &client {
                Ok(c) => {
                    batches.spawn(run.run(c.clone(), numbered));
                }
                Err(e) => {
                    let e = e.clone();
                    batches.spawn(async move {
                        run.fail_all(numbered, &e).await;
                        true
                    });
                }
            }
        }
        let mut clean = true;
        while let Some(r) = batches.join_next().await {
            clean &= r.unwrap_or(false);
        }
        if clean {
            remove_job_folder(&ctx.table.object_store(), &job_id).await;
        }
    })
}

/// Deletes the job's specs, results and ledgers (every result was committed or refused).
async fn remove_job_folder(store: &Arc<dyn ObjectStore>, job_id: &str) {
    let prefix = object_store::path::Path::from(job_prefix(job_id));
    let keys: Vec<_> = store
        .list(Some(&prefix))
        .filter_map(|m| async move { m.ok().map(|m| m.location) })
        .collect()
        .await;
    for k in keys {
        let _ = store.delete(&k).await;
    }
}

struct Batch {
    opts: RayOptions,
    ctx: RunContext,
    job_id: String,
    submission: u64,
    results: mpsc::Sender<BinResult>,
}

impl Batch {
    fn prefix(&self) -> String {
        job_prefix(&self.job_id)
    }

    async fn fail_all(&self, bins: Vec<(u64, Work)>, message: &str) {
        for (_, (values, _)) in bins {
            let _ = self
                .results
                .send(Err(BinError {
                    partition: values,
                    failure: BinFailure::Setup(message.to_string()),
                    outputs: Vec::new(),
                }))
                .await;
        }
    }

    /// The worker binary's package (uploaded unless the cluster has it).
    async fn worker_package(&self, client: &RayClient) -> Result<String, SubmitError> {
        let path = match &self.opts.worker_binary {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(SubmitError::NoBinary)?,
        };
        let binary = tokio::fs::read(&path)
            .await
            .map_err(|source| SubmitError::ReadBinary {
                path: path.clone(),
                source,
            })?;
        let name = package_name(content_hash(&[b"lakehealth_worker", &binary]));
        if !client.package_exists(&name).await? {
            let zipped = tokio::task::spawn_blocking(move || {
                zip(&[
                    Entry {
                        name: "lakehealth_worker/__init__.py".into(),
                        data: b"# lakehealth's worker binary, beside this file.\n".to_vec(),
                        mode: 0o644,
                    },
                    Entry {
                        name: "lakehealth_worker/lakehealth".into(),
                        data: binary,
                        mode: 0o755,
                    },
                ])
            })
            .await
            .map_err(SubmitError::PackagingTask)?
            .map_err(SubmitError::PackagingWorker)?;
            client.upload_package(&name, zipped).await?;
        }
        Ok(format!("gcs://{name}"))
    }

    /// The job's working directory: the driver and the bins' specs.
    async fn job_package(
        &self,
        client: &RayClient,
        specs: &[BinSpec],
    ) -> Result<String, SubmitError> {
        let bins = serde_json::json!({
            "max_retries": self.opts.max_retries,
            "specs": specs,
        });
        let bins = serde_json::to_vec_pretty(&bins)?;
        let name = package_name(content_hash(&[DRIVER.as_bytes(), &bins]));
        let zipped = zip(&[
            Entry {
                name: "driver.py".into(),
                data: DRIVER.as_bytes().to_vec(),
                mode: 0o644,
            },
            Entry {
                name: "bins.json".into(),
                data: bins,
                mode: 0o644,
            },
        ])
        .map_err(SubmitError::PackagingJob)?;
        client.upload_package(&name, zipped).await?;
        Ok(format!("gcs://{name}"))
    }

    async fn submit(&self, client: &RayClient, specs: &[BinSpec]) -> Result<String, SubmitError> {
        let worker = self.worker_package(client).await?;
        let working_dir = self.job_package(client, specs).await?;
        let body = serde_json::json!({
            "entrypoint": "python driver.py",
            "submission_id": format!("lakehealth-{}-{}", self.job_id, self.submission),
            "runtime_env": { "working_dir": working_dir, "py_modules": [worker] },
            "metadata": {
                "lakehealth.job": self.job_id,
                "lakehealth.table": self.ctx.uri,
                "lakehealth.bins": specs.len().to_string(),
            },
        });
        Ok(client.submit(&body).await?)
    }

    /// Runs the bins as one Ray job; true when the job reached a final state (nothing of it
    /// can still write).
    async fn run(self, client: RayClient, bins: Vec<(u64, Work)>) -> bool {
        let specs: Vec<BinSpec> = bins
            .iter()
            .map(|(id, (values, bin))| {
                BinSpec::new(
                    &self.ctx.uri,
                    &self.job_id,
                    *id,
                    self.ctx.table_version,
                    values,
                    bin,
                    &self.ctx.opts.rewrite,
                )
            })
            .collect();
        if self.ctx.cancel.is_cancelled() {
            self.fail_cancelled(bins).await;
            return true;
        }
        let id = match self.submit(&client, &specs).await {
            Ok(id) => id,
            Err(e) => {
                self.fail_all(bins, &format!("the bin was not run on Ray: {e}"))
                    .await;
                return true;
            }
        };
        let mut pending: BTreeMap<u64, Pending> = bins
            .into_iter()
            .zip(specs)
            .map(|((bin_id, (values, bin)), spec)| {
                (
                    bin_id,
                    Pending {
                        values,
                        files: bin.files.len() as u64,
                        spec,
                    },
                )
            })
            .collect();
        self.follow(&client, &id, &mut pending).await
    }

    async fn fail_cancelled(&self, bins: Vec<(u64, Work)>) {
        for (_, (values, _)) in bins {
            let _ = self
                .results
                .send(Err(BinError {
                    partition: values,
                    failure: BinFailure::Cancelled,
                    outputs: Vec::new(),
                }))
                .await;
        }
    }

    /// Follows the job's logs and status until every bin has a result.
    async fn follow(
        &self,
        client: &RayClient,
        id: &str,
        pending: &mut BTreeMap<u64, Pending>,
    ) -> bool {
        let mut seen = 0usize;
        let mut failures = 0u32;
        let last_error = loop {
            tokio::select! {
                _ = self.ctx.cancel.cancelled() => return self.stop(client, id, pending).await,
                _ = tokio::time::sleep(POLL) => {}
            }
            let polled = async {
                let logs = client.logs(id).await?;
                let info = client.status(id).await?;
                Ok::<_, RayError>((logs, info))
            }
            .await;
            let (logs, info) = match polled {
                Ok(v) => {
                    failures = 0;
                    v
                }
                Err(e) => {
                    failures += 1;
                    if failures >= MAX_POLL_FAILURES {
                        break e;
                    }
                    continue;
                }
            };
            self.read_lines(&logs, &mut seen, pending).await;
            if info.is_terminal() {
                // The log may have grown between the two calls.
                if let Ok(logs) = client.logs(id).await {
                    self.read_lines(&logs, &mut seen, pending).await;
                }
                self.finish_rest(pending, &ended(id, &info)).await;
                return true;
            }
        };
        // Lost contact: bins that finished are still committed; the others are reported
        // failed, their known outputs deleted, and the job folder kept (a worker may still be
        // running: `lakehealth compact --pickup` cleans up after it).
        let why = format!("lost contact with the Ray job {id}: {last_error}");
        self.finish_rest(pending, &why).await;
        false
    }

    /// Handles the driver's new progress lines (`seen`: lines already read).
    async fn read_lines(&self, logs: &str, seen: &mut usize, pending: &mut BTreeMap<u64, Pending>) {
        let lines: Vec<&str> = logs.lines().collect();
        // A trailing line without its newline may still be being written.
        let complete = if logs.ends_with('\n') {
            lines.len()
        } else {
            lines.len().saturating_sub(1)
        };
        for l in lines.iter().take(complete).skip(*seen) {
            let Some(json) = l.strip_prefix(LINE_PREFIX) else {
                continue;
            };
            let Ok(line) = serde_json::from_str::<Line>(json) else {
                continue;
            };
            match line.status.as_str() {
                "done" | "failed" => {
                    if let Some(p) = pending.remove(&line.bin) {
                        let why = line.error.unwrap_or_else(|| "the Ray task failed".into());
                        self.finish_bin(line.bin, p, &why).await;
                    }
                }
                _ => {}
            }
        }
        *seen = (*seen).max(complete);
    }

    /// Reports a bin from its result file; without one, a failure (`why`) with the outputs its
    /// ledger lists.
    async fn finish_bin(&self, bin_id: u64, p: Pending, why: &str) {
        let store = self.ctx.table.object_store();
        let key = result_key(&self.prefix(), bin_id);
        let read = read_record::<BinReport>(&store, &self.ctx.uri, RecordKind::BinResult, &key);
        let r = match read.await {
            Ok(Some(Err(refusal))) => {
                let failure = BinFailure::Verify(format!(
                    "the bin's result is refused: {refusal}; nothing of it is committed"
                ));
                Err(self.lost(bin_id, p.values.clone(), &p.spec, failure).await)
            }
            Ok(Some(Ok(report))) if check_result(&p.spec, &report).is_err() => {
                let why = check_result(&p.spec, &report)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                let failure =
                    BinFailure::Verify(format!("the bin's result does not answer its spec: {why}"));
                Err(self.lost(bin_id, p.values.clone(), &p.spec, failure).await)
            }
            Ok(Some(Ok(report))) => {
                let m = report.metrics.clone();
                // The files the commit removes are the coordinator's own, from the log it
                // planned on (the result removes the same paths: `check_result`).
                let r = report.into_result().map(|mut out| {
                    out.removes = removes_for(&p.spec.bin().files, &out.partition, None);
                    out
                });
                if r.is_ok() {
                    let c = &self.ctx.counters;
                    c.files_read.fetch_add(p.files, Ordering::Relaxed);
                    c.bins_done.fetch_add(1, Ordering::Relaxed);
                    if let Ok(out) = &r {
                        c.rows.fetch_add(out.rows, Ordering::Relaxed);
                    }
                    self.ctx
                        .bytes
                        .read
                        .fetch_add(m.bytes_read, Ordering::Relaxed);
                    self.ctx
                        .bytes
                        .written
                        .fetch_add(m.bytes_written, Ordering::Relaxed);
                }
                r
            }
            Ok(None) => Err(self
                .lost(
                    bin_id,
                    p.values.clone(),
                    &p.spec,
                    BinFailure::Setup(why.into()),
                )
                .await),
            Err(e) => Err(self
                .lost(
                    bin_id,
                    p.values.clone(),
                    &p.spec,
                    BinFailure::Setup(format!("{why}; its result could not be read: {e}")),
                )
                .await),
        };
        let _ = self.results.send(only_outputs_of(&p.spec, r)).await;
    }

    /// A bin without a result: the failure, with the outputs its ledger lists (those that can
    /// be outputs of `spec`).
    async fn lost(
        &self,
        bin_id: u64,
        values: PartitionValues,
        spec: &BinSpec,
        failure: BinFailure,
    ) -> BinError {
        let store = self.ctx.table.object_store();
        let key = ledger_key(&self.prefix(), bin_id);
        let outputs = match read_ledger(&store, &key).await {
            Ok(Some(l)) if l.job == spec.job_id => l.outputs,
            Ok(_) => Vec::new(),
            Err(e) => {
                tracing::warn!(
                    "ray: {}: {key}: {e}; nothing it names is deleted",
                    self.ctx.uri
                );
                Vec::new()
            }
        };
        BinError {
            partition: values,
            failure,
            outputs: only_outputs(spec, outputs),
        }
    }

    /// Every bin still pending: its result if it has one, else a failure (`why`).
    async fn finish_rest(&self, pending: &mut BTreeMap<u64, Pending>, why: &str) {
        for (bin_id, p) in std::mem::take(pending) {
            self.finish_bin(bin_id, p, why).await;
        }
    }

    /// Stops the Ray job and waits for it to end; then every pending bin is cancelled with its
    /// outputs (the coordinator deletes them). True when the job was seen to end.
    async fn stop(
        &self,
        client: &RayClient,
        id: &str,
        pending: &mut BTreeMap<u64, Pending>,
    ) -> bool {
        let _ = client.stop(id).await;
        let deadline = tokio::time::Instant::now() + STOP_WAIT;
        let mut ended = false;
        while tokio::time::Instant::now() < deadline {
            if client.status(id).await.is_ok_and(|i| i.is_terminal()) {
                ended = true;
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        // A task's worker subprocess notices its parent is gone within a second and stops.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for (bin_id, p) in std::mem::take(pending) {
            let store = self.ctx.table.object_store();
            let key = result_key(&self.prefix(), bin_id);
            let read = read_record::<BinReport>(&store, &self.ctx.uri, RecordKind::BinResult, &key);
            let r = match read.await {
                // Finished before the stop: the coordinator deletes its outputs (cancelled).
                Ok(Some(Ok(report))) if check_result(&p.spec, &report).is_ok() => {
                    report.into_result().map_err(|mut e| {
                        e.failure = BinFailure::Cancelled;
                        e
                    })
                }
                _ => Err(self
                    .lost(bin_id, p.values.clone(), &p.spec, BinFailure::Cancelled)
                    .await),
            };
            let _ = self.results.send(only_outputs_of(&p.spec, r)).await;
        }
        ended
    }
}

/// Of paths a worker's files name, those that can be outputs of `spec`'s bin (`trust`): the
/// coordinator deletes a failed bin's outputs, never the log or a file of another partition.
fn only_outputs(spec: &BinSpec, paths: Vec<String>) -> Vec<String> {
    let (ok, refused) = trust::only_outputs(spec, paths);
    for r in refused {
        tracing::warn!("ray: not deleted: {r}");
    }
    ok
}

fn only_outputs_of(spec: &BinSpec, r: BinResult) -> BinResult {
    r.map_err(|mut e| {
        e.outputs = only_outputs(spec, std::mem::take(&mut e.outputs));
        e
    })
}

fn ended(id: &str, info: &JobInfo) -> String {
    format!(
        "the Ray job {id} ended ({}{}) before the bin reported a result",
        info.status,
        info.message
            .as_deref()
            .map(|m| format!(": {}", m.trim()))
            .unwrap_or_default()
    )
}

/// Why a job could not be submitted to Ray.
#[derive(Debug, thiserror::Error)]
enum SubmitError {
    #[error("cannot locate the running lakehealth binary: {0}")]
    NoBinary(#[source] std::io::Error),
    #[error("cannot read the worker binary {}: {source}", path.display())]
    ReadBinary {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The task zipping the worker binary stopped.
    #[error("packaging the worker binary: {0}")]
    PackagingTask(#[source] tokio::task::JoinError),
    #[error("packaging the worker binary: {0}")]
    PackagingWorker(#[source] std::io::Error),
    #[error("packaging the job: {0}")]
    PackagingJob(#[source] std::io::Error),
    /// The bins' specs as JSON.
    #[error(transparent)]
    Specs(#[from] serde_json::Error),
    #[error(transparent)]
    Ray(#[from] RayError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_prints_the_progress_lines_the_coordinator_reads_and_names_itself_the_parent() {
        assert!(DRIVER.contains("\"LAKEHEALTH_BIN \""));
        assert!(DRIVER.contains(&format!(
            "{}=str(os.getpid())",
            super::super::worker::PARENT_ENV
        )));
        let l: Line =
            serde_json::from_str(r#"{"bin": 3, "status": "failed", "error": "boom"}"#).unwrap();
        assert_eq!((l.bin, l.status.as_str()), (3, "failed"));
        assert_eq!(l.error.as_deref(), Some("boom"));
    }
}
