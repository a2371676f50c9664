//! The TUI following a table's log through its real loop and loader: a commit Python deltalake
//! writes appears in the rendered feed, and the selection and marks stay on the same typed
//! partitions when a commit adds a partition that sorts before them and changes sizes, and rows
//! that tie on the sort key keep their order across live updates.

use std::time::Duration;

use crossterm::event::KeyCode;
use lakehealth::engine::delta::watch::LogEvent;
use lakehealth::engine::open::{Opened, load_table};
use lakehealth::tui::action::{Action, Command, Effect};
use lakehealth::tui::app::App;
use lakehealth::tui::clock::Clock;
use lakehealth::tui::live::{Follow, LiveStatus};
use tempfile::TempDir;

use crate::live::{append, day};
use crate::support::common::*;
use crate::support::tui_driver::{Driven, FROZEN_WALL_MS};

const SIZE: (u16, u16) = (170, 44);

/// The TUI on `table`, following its log (1 s polls), once the watcher has read it.
async fn following(table: &std::path::Path) -> Driven {
    let mut t = Driven::new(loc(table).display(), SIZE).frozen();
    t.app.follow = Follow::On {
        poll: Some(Duration::from_secs(1)),
    };
    let mut t = t.open().await;
    t.until("the watcher to read the table", |a| {
        a.live
            .as_ref()
            .is_some_and(|l| matches!(l.status, LiveStatus::Following { .. }))
    })
    .await;
    t
}

