//! Render tests on ratatui's TestBackend and key-sequence journeys through the real event
//! handling (key → keymap → Action → App::update → Effect → engine → Action::Loaded).

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::location::Location;
use lakehealth::engine::open::open;
use lakehealth::tui::action::{Action, Effect};
use lakehealth::tui::app::{App, Screen, SortKey};
use lakehealth::tui::key_to_action;

use crate::common::*;

const W: u16 = 160;
const H: u16 = 45;

/// Fulfils effects the way the event loop does, but synchronously.
async fn run_effects(app: &mut App, effects: Vec<Effect>) {
    let mut queue = effects;
    while let Some(e) = queue.pop() {
        if let Effect::Load { id, uri } = e {
            let result = match Location::parse(&uri) {
                Ok(l) => open(&l, &opts(), &|_| {}).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            queue.extend(app.update(Action::Loaded { load: id, result }));
        }
    }
}

async fn press(app: &mut App, code: KeyCode) {
    press_mod(app, code, KeyModifiers::NONE).await
}

async fn press_mod(app: &mut App, code: KeyCode, mods: KeyModifiers) {
    if let Some(a) = key_to_action(app, KeyEvent::new(code, mods)) {
        let effects = app.update(a);
        run_effects(app, effects).await;
    }
}

fn render(app: &App) -> String {
    crate::common::render(app, W, H)
}

async fn opened(path: &std::path::Path) -> App {
    let mut app = App::new(loc(path).display(), Duration::ZERO, (W, H));
    let e = app.start();
    run_effects(&mut app, e).await;
    app
}

#[tokio::test]
async fn table_view_shows_totals_partitions_histogram_and_commits() {
    let app = opened(&fixture("delta-0.8.0-partitioned")).await;
    assert!(app.error.is_none(), "{:?}", app.error);
    let t = app.table.as_ref().unwrap();
    let screen = render(&app);
    assert!(
        screen.contains(&format!("{} files", t.stats.files)),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("{} partitions", t.partitions.len())),
        "{screen}"
    );
    assert!(screen.contains("Partitions"), "{screen}");
    assert!(screen.contains("File sizes"), "{screen}");
    assert!(screen.contains("◀"), "the target band is marked:\n{screen}");
    assert!(screen.contains("year=2020/month=1/day=1"), "{screen}");
    assert!(screen.contains("WRITE"), "commit history:\n{screen}");
    assert!(
        screen.contains(&format!("health {:>3}/100", t.stats.health_score)),
        "{screen}"
    );
}

#[tokio::test]
async fn journey_root_drill_down_sort_filter_and_back() {
    let mut app = opened(&fixtures_dir()).await;
    assert_eq!(app.screen, Screen::Tables);
    // Ranked by health, worst first.
    assert_eq!(app.sort, SortKey::Health);
    let root = app.root.as_ref().unwrap();
    let scores: Vec<u8> = app
        .tables
        .view
        .iter()
        .map(|&i| root.tables[i].stats.health_score)
        .collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    let n = app.root.as_ref().unwrap().tables.len();
    let screen = render(&app);
    assert!(screen.contains(&format!("{n} tables")), "{screen}");

    // Filter the tables list down to one table and open it.
    press(&mut app, KeyCode::Char('/')).await;
    for c in "null-part".chars() {
        press(&mut app, KeyCode::Char(c)).await;
    }
    press(&mut app, KeyCode::Enter).await;
    assert_eq!(app.tables.view.len(), 1);
    press(&mut app, KeyCode::Enter).await;
    assert_eq!(app.screen, Screen::Table);
    assert_eq!(
        app.table.as_ref().unwrap().name,
        "delta-0.8.0-null-partition"
    );

    // j/k and arrows move; s cycles the sort; the histogram follows the selection.
    press(&mut app, KeyCode::Char('s')).await;
    assert_eq!(app.sort, SortKey::Excess);
    press(&mut app, KeyCode::Char('s')).await;
    assert_eq!(app.sort, SortKey::SmallShare);
    press(&mut app, KeyCode::Char('s')).await;
    press(&mut app, KeyCode::Char('s')).await;
    press(&mut app, KeyCode::Char('s')).await;
    assert_eq!(app.sort, SortKey::Name);
    assert_eq!(app.selected_partition().unwrap().values.label(), "k=A");
    press(&mut app, KeyCode::Char('j')).await;
    assert_eq!(app.selected_partition().unwrap().values.label(), "k=null");
    assert!(render(&app).contains("File sizes k=null"));
    press(&mut app, KeyCode::Up).await;
    assert_eq!(app.selected_partition().unwrap().values.label(), "k=A");
    press(&mut app, KeyCode::Char('t')).await;
    assert!(render(&app).contains("File sizes whole table"));

    // Esc goes back to the list; q quits.
    press(&mut app, KeyCode::Esc).await;
    assert_eq!(app.screen, Screen::Tables);
    press(&mut app, KeyCode::Char('q')).await;
    assert!(app.should_quit);
}

#[tokio::test]
async fn help_is_generated_from_the_keymap() {
    let mut app = opened(&fixture("delta-0.8.0-partitioned")).await;
    press(&mut app, KeyCode::Char('?')).await;
    let screen = render(&app);
    for b in lakehealth::tui::keymap::BINDINGS {
        assert!(
            screen.contains(b.help),
            "help lacks {:?}:\n{screen}",
            b.help
        );
    }
    assert!(screen.contains("j / ↓"), "{screen}");
    press(&mut app, KeyCode::Char('x')).await;
    assert!(!app.show_help);
}

#[tokio::test]
async fn a_bad_path_shows_an_error_panel_and_the_app_keeps_running() {
    let d = tempfile::tempdir().unwrap();
    let mut app = opened(d.path()).await;
    let screen = render(&app);
    assert!(screen.contains("Error"), "{screen}");
    assert!(screen.contains("not a Delta table"), "{screen}");
    assert!(!app.should_quit);
    // r retries (still not a table), Esc dismisses.
    press(&mut app, KeyCode::Char('r')).await;
    assert!(app.error.is_some());
    press(&mut app, KeyCode::Esc).await;
    assert!(app.error.is_none());
    press_mod(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    assert!(app.should_quit);
}

#[tokio::test]
async fn hundred_thousand_partitions_render_only_the_visible_rows() {
    use lakehealth::engine::open::Opened;
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
    let mut app = App::new("big".into(), Duration::ZERO, (W, H));
    let e = app.start();
    let Effect::Load { id, .. } = e[0].clone() else {
        panic!()
    };
    app.update(Action::Loaded {
        load: id,
        result: Ok(Opened::Table(Box::new(big))),
    });
    // Sorted by excess, descending: the last partition first.
    assert_eq!(
        app.selected_partition().unwrap().values.label(),
        "id=099999"
    );
    press(&mut app, KeyCode::Char('G')).await;
    assert_eq!(
        app.selected_partition().unwrap().values.label(),
        "id=000000"
    );
    let screen = render(&app);
    assert!(screen.contains("id=000000"), "{screen}");
    assert!(screen.contains("100000/100000"), "{screen}");
    press_mod(&mut app, KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    assert!(app.partitions.selected < 99_999);
}
