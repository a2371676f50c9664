//! The terminal UI: a thin layer over the engine. Events become `Action`s, `App::update` is the
//! only place state changes, `view::draw` renders state, and loads run as background tasks that
//! report typed progress over a channel.

pub mod action;
pub mod app;
pub mod clock;
pub mod command_line;
pub mod fleet;
mod iceberg;
pub mod janitor;
pub mod jobs;
pub mod keymap;
pub mod layout;
pub mod list;
pub mod live;
pub mod loader;
pub mod maintenance;
pub mod maintenance_tasks;
pub mod preview;
pub mod root;
pub mod task_error;
pub mod tasks;
pub mod terminal;
pub mod view;

use std::time::Duration;

use anyhow::Result;
use crossterm::event::{
    Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::engine::location::Location;
use crate::engine::options::OpenOptions;
use action::{Action, Pointer};
use app::App;

/// Maps a key to an action for whoever has the keys (see `App::context`): a bound command, or,
/// while a filter is typed, the character.
pub fn key_to_action(app: &App, key: KeyEvent) -> Option<Action> {
    let ctx = app.context();
    if let Some(c) = keymap::command_for(&key, ctx) {
        return Some(Action::Command(c));
    }
    match key.code {
        KeyCode::Char(c)
            if ctx.is_text_input() && !key.modifiers.contains(KeyModifiers::CONTROL) =>
        {
            Some(Action::FilterInput(c))
        }
        _ => None,
    }
}

/// A mouse event the TUI uses (a left click, the wheel) as an action; moves and drags are not.
pub fn mouse_to_action(m: MouseEvent) -> Option<Action> {
    let pointer = match m.kind {
        MouseEventKind::Down(MouseButton::Left) => Pointer::Click,
        MouseEventKind::ScrollUp => Pointer::WheelUp,
        MouseEventKind::ScrollDown => Pointer::WheelDown,
        _ => return None,
    };
    Some(Action::Mouse {
        pointer,
        column: m.column,
        row: m.row,
    })
}

/// What the TUI starts with besides the location and how tables open.
pub struct TuiOptions {
    /// How often a root's tables list is reloaded.
    pub refresh: Duration,
    /// How often the open table's log is read for new commits (None: the default for its
    /// location).
    pub poll: Option<Duration>,
    pub executor: crate::engine::compact::executor::Executor,
    pub policy: crate::engine::janitor::policy::Policy,
    pub iceberg_catalog: Option<String>,
    /// How the janitor's history file rotates.
    pub history: crate::engine::janitor::history::Rotation,
}

pub async fn run(loc: Location, opts: OpenOptions, tui: TuiOptions) -> Result<()> {
    let TuiOptions {
        refresh,
        poll,
        executor,
        policy,
        iceberg_catalog,
        history,
    } = tui;
    let mut term = terminal::Terminal::enter()?;
    let size = term.size()?;
    let mut app = App::new(loc.display(), refresh, size);
    app.follow = live::Follow::On { poll };
    app.executor = executor.describe();
    app.iceberg_catalog = iceberg_catalog;
    app.janitor = janitor::TuiJanitor::new(&policy);
    // The live forecasts use the janitor's policy, so "due in" and the janitor agree.
    app.policy = Some(policy.clone());
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let history = crate::engine::janitor::history::HistoryFile {
        path: crate::engine::janitor::history::default_path(),
        rotation: history,
    };
    let mut loader = loader::Loader::new(opts, tx.clone()).with_executor(executor);
    loader.set_janitor(policy, history);
    for e in app.start() {
        loader.run(e);
    }
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut sigterm = terminal::sigterm();
    loop {
        term.draw(&app)?;
        let first = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press => key_to_action(&app, k),
                Some(Ok(Event::Resize(w, h))) => Some(Action::Resize { width: w, height: h }),
                Some(Ok(Event::Mouse(m))) => mouse_to_action(m),
                Some(Ok(_)) => None,
                // The terminal went away: nothing more can be shown.
                Some(Err(_)) | None => Some(Action::Shutdown),
            },
            Some(a) = rx.recv() => Some(a),
            _ = tick.tick() => Some(Action::Tick),
            _ = terminal::recv(&mut sigterm) => Some(Action::Shutdown),
        };
        // Coalesce a burst of progress messages into one redraw.
        let mut batch: Vec<Action> = first.into_iter().collect();
        while let Ok(a) = rx.try_recv() {
            batch.push(a);
        }
        for a in batch {
            for e in app.update(a) {
                loader.run(e);
            }
        }
        if app.should_quit {
            break;
        }
    }
    loader.cancel_all();
    term.leave()?;
    let active = loader.active_jobs();
    if active > 0 {
        crate::errln!(
            "waiting for {active} compaction job(s) to stop (committed work stays, uncommitted output is removed)..."
        );
        loader.wait_jobs(Duration::from_secs(30)).await;
    }
    Ok(())
}
