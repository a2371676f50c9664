//! The compaction flow through the real key handling and the real runner: mark, preview (a real
//! plan), start (a real job on its own runtime), watch it end; a cancel while a job waits for a
//! partition lock, and a job whose replan fails: every job ends with a final status on screen.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::compact::locks::{PartitionLocks, key};
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::tui::action::Effect;
use lakehealth::tui::app::App;
use lakehealth::tui::jobs::JobStatus;
use lakehealth::tui::key_to_action;
use lakehealth::tui::keymap::Context;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (170, 50);

/// A sensor table with two partitions of `files` small files each.
async fn small_file_table(dir: &std::path::Path, files: u32) {
    let l = loc(dir);
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into(), "2026-11-02".into()], files, 300)
        .await
        .unwrap();
}

/// Marks the selected partition and opens the preview of its compaction (a real plan).
async fn mark_and_preview(t: &mut Driven) {
    t.keys(&[KeyCode::Char(' '), KeyCode::Char('c')]).await;
    assert!(
        matches!(
            t.app.plan().and_then(|p| p.result.as_ref()),
            Some(Ok(p)) if p.plan.bins > 0
        ),
        "{}",
        t.screen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_preview_and_run_a_real_job_to_done_then_the_table_reloads() {
    let d = tempfile::tempdir().unwrap();
    small_file_table(d.path(), 12).await;
    let mut t = Driven::new(loc(d.path()).display(), SIZE).open().await;
    assert_eq!(t.app.table.as_ref().unwrap().stats.files, 24);

    // Space marks the selected partition (and moves down); the marks pane lists it.
    t.keys(&[KeyCode::Char(' ')]).await;
    assert_eq!(t.app.marks.len(), 1);
    let marked = t.app.marks.iter().next().unwrap().clone();
    let screen = t.screen();
    assert!(screen.contains("Marked (1)"), "{screen}");
    assert!(
        screen.contains(&format!("● {}", marked.label())),
        "{screen}"
    );

    // c previews a real plan of the marked partition.
    t.keys(&[KeyCode::Char('c')]).await;
    let plan = match &t.app.plan().unwrap().result {
        Some(Ok(p)) => p.plan.clone(),
        other => panic!("no plan: {other:?}"),
    };
    assert_eq!(plan.files_in, 12);
    assert_eq!(plan.partitions.len(), 1);
    assert_eq!(plan.partitions[0].values, marked);
    let screen = t.screen();
    assert!(screen.contains("Compaction preview"), "{screen}");
    assert!(
        screen.contains(&format!("12 → ~{}", plan.predicted_files_out)),
        "{screen}"
    );
    assert!(screen.contains("Enter / y start"), "{screen}");

    // Enter starts it: the dialog closes, the marks clear, the job runs to its end.
    t.key(KeyCode::Enter);
    assert!(t.app.plan().is_none());
    assert!(t.app.marks.is_empty());
    assert_eq!(t.app.jobs.len(), 1);
    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Done, "{:?}", job.errors);
    assert_eq!(t.finished_events(), 1, "exactly one final event");
    assert_eq!(job.commits.len(), 1);
    let c = &job.commits[0];
    assert_eq!(c.files_removed, 12);
    assert_eq!(c.partitions, vec![marked.clone()]);
    assert_eq!(job.progress.files_read, 12);
    assert_eq!(job.ratio(), 1.0);

    // The commit reloaded the table: the partition's 12 files are now `files_added`.
    let table = t.app.table.as_ref().unwrap();
    assert_eq!(table.version, c.version);
    assert_eq!(table.stats.files, 12 + c.files_added);
    let screen = t.screen();
    assert!(screen.contains("done"), "{screen}");
    assert!(screen.contains("files 12/12"), "{screen}");
    assert!(
        screen.contains(&format!("v{} -12 +{} files", c.version, c.files_added)),
        "{screen}"
    );
    assert!(
        screen.contains("OPTIMIZE"),
        "the commits panel lists it:\n{screen}"
    );

    // x with no running job opens nothing.
    t.keys(&[KeyCode::Char('x')]).await;
    assert_eq!(t.app.context(), Context::Table);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_while_it_waits_for_a_partition_lock_ends_cancelled() {
    let d = tempfile::tempdir().unwrap();
    small_file_table(d.path(), 4).await;
    let locks = Arc::new(PartitionLocks::default());
    let mut t = Driven::with(loc(d.path()).display(), SIZE, opts(), locks.clone())
        .open()
        .await;
    let selected = t.app.selected_partition().unwrap().values.clone();
    // Another job of this process holds the partition.
    let held = locks
        .try_acquire(&[key(&loc(d.path()).display(), &selected)])
        .expect("the partition is free");
    mark_and_preview(&mut t).await;
    t.key(KeyCode::Enter);
    // It waits: its first event (the pace it will run at) comes, and no `Started` while the
    // lock is held.
    t.until("the job's first event", |a| a.jobs[0].pace.is_some())
        .await;
    assert_eq!(t.app.jobs[0].status(), JobStatus::Queued);
    assert!(t.screen().contains("queued"), "{}", t.screen());

    // x asks first; n keeps it.
    t.key(KeyCode::Char('x'));
    assert_eq!(t.app.context(), Context::Dialog);
    assert!(t.screen().contains("Cancel job #"), "{}", t.screen());
    t.key(KeyCode::Char('n'));
    assert_eq!(t.app.context(), Context::Table);
    assert_eq!(t.app.jobs[0].status(), JobStatus::Queued);

    // x, y cancels it while it still waits for the lock.
    t.key(KeyCode::Char('x'));
    t.key(KeyCode::Char('y'));
    assert_eq!(t.app.jobs[0].status(), JobStatus::Cancelling);
    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Cancelled, "{:?}", job.errors);
    assert_eq!(t.finished_events(), 1, "exactly one final event");
    assert!(job.commits.is_empty());
    assert!(t.screen().contains("cancelled"), "{}", t.screen());
    assert_eq!(t.app.table.as_ref().unwrap().stats.files, 8);
    drop(held);
    assert!(!locks.is_held(&key(&loc(d.path()).display(), &selected)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_replan_fails_ends_failed_with_the_error_on_screen() {
    let d = tempfile::tempdir().unwrap();
    small_file_table(d.path(), 4).await;
    let mut t = Driven::new(loc(d.path()).display(), SIZE).open().await;
    mark_and_preview(&mut t).await;
    // The log moves on with a commit that cannot be read: the job's re-read before it runs
    // (its replan) fails.
    let version = t.app.table.as_ref().unwrap().version;
    let bad = d
        .path()
        .join("_delta_log")
        .join(format!("{:020}.json", version + 1));
    std::fs::write(&bad, "this is not a commit\n").unwrap();
    t.key(KeyCode::Enter);
    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Failed, "{:?}", t.job_events);
    assert_eq!(t.finished_events(), 1, "exactly one final event");
    assert!(job.commits.is_empty());
    assert!(!job.errors.is_empty());
    let screen = t.screen();
    assert!(screen.contains("failed"), "{screen}");
    assert!(
        screen.contains(&format!(" ! {}", &job.errors[0][..20])),
        "the error is shown:\n{screen}"
    );
}

/// An app whose job 9 (shown as #1) runs a one-bin plan.
fn app_with_a_running_job() -> App {
    let mut app = App::new("t".into(), Duration::ZERO, SIZE);
    app.jobs.push(lakehealth::tui::jobs::JobView::new(
        9,
        lakehealth::tui::jobs::JobNumber(1),
        "t".into(),
        &one_bin_plan(),
    ));
    app
}

/// A key press, as the event loop turns it into an action.
fn press(app: &mut App, c: char) -> Vec<Effect> {
    let a = key_to_action(app, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).unwrap();
    app.update(a)
}

#[tokio::test]
async fn confirming_a_cancel_sends_it_and_marks_the_job_cancelling() {
    let mut app = app_with_a_running_job();
    press(&mut app, 'x');
    let e = press(&mut app, 'y');
    assert_eq!(e, vec![Effect::CancelJob { id: 9 }]);
    assert_eq!(app.jobs[0].status(), JobStatus::Cancelling);
}

#[tokio::test]
async fn a_job_whose_preview_is_gone_ends_failed_at_once_instead_of_staying_queued() {
    use lakehealth::engine::compact::events::JobEvent;
    use lakehealth::tui::action::{Action, TaskProgress};
    use lakehealth::tui::loader::Loader;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut loader = Loader::new(opts(), tx);
    // No plan was prepared under this id: no runner will ever report on it.
    loader.run(Effect::StartJob {
        id: 7,
        full_speed: false,
    });
    let a = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("the loader reports at once")
        .expect("the channel stays open");
    let Action::Progress {
        task: 7,
        progress: TaskProgress::Job(ev),
    } = a
    else {
        panic!("{a:?}")
    };
    assert!(
        matches!(&*ev, JobEvent::Finished(s) if !s.errors.is_empty()),
        "{ev:?}"
    );
    assert!(rx.try_recv().is_err(), "one final event, nothing else");
}

#[tokio::test]
async fn a_refused_bin_shows_in_the_jobs_panel_with_who_took_its_files() {
    use lakehealth::engine::compact::events::{ConflictRecord, JobEvent};
    use lakehealth::engine::delta::commit::Conflict;
    use lakehealth::engine::model::partition::PartitionValues;
    use lakehealth::tui::action::{Action, TaskProgress};
    let mut app = app_with_a_running_job();
    let conflict = ConflictRecord {
        partition: PartitionValues(vec![("d".into(), None)]),
        conflict: Conflict {
            version: Some(12),
            operation: Some("OPTIMIZE".into()),
            engine: Some("delta-rs.1.6.6".into()),
            missing_files: 40,
            files: 40,
            reason: None,
        },
        replanned_bins: 0,
    };
    app.update(Action::Progress {
        task: 9,
        progress: TaskProgress::Job(Box::new(JobEvent::Conflict(conflict))),
    });
    assert_eq!(app.jobs[0].conflicts.len(), 1);
    // The jobs panel alone (the table view around it needs a loaded table).
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(SIZE.0, 8)).unwrap();
    term.draw(|f| lakehealth::tui::view::jobs::draw(f, f.area(), &app))
        .unwrap();
    let buf = term.backend().buffer().clone();
    let screen: String = (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect();
    assert!(
        screen.contains(
            "1 conflict: d=null: 40 of its 40 files were removed by version 12 (OPTIMIZE, delta-rs.1.6.6)"
        ),
        "{screen}"
    );
}

/// A plan of one bin, for jobs whose events the test feeds itself.
fn one_bin_plan() -> lakehealth::engine::compact::plan::CompactionPlan {
    lakehealth::engine::compact::plan::CompactionPlan {
        table_version: 1,
        target_file_size: 1,
        min_file_size: 1,
        compression_ratio: 1.0,
        partitions: vec![],
        files_in: 10,
        bytes_in: 100,
        predicted_files_out: 1,
        bins: 1,
        deletion_vector_files: 0,
        deleted_rows: 0,
        files_rewritten_for_deletes: 0,
        notes: vec![],
        estimate: Default::default(),
        order: None,
    }
}

#[tokio::test]
async fn quitting_while_a_job_runs_asks_first_n_keeps_it_and_y_cancels_it_and_quits() {
    let mut app = app_with_a_running_job();
    assert!(press(&mut app, 'q').is_empty(), "nothing is cancelled yet");
    assert!(!app.should_quit);
    let screen = render(&app, 120, 40);
    assert!(
        screen.contains("Quit? 1 job is running: quitting cancels it"),
        "{screen}"
    );
    assert!(press(&mut app, 'n').is_empty());
    assert!(!app.should_quit, "n keeps the job running");
    assert!(app.jobs[0].status().is_active());
    press(&mut app, 'q');
    let e = press(&mut app, 'y');
    assert_eq!(e, vec![Effect::CancelJob { id: 9 }]);
    assert!(app.should_quit);
    assert_eq!(app.jobs[0].status(), JobStatus::Cancelling);
}

#[tokio::test]
async fn a_terminal_that_went_away_quits_at_once_and_cancels_the_running_job() {
    let mut app = app_with_a_running_job();
    let e = app.update(lakehealth::tui::action::Action::Shutdown);
    assert_eq!(e, vec![Effect::CancelJob { id: 9 }]);
    assert!(app.should_quit, "nobody is there to answer a question");
}

/// Ingestion first in the TUI as headless: beside an active writer the preview says the pace a
/// job would start at and why, and `f` there starts it at full speed instead (the headless
/// command says `--parallelism`); `f` on the table view lifts a running job's pace. The
/// writer's and the table's rows all stay (Python reader).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_writer_the_preview_and_the_job_show_the_pace_and_f_lifts_it() {
    use crate::support::writer::{assert_no_row_lost, background_writer, verify};
    use tokio_util::sync::CancellationToken;

    let (d, l, mut written) = seeded_batches(40).await;
    let cancel_writer = CancellationToken::new();
    let writer = background_writer(l.clone(), cancel_writer.clone());
    let mut t = Driven::new(l.display(), SIZE).open().await;
    // The writer is active once its commits are in the log the preview reads.
    let mut planned = None;
    for _ in 0..100 {
        t.keys(&[KeyCode::Char('c')]).await;
        let p = match t.app.plan().and_then(|p| p.result.as_ref()) {
            Some(Ok(p)) => p.clone(),
            other => panic!("no plan: {other:?}"),
        };
        if p.throttle
            .as_ref()
            .is_some_and(|t| t.budget.read_bytes_per_second.is_some())
        {
            planned = Some(p);
            break;
        }
        t.keys(&[KeyCode::Esc]).await;
    }
    let planned = planned.expect("the preview never saw the writer as active");
    let reason = &planned.throttle.as_ref().unwrap().reason;
    assert!(reason.starts_with("writer active"), "{reason}");
    let s = t.screen();
    assert!(
        s.contains("Pace (f: full speed): pace 24 MiB/s: writer active"),
        "{s}"
    );
    assert!(!s.contains("--parallelism"), "{s}");

    // f: full speed as asked, and the headless command says how; f again: paced again.
    t.keys(&[KeyCode::Char('f')]).await;
    let s = t.screen();
    assert!(s.contains("Pace: full speed as asked"), "{s}");
    assert!(s.contains("--parallelism"), "{s}");
    t.keys(&[KeyCode::Char('f')]).await;
    assert!(
        t.screen().contains("Pace (f: full speed)"),
        "{}",
        t.screen()
    );

    // Started paced: its first event is the pace it starts at, and f lifts it.
    t.key(KeyCode::Enter);
    t.until("the job's pace", |a| {
        a.jobs.first().is_some_and(|j| j.pace.is_some())
    })
    .await;
    assert!(t.app.jobs[0].paced(), "{:?}", t.app.jobs[0].pace);
    let lifted = |a: &App| {
        a.jobs[0].pace.as_ref().is_some_and(|p| {
            p.bytes_per_second.is_none() && p.why.starts_with("lifted by the user")
        })
    };
    t.key(KeyCode::Char('f'));
    t.until("the lifted pace", lifted).await;
    t.jobs_done().await;
    assert_eq!(
        t.app.jobs[0].status(),
        JobStatus::Done,
        "{:?}",
        t.app.jobs[0].errors
    );
    // Lifted for good: the writer's cadence never brought a pace back.
    assert!(lifted(&t.app), "{:?}", t.app.jobs[0].pace);
    assert!(!t.app.has_paced_jobs());

    cancel_writer.cancel();
    written.extend(writer.join().unwrap());
    assert_no_row_lost(&verify(d.path()), &written);
}
