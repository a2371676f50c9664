//! The TUI at the widths people use it at (tmux panes of 100 to 220 columns): no value or number
//! is ever cut. A narrow panel abbreviates the partition column's name and drops its least
//! useful columns instead; titles and reasons wrap. Snapshots at 100, 140 and 220 columns, and
//! assertions that fail if any partition value or size on screen is cut.

use std::path::Path;

use crossterm::event::KeyCode;
use lakehealth::engine::janitor::policy::Policy;
use lakehealth::engine::options::OpenOptions;
use lakehealth::engine::size::format_bytes;
use lakehealth::tui::app::Screen;
use lakehealth::tui::keymap::Context;
use tempfile::TempDir;

use crate::support::common::*;
use crate::support::tui_driver::{Driven, log_only_table};

const WIDTHS: [u16; 3] = [100, 140, 220];
const HEIGHT: u16 = 40;
const DAYS: [&str; 6] = [
    "2026-11-25",
    "2026-11-26",
    "2026-11-27",
    "2026-11-28",
    "2026-11-29",
    "2026-11-30",
];

/// A table partitioned by `ingestion_date`, with a day of many small files and days of big ones
/// (139 MiB and more), as the demo's table is after a while.
fn demo_like_table(dir: &Path) {
    let mut files = Vec::new();
    for (d, day) in DAYS.iter().enumerate() {
        // Day 0: 10 small files (not enough for the janitor's default policy to start a job);
        // the others: a few files of about 139 MiB.
        let (count, size) = if d == 0 {
            (10, 48_000)
        } else {
            (2 + d as u64, 146_000_000 + d as u64 * 1_000_000)
        };
        files.extend((0..count).map(|_| (*day, size)));
    }
    log_only_table(dir, &files);
}

/// The partitions panel's rows: the screen rows between its column header and its border,
/// left of the right-hand panels.
fn partition_rows(s: &str) -> Vec<String> {
    s.lines()
        .skip_while(|l| !l.contains(" Partitions "))
        .skip(2)
        .take_while(|l| !l.starts_with('└'))
        .map(|l| l.split("││").next().unwrap_or(l).to_string())
        .filter(|l| l.contains("2026-"))
        .collect()
}

#[tokio::test]
async fn at_100_140_and_220_columns_no_partition_value_or_size_is_cut() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    demo_like_table(&table);
    for width in WIDTHS {
        let t = Driven::new(loc(&table).display(), (width, HEIGHT))
            .frozen()
            .open()
            .await;
        assert!(t.app.error().is_none(), "{:?}", t.app.error());
        let table = t.app.table.as_ref().unwrap();
        let s = t.text(&d);
        let rows = partition_rows(&s);
        assert_eq!(rows.len(), DAYS.len(), "at {width}:\n{s}");
        for p in &table.partitions {
            let day = p.values.0[0].1.clone().unwrap();
            let row = rows
                .iter()
                .find(|r| r.contains(&day))
                .unwrap_or_else(|| panic!("{day} cut at {width} columns:\n{s}"));
            let bytes = format_bytes(p.stats.bytes);
            assert!(
                row.contains(&format!(" {bytes} ")) || row.ends_with(&bytes),
                "{bytes} of {day} cut at {width} columns: {row:?}\n{s}"
            );
            let health = p.stats.health_score.to_string();
            assert!(
                row.trim_end_matches('│').trim_end().ends_with(&health),
                "health of {day} at {width}: {row:?}"
            );
        }
        // The header's numbers are whole too.
        assert!(s.contains(&format_bytes(table.stats.bytes)), "{s}");
        assert!(s.contains(&format!("{} files", table.stats.files)), "{s}");
        insta::assert_snapshot!(format!("table_view_{width}_columns"), s);
    }
}

#[tokio::test]
async fn the_janitors_policy_and_reasons_wrap_instead_of_being_cut() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    demo_like_table(&table);
    let mut t = Driven::new(loc(&table).display(), (100, HEIGHT))
        .frozen()
        .open()
        .await;
    let history = tempfile::tempdir().unwrap();
    t.loader.set_janitor(
        Policy::builtin(OpenOptions::default().thresholds),
        history.path().join("history.jsonl"),
    );
    t.keys(&[KeyCode::Char('a')]).await;
    t.until("the janitor's first decisions", |a| {
        !a.janitor.why.is_empty()
    })
    .await;
    let s = t.text(&d);
    let policy = t.app.janitor.policy.clone();
    // Every word of the policy summary is on screen, whole.
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    for word in policy.split_whitespace() {
        assert!(flat.contains(word), "{word:?} of the policy is cut:\n{s}");
    }
    assert!(s.contains(" Janitor "), "{s}");
    insta::assert_snapshot!("janitor_panel_100_columns", s);
}

/// A root with a readable table and one whose log is not JSON.
fn root_with_a_broken_table() -> TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-partitioned"), &d.path().join("good"));
    let broken = d.path().join("broken").join("_delta_log");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join(format!("{:020}.json", 0)), "this is not json\n").unwrap();
    d
}

#[tokio::test]
async fn a_table_that_cannot_be_read_is_a_row_whose_error_shows_when_selected() {
    let d = root_with_a_broken_table();
    let mut t = Driven::new(loc(d.path()).display(), (100, HEIGHT))
        .frozen()
        .open()
        .await;
    assert_eq!(t.app.screen, Screen::Tables);
    let root = t.app.root.as_ref().unwrap();
    let broken = root
        .broken()
        .next()
        .expect("the broken table is a row")
        .clone();
    assert_eq!(root.tables().count(), 1);
    assert_eq!(t.app.tables.len(), 2, "both are rows of the list");
    // Health 0: ranked first, so selected.
    let s = t.text(&d);
    let row = s.lines().find(|l| l.contains("broken [unreadable]"));
    assert!(row.is_some(), "{s}");
    assert!(s.contains("broken could not be read"), "{s}");
    // The panel's text, its lines joined (the box's sides removed).
    let flat: String = s
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let error = broken
        .error
        .replace(d.path().to_str().unwrap(), "<tmp>")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains(&error), "the full error {error:?}:\n{s}");
    insta::assert_snapshot!("tables_list_with_a_broken_table", s);

    // Selecting the readable table hides the error panel; Enter on the broken one shows it.
    t.keys(&[KeyCode::Char('j')]).await;
    assert!(!t.text(&d).contains("could not be read"));
    t.keys(&[KeyCode::Char('k'), KeyCode::Enter]).await;
    assert_eq!(t.app.context(), Context::Error);
    assert!(t.app.error().unwrap().contains(&broken.error));
}
