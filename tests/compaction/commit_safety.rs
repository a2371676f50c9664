//! How a compaction commits when the world is not kind: another compactor took its files, the
//! plan is older than the table, the commit call fails after the commit landed, the log's
//! maintenance fails, storage gives back other content than was written. Rows are checked by
//! the independent reader (tests/py/verify_table.py).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures::stream::BoxStream;
use lakehealth::engine::compact::events::{FailureKind, JobEvent, JobSummary};
use lakehealth::engine::compact::execute::execute;
use lakehealth::engine::compact::job::{CompactRequest, prepare, prepare_table, run_isolated};
use lakehealth::engine::compact::locks::PartitionLocks;
use lakehealth::engine::compact::ordering::{LayoutRequest, OrderKind};
use lakehealth::engine::compact::table::{StoreWrapper, open_for_compaction_with};
use lakehealth::engine::location::Location;
use lakehealth::engine::size::KIB;
use object_store::path::Path;
use object_store::{
    MultipartUpload, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::RequestExt;
use crate::support::common::*;

fn request() -> CompactRequest {
    crate::support::request().max_bin(160 * KIB)
}

fn events(mut rx: mpsc::UnboundedReceiver<JobEvent>) -> Vec<JobEvent> {
    let mut v = Vec::new();
    while let Ok(e) = rx.try_recv() {
        v.push(e);
    }
    v
}

fn python_compacts(path: &std::path::Path) {
    let o = py_script("race_optimize.py").arg(path).output().unwrap();
    assert!(
        o.status.success(),
        "race_optimize.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bin_whose_files_another_compactor_took_is_refused_and_says_who() {
    let (d, l, rows) = seeded(40).await;
    let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    assert!(job.plan.bins >= 2);
    // Python deltalake compacts every file the plan holds after the plan was made.
    python_compacts(d.path());
    // Run the stale plan as is (no replan first): every bin must be refused at commit.
    let (tx, rx) = mpsc::unbounded_channel();
    let s = execute(
        &job.table,
        &job.plan,
        &job.exec,
        CancellationToken::new(),
        tx,
    )
    .await;
    let evs = events(rx);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(!s.conflicts.is_empty(), "{s:?}");
    assert!(s.commits.is_empty(), "nothing of the stale plan may commit");
    let c = &s.conflicts[0].conflict;
    assert_eq!(c.operation.as_deref(), Some("OPTIMIZE"), "{c:?}");
    assert!(c.version.is_some_and(|v| v > job.plan.table_version));
    assert!(
        evs.iter().any(|e| matches!(e, JobEvent::Conflict(_))),
        "the conflict is an event"
    );
    assert!(s.orphaned_files.is_empty(), "outputs deleted");
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_older_than_the_table_is_planned_again_before_it_runs() {
    let (d, l, rows) = seeded(40).await;
    // The preview dialog's plan...
    let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    let planned_at = job.plan.table_version;
    // ...another compaction lands before the user presses Enter.
    python_compacts(d.path());
    let (tx, rx) = mpsc::unbounded_channel();
    let s = run_isolated(
        job,
        Arc::new(PartitionLocks::default()),
        CancellationToken::new(),
        tx,
    )
    .await;
    let evs = events(rx);
    assert!(
        evs.iter().any(|e| matches!(e, JobEvent::Replanned { .. })),
        "replanned: {evs:?}"
    );
    assert!(s.table_version_read >= planned_at);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_exact(d.path(), rows);
    assert_eq!(
        evs.iter()
            .filter(|e| matches!(e, JobEvent::Finished(_)))
            .count(),
        1
    );
}

/// Passes everything through, with failures injected on `_delta_log/` paths.
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn ObjectStore>,
    /// Commit files (`_delta_log/N.json`) are written, then the call reports a failure: the
    /// outcome a timeout after the write leaves. Once.
    fail_after_commit: AtomicBool,
    /// The next commit file is not written and the call reports a failure. Once.
    fail_instead_of_commit: AtomicBool,
    /// Commit files are written, then the call says the file already exists: what a store
    /// that retried a conditional put which had landed reports. Once.
    exists_after_commit: AtomicBool,
    /// Every delete under `_delta_log/` fails.
    fail_log_deletes: bool,
    /// Every data file written holds one value other than the writer gave (`tampered`).
    tamper_outputs: bool,
    /// Every commit file fails to be written, as on a full disk (ENOSPC), and nothing lands.
    full_disk_commits: bool,
}

fn is_data_file(p: &Path) -> bool {
    let s = p.as_ref();
    !s.contains("_delta_log/") && !s.contains("_lakehealth/") && s.ends_with(".parquet")
}

/// The Parquet file `bytes` with the first row's `reading` changed (+1), of the very same
/// length (the log records each file's size, and the reader trusts it): re-encoded with zstd,
/// then padded between its column chunks and its footer, where no reader looks.
fn tampered(bytes: &[u8]) -> bytes::Bytes {
    use arrow::array::{Array, AsArray, Int64Array, RecordBatch};
    use arrow::datatypes::Int64Type;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;

    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(bytes))
        .unwrap()
        .build()
        .unwrap();
    let mut batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let first = &batches[0];
    let i = first.schema().index_of("reading").unwrap();
    let old = first.column(i).as_primitive::<Int64Type>();
    let changed: Int64Array = (0..old.len())
        .map(|r| (!old.is_null(r)).then(|| old.value(r) + i64::from(r == 0)))
        .collect();
    let mut cols = first.columns().to_vec();
    cols[i] = Arc::new(changed);
    batches[0] = RecordBatch::try_new(first.schema(), cols).unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(19).unwrap()))
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    assert!(
        out.len() <= bytes.len(),
        "the tampered file must not be longer"
    );
    let n = out.len();
    let footer = 8 + u32::from_le_bytes(out[n - 8..n - 4].try_into().unwrap()) as usize;
    let mut t = out[..n - footer].to_vec();
    t.resize(bytes.len() - footer, 0);
    t.extend_from_slice(&out[n - footer..]);
    t.into()
}

