//! Key-sequence journeys through the real event handling (key → keymap → Action → App::update →
//! Effect → the real loader → Action::Loaded), checked on the rendered screen.

use crossterm::event::{KeyCode, KeyModifiers};
use lakehealth::engine::open::Opened;
use lakehealth::tui::action::{Action, Effect};
use lakehealth::tui::app::{App, Screen, SortKey};
use lakehealth::tui::keymap::Context;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (160, 45);

async fn opened(path: &std::path::Path) -> Driven {
    Driven::new(loc(path).display(), SIZE).open().await
}

#[tokio::test]
async fn table_view_shows_totals_partitions_histogram_and_commits() {
    let t = opened(&fixture("delta-0.8.0-partitioned")).await;
    assert!(t.app.error().is_none(), "{:?}", t.app.error());
    let table = t.app.table.as_ref().unwrap();
    let screen = t.screen();
    assert!(
        screen.contains(&format!("{} files", table.stats.files)),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("{} partitions", table.partitions.len())),
        "{screen}"
    );
    assert!(screen.contains("Partitions"), "{screen}");
    assert!(screen.contains("File sizes"), "{screen}");
    assert!(screen.contains("◀"), "the target band is marked:\n{screen}");
    assert!(screen.contains("year=2020/month=1/day=1"), "{screen}");
    assert!(screen.contains("WRITE"), "commit history:\n{screen}");
    assert!(
        screen.contains(&format!("health {:>3}/100", table.stats.health_score)),
        "{screen}"
    );
}

#[tokio::test]
async fn journey_root_drill_down_sort_filter_and_back() {
    let mut t = opened(&fixtures_dir()).await;
    assert_eq!(t.app.screen, Screen::Tables);
    // Ranked by health, worst first.
    assert_eq!(t.app.tables.sort().key, SortKey::Health);
    let root = t.app.root.as_ref().unwrap();
    let scores: Vec<u8> = t
        .app
        .tables
        .order()
        .iter()
        .map(|&i| lakehealth::tui::list::ListRow::stats(&root.rows[i]).health_score)
        .collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    let n = root.tables().count();
    let rows = root.rows.len();
    let screen = t.screen();
    assert!(screen.contains(&format!("{n} tables")), "{screen}");

    // Filter the tables list down to one table and open it.
    t.key(KeyCode::Char('/'));
    t.type_text("null-part").await;
    t.keys(&[KeyCode::Enter]).await;
    assert_eq!(t.app.tables.len(), 1);
    t.keys(&[KeyCode::Enter]).await;
    assert_eq!(t.app.screen, Screen::Table);
    assert_eq!(
        t.app.table.as_ref().unwrap().name,
        "delta-0.8.0-null-partition"
    );

    // The partitions list has its own sort (excess first); s cycles it; the histogram follows
    // the selection.
    assert_eq!(t.app.partitions.sort().key, SortKey::Excess);
    t.keys(&[KeyCode::Char('s')]).await;
    assert_eq!(t.app.partitions.sort().key, SortKey::SmallShare);
    t.keys(&[KeyCode::Char('s'), KeyCode::Char('s'), KeyCode::Char('s')])
        .await;
    assert_eq!(t.app.partitions.sort().key, SortKey::Name);
    assert_eq!(t.app.tables.sort().key, SortKey::Health, "lists sort apart");
    assert_eq!(t.app.selected_partition().unwrap().values.label(), "k=A");
    t.keys(&[KeyCode::Char('j')]).await;
    assert_eq!(t.app.selected_partition().unwrap().values.label(), "k=null");
    assert!(t.screen().contains("File sizes k=null"));
    t.keys(&[KeyCode::Up]).await;
    assert_eq!(t.app.selected_partition().unwrap().values.label(), "k=A");
    t.keys(&[KeyCode::Char('t')]).await;
    assert!(t.screen().contains("File sizes whole table"));

    // Esc goes back to the list (its filter still set), Esc again clears the filter; q quits.
    t.keys(&[KeyCode::Esc]).await;
    assert_eq!(t.app.screen, Screen::Tables);
    assert_eq!(t.app.tables.len(), 1);
    t.keys(&[KeyCode::Esc]).await;
    assert_eq!(t.app.tables.len(), rows);
    t.keys(&[KeyCode::Char('q')]).await;
    assert!(t.app.should_quit);
}

#[tokio::test]
async fn help_is_generated_from_the_keymap_scrolls_and_any_other_key_closes_it() {
    let mut t = opened(&fixture("delta-0.8.0-partitioned")).await;
    for close in [KeyCode::Char('x'), KeyCode::Char('z'), KeyCode::F(2)] {
        t.keys(&[KeyCode::Char('?')]).await;
        // Every page of it, scrolled with j.
        let mut screen = t.screen();
        for _ in 0..60 {
            t.key(KeyCode::Char('j'));
            screen.push_str(&t.screen());
        }
        assert_eq!(
            t.app.context(),
            Context::Help,
            "j scrolls, it does not close"
        );
        for b in lakehealth::tui::keymap::BINDINGS {
            assert!(
                screen.contains(b.help),
                "help lacks {:?}:\n{screen}",
                b.help
            );
        }
        assert!(screen.contains("j / ↓"), "{screen}");
        assert!(screen.contains("other keys close this help"), "{screen}");
        t.keys(&[close]).await;
        assert_eq!(t.app.context(), Context::Table, "{close:?} closes the help");
        assert!(t.app.jobs.is_empty(), "the key did nothing else");
    }
}

