//! Every screen and dialog at the sizes people run terminals at (80×24, 100×30, 120×40,
//! 200×50), as snapshots, each render checked: an identifier (a partition value, a table name)
//! is never cut, wherever it shows; the histogram keeps its units; and while a job runs and the
//! table is followed, its progress and the live log are both on screen.

use std::path::Path;
use std::sync::Arc;

use crossterm::event::KeyCode;
use lakehealth::engine::compact::locks::{PartitionLocks, key};
use lakehealth::engine::options::OpenOptions;
use lakehealth::tui::live::{Follow, LiveStatus};

use crate::support::common::*;
use crate::support::tui_driver::{Driven, log_only_table};

const SIZES: [(u16, u16); 4] = [(80, 24), (100, 30), (120, 40), (200, 50)];
const DAYS: [&str; 4] = ["2026-11-27", "2026-11-28", "2026-11-29", "2026-11-30"];
const TABLES: [&str; 3] = ["clickstream_events", "clickstream_sessions", "orders"];

/// A table partitioned by `ingestion_date`: each day many small files, as a stream leaves them.
fn streamed_table(dir: &Path) {
    let files: Vec<(&str, u64)> = DAYS
        .iter()
        .enumerate()
        .flat_map(|(d, day)| (0..(40 + 10 * d as u64)).map(move |i| (*day, 40_000 + i * 1_000)))
        .collect();
    log_only_table(dir, &files);
}

/// Every place the screen shows the start (3 characters or more) of one of `ids` shows one of
/// them whole: an identifier is never cut (its column is abbreviated or dropped instead).
fn assert_ids_whole(screen: &str, ids: &[&str], what: &str) {
    for (n, line) in screen.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        for start in 0..chars.len() {
            let rest: String = chars[start..].iter().collect();
            // The longest prefix of any id this position starts.
            let longest = ids
                .iter()
                .map(|id| {
                    id.chars()
                        .zip(rest.chars())
                        .take_while(|(a, b)| a == b)
                        .count()
                })
                .max()
                .unwrap_or(0);
            let whole = ids.iter().any(|id| rest.starts_with(id));
            let before_is_word = start > 0 && chars[start - 1].is_alphanumeric();
            // However short, the start of an identifier followed by "…" is a cut one.
            let ellipsized = longest > 0 && chars.get(start + longest) == Some(&'…');
            assert!(
                whole || before_is_word || (longest < 3 && !ellipsized),
                "{what}: an identifier is cut on row {n} at column {start}: {line:?}\n{screen}"
            );
        }
    }
}

/// No two rows of a panel read the same: rows of different items that do (`ingestion_date=202`
/// twice) were cut where they differ. Each row is split at the panels' borders; a cell with
/// text (three letters or digits or more) may not repeat at the same column on another row.
fn assert_no_twin_rows(screen: &str, what: &str) {
    let mut seen: std::collections::HashMap<(usize, String), usize> = Default::default();
    for (n, line) in screen.lines().enumerate() {
        let mut col = 0;
        for cell in line.split('│') {
            let text = cell.trim();
            if text.chars().filter(|c| c.is_alphanumeric()).count() >= 3
                && let Some(first) = seen.insert((col, text.to_string()), n)
            {
                panic!("{what}: rows {first} and {n} read the same: {text:?}\n{screen}");
            }
            col += cell.chars().count() + 1;
        }
    }
}

/// Each histogram row (a bucket's label, count and bytes) keeps its byte unit.
fn assert_histogram_units(screen: &str, what: &str) {
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("MiB–") || l.contains("< 1 MiB") || l.contains("> 1 GiB"))
        .collect();
    assert!(!rows.is_empty(), "{what}: no histogram rows\n{screen}");
    for r in rows {
        let tail = r.rsplit("│").nth(1).unwrap_or(r);
        assert!(
            tail.trim_end().ends_with('B') || tail.contains("B◀"),
            "{what}: a histogram row lost its unit: {r:?}\n{screen}"
        );
    }
}