/// A multipart upload that keeps its parts, and on completion writes them tampered.
#[derive(Debug)]
struct Tampering {
    inner: Arc<dyn ObjectStore>,
    location: Path,
    data: Vec<u8>,
}

#[async_trait]
impl MultipartUpload for Tampering {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        for chunk in data.iter() {
            self.data.extend_from_slice(chunk);
        }
        Box::pin(async { Ok(()) })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let payload = PutPayload::from_bytes(tampered(&self.data));
        self.inner
            .put_opts(&self.location, payload, PutOptions::default())
            .await
    }

    async fn abort(&mut self) -> Result<()> {
        Ok(())
    }
}

impl fmt::Display for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

fn is_commit_file(p: &Path) -> bool {
    let s = p.as_ref();
    s.contains("_delta_log/") && s.ends_with(".json") && !s.contains("_commit_")
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "Faulty",
        source: what.to_string().into(),
    }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if is_commit_file(location) && self.full_disk_commits {
            return Err(object_store::Error::Generic {
                store: "LocalFileSystem",
                source: Box::new(std::io::Error::from_raw_os_error(28)),
            });
        }
        if is_commit_file(location) && self.fail_instead_of_commit.swap(false, Ordering::SeqCst) {
            return Err(injected("connection reset before the commit was written"));
        }
        let payload = if self.tamper_outputs && is_data_file(location) {
            PutPayload::from_bytes(tampered(
                &payload.iter().flatten().copied().collect::<Vec<u8>>(),
            ))
        } else {
            payload
        };
        let r = self.inner.put_opts(location, payload, opts).await?;
        if is_commit_file(location) && self.fail_after_commit.swap(false, Ordering::SeqCst) {
            return Err(injected("connection reset after the commit was written"));
        }
        if is_commit_file(location) && self.exists_after_commit.swap(false, Ordering::SeqCst) {
            return Err(object_store::Error::AlreadyExists {
                path: location.to_string(),
                source: "the retried put found the file its first try wrote".into(),
            });
        }
        Ok(r)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        if self.tamper_outputs && is_data_file(location) {
            return Ok(Box::new(Tampering {
                inner: self.inner.clone(),
                location: location.clone(),
                data: Vec::new(),
            }));
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    lakehealth::forward_to_inner!(get_opts, list, list_with_delimiter, copy_opts);

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        use futures::StreamExt;
        let fail = self.fail_log_deletes;
        let inner = self.inner.clone();
        locations
            .then(move |p| {
                let inner = inner.clone();
                async move {
                    let p = p?;
                    if fail && p.as_ref().contains("_delta_log/") {
                        return Err(injected("delete refused"));
                    }
                    let mut s = inner.delete_stream(futures::stream::iter([Ok(p)]).boxed());
                    s.next().await.unwrap_or_else(|| Err(injected("no result")))
                }
            })
            .boxed()
    }
}

