//! The Ray executor against a real local Ray head (started once per test process by the
//! harness, stopped when it exits), and the worker command and result pickup without Ray.
//! Rows and values are read by the independent reader (tests/py/dump_rows.py,
//! tests/py/verify_table.py); leftover files are found by listing the table's folder.

use std::path::Path;
use std::sync::Arc;

use lakehealth::engine::compact::events::{JobEvent, JobSummary};
use lakehealth::engine::compact::execute::execute;
use lakehealth::engine::compact::executor::{Executor, RayOptions};
use lakehealth::engine::compact::job::{CompactRequest, PreparedJob, prepare, run_isolated};
use lakehealth::engine::compact::locks::PartitionLocks;
use lakehealth::engine::exec::pickup::{PickupMode, pickup};
use lakehealth::engine::exec::spec::BinSpec;
use lakehealth::engine::location::Location;
use lakehealth::engine::sealed::RecordKind;
use lakehealth::engine::size::KIB;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::RequestExt;
use crate::support::common::*;
use crate::support::harness::{http, ray_head};
use crate::support::sealed::{ledger_outputs, open_record, write_sealed};

/// Small targets: a bin closes once it predicts two targets of output, so a small target makes
/// many bins of a few small files.
fn request(max_bin: u64) -> CompactRequest {
    crate::support::request()
        .target((max_bin / 2).min(64 * KIB))
        .parallelism(2)
        .max_bin(max_bin)
}

/// The test binary is not lakehealth: the workers run the CLI binary cargo built.
fn ray() -> Executor {
    let mut r = RayOptions::new(&ray_head().address);
    r.worker_binary = Some(env!("CARGO_BIN_EXE_lakehealth").into());
    Executor::Ray(r)
}

