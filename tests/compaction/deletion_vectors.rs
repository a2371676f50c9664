//! Compaction of tables with deletion vectors: files over the deleted-rows ratio are rewritten
//! without their deleted rows, `purge` rewrites every file with one, and a file that gained a
//! deletion vector after the plan is never committed as it was read. Rows are checked by
//! delta-kernel's default engine (`kernel_reader`), which applies deletion vectors itself.

use std::collections::HashMap;

use lakehealth::engine::compact::events::JobSummary;
use lakehealth::engine::compact::execute::execute;
use lakehealth::engine::compact::job::{CompactRequest, prepare};
use lakehealth::engine::compact::plan::DeletedRows;
use lakehealth::engine::location::Location;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::dv_tables::{Storage, active_adds, delete_rows, files_with_dv};
use crate::kernel_reader::kernel_read;
use crate::support::common::*;
use crate::support::{RequestExt, request};

async fn compact(l: &Location, req: &CompactRequest) -> JobSummary {
    let job = prepare(l, req, kib64_thresholds(), 1.0).await.unwrap();
    assert!(job.plan.bins > 0, "nothing planned: {:?}", job.plan);
    run_job(job).await
}

/// The sensor table's first `n` active files, by path.
fn first_files(table: &std::path::Path, n: usize) -> Vec<String> {
    active_adds(table).into_keys().take(n).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_over_the_deleted_ratio_are_rewritten_without_their_deleted_rows_then_purge_removes_every_vector()
 {
    let (d, l, written) = seeded(6).await;
    let f = first_files(d.path(), 3);
    // 200 rows a file: 10 % inline, 0.5 % in a file named by a UUID, 15 % at an absolute path.
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Inline, (0..20).collect()),
            (&f[1], Storage::Relative, vec![5]),
            (&f[2], Storage::Absolute, (100..130).collect()),
        ],
    );
    let before = kernel_read(d.path());
    assert_eq!(
        before.rows.len() as u64,
        written - 51,
        "the kernel applies the vectors"
    );

    // No file is small (min size 1 byte): only the two files over 5 % are candidates.
    let s = compact(&l, &request().min_file_size(1)).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.files_removed, 2, "{s:?}");
    let after = kernel_read(d.path());
    assert_eq!(after.rows, before.rows, "same rows and values");
    assert_eq!(
        files_with_dv(d.path()),
        vec![f[1].clone()],
        "the 0.5 % file keeps its vector"
    );

    // Purge: the last vector goes, the rows stay.
    let purge = DeletedRows {
        purge: true,
        ..Default::default()
    };
    let s = compact(&l, &request().min_file_size(1).deleted_rows(purge)).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.files_removed, 1, "{s:?}");
    let purged = kernel_read(d.path());
    assert_eq!(purged.rows, before.rows);
    assert!(
        files_with_dv(d.path()).is_empty(),
        "no active file keeps a vector"
    );
    assert!(leftover_files(d.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_files_with_deletion_vectors_merge_with_the_others_and_no_vector_remains() {
    let (d, l, written) = seeded(8).await;
    let f = first_files(d.path(), 2);
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Relative, vec![0, 1, 199]),
            (&f[1], Storage::Inline, vec![42]),
        ],
    );
    let before = kernel_read(d.path());
    assert_eq!(before.rows.len() as u64, written - 4);
    let s = compact(&l, &request()).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(kernel_read(d.path()).rows, before.rows);
    assert!(files_with_dv(d.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spark_table_with_a_deletion_vector_compacts_to_the_rows_spark_left() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table-with-dv-small"), d.path());
    let before = kernel_read(d.path());
    assert_eq!(
        before.rows.len(),
        8,
        "Spark deleted 2 of 10 rows: {before:?}"
    );
    // One 635-byte file with 20 % of its rows deleted: rewritten alone.
    let s = compact(&loc(d.path()), &request()).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.commits.len(), 1, "{s:?}");
    let after = kernel_read(d.path());
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.version, before.version + 1);
    assert!(files_with_dv(d.path()).is_empty());
    // The protocol and metadata of the table are unchanged: the commit holds no other action.
    let last = commits_from(d.path(), after.version).remove(0);
    assert!(
        last.iter()
            .all(|a| a.get("protocol").is_none() && a.get("metaData").is_none())
    );
    let removed: Vec<_> = last.iter().filter_map(|a| a.get("remove")).collect();
    assert_eq!(removed.len(), 1);
    assert_eq!(
        removed[0]["deletionVector"]["pathOrInlineDv"], "vBn[lx{q8@P<9BNH/isA",
        "the remove names the file with its vector"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_gained_a_deletion_vector_after_the_plan_is_never_committed_as_read() {
    let (d, l, _) = seeded(6).await;
    let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    assert!(job.plan.files_in >= 6);
    // A DELETE marks rows of a planned file after the plan was made.
    let f = first_files(d.path(), 1);
    delete_rows(d.path(), &[(&f[0], Storage::Inline, vec![3, 4])]);
    let after_delete = kernel_read(d.path());
    let (tx, _rx) = mpsc::unbounded_channel();
    let s = execute(
        &job.table,
        &job.plan,
        &job.exec,
        CancellationToken::new(),
        tx,
    )
    .await;
    assert!(!s.conflicts.is_empty(), "the stale bin is refused: {s:?}");
    let c = &s.conflicts[0].conflict;
    assert_eq!(c.operation.as_deref(), Some("DELETE"), "{c:?}");
    // Whatever was replanned and committed after, the deleted rows stay deleted.
    assert_eq!(kernel_read(d.path()).rows, after_delete.rows);
}

#[test]
fn cli_report_shows_deleted_rows_and_purge_removes_them_from_storage() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table-with-dv-small"), d.path());
    let uri = d.path().to_str().unwrap();
    let before = kernel_read(d.path());
    let o = lakehealth(&["report", uri]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains(
            "deleted rows: 2 of 10 (20.0 %) in 1 files with deletion vectors; 1 over 5 %"
        ),
        "{text}"
    );
    // With a ratio above the file's 20 %, compact leaves it alone (one file: nothing to merge)...
    let o = lakehealth(&["compact", uri, "--max-deleted-ratio", "0.5", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(files_with_dv(d.path()).len(), 1);
    // ...and purge rewrites it without its deleted rows.
    let o = lakehealth(&["purge", uri, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deleted_rows"], 2, "{v}");
    assert_eq!(v["rows"], 8, "{v}");
    assert!(files_with_dv(d.path()).is_empty());
    assert_eq!(kernel_read(d.path()).rows, before.rows);
    let o = lakehealth(&["compact", uri, "--max-deleted-ratio", "2"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a ratio from 0 to 1"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The streaming writer appending on its own thread and runtime until cancelled.
fn background_writer(
    l: Location,
    cancel: CancellationToken,
) -> std::thread::JoinHandle<Vec<lakehealth::engine::stream::writer::BatchCommitted>> {
    use lakehealth::engine::stream::writer::{StreamOptions, run_stream};
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let o = StreamOptions {
                query_id: "live".into(),
                interval: std::time::Duration::from_millis(30),
                rows: 200,
                max_batches: None,
                storage_options: HashMap::new(),
            };
            run_stream(&l, &o, cancel, tx).await.unwrap();
            let mut evs = Vec::new();
            while let Ok(e) = rx.try_recv() {
                evs.push(e);
            }
            evs
        })
    })
}

/// `event_id=...` of a kernel row.
fn event_id(row: &str) -> &str {
    row.split('|')
        .find(|c| c.starts_with("event_id="))
        .expect("an event_id column")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacting_a_table_with_deletion_vectors_beside_a_streaming_writer_loses_and_duplicates_no_row()
 {
    let (d, l, _) = seeded(12).await;
    let f = first_files(d.path(), 4);
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Inline, (0..30).collect()),
            (&f[1], Storage::Relative, vec![7, 8]),
            (&f[2], Storage::Absolute, (150..200).collect()),
            (&f[3], Storage::Relative, (0..12).collect()),
        ],
    );
    let before = kernel_read(d.path());
    let cancel = CancellationToken::new();
    let v0 = commits_from(d.path(), 0).len();
    let writer = background_writer(l.clone(), cancel.clone());
    // The writer is committing when the compaction starts, and still after it ends.
    let started = std::time::Instant::now();
    while commits_from(d.path(), 0).len() == v0 {
        assert!(
            started.elapsed().as_secs() < 30,
            "the writer never committed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let s = compact(&l, &request()).await;
    let v1 = commits_from(d.path(), 0).len();
    while commits_from(d.path(), 0).len() == v1 {
        assert!(started.elapsed().as_secs() < 60, "the writer stopped");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let batches = writer.join().unwrap();
    assert!(batches.len() >= 2, "{} writer batches", batches.len());
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(!s.commits.is_empty(), "{s:?}");
    assert_eq!(s.deleted_rows, 94, "the four vectors' rows are purged");
    let written: u64 = batches.iter().map(|b| b.rows as u64).sum();
    let after = kernel_read(d.path());
    assert_eq!(after.rows.len() as u64, before.rows.len() as u64 + written);
    let ids: std::collections::HashSet<&str> = after.rows.iter().map(|r| event_id(r)).collect();
    assert_eq!(ids.len(), after.rows.len(), "no row twice");
    // Every row read before is still there with every value.
    let after_set: std::collections::HashSet<&String> = after.rows.iter().collect();
    assert!(before.rows.iter().all(|r| after_set.contains(r)));
    assert!(
        files_with_dv(d.path()).is_empty(),
        "the small files with vectors were merged"
    );
}

/// In the TUI, `P` previews a purge of the selected partition (offered only where a deletion
/// vector is), and the job it starts leaves no active file with one; the rows, read by
/// delta-kernel, are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_p_previews_a_purge_and_its_job_leaves_no_deletion_vector() {
    use crossterm::event::KeyCode;
    use lakehealth::tui::app::Modal;
    use lakehealth::tui::jobs::JobStatus;

    // A table without deletion vectors does not offer it.
    let plain = tempfile::tempdir().unwrap();
    let p = loc(plain.path());
    lakehealth::engine::demo::create_sensor_table(&p)
        .await
        .unwrap();
    lakehealth::engine::demo::seed_small_files(&p, &["2026-11-01".into()], 3, 10)
        .await
        .unwrap();
    let mut t = crate::support::tui_driver::Driven::new(p.display(), (160, 44))
        .open()
        .await;
    assert!(!t.screen().contains("P purge"), "{}", t.screen());
    t.key(KeyCode::Char('P'));
    assert!(t.app.modals.modal().is_none(), "nothing to purge");
    assert!(
        t.screen()
            .contains("nothing to purge: no file of this table has a deletion vector"),
        "{}",
        t.screen()
    );

    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table-with-dv-small"), d.path());
    let before = kernel_read(d.path());
    assert_eq!(files_with_dv(d.path()).len(), 1);
    let mut t = crate::support::tui_driver::Driven::new(loc(d.path()).display(), (160, 44))
        .open()
        .await;
    assert!(t.screen().contains("P purge"), "{}", t.screen());
    t.key(KeyCode::Char('P'));
    t.settle().await;
    let screen = t.screen();
    assert!(screen.contains("Purge preview"), "{screen}");
    match t.app.modals.modal() {
        Some(Modal::Plan(p)) => {
            assert!(p.request.purge);
            let plan = &p.result.as_ref().unwrap().as_ref().unwrap().plan;
            assert_eq!((plan.bins, plan.files_in), (1, 1), "{plan:?}");
        }
        other => panic!("no purge preview: {other:?}"),
    }
    t.key(KeyCode::Enter);
    t.until("the purge job", |a| !a.jobs.is_empty()).await;
    t.jobs_done().await;
    assert_eq!(
        t.app.jobs[0].status(),
        JobStatus::Done,
        "{:?}",
        t.app.jobs[0].errors
    );
    assert!(
        files_with_dv(d.path()).is_empty(),
        "no active file keeps a vector"
    );
    assert_eq!(kernel_read(d.path()).rows, before.rows);
}

/// The report's deleted-rows figures, read from the log alone, against delta-rs's snapshot of
/// the same version (what they were computed from before opening skipped it).
async fn assert_deleted_rows_match_delta_rs(l: &Location) {
    use lakehealth::engine::compact::table::partition_files;
    use lakehealth::engine::model::thresholds::DEFAULT_MAX_DELETED_RATIO;
    use lakehealth::engine::stats::deleted_rows::{DeletedRows as Figures, FileRows};
    let report = lakehealth::engine::open::load_table(l, &opts(), &|_| {})
        .await
        .unwrap();
    let mut table = deltalake::DeltaTableBuilder::from_url(l.url.clone())
        .unwrap()
        .build()
        .unwrap();
    table.load_version(report.version).await.unwrap();
    let groups: Vec<_> = partition_files(&table, &l.display())
        .unwrap()
        .into_iter()
        .map(|(values, files)| {
            let rows = files
                .iter()
                .map(|f| FileRows {
                    path: f.path.clone(),
                    deleted: f.deleted_rows(),
                    records: f.num_records,
                })
                .collect();
            (values, rows)
        })
        .collect();
    let expected = Figures::compute(&groups, DEFAULT_MAX_DELETED_RATIO);
    assert!(expected.is_some(), "the table has deletion vectors");
    assert_eq!(report.deleted_rows, expected, "version {}", report.version);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_rows_read_from_the_log_equal_delta_rs_before_and_after_a_checkpoint_and_a_replaced_vector()
 {
    let (d, l, _) = seeded(6).await;
    let f = first_files(d.path(), 4);
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Inline, (0..20).collect()),
            (&f[1], Storage::Relative, vec![5]),
            (&f[2], Storage::Absolute, (100..130).collect()),
        ],
    );
    assert_deleted_rows_match_delta_rs(&l).await;
    let t = deltalake::open_table(l.url.clone()).await.unwrap();
    deltalake::checkpoints::create_checkpoint(&t, None)
        .await
        .unwrap();
    assert_deleted_rows_match_delta_rs(&l).await;
    // After the checkpoint: a vector replaced by a larger one, a new one on another file.
    delete_rows(
        d.path(),
        &[
            (&f[0], Storage::Relative, (0..40).collect()),
            (&f[3], Storage::Inline, vec![1, 2]),
        ],
    );
    assert_deleted_rows_match_delta_rs(&l).await;
    let report = lakehealth::engine::open::load_table(&l, &opts(), &|_| {})
        .await
        .unwrap();
    let figures = report.deleted_rows.unwrap();
    assert_eq!(
        (figures.files_with_deletion_vectors, figures.deleted_rows),
        (4, 40 + 1 + 30 + 2),
        "the replaced vector counts once, with its new rows"
    );
    // A Spark-written table with a vector in its checkpoint-less log.
    assert_deleted_rows_match_delta_rs(&loc(&fixture("table-with-dv-small"))).await;
}
