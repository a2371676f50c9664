//! The compaction flow through the real key handling: mark, preview (plan dialog rendered from a
//! real plan), start, jobs panel driven by recorded progress events, cancel with confirmation.

use std::collections::HashMap;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::compact::events::{CommitRecord, JobEvent, JobSummary, Progress};
use lakehealth::engine::compact::job::{CompactRequest, prepare};
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::location::Location;
use lakehealth::engine::open::open;
use lakehealth::engine::size::KIB;
use lakehealth::engine::stats::file_sizes::Thresholds;
use lakehealth::tui::action::{Action, Effect};
use lakehealth::tui::app::App;
use lakehealth::tui::jobs::JobStatus;
use lakehealth::tui::key_to_action;

use crate::common::*;

const W: u16 = 170;
const H: u16 = 50;

fn render(app: &App) -> String {
    crate::common::render(app, W, H)
}

fn thresholds() -> Thresholds {
    Thresholds {
        target_file_size: 64 * KIB,
        small_file_size: 64 * KIB,
        max_file_size: 1024 * KIB,
    }
}

/// Handles effects like the event loop does; planning runs the real engine, jobs are not started
/// (their events are fed by the test).
async fn settle(app: &mut App, effects: Vec<Effect>, started: &mut Vec<u64>) {
    let mut q = effects;
    while let Some(e) = q.pop() {
        match e {
            Effect::Load { id, uri } => {
                let mut o = opts();
                o.thresholds = thresholds();
                let l = Location::parse(&uri).unwrap();
                let result = open(&l, &o, &|_| {}).await.map_err(|e| e.to_string());
                q.extend(app.update(Action::Loaded { load: id, result }));
            }
            Effect::PlanCompaction {
                id,
                uri,
                partitions,
            } => {
                let req = CompactRequest::for_partitions(partitions, HashMap::new());
                let l = Location::parse(&uri).unwrap();
                let result = prepare(&l, &req, thresholds(), 1.0)
                    .await
                    .map(|j| Box::new(j.plan))
                    .map_err(|e| e.to_string());
                q.extend(app.update(Action::PlanReady { id, result }));
            }
            Effect::StartJob { id } => started.push(id),
            _ => {}
        }
    }
}