#[derive(Clone, Copy, Default)]
struct Faults {
    fail_after_commit: bool,
    fail_instead_of_commit: bool,
    exists_after_commit: bool,
    fail_log_deletes: bool,
    tamper_outputs: bool,
    full_disk_commits: bool,
}

async fn compact_through(l: &Location, f: Faults) -> JobSummary {
    compact_through_with(l, f, &request(), 2).await
}

/// `req` through the faulty store; its plan has at least `min_bins` bins.
async fn compact_through_with(
    l: &Location,
    f: Faults,
    req: &CompactRequest,
    min_bins: u64,
) -> JobSummary {
    let wrap: Box<StoreWrapper> = Box::new(move |inner| {
        Arc::new(Faulty {
            inner,
            fail_after_commit: AtomicBool::new(f.fail_after_commit),
            fail_instead_of_commit: AtomicBool::new(f.fail_instead_of_commit),
            exists_after_commit: AtomicBool::new(f.exists_after_commit),
            fail_log_deletes: f.fail_log_deletes,
            tamper_outputs: f.tamper_outputs,
            full_disk_commits: f.full_disk_commits,
        }) as Arc<dyn ObjectStore>
    });
    let table = open_for_compaction_with(l, &HashMap::new(), Some(wrap.as_ref()))
        .await
        .unwrap();
    let job = prepare_table(table, req, kib64_thresholds(), 1.0).unwrap();
    assert!(job.plan.bins >= min_bins);
    run_job(job).await
}

