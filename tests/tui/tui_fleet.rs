//! The janitor over a root in the TUI, through the real keymap and the real runner: `a` on the
//! tables list runs the engine janitor over every table; each row shows its state, debt, last
//! job and spend as the janitor publishes them, the list sorts by them, and `a` again stops it
//! (the list goes back to the tables' numbers). The compacted tables' rows are read back by
//! Python.

use crossterm::event::KeyCode;
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::janitor::fleet::FleetState;
use lakehealth::engine::janitor::history::Outcome;
use lakehealth::engine::janitor::policy::Policy;
use lakehealth::engine::options::OpenOptions;
use lakehealth::tui::app::App;
use lakehealth::tui::list::{ListRow, SortKey};

use crate::support::common::*;
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (160, 40);

/// The row of the screen that names table `t` (its name cell).
fn row_of<'s>(screen: &'s str, t: &str) -> &'s str {
    screen
        .lines()
        .find(|l| l.starts_with(&format!("│{t} ")) || l.starts_with(&format!("│{t} [")))
        .unwrap_or_else(|| panic!("a row for {t} in\n{screen}"))
}

fn compacted(app: &App, t: &str) -> bool {
    app.fleet.snapshot.as_ref().is_some_and(|s| {
        s.rows.iter().any(|r| {
            r.table.ends_with(&format!("/{t}"))
                && r.last_job
                    .as_ref()
                    .is_some_and(|j| j.outcome == Outcome::Compacted)
                // Read again after its job: its small files are its one output.
                && r.debt.is_some_and(|d| d.small_files == 1)
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn janitor_key_on_the_tables_list_runs_every_due_table_shows_each_rows_state_and_sorts_by_it()
{
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("lake");
    let mut before = Vec::new();
    for (t, small) in [("a", 55), ("b", 60), ("c", 4)] {
        let dir = root.join(t);
        std::fs::create_dir_all(&dir).unwrap();
        let l = loc(&dir);
        create_sensor_table(&l).await.unwrap();
        seed_small_files(&l, &["2026-11-01".into()], small, 50)
            .await
            .unwrap();
        before.push((t, dir.clone()));
    }
    let bad = root.join("bad").join("_delta_log");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join(format!("{:020}.json", 0)), "not json\n").unwrap();
    let rows_before: Vec<_> = before
        .iter()
        .map(|(_, dir)| read_back(dir.to_str().unwrap(), None))
        .collect();

    let mut t = Driven::new(loc(&root).display(), SIZE)
        .frozen()
        .open()
        .await;
    let opts = OpenOptions::default();
    t.loader.set_janitor(
        Policy::parse("max_jobs = 1\n", "p.toml", opts.thresholds).unwrap(),
        d.path().join("history.jsonl"),
    );
    let screen = t.screen();
    assert!(
        screen.contains("a janitor"),
        "the hint bar offers it:\n{screen}"
    );
    assert!(
        screen.contains("version"),
        "the tables' numbers first:\n{screen}"
    );

    t.key(KeyCode::Char('a'));
    assert!(t.app.fleet.is_on());
    t.until("both due tables compacted", |a| {
        compacted(a, "a") && compacted(a, "b")
    })
    .await;
    let screen = t.screen();
    assert!(
        screen.contains("janitor: 4 table(s)") && screen.contains("at most 1"),
        "the header counts what the janitor watches:\n{screen}"
    );
    assert!(screen.contains("small bytes"), "its columns:\n{screen}");
    for name in ["a", "b"] {
        let row = row_of(&screen, name);
        assert!(row.contains("compacted"), "{row}");
    }
    assert!(row_of(&screen, "c").contains("idle"), "{screen}");
    assert!(row_of(&screen, "bad").contains("broken"), "{screen}");

    // Sorted by the janitor's state: the broken table needs a look first.
    while t.app.tables.sort().key != SortKey::State {
        t.key(KeyCode::Char('s'));
    }
    let r = t.app.root.as_ref().unwrap();
    let first = &r.rows[t.app.tables.order()[0]];
    assert_eq!(first.name(), "bad", "{:?}", first.fleet);
    assert!(matches!(
        first.fleet.as_ref().map(|f| &f.state),
        Some(FleetState::Broken { .. })
    ));
    // Selected, its row says why in the panel under the list.
    t.key(KeyCode::Home);
    let screen = t.screen();
    assert!(screen.contains("bad [unreadable]: the janitor"), "{screen}");
    assert!(screen.contains("broken: "), "{screen}");

    // Off again: its jobs are done, the list shows the tables' numbers, sorted by health.
    t.key(KeyCode::Char('a'));
    t.until("the janitor to stop", |a| !a.fleet.is_on()).await;
    assert_eq!(t.app.tables.sort().key, SortKey::Health);
    let screen = t.screen();
    assert!(!screen.contains("janitor:"), "{screen}");
    assert!(screen.contains("version"), "{screen}");

    for ((name, dir), b) in before.iter().zip(&rows_before) {
        let after = read_back(dir.to_str().unwrap(), None);
        assert_eq!(after.rows, b.rows, "{name}");
        assert_eq!(after.distinct_ids, b.distinct_ids, "{name}");
        assert_eq!(after.reading_sum, b.reading_sum, "{name}");
        let files = if *name == "c" { 4 } else { 1 };
        assert_eq!(after.files, files, "{name}: one file after its job");
    }
}