async fn press(app: &mut App, code: KeyCode, started: &mut Vec<u64>) {
    if let Some(a) = key_to_action(app, KeyEvent::new(code, KeyModifiers::NONE)) {
        let e = app.update(a);
        settle(app, e, started).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_preview_start_watch_and_cancel() {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into(), "2026-11-02".into()], 12, 300)
        .await
        .unwrap();
    let mut started = Vec::new();
    let mut app = App::new(l.display(), Duration::ZERO, (W, H));
    let e = app.start();
    settle(&mut app, e, &mut started).await;
    assert_eq!(app.table.as_ref().unwrap().stats.files, 24);

    // Space marks the selected partition (and moves down); the marks pane lists it.
    press(&mut app, KeyCode::Char(' '), &mut started).await;
    assert_eq!(app.marks.len(), 1);
    let marked = app.marks.iter().next().unwrap().clone();
    let screen = render(&app);
    assert!(screen.contains("Marked (1)"), "{screen}");
    assert!(
        screen.contains(&format!("● {}", marked.label())),
        "{screen}"
    );

    // c previews a real plan of the marked partition.
    press(&mut app, KeyCode::Char('c'), &mut started).await;
    let plan = match &app.plan.as_ref().unwrap().result {
        Some(Ok(p)) => p.clone(),
        other => panic!("no plan: {other:?}"),
    };
    assert_eq!(plan.files_in, 12);
    assert_eq!(plan.partitions.len(), 1);
    assert_eq!(plan.partitions[0].values, marked);
    let screen = render(&app);
    assert!(screen.contains("Compaction preview"), "{screen}");
    assert!(
        screen.contains(&format!("12 → ~{}", plan.predicted_files_out)),
        "{screen}"
    );
    assert!(screen.contains("Enter / y start"), "{screen}");

    // Enter starts it; the dialog closes, marks clear, a job is queued.
    press(&mut app, KeyCode::Enter, &mut started).await;
    assert!(app.plan.is_none());
    assert!(app.marks.is_empty());
    assert_eq!(started.len(), 1);
    let job = started[0];
    assert_eq!(app.jobs[0].status, JobStatus::Queued);

    // Recorded events drive the panel.
    let events = vec![
        JobEvent::Started {
            bins: 1,
            files: 12,
            bytes: plan.bytes_in,
        },
        JobEvent::Progress(Progress {
            bytes_read: plan.bytes_in / 2,
            bytes_written: 1000,
            files_read: 6,
            rows: 1800,
            bins_done: 0,
            bins_total: 1,
            files_total: 12,
            bytes_total: plan.bytes_in,
        }),
    ];
    for ev in events {
        let e = app.update(Action::Job { job, event: ev });
        settle(&mut app, e, &mut started).await;
    }
    let screen = render(&app);
    assert!(screen.contains("running"), "{screen}");
    assert!(screen.contains("files 6/12"), "{screen}");
    assert!(screen.contains("rows 1.8k"), "{screen}");

    // x asks first; n keeps it running.
    press(&mut app, KeyCode::Char('x'), &mut started).await;
    assert_eq!(app.confirm_cancel, Some(job));
    assert!(render(&app).contains("Cancel job #"));
    press(&mut app, KeyCode::Char('n'), &mut started).await;
    assert_eq!(app.confirm_cancel, None);
    assert_eq!(app.jobs[0].status, JobStatus::Running);

    // A commit lands: it is listed, and the table reloads.
    let rec = CommitRecord {
        version: 77,
        files_removed: 12,
        files_added: 1,
        bytes_removed: plan.bytes_in,
        bytes_added: 5000,
        rows: 3600,
        retries: 2,
        partitions: vec![marked.clone()],
        fingerprint: Default::default(),
    };
    let e = app.update(Action::Job {
        job,
        event: JobEvent::Committed(rec.clone()),
    });
    assert!(
        e.iter().any(|e| matches!(e, Effect::Load { .. })),
        "a commit reloads the table"
    );
    app.update(Action::Job {
        job,
        event: JobEvent::Finished(JobSummary {
            commits: vec![rec],
            files_removed: 12,
            files_added: 1,
            ..Default::default()
        }),
    });
    let screen = render(&app);
    assert!(screen.contains("v77"), "{screen}");
    assert!(screen.contains("-12 +1 files"), "{screen}");
    assert!(screen.contains("(2 retries)"), "{screen}");
    assert!(screen.contains("done"), "{screen}");

    // x on a finished job does nothing; y on a dialog that is not open does nothing.
    press(&mut app, KeyCode::Char('x'), &mut started).await;
    assert_eq!(app.confirm_cancel, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_confirmation_sends_the_cancel() {
    let mut app = App::new("t".into(), Duration::ZERO, (W, H));
    let plan = lakehealth::engine::compact::plan::CompactionPlan {
        table_version: 1,
        target_file_size: 1,
        min_file_size: 1,
        compression_ratio: 1.0,
        partitions: vec![],
        files_in: 10,
        bytes_in: 100,
        predicted_files_out: 1,
        bins: 1,
        skipped_deletion_vector_files: 0,
    };
    app.jobs
        .push(lakehealth::tui::jobs::JobView::new(9, "t".into(), &plan));
    let a = key_to_action(&app, KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)).unwrap();
    app.update(a);
    let a = key_to_action(&app, KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE)).unwrap();
    let e = app.update(a);
    assert_eq!(e, vec![Effect::CancelJob { id: 9 }]);
    assert_eq!(app.jobs[0].status, JobStatus::Cancelling);
}