fn optimize_commits(path: &std::path::Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(path.join("_delta_log"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".json") && !name.starts_with('_') {
            let text = std::fs::read_to_string(e.path()).unwrap();
            if text.contains("\"operation\":\"OPTIMIZE\"") {
                n += 1;
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_failed_after_it_landed_is_reported_landed_never_undone_or_repeated() {
    let (d, l, rows) = seeded(40).await;
    let s = compact_through(
        &l,
        Faults {
            fail_after_commit: true,
            ..Faults::default()
        },
    )
    .await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.unknown_outcome_files.is_empty());
    assert!(s.commits.len() >= 2, "{s:?}");
    // The bin whose call failed was found in the log by its commit id: one commit per bin.
    assert_eq!(optimize_commits(d.path()), s.commits.len());
    assert_exact(d.path(), rows);
    let r = read_back(d.path().to_str().unwrap(), None);
    assert_eq!(r.files, 40 - s.files_removed + s.files_added);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_reported_as_already_existing_after_it_landed_is_found_ours_and_its_outputs_kept()
{
    let (d, l, rows) = seeded(40).await;
    let s = compact_through(
        &l,
        Faults {
            exists_after_commit: true,
            ..Faults::default()
        },
    )
    .await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(
        s.conflicts.is_empty(),
        "our own commit is no conflict: {s:?}"
    );
    assert!(s.unknown_outcome_files.is_empty());
    assert_eq!(optimize_commits(d.path()), s.commits.len());
    // Every file the log references is there: nothing it took was deleted.
    assert_exact(d.path(), rows);
    let r = read_back(d.path().to_str().unwrap(), None);
    assert_eq!(r.rows, rows);
    assert_eq!(r.files, 40 - s.files_removed + s.files_added);
}

/// Compacts 40 seeded files with `req` through a store that changes one value of every output
/// as it is written: no bin may commit, each fails its proof, and every value stays as it was.
async fn tampered_outputs_never_commit(req: &CompactRequest, min_bins: u64) {
    let (d, l, rows) = seeded(40).await;
    let before = crate::values::dump(d.path().to_str().unwrap());
    let tamper = Faults {
        tamper_outputs: true,
        ..Faults::default()
    };
    let s = compact_through_with(&l, tamper, req, min_bins).await;
    assert!(s.commits.is_empty(), "{:?}", s.commits);
    assert_eq!(optimize_commits(d.path()), 0);
    assert!(!s.failures.is_empty());
    for f in &s.failures {
        assert_eq!(f.failure.kind, FailureKind::Verify, "{f:?}");
        // The very check under test: rows read back fine, their content differs.
        assert!(
            f.failure.message.contains("as many with different content"),
            "{f:?}"
        );
    }
    assert!(s.orphaned_files.is_empty(), "tampered outputs deleted");
    let after = crate::values::dump(d.path().to_str().unwrap());
    assert_eq!(
        after.fingerprint, before.fingerprint,
        "every value as it was"
    );
    assert_eq!(after.files, 40);
    assert_exact(d.path(), rows);
    assert_eq!(
        leftover_files(d.path()),
        Vec::<String>::new(),
        "no output left on storage"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_that_reads_back_with_one_value_changed_is_never_committed() {
    tampered_outputs_never_commit(&request(), 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_output_that_reads_back_with_one_value_changed_is_never_committed() {
    // The multiset proof of a reordered bin catches what the in-order proof catches.
    let zorder = LayoutRequest::Order {
        kind: OrderKind::ZOrder,
        columns: vec!["sensor_id".into(), "reading".into()],
        whole_partitions: true,
    };
    tampered_outputs_never_commit(&request().layout(zorder), 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_call_that_failed_before_writing_is_retried_and_lands_once() {
    let (d, l, rows) = seeded(40).await;
    let s = compact_through(
        &l,
        Faults {
            fail_instead_of_commit: true,
            ..Faults::default()
        },
    )
    .await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.unknown_outcome_files.is_empty());
    assert!(s.commits.iter().any(|c| c.retries > 0), "{:?}", s.commits);
    assert_eq!(optimize_commits(d.path()), s.commits.len());
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_log_maintenance_never_turns_a_landed_commit_into_lost_outputs() {
    let (d, l, rows) = seeded(40).await;
    // Expired logs before a checkpoint: delta-rs's post-commit cleanup would delete them.
    let o = python().to_owned();
    let script = format!(
        "from deltalake import DeltaTable\n\
         dt = DeltaTable({p:?})\n\
         dt.alter.set_table_properties({{'delta.logRetentionDuration': 'interval 0 seconds', 'delta.enableExpiredLogCleanup': 'true'}})\n\
         dt = DeltaTable({p:?})\n\
         dt.create_checkpoint()\n",
        p = d.path().to_str().unwrap()
    );
    let out = std::process::Command::new(o)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = compact_through(
        &l,
        Faults {
            fail_log_deletes: true,
            ..Faults::default()
        },
    )
    .await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.commits.len() >= 2);
    // Every output the log references exists: nothing landed was deleted.
    assert_exact(d.path(), rows);
    let r = read_back(d.path().to_str().unwrap(), None);
    for p in &r.paths {
        assert!(
            d.path().join(p).exists() || d.path().join(urlish(p)).exists(),
            "{p} missing"
        );
    }
}

fn urlish(p: &str) -> String {
    percent_encoding::percent_decode_str(p)
        .decode_utf8_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_a_full_disk_refused_is_read_back_and_reported_failed_not_unknown() {
    let (d, l, rows) = seeded(40).await;
    let s = compact_through(
        &l,
        Faults {
            full_disk_commits: true,
            ..Faults::default()
        },
    )
    .await;
    assert!(s.commits.is_empty(), "{:?}", s.commits);
    // The version was read back after each failed write: certainly not written, so the
    // outcome is known and the outputs are removed rather than kept for an unknown outcome.
    assert!(s.unknown_outcome_files.is_empty(), "{s:?}");
    assert!(!s.errors.is_empty());
    for e in &s.errors {
        assert!(e.contains("No space left on device"), "{e}");
        assert!(e.contains("not written"), "{e}");
        assert!(!e.contains("unknown"), "{e}");
    }
    assert_eq!(
        leftover_files(d.path()),
        Vec::<String>::new(),
        "no output left"
    );
    assert_eq!(optimize_commits(d.path()), 0);
    assert_exact(d.path(), rows);
}