/// The screen as text: the temporary folder replaced, and the header's commit rate (from the
/// wall-clock times of the Python commits) masked.
fn text(t: &Driven, tmp: &TempDir) -> String {
    let root = tmp.path().to_str().unwrap();
    t.screen()
        .replace(root, "<tmp>")
        .lines()
        .map(|l| mask_rate(l.trim_end()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// "commits 48.9/min" -> "commits <r>/min" (any rate per minute), the line padded back to its
/// width inside its border.
fn mask_rate(line: &str) -> String {
    let Some(end) = line.find("/min") else {
        return line.to_string();
    };
    let start = line[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    if start == end {
        return line.to_string();
    }
    let masked = format!("{}<r>{}", &line[..start], &line[end..]);
    match masked.strip_suffix('│') {
        Some(body) => {
            let width = line.chars().count() - 1;
            format!("{:<width$}│", body.trim_end())
        }
        None => masked,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_a_commit_another_process_writes_appears_in_the_live_feed() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    append(&table, &[("2026-11-01", 10), ("2026-11-02", 10)]);
    let mut t = following(&table).await;
    assert_eq!(t.app.table.as_ref().unwrap().version, 0);
    // Ten minutes of following pass (the frozen clock moves once): arrival rates are per the
    // time followed.
    t.app.clock = Clock::frozen(FROZEN_WALL_MS + 600_000);

    let v = append(&table, &[("2026-11-02", 5), ("2026-11-03", 5)]);
    t.until("the commit on screen", |a| {
        a.table.as_ref().is_some_and(|t| t.version == v)
    })
    .await;
    let live = t.app.live.as_ref().unwrap();
    assert_eq!(live.commits_seen, 1);
    assert_eq!(live.live_from, Some(1));
    let s = text(&t, &d);
    let row = s
        .lines()
        .find(|l| l.contains("●v1"))
        .unwrap_or_else(|| panic!("the new commit in the feed:\n{s}"));
    assert!(row.contains("WRITE") && row.contains("+2 -0"), "{row}");
    assert!(
        row.contains("delta-rs"),
        "the engine from commitInfo: {row}"
    );
    assert!(s.contains("following v1 · 1 commit since opened"), "{s}");
    assert!(
        s.contains("d=2026-11-03"),
        "the new partition is listed:\n{s}"
    );
    // One small file each in ten minutes: 6 an hour; the default policy wants 50 small files.
    assert!(
        s.contains("d=2026-11-02: 6.0 small files/h · due in ~8 h"),
        "forecast:\n{s}"
    );
    insta::assert_snapshot!("live_feed", s);

    // A job in the jobs panel leaves the live panel on screen (compact when rows are short).
    let plan = lakehealth::engine::compact::plan::CompactionPlan {
        table_version: v,
        target_file_size: 1,
        min_file_size: 1,
        compression_ratio: 1.0,
        partitions: vec![],
        files_in: 2,
        bytes_in: 2,
        predicted_files_out: 1,
        bins: 1,
        deletion_vector_files: 0,
        deleted_rows: 0,
        files_rewritten_for_deletes: 0,
        notes: vec![],
        estimate: Default::default(),
        order: None,
    };
    for n in 1..=2 {
        t.app.jobs.push(lakehealth::tui::jobs::JobView::new(
            100 + n,
            lakehealth::tui::jobs::JobNumber(n as u32),
            "t".into(),
            &plan,
        ));
    }
    let s = text(&t, &d);
    assert!(s.contains("Jobs (2 active"), "{s}");
    assert!(s.contains(" Live log "), "the live panel stays:\n{s}");
    assert!(s.contains("following v1"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_selection_and_marks_stay_on_their_partitions_across_live_updates() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    append(&table, &[("2026-11-02", 10), ("2026-11-03", 10)]);
    append(&table, &[("2026-11-02", 10), ("2026-11-03", 10)]);
    let mut t = following(&table).await;
    // Sort by name (excess, small share, bytes, files, name), mark 11-02: Space marks it and
    // moves the cursor to 11-03.
    t.keys(&[KeyCode::Char('s'); 4]).await;
    t.keys(&[KeyCode::Char(' ')]).await;
    let selected = |t: &Driven| {
        let tr = t.app.table.as_ref().unwrap();
        t.app
            .partitions
            .selected(&tr.partitions)
            .unwrap()
            .values
            .clone()
    };
    assert_eq!(selected(&t), day("2026-11-03"));
    assert!(t.app.marks.contains(&day("2026-11-02")));
    assert_eq!(t.app.partitions.selected_position(), 1);

    // One commit adds 2026-11-01 (sorts first) and grows 2026-11-03.
    let v = append(&table, &[("2026-11-01", 10), ("2026-11-03", 10)]);
    t.until("the commit applied", |a| {
        a.table.as_ref().is_some_and(|t| t.version == v)
    })
    .await;
    let tr = t.app.table.as_ref().unwrap();
    let order: Vec<String> = t
        .app
        .partitions
        .order()
        .iter()
        .map(|&i| tr.partitions[i].values.label())
        .collect();
    assert_eq!(
        order,
        ["d=2026-11-01", "d=2026-11-02", "d=2026-11-03"],
        "name order, the new partition first"
    );
    assert_eq!(
        selected(&t),
        day("2026-11-03"),
        "the same partition stays selected"
    );
    assert_eq!(
        t.app.partitions.selected_position(),
        2,
        "it moved down one row"
    );
    assert!(t.app.marks.contains(&day("2026-11-02")) && t.app.marks.len() == 1);
    let grown = tr
        .partitions
        .iter()
        .find(|p| p.values == day("2026-11-03"))
        .unwrap();
    assert_eq!(grown.stats.files, 3, "its sizes changed");

    // Space now marks what is selected, the typed partition: 11-03, not the row that was there.
    t.keys(&[KeyCode::Char(' ')]).await;
    assert!(t.app.marks.contains(&day("2026-11-03")) && t.app.marks.len() == 2);
    insta::assert_snapshot!("live_selection_kept", text(&t, &d));
}

#[tokio::test]
async fn rows_with_equal_sort_keys_keep_their_order_and_the_selection_across_live_updates() {
    // Six partitions of one small file each: all tie on the default sort (excess files).
    let report = load_table(&loc(&fixture("delta-0.8.0-partitioned")), &opts(), &|_| {})
        .await
        .unwrap();
    let mut app = App::new(report.uri.clone(), Duration::ZERO, SIZE);
    app.follow = Follow::On {
        poll: Some(Duration::from_secs(1)),
    };
    let load = match app.start().as_slice() {
        [Effect::Load { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    let effects = app.update(Action::Loaded {
        load,
        result: Ok(Opened::Table(Box::new(report.clone()))),
    });
    let watch = match effects.as_slice() {
        [Effect::Watch { id, .. }] => *id,
        other => panic!("opening a followed table starts its watcher: {other:?}"),
    };
    for c in [Command::Down, Command::Down, Command::ToggleMark] {
        app.update(Action::Command(c));
    }
    let labels = |app: &App| -> Vec<String> {
        let t = app.table.as_ref().unwrap();
        app.partitions
            .order()
            .iter()
            .map(|&i| t.partitions[i].values.label())
            .collect()
    };
    let selected = |app: &App| app.selected_partition().unwrap().values.clone();
    let (order, sel) = (labels(&app), selected(&app));
    let marked = app.marks.clone();
    assert_eq!(app.partitions.selected_position(), 3);

    // Live updates whose report lists the partitions in another order, with sizes that change
    // but still tie on the sort key.
    for n in 1..=3u64 {
        let mut next = report.clone();
        next.version += n;
        next.partitions.reverse();
        next.partitions.rotate_left(n as usize);
        for p in &mut next.partitions {
            p.stats.bytes += 10 * n;
        }
        app.update(Action::Log {
            watch,
            event: LogEvent::Updated(Box::new(next)),
        });
        assert_eq!(labels(&app), order, "update {n}: same order");
        assert_eq!(selected(&app), sel, "update {n}: same partition selected");
        assert_eq!(app.partitions.selected_position(), 3);
        assert_eq!(app.marks, marked);
    }
    // Space marks the partition under the cursor, the same one as before the updates.
    app.update(Action::Command(Command::ToggleMark));
    assert!(app.marks.contains(&sel));
}

/// A compaction another process commits into the followed log shows in the live panel's status
/// whatever the writers keep on top of the feed: "compacted vN (-removed +added files)".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_landing_in_the_followed_log_shows_in_the_live_status() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    // Three commits of one file per partition: six small files to compact.
    for _ in 0..3 {
        append(&table, &[("2026-11-01", 10), ("2026-11-02", 10)]);
    }
    let mut t = following(&table).await;
    assert!(t.app.live.as_ref().unwrap().last_compaction.is_none());
    let o = py_script("race_optimize.py").arg(&table).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    t.until("the compaction in the live panel and the table", |a| {
        a.live.as_ref().is_some_and(|l| l.last_compaction.is_some())
            && a.table.as_ref().is_some_and(|t| t.version == 3)
    })
    .await;
    let c = t.app.live.as_ref().unwrap().last_compaction.unwrap();
    assert_eq!((c.version, c.files_removed, c.files_added), (3, 6, 2));
    let s = text(&t, &d);
    assert!(
        s.contains("compacted v3 (-6 +2 files) · following v3"),
        "{s}"
    );
}
