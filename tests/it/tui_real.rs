//! The TUI driven through its real effect runner (`tui::loader::Loader`: real loads, real plans,
//! real compaction jobs on their own runtime), as the event loop drives it, minus the terminal.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::tui::action::{Action, Effect};
use lakehealth::tui::app::App;
use lakehealth::tui::jobs::JobStatus;
use lakehealth::tui::key_to_action;
use lakehealth::tui::loader::Loader;
use tokio::sync::mpsc;

use crate::common::*;

const W: u16 = 170;
const H: u16 = 50;

struct Driven {
    app: App,
    loader: Loader,
    rx: mpsc::UnboundedReceiver<Action>,
    /// Every job event the app received, in order.
    job_events: Vec<JobEvent>,
}

impl Driven {
    fn new(uri: String) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Driven {
            app: App::new(uri, Duration::ZERO, (W, H)),
            loader: Loader::new(opts(), tx),
            rx,
            job_events: Vec::new(),
        }
    }

    fn run(&mut self, effects: Vec<Effect>) {
        for e in effects {
            self.loader.run(e);
        }
    }

    fn key(&mut self, code: KeyCode) {
        if let Some(a) = key_to_action(&self.app, KeyEvent::new(code, KeyModifiers::NONE)) {
            let e = self.app.update(a);
            self.run(e);
        }
    }

    /// Feeds background results to the app until `done` holds.
    async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while !done(&self.app) {
            let a = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                .expect("the loader's channel stays open");
            if let Action::Job { event, .. } = &a {
                self.job_events.push(event.clone());
            }
            let e = self.app.update(a);
            self.run(e);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_made_before_another_compaction_landed_never_runs_as_is() {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into(), "2026-11-02".into()], 15, 300)
        .await
        .unwrap();
    let before = read_back(d.path().to_str().unwrap(), None);
    let mut t = Driven::new(l.display());
    let e = t.app.start();
    t.run(e);
    t.until("the table", |a| a.table.is_some()).await;

    // Mark a partition and open the preview: a real plan of its 15 files.
    t.key(KeyCode::Char(' '));
    t.key(KeyCode::Char('c'));
    t.until("the plan", |a| {
        a.plan.as_ref().is_some_and(|p| p.result.is_some())
    })
    .await;
    let planned = match &t.app.plan.as_ref().unwrap().result {
        Some(Ok(p)) => p.clone(),
        other => panic!("no plan: {other:?}"),
    };
    assert_eq!(planned.files_in, 15);

    // While the preview is open, Python deltalake compacts the whole table.
    let o = py_script("race_optimize.py").arg(d.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Enter starts the job from the stale preview; it must plan again, not run the old plan.
    t.key(KeyCode::Enter);
    t.until("the job to finish", |a| {
        a.jobs.first().is_some_and(|j| !j.status.is_active())
    })
    .await;
    t.loader.wait_jobs(Duration::from_secs(30)).await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.errors);
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
    let finished = t
        .job_events
        .iter()
        .filter(|e| matches!(e, JobEvent::Finished(_)))
        .count();
    assert_eq!(finished, 1, "exactly one final event");
    let after = read_back(d.path().to_str().unwrap(), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.rows);
    let screen = render(&t.app, W, H);
    assert!(screen.contains("done"), "{screen}");
}
