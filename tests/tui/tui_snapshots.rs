//! Snapshots of every screen and dialog at a fixed size, rendered by the real `view::draw` from
//! state the real runner produced (loads, plans and jobs through `tui::loader::Loader`), with the
//! numbers that matter asserted as well. Deterministic: fixture tables copied to a temporary
//! folder (its path is replaced by `<tmp>`), the app's clock frozen (no "ago" or elapsed time
//! moves), nothing else that varies is shown.

use std::path::Path;
use std::sync::Arc;

use crossterm::event::KeyCode;
use lakehealth::engine::compact::locks::{PartitionLocks, key};
use lakehealth::tui::app::Screen;
use lakehealth::tui::jobs::JobStatus;
use lakehealth::tui::keymap::Context;
use tempfile::TempDir;

use crate::support::common::*;
use crate::support::tui_driver::{Driven, log_only_table};

const SIZE: (u16, u16) = (140, 40);

/// Unpartitioned, 11 files of 442 B: something to compact.
const SMALL_FILES: &str = "simple_table_with_checkpoint";
const PARTITIONED: &str = "delta-0.8.0-partitioned";

/// Copies of these fixtures in a new temporary folder.
fn lake(names: &[&str]) -> TempDir {
    let d = tempfile::tempdir().unwrap();
    for n in names {
        copy_dir(&fixture(n), &d.path().join(n));
    }
    d
}

async fn open(path: &Path) -> Driven {
    Driven::new(loc(path).display(), SIZE).frozen().open().await
}

#[tokio::test]
async fn snapshot_tables_list_ranks_tables_worst_first() {
    let d = lake(&[
        PARTITIONED,
        "delta-0.8.0-null-partition",
        "delta-2.2.0-partitioned-types",
        SMALL_FILES,
    ]);
    let t = open(d.path()).await;
    assert_eq!(t.app.screen, Screen::Tables);
    let s = t.text(&d);
    assert!(
        s.contains(" 4 tables  22 files  9.39 KiB  excess files 10"),
        "{s}"
    );
    // The worst table (health 9) first, selected.
    let root = t.app.root.as_ref().unwrap();
    let first = t.app.tables.selected(&root.rows).unwrap().table().unwrap();
    assert_eq!(
        (first.name.as_str(), first.stats.health_score),
        (SMALL_FILES, 9)
    );
    let row = s.lines().find(|l| l.contains(SMALL_FILES)).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(cells.windows(2).any(|w| w == ["v10", "11"]), "{row}");
    insta::assert_snapshot!("tables_list", s);
}

#[tokio::test]
async fn snapshot_table_view_and_its_whole_table_histogram() {
    let d = lake(&[PARTITIONED]);
    let mut t = open(&d.path().join(PARTITIONED)).await;
    let s = t.text(&d);
    assert!(s.contains("6 files"), "{s}");
    assert!(s.contains("6 partitions"), "{s}");
    assert!(s.contains("6/6  sort: excess files ▼"), "{s}");
    assert!(
        s.contains("Space mark · c compact · t histogram · a janitor · j/k move"),
        "the hint bar comes from the keymap:\n{s}"
    );
    insta::assert_snapshot!("table_view", s);

    t.keys(&[KeyCode::Char('t')]).await;
    let s = t.text(&d);
    assert!(s.contains("File sizes whole table"), "{s}");
    assert!(s.contains("0 of 6 files in the target band"), "{s}");
    insta::assert_snapshot!("table_view_whole_table_histogram", s);
}

#[tokio::test]
async fn snapshot_help_lists_every_context_of_the_keymap() {
    let d = lake(&[PARTITIONED]);
    let mut t = open(&d.path().join(PARTITIONED)).await;
    t.keys(&[KeyCode::Char('?')]).await;
    let s = t.text(&d);
    // Every context's keys, scrolling down as a user does when the help is taller than the
    // screen.
    let mut seen = s.clone();
    for _ in 0..lakehealth::tui::view::help_len() {
        t.keys(&[KeyCode::Char('j')]).await;
        seen.push_str(&t.text(&d));
    }
    for title in [
        "Everywhere",
        "Tables list",
        "Table view",
        "Dialogs",
        "Filter input",
        "Error",
    ] {
        assert!(seen.contains(title), "{title}:\n{seen}");
    }

    assert!(
        s.contains("other keys close this help · j/k scroll · q quit"),
        "{s}"
    );
    assert!(
        s.contains("health: ≥80 ok ≥50 fair <50 poor"),
        "the colour legend:\n{s}"
    );
    insta::assert_snapshot!("help", s);
    // It scrolls to its end (the mouse section), and stays open while it does.
    for _ in 0..60 {
        t.key(KeyCode::Char('j'));
    }
    assert_eq!(t.app.context(), Context::Help);
    let s = t.text(&d);
    assert!(s.contains("Mouse"), "{s}");
    assert!(s.contains("wheel"), "{s}");
}