fn size_name((w, h): (u16, u16)) -> String {
    format!("{w}x{h}")
}

#[tokio::test]
async fn the_table_view_help_and_preview_at_every_size_cut_no_identifier() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    streamed_table(&table);
    for size in SIZES {
        let name = size_name(size);
        let mut t = Driven::new(loc(&table).display(), size)
            .frozen()
            .open()
            .await;
        assert!(t.app.error().is_none(), "{:?}", t.app.error());
        let s = t.text(&d);
        assert_ids_whole(&s, &DAYS, &format!("table view at {name}"));
        assert_no_twin_rows(&s, &format!("table view at {name}"));
        assert_histogram_units(&s, &format!("table view at {name}"));
        insta::assert_snapshot!(format!("size_matrix_table_{name}"), s);

        t.keys(&[KeyCode::Char('?')]).await;
        let s = t.text(&d);
        insta::assert_snapshot!(format!("size_matrix_help_{name}"), s);
        t.keys(&[KeyCode::Esc]).await;

        // Two partitions marked, then the preview of their compaction.
        t.keys(&[KeyCode::Char(' '), KeyCode::Char(' '), KeyCode::Char('c')])
            .await;
        let s = t.text(&d);
        assert!(s.contains("Compaction preview"), "{name}:\n{s}");
        assert_ids_whole(&s, &DAYS, &format!("preview at {name}"));
        assert_no_twin_rows(&s, &format!("preview at {name}"));
        insta::assert_snapshot!(format!("size_matrix_preview_{name}"), s);
    }
}

#[tokio::test]
async fn the_tables_list_at_every_size_shows_each_table_name_whole() {
    let d = tempfile::tempdir().unwrap();
    for name in TABLES {
        streamed_table(&d.path().join(name));
    }
    for size in SIZES {
        let name = size_name(size);
        let t = Driven::new(loc(d.path()).display(), size)
            .frozen()
            .open()
            .await;
        let s = t.text(&d);
        for table in TABLES {
            assert!(
                s.lines().any(|l| l.contains(&format!("{table} "))),
                "{table} is not whole at {name}:\n{s}"
            );
        }
        assert_no_twin_rows(&s, &format!("tables list at {name}"));
        insta::assert_snapshot!(format!("size_matrix_tables_{name}"), s);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_a_job_runs_its_progress_and_the_live_log_show_at_every_size() {
    for size in SIZES {
        let name = size_name(size);
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("events");
        streamed_table(&table);
        let locks = Arc::new(PartitionLocks::default());
        let mut t = Driven::with(
            loc(&table).display(),
            size,
            OpenOptions::default(),
            locks.clone(),
        )
        .frozen();
        t.app.follow = Follow::On { poll: None };
        let mut t = t.open().await;
        // The snapshot shows the live log following: wait for its first replay, not only the
        // panel (the preview's planning may finish first).
        t.until("the live log following", |a| {
            a.live
                .as_ref()
                .is_some_and(|l| matches!(l.status, LiveStatus::Following { .. }))
        })
        .await;
        // The job waits on a partition another job holds: it stays in flight while drawn.
        let selected = t.app.selected_partition().unwrap().values.clone();
        let _held = locks
            .try_acquire(&[key(&loc(&table).display(), &selected)])
            .expect("the partition is free");
        t.keys(&[KeyCode::Char(' '), KeyCode::Char('c')]).await;
        t.key(KeyCode::Enter);
        let s = t.text(&d);
        assert!(s.contains(" Live log "), "no live log at {name}:\n{s}");
        assert!(s.contains("#1"), "no job at {name}:\n{s}");
        assert!(s.contains("queued"), "the job's state at {name}:\n{s}");
        assert_ids_whole(&s, &DAYS, &format!("running job at {name}"));
        assert_no_twin_rows(&s, &format!("running job at {name}"));
        insta::assert_snapshot!(format!("size_matrix_job_{name}"), s);
    }
}
