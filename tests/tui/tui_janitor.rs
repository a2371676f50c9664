//! The janitor in the TUI, through the real keymap and the real runner: `a` on a table with a
//! due partition flags it with its reason, runs a janitor job through the jobs panel's runner
//! (it commits; the rows read back by Python are the same), and `w` shows the decisions.

use crossterm::event::KeyCode;
use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::janitor::decide::DecisionKind;
use lakehealth::engine::janitor::policy::Policy;
use lakehealth::engine::model::partition::PartitionValues;
use lakehealth::engine::options::OpenOptions;
use lakehealth::tui::app::Modal;
use lakehealth::tui::jobs::JobStatus;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (160, 44);

/// Timestamps and times of day of decisions (wall time) replaced, and the temporary folder.
fn stable(s: &str, tmp: &std::path::Path) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.replace(tmp.to_str().unwrap(), "<tmp>").chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // 2026-11-30T12:00:00.000Z
        let is_ts = i + 24 <= chars.len()
            && chars[i + 4] == '-'
            && chars[i + 10] == 'T'
            && chars[i + 23] == 'Z'
            && chars[i..i + 4].iter().all(|c| c.is_ascii_digit());
        // 12:00:00 (the why view shows the time of day)
        let is_time = i + 8 <= chars.len()
            && chars[i + 2] == ':'
            && chars[i + 5] == ':'
            && [0, 1, 3, 4, 6, 7]
                .iter()
                .all(|&k| chars[i + k].is_ascii_digit());
        if is_ts {
            out.push_str("<time>                  ");
            i += 24;
        } else if is_time {
            out.push_str("<time>  ");
            i += 8;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn janitor_key_flags_the_due_partition_runs_its_job_in_the_panel_and_why_explains() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("sensor");
    std::fs::create_dir_all(&table).unwrap();
    let l = loc(&table);
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into()], 55, 50)
        .await
        .unwrap();
    seed_small_files(&l, &["2026-11-02".into()], 4, 50)
        .await
        .unwrap();
    let before = read_back(table.to_str().unwrap(), None);

    let mut t = Driven::new(l.display(), SIZE).frozen().open().await;
    let opts = OpenOptions::default();
    t.loader.set_janitor(
        Policy::builtin(opts.thresholds),
        d.path().join("history.jsonl"),
    );
    assert!(t.screen().contains("a janitor"), "the hint bar offers it");

    t.key(KeyCode::Char('a'));
    t.until("the janitor's decisions", |a| !a.janitor.why.is_empty())
        .await;
    let due = PartitionValues(vec![("ingestion_date".into(), Some("2026-11-01".into()))]);
    let other = PartitionValues(vec![("ingestion_date".into(), Some("2026-11-02".into()))]);
    let (kind, reason) = t.app.janitor.flag(&due).cloned().unwrap();
    assert_eq!(kind, DecisionKind::Due);
    assert!(reason.starts_with("due: 55 small files >= 50"), "{reason}");
    assert!(t.app.janitor.flag(&other).is_none());

    // Its job appears in the jobs panel like a manual one, and runs to a commit.
    t.until("the janitor's job", |a| !a.jobs.is_empty()).await;
    let screen = stable(&t.screen(), d.path());
    let flagged: Vec<&str> = screen
        .lines()
        // Partition rows start with their mark column (the janitor panel's reason does not).
        .filter(|l| l.starts_with("│  ") && l.contains('⚑'))
        // The partitions panel only (the histogram panel is beside it).
        .filter_map(|l| l.split("││").next())
        .collect();
    assert_eq!(flagged.len(), 1, "{screen}");
    assert!(
        flagged[0].contains("ingestion_date=2026-11-01  ⚑ 55 small"),
        "{screen}"
    );
    // The selected partition's reason in full, in the janitor panel.
    assert!(
        screen.contains("⚑ ingestion_date=2026-11-01: due: 55 small files >= 50 (default)"),
        "{screen}"
    );
    insta::assert_snapshot!("janitor_flagged_rows", flagged.join("\n"));
    assert!(screen.contains("janitor on:"), "{screen}");

    t.jobs_done().await;
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Done, "{:?}", job.errors);
    assert_eq!(job.partitions, vec![due.clone()]);
    let committed: Vec<_> = t
        .job_events
        .iter()
        .filter_map(|e| match e {
            JobEvent::Committed(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(committed.len(), 1, "{:?}", t.job_events);
    assert_eq!(committed[0].files_removed, 55);
    let after = read_back(table.to_str().unwrap(), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.distinct_ids);
    assert_eq!(after.reading_sum, before.reading_sum);
    assert_eq!(after.files, 1 + 4, "the due partition is one file now");

    // The why view lists the decisions: rule, decision, reason, time.
    t.key(KeyCode::Char('w'));
    assert!(matches!(t.app.modals.modal(), Some(Modal::Why { .. })));
    let why = stable(&t.screen(), d.path());
    assert!(why.contains("due: 55 small files >= 50"), "{why}");
    assert!(why.contains("not due: 4 small files < 50"), "{why}");
    // The dialog's box only (the screen under it shows at its sides).
    let lines: Vec<Vec<char>> = why.lines().map(|l| l.chars().collect()).collect();
    let top = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains("┌ Why: the janitor"))
        .unwrap();
    let left = lines[top].iter().position(|c| *c == '┌').unwrap();
    let right = lines[top].iter().rposition(|c| *c == '┐').unwrap();
    let view: Vec<String> = lines[top..]
        .iter()
        .map(|l| l[left..=right.min(l.len() - 1)].iter().collect::<String>())
        .take_while(|l| !l.starts_with('└'))
        .filter(|l| !l.trim_matches(|c| c == '│' || c == ' ').is_empty())
        .collect();
    insta::assert_snapshot!("janitor_why_view", view.join("\n"));
    t.key(KeyCode::Esc);
    assert!(t.app.modals.modal().is_none());

    // The history file has the decisions too.
    let h = std::fs::read_to_string(d.path().join("history.jsonl")).unwrap();
    assert!(h.contains("\"decision\":\"due\""), "{h}");

    // `a` again switches it off: no flag.
    t.key(KeyCode::Char('a'));
    assert!(t.app.janitor.flag(&due).is_none());
    assert!(!t.app.janitor.is_on());
}

/// The TUI runs the janitor's pipeline, not a copy: a job that fails in the TUI's runner is
/// recorded by the engine janitor (its result and schedule lines in the history), and the next
/// round holds the whole table back by `watch`'s back-off rule, in its words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_janitor_job_in_the_tui_backs_its_table_off_by_the_engines_rule() {
    use lakehealth::engine::compact::executor::{Executor, RayOptions};
    use lakehealth::tui::action::Action;
    use lakehealth::tui::janitor::TuiJanitor;

    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("sensor");
    std::fs::create_dir_all(&table).unwrap();
    let l = loc(&table);
    create_sensor_table(&l).await.unwrap();
    for (date, files) in [("2026-11-01", 55), ("2026-11-02", 52)] {
        seed_small_files(&l, &[date.into()], files, 50)
            .await
            .unwrap();
    }
    let before = read_back(table.to_str().unwrap(), None);

    let mut t = Driven::new(l.display(), SIZE).open().await;
    let mut policy = Policy::builtin(OpenOptions::default().thresholds);
    policy.interval = std::time::Duration::from_millis(200);
    policy.backoff_base = std::time::Duration::from_secs(600);
    t.app.janitor = TuiJanitor::new(&policy);
    let history = d.path().join("history.jsonl");
    t.loader.set_janitor(policy, history.clone());
    // A cluster nobody listens on: every bin fails, nothing is written.
    let mut ray = RayOptions::new(&format!(
        "http://127.0.0.1:{}",
        crate::support::harness::free_port()
    ));
    ray.worker_binary = Some(env!("CARGO_BIN_EXE_lakehealth").into());
    t.loader.set_executor(Executor::Ray(ray));

    t.key(KeyCode::Char('a'));
    t.until("the janitor's job", |a| !a.jobs.is_empty()).await;
    t.jobs_done().await;
    assert_eq!(
        t.app.jobs.len(),
        1,
        "one job for the table's due partitions"
    );
    let job = &t.app.jobs[0];
    assert_eq!(job.status(), JobStatus::Failed);
    assert_eq!(job.partitions.len(), 2, "{:?}", job.partitions);

    // Later rounds: the table is held, every due partition says so, no job starts.
    let held = |a: &lakehealth::tui::app::App| {
        let mut p: Vec<_> = a
            .janitor
            .why
            .iter()
            .filter(|w| w.decision == DecisionKind::BackingOff)
            .map(|w| w.partition.clone())
            .collect();
        p.sort_by_key(|v| v.label());
        p.dedup();
        p.len()
    };
    let mut rounds = 0;
    while held(&t.app) < 2 || rounds < 3 {
        rounds += 1;
        assert!(
            rounds < 200,
            "no round held the table back: {:#?}",
            t.app.janitor.why
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        t.update(Action::Tick);
        t.until("the round", |a| a.janitor.cycle.is_none()).await;
    }
    assert_eq!(t.app.jobs.len(), 1, "no job starts while it backs off");
    let status = t.app.janitor.status().unwrap();
    assert!(
        status.contains(" · backing off: 1 failure in a row, next try in "),
        "{status}"
    );
    let reason = &t.app.janitor.why[0].reason;
    assert!(
        reason.starts_with("backing off: 1 failure in a row") && reason.contains("small files"),
        "{reason}"
    );

    // The history has what `watch` writes: the failed result of each partition and the
    // table's failure record.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&history)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "result" && l["outcome"] == "failed")
        .collect();
    assert_eq!(failed.len(), 2, "{lines:#?}");
    assert!(
        failed[0]["summary"]
            .as_str()
            .unwrap()
            .contains("cannot reach the Ray cluster"),
        "{:#}",
        failed[0]
    );
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "schedule" && l["failures"] == 1),
        "{lines:#?}"
    );

    let after = read_back(table.to_str().unwrap(), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.reading_sum, before.reading_sum);
    assert_eq!(
        after.files, before.files,
        "a failed job leaves nothing behind"
    );
}