#[tokio::test]
async fn snapshot_filter_input_narrows_the_partitions_as_typed() {
    let d = lake(&[PARTITIONED]);
    let mut t = open(&d.path().join(PARTITIONED)).await;
    t.keys(&[KeyCode::Char('/')]).await;
    t.type_text("2021").await;
    assert_eq!(t.app.context(), Context::Filter);
    let s = t.text(&d);
    assert!(
        s.contains("3/6  sort: excess files ▼  filter: 2021▏"),
        "{s}"
    );
    assert!(s.contains("type to filter · Enter keep · Esc clear"), "{s}");
    assert!(!s.contains("year=2020"), "{s}");
    insta::assert_snapshot!("filter_input", s);
}

#[tokio::test]
async fn snapshot_plan_preview_of_eleven_small_files() {
    let d = lake(&[SMALL_FILES]);
    let mut t = open(&d.path().join(SMALL_FILES)).await;
    t.keys(&[KeyCode::Char('c')]).await;
    let plan = match t.app.plan().and_then(|p| p.result.as_ref()) {
        Some(Ok(p)) => p.plan.clone(),
        other => panic!("no plan: {other:?}"),
    };
    assert_eq!((plan.bins, plan.files_in, plan.table_version), (1, 11, 10));
    let s = t.text(&d);
    assert!(
        s.contains("v10: 1 bin, 11 files (4.75 KiB) → ~1 file."),
        "{s}"
    );
    assert!(s.contains("Enter / y start in the background"), "{s}");
    insta::assert_snapshot!("plan_preview", s);
}

#[tokio::test]
async fn snapshot_plan_preview_of_a_clustered_table_says_its_order_and_expected_depth() {
    let d = lake(&["table_with_liquid_clustering"]);
    let mut t = open(&d.path().join("table_with_liquid_clustering")).await;
    t.keys(&[KeyCode::Char('c')]).await;
    let plan = match t.app.plan().and_then(|p| p.result.as_ref()) {
        Some(Ok(p)) => p.plan.clone(),
        other => panic!("no plan: {other:?}"),
    };
    let order = plan.order.expect("a clustered table is clustered");
    assert_eq!(order.order.columns, ["id"]);
    let s = t.text(&d);
    assert!(
        s.contains("Order: sort by id (the table's clustering), the small files."),
        "{s}"
    );
    // One id per file: already depth 1, and kept so.
    assert!(s.contains("id 1 → ~1"), "{s}");
    insta::assert_snapshot!("plan_preview_clustered", s);
}