async fn prepared(l: &Location, max_bin: u64, executor: Executor) -> PreparedJob {
    let mut job = prepare(l, &request(max_bin), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    job.exec.executor = executor;
    job
}

async fn run(job: PreparedJob, cancel: CancellationToken) -> (JobSummary, Vec<JobEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let s = run_isolated(job, Arc::new(PartitionLocks::default()), cancel, tx).await;
    let mut evs = Vec::new();
    while let Ok(e) = rx.try_recv() {
        evs.push(e);
    }
    (s, evs)
}

/// tests/py/dump_rows.py's view: rows, distinct rows and the fingerprint of every value.
fn dump(path: &Path) -> serde_json::Value {
    let o = py_script("dump_rows.py").arg(path).output().unwrap();
    assert!(
        o.status.success(),
        "dump_rows.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Every commit file's actions after `after`, in version order.
fn commits_after(table: &Path, after: u64) -> Vec<Vec<serde_json::Value>> {
    commits_from(table, after + 1)
}

/// What is left in the job folders lakehealth owns under the table. Not object_store's local
/// staging files (`<key>#<n>`): a process SIGKILLed mid-write leaves one, no listing shows it,
/// and docs/guide.md says so (the S3 equivalent is an incomplete multipart upload).
fn job_state(table: &Path) -> Vec<String> {
    let dir = table.join("_lakehealth/jobs");
    let mut out = Vec::new();
    if dir.exists() {
        walk(&dir, &dir, &mut out);
    }
    out.retain(|p| !is_staging(p));
    out
}

fn is_staging(p: &str) -> bool {
    p.rsplit_once('#')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn python_compacts(path: &Path, filter: Option<&str>) {
    let mut c = py_script("race_optimize.py");
    c.arg(path);
    if let Some(f) = filter {
        c.args(["--partition-filter", f]);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "race_optimize.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ray_compaction_keeps_every_value_as_the_local_executor_does_with_one_commit_per_bin() {
    let (d, l, rows) = seeded(40).await;
    let local_copy = tempfile::tempdir().unwrap();
    copy_dir(d.path(), local_copy.path());
    let before = dump(d.path());

    let (ls, _) = run(
        prepared(&loc(local_copy.path()), 24 * KIB, Executor::Local).await,
        CancellationToken::new(),
    )
    .await;
    assert!(ls.errors.is_empty(), "{:?}", ls.errors);

    let job = prepared(&l, 24 * KIB, ray()).await;
    let (bins, v0) = (job.plan.bins, job.plan.table_version);
    assert!(bins >= 3, "several bins: {bins}");
    let (s, evs) = run(job, CancellationToken::new()).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.commits.len() as u64, bins, "one commit per bin");
    assert_eq!(
        evs.iter()
            .filter(|e| matches!(e, JobEvent::BinFinished { .. }))
            .count() as u64,
        bins
    );
    assert!(
        evs.iter()
            .any(|e| matches!(e, JobEvent::Progress(p) if p.bins_done == bins && p.rows == s.rows)),
        "progress counts every bin and row"
    );

    // Same rows and values as before and as the local executor's result, read independently.
    let ray_after = dump(d.path());
    let local_after = dump(local_copy.path());
    assert_eq!(ray_after["fingerprint"], before["fingerprint"]);
    assert_eq!(ray_after["fingerprint"], local_after["fingerprint"]);
    assert_eq!(ray_after["rows"], serde_json::json!(rows));
    assert_eq!(ray_after["distinct_rows"], serde_json::json!(rows));
    assert_eq!(ray_after["files"], local_after["files"], "the same rolls");

    let commits = commits_after(d.path(), v0);
    assert_eq!(commits.len() as u64, bins);
    for c in &commits {
        let info = c.iter().find_map(|a| a.get("commitInfo")).unwrap();
        assert_eq!(info["operation"], "OPTIMIZE");
        for a in c {
            for kind in ["add", "remove"] {
                if let Some(x) = a.get(kind) {
                    assert_eq!(x["dataChange"], false, "{kind} {x}");
                }
            }
        }
    }
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
    assert_eq!(
        job_state(d.path()),
        Vec::<String>::new(),
        "job folder removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ray_bins_whose_inputs_another_compactor_took_are_refused_and_their_outputs_deleted() {
    let (d, l, rows) = seeded(40).await;
    let job = prepared(&l, 24 * KIB, ray()).await;
    assert!(job.plan.bins >= 2);
    // Python deltalake compacts every file after the plan was made; the stale plan runs as is.
    python_compacts(d.path(), None);
    let (tx, _rx) = mpsc::unbounded_channel();
    let s = execute(
        &job.table,
        &job.plan,
        &job.exec,
        CancellationToken::new(),
        tx,
    )
    .await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.conflicts.len() as u64, job.plan.bins, "every bin refused");
    assert!(s.commits.is_empty(), "{:?}", s.commits);
    assert_eq!(
        s.conflicts[0].conflict.operation.as_deref(),
        Some("OPTIMIZE")
    );
    assert!(s.orphaned_files.is_empty(), "{:?}", s.orphaned_files);
    assert_exact(d.path(), rows);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
    assert_eq!(job_state(d.path()), Vec::<String>::new());
}

/// The Ray jobs this test process submitted for `job_id`, with their status.
fn ray_job_statuses(table_uri: &str) -> Vec<String> {
    let port: u16 = ray_head()
        .address
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (code, body) = http(port, "GET", "/api/jobs/").unwrap();
    assert_eq!(code, 200, "{body}");
    let jobs: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    jobs.iter()
        .filter(|j| j["metadata"]["lakehealth.table"] == table_uri)
        .map(|j| j["status"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ray_job_stopped_midway_leaves_no_uncommitted_output() {
    let (d, l, rows) = seeded(60).await;
    let job = prepared(&l, 16 * KIB, ray()).await;
    let bins = job.plan.bins;
    assert!(bins >= 6, "enough bins to stop midway: {bins}");
    let uri = job.table.uri.clone();
    let cancel = CancellationToken::new();
    // Cancel as soon as the first bin has committed: the others are queued or running.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let c2 = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut evs = Vec::new();
        while let Some(e) = rx.recv().await {
            if matches!(e, JobEvent::Committed(_)) {
                c2.cancel();
            }
            evs.push(e);
        }
        evs
    });
    let s = run_isolated(job, Arc::new(PartitionLocks::default()), cancel, tx).await;
    let evs = watcher.await.unwrap();
    assert!(s.cancelled);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(!s.commits.is_empty() && (s.commits.len() as u64) < bins);
    assert!(evs.iter().any(|e| matches!(e, JobEvent::Cancelled { .. })));
    assert_eq!(ray_job_statuses(&uri), vec!["STOPPED".to_string()]);
    assert!(s.orphaned_files.is_empty(), "{:?}", s.orphaned_files);
    assert_exact(d.path(), rows);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
    assert_eq!(job_state(d.path()), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_fails_each_bin_and_changes_nothing() {
    let (d, l, rows) = seeded(20).await;
    let port = crate::support::harness::free_port();
    let mut r = RayOptions::new(&format!("http://127.0.0.1:{port}"));
    r.worker_binary = Some(env!("CARGO_BIN_EXE_lakehealth").into());
    let job = prepared(&l, 48 * KIB, Executor::Ray(r)).await;
    let bins = job.plan.bins;
    let (s, _) = run(job, CancellationToken::new()).await;
    assert_eq!(s.failures.len() as u64, bins);
    assert!(
        s.errors[0].contains("cannot reach the Ray cluster"),
        "{:?}",
        s.errors
    );
    assert!(s.commits.is_empty());
    assert_exact(d.path(), rows);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
}

/// Runs `lakehealth worker --spec` on a spec file; returns its stdout line.
fn worker(spec: &BinSpec, dir: &Path) -> serde_json::Value {
    let file = dir.join(format!("spec-{}.json", spec.bin_id));
    std::fs::write(&file, serde_json::to_vec(spec).unwrap()).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .arg("worker")
        .arg("--spec")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "worker: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A sealed record under a table's `_lakehealth/`, opened (the table is the folder above it).
fn record_at(file: &Path, kind: RecordKind) -> serde_json::Value {
    let text = file.to_str().unwrap();
    let (table, rel) = text.split_once("/_lakehealth/").unwrap();
    open_record(Path::new(table), &format!("_lakehealth/{rel}"), kind)
}

fn output_paths(result: &Path) -> Vec<String> {
    let v = record_at(result, RecordKind::BinResult);
    v["adds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| decoded(a["path"].as_str().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_results_are_durable_and_pickup_commits_those_whose_inputs_are_still_active() {
    let (d, l, rows) = seeded(40).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let bins: Vec<_> = job
        .plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(move |b| (p.values.clone(), b.clone())))
        .collect();
    assert!(bins.len() >= 2, "two bins: {}", bins.len());
    let v0 = job.plan.table_version;
    let spec = |i: usize| {
        BinSpec::new(
            &job.table.uri,
            "restart-test",
            i as u64 + 1,
            v0,
            &bins[i].0,
            &bins[i].1,
            &job.exec.rewrite,
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    let jobs = d.path().join("_lakehealth/jobs/restart-test");

    // 1. A worker finishes; its coordinator is gone. The worker committed nothing.
    assert_eq!(worker(&spec(0), tmp.path())["status"], "done");
    assert!(commits_after(d.path(), v0).is_empty());
    let first = jobs.join("bin-1.result.json");
    let first_outputs = output_paths(&first);
    assert!(first_outputs.iter().all(|p| d.path().join(p).exists()));
    let saved = std::fs::read(&first).unwrap();
    let first_spec = jobs.join("bin-1.spec.json");
    let saved_spec = std::fs::read(&first_spec).unwrap();
    // A restarted coordinator commits it: its inputs are all still active.
    let mut table = prepared(&l, 48 * KIB, Executor::Local).await.table;
    let p = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert_eq!((p.committed.len(), p.discarded.len()), (1, 0), "{p:?}");
    let c = commits_after(d.path(), v0);
    assert_eq!(c.len(), 1);
    let info = c[0].iter().find_map(|a| a.get("commitInfo")).unwrap();
    assert_eq!(info["operation"], "OPTIMIZE");
    assert_exact(d.path(), rows);
    assert_eq!(job_state(d.path()), Vec::<String>::new(), "settled once");

    // 2. The coordinator crashed after that commit, before removing the result: the result is
    // recognised as committed (its outputs are active) and nothing is deleted.
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::write(&first_spec, &saved_spec).unwrap();
    std::fs::write(&first, &saved).unwrap();
    let p = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert_eq!(p.already_committed, 1, "{p:?}");
    assert!(p.committed.is_empty() && p.deleted_outputs == 0, "{p:?}");
    assert!(first_outputs.iter().all(|p| d.path().join(p).exists()));

    // 3. Another bin finishes, then Python deltalake compacts the table (its inputs go).
    assert_eq!(worker(&spec(1), tmp.path())["status"], "done");
    let second_outputs = output_paths(&jobs.join("bin-2.result.json"));
    assert!(second_outputs.iter().all(|p| d.path().join(p).exists()));
    python_compacts(d.path(), None);
    let p = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert!(p.committed.is_empty(), "{p:?}");
    assert_eq!(p.discarded.len(), 1, "{p:?}");
    assert_eq!(p.deleted_outputs as usize, second_outputs.len());
    assert!(second_outputs.iter().all(|p| !d.path().join(p).exists()));
    assert_exact(d.path(), rows);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
    assert_eq!(job_state(d.path()), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_worker_returns_its_finished_result_and_a_killed_one_leaves_a_ledger() {
    let (d, l, _) = seeded(20).await;
    let job = prepared(&l, 1024 * KIB, Executor::Local).await;
    let p = &job.plan.partitions[0];
    let spec = BinSpec::new(
        &job.table.uri,
        "retry-test",
        1,
        job.plan.table_version,
        &p.values,
        &p.bins[0],
        &job.exec.rewrite,
    );
    let tmp = tempfile::tempdir().unwrap();
    worker(&spec, tmp.path());
    let result = d
        .path()
        .join("_lakehealth/jobs/retry-test/bin-1.result.json");
    let first = std::fs::read(&result).unwrap();
    // Ray retried the task after the worker had finished: the same result, no new outputs.
    worker(&spec, tmp.path());
    assert_eq!(std::fs::read(&result).unwrap(), first);
    let ledger = ledger_outputs(d.path(), "_lakehealth/jobs/retry-test/bin-1.outputs.json");
    let v = record_at(&result, RecordKind::BinResult);
    let adds: Vec<String> = v["adds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ledger, adds, "the ledger lists every output");
    assert_eq!(leftover_files(d.path()).len(), adds.len());
}

/// A worker retried on a bin deletes what its earlier attempt's ledger lists; a ledger is a
/// plain file beside the table, so a planted one naming the bin's own input (an active file),
/// the log and a path out of the root must not make it delete any of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_ledger_never_makes_a_retried_worker_delete_an_active_file_or_the_log() {
    let (d, l, rows) = seeded(20).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let bins = bins_of(&job);
    let spec = BinSpec::new(
        &job.table.uri,
        "replanted",
        1,
        job.plan.table_version,
        &bins[0].0,
        &bins[0].1,
        &job.exec.rewrite,
    );
    let jobs = d.path().join("_lakehealth/jobs/replanted");
    std::fs::create_dir_all(&jobs).unwrap();
    let input = d.path().join(&spec.files[0].store_path);
    assert!(input.exists());
    let planted = vec![
        spec.files[0].path.clone(),
        "_delta_log/00000000000000000000.json".to_string(),
        "../outside.parquet".to_string(),
    ];
    // Sealed with the installation key: the checks behind the seal stop it even so.
    write_sealed(
        d.path(),
        "_lakehealth/jobs/replanted/bin-1.outputs.json",
        RecordKind::OutputLedger,
        &serde_json::json!({"job": "replanted", "outputs": planted}),
    );
    let log_before = everything(&d.path().join("_delta_log"));
    let tmp = tempfile::tempdir().unwrap();
    let r = worker(&spec, tmp.path());
    assert_eq!(r["status"], "done", "{r}");
    assert!(input.exists(), "the bin's active input was deleted");
    assert_eq!(everything(&d.path().join("_delta_log")), log_before);
    assert_exact(d.path(), rows);
}

/// The outputs a bin's ledger lists, as paths on disk (none when it has no ledger).
fn ledger_of(table: &Path, job: &str, bin: u64) -> Vec<String> {
    let rel = format!("_lakehealth/jobs/{job}/bin-{bin}.outputs.json");
    if !table.join(&rel).exists() {
        return Vec::new();
    }
    ledger_outputs(table, &rel)
        .iter()
        .map(|p| decoded(p))
        .collect()
}

/// The instant a stopped Ray job can kill a worker: right after an output landed. The worker
/// (SIGKILLed, no chance to clean up) has already listed that output, so pickup deletes every
/// file it left. A ledger written after the file (as it once was, polled) fails this.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_the_instant_an_output_lands_has_listed_it_and_pickup_deletes_it() {
    let (d, l, rows) = seeded(60).await;
    let job = prepared(&l, 4096 * KIB, Executor::Local).await;
    let p = &job.plan.partitions[0];
    let tmp = tempfile::tempdir().unwrap();
    for kill_at in 1..=3usize {
        let job_id = format!("kill-{kill_at}");
        let mut spec = BinSpec::new(
            &job.table.uri,
            &job_id,
            1,
            job.plan.table_version,
            &p.values,
            &p.bins[0],
            &job.exec.rewrite,
        );
        // An output every input file or two: many instants to be killed at.
        spec.target_file_size = 2 * KIB;
        let file = tmp.path().join(format!("{job_id}.json"));
        std::fs::write(&file, serde_json::to_vec(&spec).unwrap()).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lakehealth"))
            .arg("worker")
            .arg("--spec")
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        loop {
            if leftover_files(d.path()).len() >= kill_at {
                child.kill().unwrap();
                break;
            }
            let done = child.try_wait().unwrap();
            assert!(
                done.is_none(),
                "the worker finished before output {kill_at} landed"
            );
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        child.wait().unwrap();
        let left = leftover_files(d.path());
        assert!(left.len() >= kill_at, "{left:?}");
        let listed = ledger_of(d.path(), &job_id, 1);
        let unlisted: Vec<_> = left.iter().filter(|f| !listed.contains(f)).collect();
        assert!(
            unlisted.is_empty(),
            "outputs not in the ledger: {unlisted:?}"
        );
        let mut table = prepared(&l, 4096 * KIB, Executor::Local).await.table;
        let s = pickup(&mut table.table, &table.uri, PickupMode::Apply)
            .await
            .unwrap();
        assert!(s.committed.is_empty(), "{s:?}");
        assert_eq!(leftover_files(d.path()), Vec::<String>::new());
        assert_eq!(job_state(d.path()), Vec::<String>::new());
    }
    assert_exact(d.path(), rows);
}

/// Every file under the table (the log and lakehealth's state included) with its bytes.
fn everything(table: &Path) -> Vec<(String, Vec<u8>)> {
    fn all(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                all(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    all(table, table, &mut out);
    out.sort();
    out
}

/// The bins of a prepared job, with their partitions.
fn bins_of(
    job: &PreparedJob,
) -> Vec<(
    lakehealth::engine::model::partition::PartitionValues,
    lakehealth::engine::compact::plan::Bin,
)> {
    job.plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(move |b| (p.values.clone(), b.clone())))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_pickup_dry_run_commits_nothing_and_deletes_nothing() {
    let (d, l, rows) = seeded(40).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let bins = bins_of(&job);
    let v0 = job.plan.table_version;
    let spec = BinSpec::new(
        &job.table.uri,
        "dry",
        1,
        v0,
        &bins[0].0,
        &bins[0].1,
        &job.exec.rewrite,
    );
    let tmp = tempfile::tempdir().unwrap();
    // A finished result pickup would commit, and a ledger of a worker that never finished.
    assert_eq!(worker(&spec, tmp.path())["status"], "done");
    let mut unfinished = spec.clone();
    unfinished.bin_id = 2;
    write_sealed(
        d.path(),
        "_lakehealth/jobs/dry/bin-2.spec.json",
        RecordKind::BinSpec,
        &unfinished,
    );
    let stray = output_paths(&d.path().join("_lakehealth/jobs/dry/bin-1.result.json"));
    write_sealed(
        d.path(),
        "_lakehealth/jobs/dry/bin-2.outputs.json",
        RecordKind::OutputLedger,
        &serde_json::json!({"job": "dry", "outputs": stray}),
    );
    let before = everything(d.path());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .args([
            "compact",
            d.path().to_str().unwrap(),
            "--pickup",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("pickup (dry run, nothing changed): 1 results would commit"),
        "{err}"
    );
    assert!(
        everything(d.path()) == before,
        "a dry run changed files: {err}"
    );
    assert!(commits_after(d.path(), v0).is_empty());
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pickup_never_commits_a_result_whose_outputs_hold_other_rows_than_the_inputs_it_removes() {
    let (d, l, rows) = seeded(40).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let bins = bins_of(&job);
    assert!(
        bins.len() >= 2 && bins[0].0 == bins[1].0,
        "two bins of one partition"
    );
    let v0 = job.plan.table_version;
    let spec = |i: usize| {
        BinSpec::new(
            &job.table.uri,
            "forged",
            1,
            v0,
            &bins[i].0,
            &bins[i].1,
            &job.exec.rewrite,
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(worker(&spec(0), tmp.path())["status"], "done");
    // The spec and result now claim the second bin's inputs, but the outputs hold the first
    // bin's rows: consistent on paper, wrong in content (committing it would lose the second
    // bin's rows and duplicate the first's).
    let jobs = d.path().join("_lakehealth/jobs/forged");
    let spec_file = jobs.join("bin-1.spec.json");
    let written = std::fs::metadata(&spec_file).unwrap().modified().unwrap();
    // Resealed, as only a holder of the installation key could: the proof stops it even so.
    write_sealed(
        d.path(),
        "_lakehealth/jobs/forged/bin-1.spec.json",
        RecordKind::BinSpec,
        &spec(1),
    );
    std::fs::File::options()
        .write(true)
        .open(&spec_file)
        .unwrap()
        .set_modified(written)
        .unwrap();
    let result_file = jobs.join("bin-1.result.json");
    let mut result = record_at(&result_file, RecordKind::BinResult);
    let template = result["removes"][0].clone();
    result["removes"] = spec(1)
        .files
        .iter()
        .map(|f| {
            let mut r = template.clone();
            r["path"] = f.path.clone().into();
            r["size"] = f.size.into();
            r
        })
        .collect::<Vec<_>>()
        .into();
    write_sealed(
        d.path(),
        "_lakehealth/jobs/forged/bin-1.result.json",
        RecordKind::BinResult,
        &result,
    );
    let outputs = output_paths(&result_file);

    let mut table = prepared(&l, 48 * KIB, Executor::Local).await.table;
    let p = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert!(p.committed.is_empty(), "{p:?}");
    assert_eq!(p.discarded.len(), 1, "{p:?}");
    assert!(p.discarded[0].contains("its outputs"), "{p:?}");
    assert!(commits_after(d.path(), v0).is_empty());
    assert!(
        outputs.iter().all(|o| !d.path().join(o).exists()),
        "outputs deleted"
    );
    assert_exact(d.path(), rows);
    assert_eq!(job_state(d.path()), Vec::<String>::new());
}

/// A spec whose file maps a real input (`path`, what the commit removes) to another file
/// (`store_path`) that holds the outputs' rows: before the proof read the log's files, the
/// proof passed on the other file while the commit removed the real input (rows lost and
/// duplicated). Sealed as only a key holder could: the log is what stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pickup_proves_and_removes_the_files_the_log_names_never_a_specs_store_path() {
    let (d, l, rows) = seeded(20).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let p = &job.plan.partitions[0];
    let files = &p.bins[0].files;
    assert!(files.len() >= 2, "two files in a bin");
    let (shown, removed) = (files[0].clone(), files[1].clone());
    let v0 = job.plan.table_version;
    let one =
        |f: &lakehealth::engine::compact::plan::FileRef| lakehealth::engine::compact::plan::Bin {
            files: vec![f.clone()],
            bytes: f.size,
            predicted_outputs: 1,
        };
    let spec = BinSpec::new(
        &job.table.uri,
        "mapped",
        1,
        v0,
        &p.values,
        &one(&shown),
        &job.exec.rewrite,
    );
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(worker(&spec, tmp.path())["status"], "done");
    let result_file = d.path().join("_lakehealth/jobs/mapped/bin-1.result.json");
    let outputs = output_paths(&result_file);
    // The forged spec: the input is `removed`, read from `shown`'s file.
    let mut forged = spec.clone();
    forged.files[0].path = removed.path.clone();
    let spec_file = d.path().join("_lakehealth/jobs/mapped/bin-1.spec.json");
    let written = std::fs::metadata(&spec_file).unwrap().modified().unwrap();
    write_sealed(
        d.path(),
        "_lakehealth/jobs/mapped/bin-1.spec.json",
        RecordKind::BinSpec,
        &forged,
    );
    std::fs::File::options()
        .write(true)
        .open(&spec_file)
        .unwrap()
        .set_modified(written)
        .unwrap();
    let mut result = record_at(&result_file, RecordKind::BinResult);
    result["removes"][0]["path"] = removed.path.clone().into();
    result["removes"][0]["size"] = removed.size.into();
    write_sealed(
        d.path(),
        "_lakehealth/jobs/mapped/bin-1.result.json",
        RecordKind::BinResult,
        &result,
    );

    let mut table = prepared(&l, 48 * KIB, Executor::Local).await.table;
    let s = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert!(s.committed.is_empty(), "{s:?}");
    assert_eq!(s.discarded.len(), 1, "{s:?}");
    assert!(commits_after(d.path(), v0).is_empty(), "nothing committed");
    assert!(d.path().join(decoded(&removed.path)).exists());
    assert!(
        outputs.iter().all(|o| !d.path().join(o).exists()),
        "outputs deleted"
    );
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_ledger_never_makes_pickup_delete_the_log_an_active_file_or_another_partitions_file()
 {
    let (d, l, rows) = seeded(20).await;
    let job = prepared(&l, 48 * KIB, Executor::Local).await;
    let bins = bins_of(&job);
    let spec = BinSpec::new(
        &job.table.uri,
        "planted",
        1,
        job.plan.table_version,
        &bins[0].0,
        &bins[0].1,
        &job.exec.rewrite,
    );
    let jobs = d.path().join("_lakehealth/jobs/planted");
    std::fs::create_dir_all(&jobs).unwrap();
    // A data file in another partition's folder, newer than the spec (not an output of it).
    let other = d.path().join("ingestion_date=1999-01-01");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.parquet"), b"not ours").unwrap();
    write_sealed(
        d.path(),
        "_lakehealth/jobs/planted/bin-1.spec.json",
        RecordKind::BinSpec,
        &spec,
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    let old_output = d.path().join(&spec.files[0].store_path);
    let planted = vec![
        "_delta_log/00000000000000000001.json".to_string(),
        "_delta_log/00000000000000000000.json".to_string(),
        spec.files[0].path.clone(),
        "ingestion_date=1999-01-01/x.parquet".to_string(),
        "../outside.parquet".to_string(),
    ];
    // Sealed with the installation key: the checks behind the seal stop it even so.
    write_sealed(
        d.path(),
        "_lakehealth/jobs/planted/bin-1.outputs.json",
        RecordKind::OutputLedger,
        &serde_json::json!({"job": "planted", "outputs": planted}),
    );
    // A ledger with no spec beside it: nothing of it is touched.
    let orphan = d.path().join("_lakehealth/jobs/nospec");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(
        orphan.join("bin-1.outputs.json"),
        serde_json::to_vec(&planted).unwrap(),
    )
    .unwrap();
    let log_before = everything(&d.path().join("_delta_log"));

    let mut table = prepared(&l, 48 * KIB, Executor::Local).await.table;
    let p = pickup(&mut table.table, &table.uri, PickupMode::Apply)
        .await
        .unwrap();
    assert_eq!(p.deleted_outputs, 0, "{p:?}");
    assert!(p.refused_paths.len() >= 3, "{p:?}");
    assert_eq!(everything(&d.path().join("_delta_log")), log_before);
    assert!(old_output.exists(), "an active file");
    assert!(other.join("x.parquet").exists(), "another partition's file");
    assert!(
        orphan.join("bin-1.outputs.json").exists(),
        "left as is: {p:?}"
    );
    assert_exact(d.path(), rows);
}

/// Copies the local table `dir` (log and data files) into `store` (the S3 table's root).
async fn upload(dir: &Path, store: &Arc<dyn object_store::ObjectStore>) {
    use object_store::ObjectStoreExt;
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    for e in std::fs::read_dir(dir.join("_delta_log")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            files.push(format!("_delta_log/{}", e.file_name().to_string_lossy()));
        }
    }
    for rel in files {
        let bytes = std::fs::read(dir.join(&rel)).unwrap();
        store
            .put(&object_store::path::Path::from(rel.as_str()), bytes.into())
            .await
            .unwrap();
    }
}

/// The S3 table's data files no commit added, and what is left under `_lakehealth/jobs/`.
async fn s3_leftovers(store: &Arc<dyn object_store::ObjectStore>) -> (Vec<String>, Vec<String>) {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt;
    let keys: Vec<String> = store
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    let mut added = std::collections::BTreeSet::new();
    for k in keys
        .iter()
        .filter(|k| k.starts_with("_delta_log/") && k.ends_with(".json"))
    {
        let bytes = store
            .get(&object_store::path::Path::from(k.as_str()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        for line in String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let a: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(p) = a["add"]["path"].as_str() {
                added.insert(decoded(p));
            }
        }
    }
    let data = keys
        .iter()
        .filter(|k| k.ends_with(".parquet") && !k.starts_with('_') && !added.contains(&decoded(k)))
        .cloned()
        .collect();
    let jobs = keys
        .iter()
        .filter(|k| k.starts_with("_lakehealth/jobs/"))
        .cloned()
        .collect();
    (data, jobs)
}

/// The same stop as `a_ray_job_stopped_midway_leaves_no_uncommitted_output`, on S3 (moto):
/// the workers reach the bucket with the credentials of their nodes' environment (none are
/// passed), the finished bins commit, every other output is deleted, and Python deltalake reads
/// every row exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_a_ray_job_stopped_midway_commits_what_finished_and_deletes_every_other_output() {
    let moto = &ray_head().moto;
    let bucket = format!("ray-stop-{}", std::process::id());
    moto.create_bucket(&bucket);
    let (d, _, rows) = seeded(60).await;
    let uri = format!("s3://{bucket}/t");
    let s3 = Location::parse(&uri).unwrap();
    let store = s3.open_store(&moto.storage_options()).unwrap();
    upload(d.path(), &store).await;
    let req = request(16 * KIB).storage_options(moto.storage_options());
    let mut job = prepare(&s3, &req, kib64_thresholds(), 1.0).await.unwrap();
    job.exec.executor = ray();
    let bins = job.plan.bins;
    assert!(bins >= 6, "enough bins to stop midway: {bins}");
    assert_eq!(job.table.uri, uri);
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let c2 = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut evs = Vec::new();
        while let Some(e) = rx.recv().await {
            if matches!(e, JobEvent::Committed(_)) {
                c2.cancel();
            }
            evs.push(e);
        }
        evs
    });
    let s = run_isolated(job, Arc::new(PartitionLocks::default()), cancel, tx).await;
    let evs = watcher.await.unwrap();
    assert!(s.cancelled);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(
        !s.commits.is_empty() && (s.commits.len() as u64) < bins,
        "{:?}",
        s.commits
    );
    assert!(evs.iter().any(|e| matches!(e, JobEvent::Cancelled { .. })));
    assert_eq!(ray_job_statuses(&uri), vec!["STOPPED".to_string()]);
    assert!(s.orphaned_files.is_empty(), "{:?}", s.orphaned_files);
    let back = read_back(&uri, Some(&moto.options_json()));
    assert_eq!(
        (back.rows, back.distinct_ids),
        (rows, rows),
        "every row, once"
    );
    assert_eq!(
        s3_leftovers(&store).await,
        (Vec::new(), Vec::new()),
        "no uncommitted output, no job folder"
    );
}

/// A worker whose Ray task is gone before it started its bin (on S3 the table takes seconds to
/// open; a stopped job's coordinator has cleaned up by then, or a retry owns the bin): it writes
/// nothing, neither an output nor a result, and deletes nothing. Without the driver naming the
/// parent it belongs to, such a worker ran the whole bin after the cleanup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_task_is_gone_before_it_starts_writes_nothing() {
    let (d, l, rows) = seeded(20).await;
    let job = prepared(&l, 1024 * KIB, Executor::Local).await;
    let p = &job.plan.partitions[0];
    let spec = BinSpec::new(
        &job.table.uri,
        "gone-test",
        1,
        job.plan.table_version,
        &p.values,
        &p.bins[0],
        &job.exec.rewrite,
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("spec.json");
    std::fs::write(&file, serde_json::to_vec(&spec).unwrap()).unwrap();
    let before = dump(d.path());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .arg("worker")
        .arg("--spec")
        .arg(&file)
        // No process has this id: the task that started the worker is gone.
        .env(
            lakehealth::engine::exec::worker::PARENT_ENV,
            u32::MAX.to_string(),
        )
        .output()
        .unwrap();
    assert!(!o.status.success(), "a bin not run is not a success");
    let line: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(line["status"], "failed", "{line}");
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
    assert_eq!(
        job_state(d.path()),
        Vec::<String>::new(),
        "no result, no ledger"
    );
    assert!(commits_after(d.path(), job.plan.table_version).is_empty());
    assert_eq!(dump(d.path()), before);
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ray_workers_apply_deletion_vectors_from_their_specs() {
    use crate::dv_tables::{Storage, active_adds, delete_rows, files_with_dv};
    use crate::kernel_reader::kernel_read;
    let (d, l, _) = seeded(24).await;
    let f: Vec<String> = active_adds(d.path()).into_keys().take(3).collect();
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Inline, (0..10).collect()),
            (&f[1], Storage::Relative, vec![1, 2, 3]),
            (&f[2], Storage::Absolute, (190..200).collect()),
        ],
    );
    let before = kernel_read(d.path());
    let job = prepared(&l, 24 * KIB, ray()).await;
    assert!(job.plan.bins >= 2, "several bins: {}", job.plan.bins);
    assert_eq!(job.plan.deletion_vector_files, 3);
    let (s, _) = run(job, CancellationToken::new()).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.deleted_rows, 23, "the workers left out the deleted rows");
    assert_eq!(kernel_read(d.path()).rows, before.rows);
    assert!(files_with_dv(d.path()).is_empty());
}

/// `watch ROOT` with the Ray executor: the jobs of two tables go to the cluster in two of the
/// janitor's slots, the coordinator commits each, and every value of both tables is kept.
#[test]
fn the_janitor_runs_the_jobs_of_several_tables_on_the_ray_cluster_and_keeps_every_value() {
    let root = tempfile::tempdir().unwrap();
    let mut before = Vec::new();
    for t in ["a", "b"] {
        let dir = root.path().join("db").join(t);
        std::fs::create_dir_all(&dir).unwrap();
        sensor_table_with(&dir, &[("2026-11-01", 52)]);
        before.push((dir.clone(), dump(&dir)));
    }
    let logs = tempfile::tempdir().unwrap();
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "executor = \"ray\"\nray_address = \"{}\"\nworker_binary = \"{}\"\nmax_jobs = 2\n",
            ray_head().address,
            env!("CARGO_BIN_EXE_lakehealth")
        ),
    )
    .unwrap();
    let o = lakehealth_cmd()
        .args(["watch", root.path().to_str().unwrap(), "--once", "--json"])
        .arg("--policy")
        .arg(&policy)
        .arg("--history")
        .arg(logs.path().join("h.jsonl"))
        .arg("--log-file")
        .arg(logs.path().join("log"))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    let results: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["type"] == "result")
        .collect();
    assert_eq!(results.len(), 2, "{out}");
    assert!(
        results.iter().all(|r| r["outcome"] == "compacted"),
        "{results:#?}"
    );
    assert!(err.contains("Ray cluster at"), "the bins ran on Ray: {err}");
    for (dir, b) in before {
        let after = dump(&dir);
        assert_eq!(after["fingerprint"], b["fingerprint"], "{}", dir.display());
        assert_eq!(after["rows"], b["rows"]);
        assert_eq!(after["files"], serde_json::json!(1));
        assert_eq!(leftover_files(&dir), Vec::<String>::new());
    }
}
