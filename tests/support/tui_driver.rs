//! Drives the TUI as its event loop does, minus the terminal: keys go through the real keymap
//! into `App::update`, and every effect goes to the real runner (`tui::loader::Loader`: real
//! loads, real plans, real compaction jobs on their own runtime), whose reports come back over
//! its channel.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::compact::locks::PartitionLocks;
use lakehealth::engine::options::OpenOptions;
use lakehealth::tui::action::{Action, Effect, TaskProgress};
use lakehealth::tui::app::App;
use lakehealth::tui::clock::Clock;
use lakehealth::tui::key_to_action;
use lakehealth::tui::loader::Loader;
use tokio::sync::mpsc;

/// 2024-01-01T00:00:00Z: after every fixture's commits and before any a test makes, so "ago"
/// columns read the same on every run ("0s ago" for a commit made by the test).
pub const FROZEN_WALL_MS: i64 = 1_704_067_200_000;

pub struct Driven {
    pub app: App,
    pub loader: Loader,
    rx: mpsc::UnboundedReceiver<Action>,
    /// Every job event the app received, in order.
    pub job_events: Vec<JobEvent>,
}

impl Driven {
    pub fn new(uri: String, size: (u16, u16)) -> Self {
        Self::with(uri, size, OpenOptions::default(), Arc::default())
    }

    /// With the loader's partition locks shared with the test (which can hold one to keep a job
    /// waiting), and these options.
    pub fn with(
        uri: String,
        size: (u16, u16),
        opts: OpenOptions,
        locks: Arc<PartitionLocks>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Driven {
            app: App::new(uri, Duration::ZERO, size),
            loader: Loader::with_locks(opts, tx, locks),
            rx,
            job_events: Vec::new(),
        }
    }

    /// The app with its clock frozen (snapshots: no wall-clock time may show).
    pub fn frozen(mut self) -> Self {
        self.app.clock = Clock::frozen(FROZEN_WALL_MS);
        self
    }

    /// Starts the first load and waits for it.
    pub async fn open(mut self) -> Self {
        let e = self.app.start();
        self.run(e);
        self.settle().await;
        self
    }

    pub fn run(&mut self, effects: Vec<Effect>) {
        for e in effects {
            self.loader.run(e);
        }
    }

    pub fn update(&mut self, a: Action) {
        let e = self.app.update(a);
        self.run(e);
    }

    /// A key press, without waiting for what it started.
    pub fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE)
    }

    pub fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) {
        if let Some(a) = key_to_action(&self.app, KeyEvent::new(code, mods)) {
            self.update(a);
        }
    }

    /// Presses each key, waiting after each for the loads and plans it started.
    pub async fn keys(&mut self, codes: &[KeyCode]) {
        for &c in codes {
            self.key(c);
            self.settle().await;
        }
    }

    pub async fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self.settle().await;
    }

    /// Feeds the runner's reports to the app until `done` holds.
    pub async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while !done(&self.app) {
            let a = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                .expect("the loader's channel stays open");
            if let Action::Progress {
                progress: TaskProgress::Job(event),
                ..
            } = &a
            {
                self.job_events.push(*event.clone());
            }
            self.update(a);
        }
    }

    /// Waits until no load runs and no preview is being planned.
    pub async fn settle(&mut self) {
        self.until("loads and plans to finish", |a| {
            a.loading.is_none() && a.plan().is_none_or(|p| p.result.is_some())
        })
        .await;
    }

    /// Waits until every job has ended, and then for the loads their commits started.
    pub async fn jobs_done(&mut self) {
        self.until("the jobs to end", |a| {
            a.jobs.iter().all(|j| !j.status().is_active())
        })
        .await;
        self.settle().await;
        self.loader.wait_jobs(Duration::from_secs(30)).await;
    }

    /// The screen as text, the temporary folder `tmp` replaced, trailing blanks trimmed.
    pub fn text(&self, tmp: &tempfile::TempDir) -> String {
        let root = tmp.path().to_str().unwrap();
        self.screen()
            .replace(root, "<tmp>")
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn screen(&self) -> String {
        let (w, h) = self.app.size;
        super::common::render(&self.app, w, h)
    }

    /// How many `Finished` events each job sent.
    pub fn finished_events(&self) -> usize {
        self.job_events
            .iter()
            .filter(|e| matches!(e, JobEvent::Finished(_)))
            .count()
    }
}

/// A Delta log without data files (the screens and the plan read only the log) of a table
/// partitioned by `ingestion_date`, committed an hour before the frozen clock: one file per
/// (day, size), numbered within its day.
pub fn log_only_table(dir: &std::path::Path, files: &[(&str, u64)]) {
    use serde_json::json;
    let log = dir.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let schema = json!({"type": "struct", "fields": [
        {"name": "x", "type": "long", "nullable": true, "metadata": {}},
        {"name": "ingestion_date", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let ts = FROZEN_WALL_MS - 3_600_000;
    let mut actions = vec![
        json!({"commitInfo": {"timestamp": ts, "operation": "WRITE", "engineInfo": "test"}}),
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": schema, "partitionColumns": ["ingestion_date"],
            "configuration": {}, "createdTime": ts}}),
    ];
    let mut numbers: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for &(day, size) in files {
        let i = numbers.entry(day).or_default();
        actions.push(json!({"add": {
            "path": format!("ingestion_date={day}/part-{i:05}.parquet"),
            "partitionValues": {"ingestion_date": day},
            "size": size, "modificationTime": ts, "dataChange": true,
        }}));
        *i += 1;
    }
    let text: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
    std::fs::write(log.join(format!("{:020}.json", 0)), text.join("\n") + "\n").unwrap();
}