#[tokio::test]
async fn snapshot_an_order_typed_with_o_in_the_preview_plans_it_again_with_its_flag() {
    let d = lake(&[SMALL_FILES]);
    let mut t = open(&d.path().join(SMALL_FILES)).await;
    t.keys(&[KeyCode::Char('c'), KeyCode::Char('o')]).await;
    assert_eq!(t.app.context(), Context::OrderInput);
    // Letters are text here, not keys (`f` would be full speed, `q` quit).
    t.type_text("sort versionq").await;
    t.keys(&[KeyCode::Backspace]).await;
    let s = t.text(&d);
    assert!(s.contains("Order: sort version▏"), "{s}");
    insta::assert_snapshot!("plan_order_input", s);
    t.keys(&[KeyCode::Enter]).await;
    let plan = match t.app.plan().and_then(|p| p.result.as_ref()) {
        Some(Ok(p)) => p.plan.clone(),
        other => panic!("no plan: {other:?}"),
    };
    let order = plan.order.expect("planned in the order typed");
    assert_eq!(order.order.columns, ["version"]);
    assert!(order.whole_partitions);
    let s = t.text(&d);
    assert!(s.contains("Order: sort by version, every file"), "{s}");
    assert!(s.contains("--sort-by"), "{s}");
    // A column the table does not have: the plan says so, and `o` takes another.
    t.keys(&[KeyCode::Char('o')]).await;
    for _ in 0.."sort version".len() {
        t.keys(&[KeyCode::Backspace]).await;
    }
    t.type_text("zorder nope,version").await;
    t.keys(&[KeyCode::Enter]).await;
    let s = t.text(&d);
    assert!(s.contains("not a data column"), "{s}");
    assert!(s.contains("o another order"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_cancel_confirmation_over_a_job_waiting_for_its_partition() {
    let d = lake(&[SMALL_FILES]);
    let path = d.path().join(SMALL_FILES);
    let locks = Arc::new(PartitionLocks::default());
    let mut t = Driven::with(loc(&path).display(), SIZE, opts(), locks.clone())
        .frozen()
        .open()
        .await;
    let values = t.app.selected_partition().unwrap().values.clone();
    let held = locks
        .try_acquire(&[key(&loc(&path).display(), &values)])
        .unwrap();
    t.keys(&[KeyCode::Char('c')]).await;
    // Nothing to wait for: the test holds the job's partition, so it stays queued (no Started
    // event) however soon or late its runner gets to the lock, and a cancel ends it there.
    t.key(KeyCode::Enter);
    let s = t.text(&d);
    assert!(s.contains("#1 queued"), "the first job is #1:\n{s}");
    t.key(KeyCode::Char('x'));
    assert_eq!(t.app.context(), Context::Dialog);
    assert_eq!(t.app.jobs[0].status(), JobStatus::Queued);
    let s = t.text(&d);
    assert!(s.contains("Cancel job #1?"), "{s}");
    assert_eq!(t.app.jobs[0].progress.files_total, 11);
    insta::assert_snapshot!("cancel_confirmation", s);
    t.key(KeyCode::Char('y'));
    t.jobs_done().await;
    assert_eq!(t.app.jobs[0].status(), JobStatus::Cancelled);
    drop(held);
}

#[tokio::test]
async fn snapshot_error_over_the_splash_when_nothing_is_a_table() {
    // The message holds the path and wraps by its length: always /tmp/.tmpXXXXXX, whatever
    // TMPDIR says, so the snapshot does not depend on the machine.
    let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let t = open(d.path()).await;
    let s = t.text(&d);
    assert!(s.contains("not a Delta table"), "{s}");
    assert!(s.contains("Esc dismiss · r retry · q quit"), "{s}");
    insta::assert_snapshot!("error", s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_jobs_panel_with_a_finished_job_and_the_reloaded_table() {
    let d = lake(&[SMALL_FILES]);
    let mut t = open(&d.path().join(SMALL_FILES)).await;
    t.keys(&[KeyCode::Char('c')]).await;
    t.key(KeyCode::Enter);
    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Done, "{:?}", job.errors);
    assert_eq!(t.finished_events(), 1);
    assert_eq!(job.commits.len(), 1);
    assert_eq!(job.commits[0].version, 11);
    assert_eq!(job.commits[0].files_removed, 11);
    let table = t.app.table.as_ref().unwrap();
    assert_eq!((table.version, table.stats.files), (11, 1));
    let s = t.text(&d);
    assert!(
        s.contains("#1 done"),
        "the first job is #1, whatever its task id:\n{s}"
    );
    assert!(s.contains("files 11/11"), "{s}");
    assert!(s.contains("bins 1/1"), "{s}");
    assert!(s.contains("v11 -11 +1 files"), "{s}");
    // The commit feed counts bytes in the units of every other panel.
    assert!(s.contains("-4.75 KiB"), "{s}");
    // A job run by hand is no janitor's write amplification: shown apart, never as a ratio.
    assert!(s.contains("other compactions rewrote 518 B"), "{s}");
    assert!(!s.contains("x of ingested"), "{s}");
    insta::assert_snapshot!("jobs_panel_finished", s);

    // x on a finished job: no question that cannot be answered, a notice instead.
    t.keys(&[KeyCode::Char('x')]).await;
    assert_eq!(t.app.context(), Context::Table, "no dialog opens");
    let s = t.text(&d);
    assert!(
        s.contains("no compaction job is running: only a running job can be cancelled"),
        "{s}"
    );

    // The next job, a checkpoint, is #2, though loads and plans took task ids in between.
    t.keys(&[KeyCode::Char('K')]).await;
    t.until("the checkpoint", |a| {
        a.maintenance.iter().all(|m| m.finished.is_some())
    })
    .await;
    let m = &t.app.maintenance[0];
    assert_eq!(m.number, lakehealth::tui::jobs::JobNumber(2));
    assert!(m.id > t.app.jobs[0].id + 1, "task ids skip: {}", m.id);
    let s = t.text(&d);
    assert!(s.contains("#2 done"), "{s}");
    assert!(!s.contains("checkpoint checkpoint"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirming_a_cancel_after_the_job_ended_says_so_and_closes() {
    let d = lake(&[SMALL_FILES]);
    let path = d.path().join(SMALL_FILES);
    let locks = Arc::new(PartitionLocks::default());
    let mut t = Driven::with(loc(&path).display(), SIZE, opts(), locks.clone())
        .frozen()
        .open()
        .await;
    let values = t.app.selected_partition().unwrap().values.clone();
    let held = locks
        .try_acquire(&[key(&loc(&path).display(), &values)])
        .unwrap();
    t.keys(&[KeyCode::Char('c')]).await;
    t.key(KeyCode::Enter);
    t.key(KeyCode::Char('x'));
    assert_eq!(t.app.context(), Context::Dialog);
    // The job ends while the question is open (the lock is let go: it runs to its commit).
    drop(held);
    t.jobs_done().await;
    assert_eq!(t.app.jobs[0].status(), JobStatus::Done);
    assert_eq!(t.app.context(), Context::Table, "the question closed");
    assert_eq!(
        t.app.notice.as_deref(),
        Some("job #1 ended (done) before it was cancelled")
    );
    t.key(KeyCode::Char('y'));
    assert!(t.app.jobs[0].status() == JobStatus::Done);
}

/// The table's health is the share of its files it needs, so one partition of many small files
/// sinks it however many others were compacted: the header counts the healthy partitions
/// beside the score, and "3/100" after compacting 3 of 4 partitions reads true.
#[tokio::test]
async fn the_header_counts_the_healthy_partitions_beside_the_tables_score() {
    let d = tempfile::tempdir().unwrap();
    let mut files: Vec<(&str, u64)> = ["2026-11-01", "2026-11-02", "2026-11-03"]
        .iter()
        .map(|day| (*day, 150_000_000))
        .collect();
    files.extend((0..100).map(|_| ("2026-11-04", 10_000)));
    log_only_table(d.path(), &files);
    let t = Driven::new(loc(d.path()).display(), SIZE).open().await;
    let s = t.screen();
    // 103 files where 4 would do: 3/100, and three of the four partitions are fine.
    assert!(s.contains("health   3/100 (3 of 4 partitions ok)"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_skipping_panel_measures_the_open_table_through_the_real_runner() {
    let d = lake(&[SMALL_FILES]);
    let mut t = open(&d.path().join(SMALL_FILES)).await;
    t.keys(&[KeyCode::Char('d')]).await;
    t.until("the skipping measure", |a| {
        matches!(
            a.modals.modal(),
            Some(lakehealth::tui::app::Modal::Skipping(s)) if s.result.is_some()
        )
    })
    .await;
    let health = match t.app.modals.modal() {
        Some(lakehealth::tui::app::Modal::Skipping(s)) => match &s.result {
            Some(Ok(h)) => h.clone(),
            other => panic!("no measure: {other:?}"),
        },
        _ => unreachable!(),
    };
    assert_eq!(health.files, 11);
    let s = t.text(&d);
    assert!(
        s.contains("Skipping: files a lookup of one value opens"),
        "{s}"
    );
    assert!(
        s.contains("11 files; from the log's min/max statistics"),
        "{s}"
    );
    assert!(
        health.columns.iter().all(|c| s.contains(&c.column)),
        "every column has its row: {s}"
    );
    insta::assert_snapshot!("skipping_panel", s);
    t.key(KeyCode::Esc);
    assert!(t.app.modals.modal().is_none(), "Esc closes it");
}