#[tokio::test]
async fn a_bad_path_shows_an_error_panel_and_the_app_keeps_running() {
    let d = tempfile::tempdir().unwrap();
    let mut t = opened(d.path()).await;
    let screen = t.screen();
    assert!(screen.contains("Error"), "{screen}");
    assert!(screen.contains("not a Delta table"), "{screen}");
    assert!(
        screen.contains("Esc dismiss · r retry · q quit"),
        "{screen}"
    );
    assert!(!t.app.should_quit);
    // r retries (still not a table), Esc dismisses.
    t.keys(&[KeyCode::Char('r')]).await;
    assert!(t.app.error().is_some());
    t.keys(&[KeyCode::Esc]).await;
    assert!(t.app.error().is_none());
    t.key_mod(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(t.app.should_quit);
}

#[tokio::test]
async fn esc_closes_an_error_over_the_tables_list() {
    let d = tempfile::tempdir().unwrap();
    for name in ["delta-0.8.0-partitioned", "delta-0.8.0-null-partition"] {
        copy_dir(&fixture(name), &d.path().join(name));
    }
    let mut t = opened(d.path()).await;
    assert_eq!(t.app.screen, Screen::Tables);
    // The root goes away; the reload fails over the list still shown.
    std::fs::remove_dir_all(d.path().join("delta-0.8.0-partitioned")).unwrap();
    std::fs::remove_dir_all(d.path().join("delta-0.8.0-null-partition")).unwrap();
    t.keys(&[KeyCode::Char('r')]).await;
    assert!(t.app.error().is_some(), "{}", t.screen());
    assert_eq!(t.app.context(), Context::Error);
    let screen = t.screen();
    assert!(
        screen.contains("Tables "),
        "the list stays below:\n{screen}"
    );
    // j does nothing while the error is up; Esc closes it.
    t.keys(&[KeyCode::Char('j')]).await;
    assert_eq!(t.app.tables.selected_position(), 0);
    t.keys(&[KeyCode::Esc]).await;
    assert!(t.app.error().is_none());
    assert_eq!(t.app.context(), Context::Tables);
    assert_eq!(t.app.root.as_ref().unwrap().tables().count(), 2);
}

#[tokio::test]
async fn hundred_thousand_partitions_render_only_the_visible_rows() {
    let base = lakehealth::engine::open::load_table(
        &loc(&fixture("delta-0.8.0-partitioned")),
        &opts(),
        &|_| {},
    )
    .await
    .unwrap();
    let mut big = base.clone();
    let proto = base.partitions[0].clone();
    big.partitions = (0..100_000)
        .map(|i| {
            let mut p = proto.clone();
            p.values.0 = vec![("id".into(), Some(format!("{i:06}")))];
            p.stats.excess_files = i as u64;
            p
        })
        .collect();
    let mut app = App::new("big".into(), std::time::Duration::ZERO, SIZE);
    let e = app.start();
    let Effect::Load { id, .. } = e[0].clone() else {
        panic!("{e:?}")
    };
    app.update(Action::Loaded {
        load: id,
        result: Ok(Opened::Table(Box::new(big))),
    });
    let mut t = Driven::new("big".into(), SIZE);
    t.app = app;
    // Sorted by excess, descending: the last partition first.
    assert_eq!(
        t.app.selected_partition().unwrap().values.label(),
        "id=099999"
    );
    t.key(KeyCode::Char('G'));
    assert_eq!(
        t.app.selected_partition().unwrap().values.label(),
        "id=000000"
    );
    let screen = t.screen();
    assert!(screen.contains("id=000000"), "{screen}");
    assert!(screen.contains("100000/100000"), "{screen}");
    t.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert!(t.app.partitions.selected_position() < 99_999);
}

/// The screen row whose list cell starts with `name` (followed by a blank: not a longer name).
fn row_of(screen: &str, name: &str) -> u16 {
    let y = screen
        .lines()
        .position(|l| {
            l.split('│')
                .nth(1)
                .is_some_and(|cell| cell.starts_with(&format!("{name} ")))
        })
        .unwrap_or_else(|| panic!("{name} not on screen:\n{screen}"));
    u16::try_from(y).unwrap()
}

#[tokio::test]
async fn the_mouse_selects_the_clicked_row_the_wheel_moves_and_a_click_on_the_selected_opens_it() {
    use lakehealth::tui::action::Pointer;
    use lakehealth::tui::list::ListRow;
    let mut t = opened(&fixtures_dir()).await;
    let root = t.app.root.as_ref().unwrap();
    // A readable table below the first row, with a row after it.
    let order = t.app.tables.order().to_vec();
    let p = (1..order.len() - 1)
        .find(|&p| root.rows[order[p]].table().is_some())
        .unwrap();
    let third = root.rows[order[p]].name().to_string();
    let y = row_of(&t.screen(), &third);
    let click = |row: u16| Action::Mouse {
        pointer: Pointer::Click,
        column: 3,
        row,
    };
    t.update(click(y));
    assert_eq!(t.app.tables.selected_position(), p);
    t.update(Action::Mouse {
        pointer: Pointer::WheelDown,
        column: 10,
        row: y,
    });
    assert_eq!(t.app.tables.selected_position(), p + 1);
    t.update(Action::Mouse {
        pointer: Pointer::WheelUp,
        column: 10,
        row: y,
    });
    assert_eq!(t.app.tables.selected_position(), p);
    // A click on the totals above the list selects nothing.
    t.update(click(1));
    assert_eq!(t.app.tables.selected_position(), p);
    assert_eq!(t.app.screen, Screen::Tables);
    // A click on the selected row opens it.
    t.update(click(y));
    t.settle().await;
    assert_eq!(t.app.screen, Screen::Table);
    assert_eq!(t.app.table.as_ref().unwrap().name, third);
}
