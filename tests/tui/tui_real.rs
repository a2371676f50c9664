//! The TUI driven through its real effect runner against a table another engine compacts: a
//! preview made before the other compaction landed is planned again when started, never run as is.

use crossterm::event::KeyCode;
use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::tui::jobs::JobStatus;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (170, 50);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_made_before_another_compaction_landed_never_runs_as_is() {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into(), "2026-11-02".into()], 15, 300)
        .await
        .unwrap();
    let before = read_back(d.path().to_str().unwrap(), None);
    let mut t = Driven::new(l.display(), SIZE).open().await;

    // Mark a partition and open the preview: a real plan of its 15 files.
    t.keys(&[KeyCode::Char(' '), KeyCode::Char('c')]).await;
    let planned = match &t.app.plan().unwrap().result {
        Some(Ok(p)) => p.plan.clone(),
        other => panic!("no plan: {other:?}"),
    };
    assert_eq!(planned.files_in, 15);

    // While the preview is open, Python deltalake compacts the whole table.
    let o = py_script("race_optimize.py")
        .arg(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Enter starts the job from the stale preview; it must plan again, not run the old plan.
    t.key(KeyCode::Enter);
    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Done, "{:?}", job.errors);
    assert!(
        t.job_events
            .iter()
            .any(|e| matches!(e, JobEvent::Replanned { .. })),
        "{:?}",
        t.job_events
    );
    assert!(
        t.job_events
            .iter()
            .all(|e| !matches!(e, JobEvent::Committed(_))),
        "the partition was already compacted: nothing of the old plan commits"
    );
    assert_eq!(t.finished_events(), 1, "exactly one final event");
    let after = read_back(d.path().to_str().unwrap(), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.rows);
    let screen = t.screen();
    assert!(screen.contains("done"), "{screen}");
}
