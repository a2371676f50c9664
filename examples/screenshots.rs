//! Renders real app screens (the same `view::draw` the TUI uses, on a TestBackend) to SVG.
//! `scripts/screenshots.sh` converts them to the PNGs in `screenshots/`.
//!
//!   screenshots OUT_DIR

// A benchmark or render tool: its output is its result (the no-print rule is for the program).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::demo::{DemoShape, ensure_demo_table};
use lakehealth::engine::janitor::fleet::FleetState;
use lakehealth::engine::janitor::policy::Policy;
use lakehealth::engine::location::Location;
use lakehealth::engine::options::OpenOptions;
use lakehealth::tui::action::{Action, Effect, TaskProgress};
use lakehealth::tui::app::App;
use lakehealth::tui::live::Follow;
use lakehealth::tui::loader::Loader;
use lakehealth::tui::{key_to_action, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use tokio::sync::mpsc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The README's size, and the smallest terminal the TUI is made for.
const WIDE: (u16, u16) = (120, 40);
const SMALL: (u16, u16) = (80, 24);

/// The app fed by the TUI's own effect runner, as the event loop feeds it.
struct Driven {
    app: App,
    loader: Loader,
    rx: mpsc::UnboundedReceiver<Action>,
}

impl Driven {
    fn new(uri: String) -> Self {
        Self::following(uri, Follow::Off)
    }

    fn following(uri: String, follow: Follow) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut d = Driven {
            app: App::new(uri, Duration::ZERO, WIDE),
            loader: Loader::new(OpenOptions::default(), tx),
            rx,
        };
        d.app.follow = follow;
        let e = d.app.start();
        d.run(e);
        d
    }

    fn run(&mut self, effects: Vec<Effect>) {
        for e in effects {
            self.loader.run(e);
        }
    }

    fn update(&mut self, a: Action) {
        let e = self.app.update(a);
        self.run(e);
    }

    /// Feeds the runner's reports to the app until `done` holds.
    async fn until(&mut self, done: impl Fn(&App, Option<&Action>) -> bool) -> Res<()> {
        while !done(&self.app, None) {
            let a = tokio::time::timeout(Duration::from_secs(300), self.rx.recv())
                .await?
                .ok_or("the loader stopped")?;
            let stop = done(&self.app, Some(&a));
            self.update(a);
            if stop {
                break;
            }
        }
        Ok(())
    }

    /// Until no load runs and no preview is being planned.
    async fn settle(&mut self) -> Res<()> {
        self.until(|a, _| a.loading.is_none() && a.plan().is_none_or(|p| p.result.is_some()))
            .await
    }

    fn resize(&mut self, (width, height): (u16, u16)) {
        self.update(Action::Resize { width, height });
    }

    async fn keys(&mut self, codes: &[KeyCode]) -> Res<()> {
        for &c in codes {
            if let Some(a) = key_to_action(&self.app, KeyEvent::new(c, KeyModifiers::NONE)) {
                self.update(a);
            }
            self.settle().await?;
        }
        Ok(())
    }
}

fn hex(c: Color, fg: bool) -> String {
    let (r, g, b) = match c {
        Color::Reset => {
            if fg {
                (208, 208, 208)
            } else {
                (24, 26, 31)
            }
        }
        Color::Black => (0, 0, 0),
        Color::Red => (230, 80, 80),
        Color::Green => (90, 200, 110),
        Color::Yellow => (230, 200, 80),
        Color::Blue => (90, 140, 230),
        Color::Magenta => (200, 110, 220),
        Color::Cyan => (90, 200, 220),
        Color::Gray => (180, 180, 180),
        Color::DarkGray => (120, 124, 132),
        Color::LightRed => (255, 120, 120),
        Color::LightGreen => (140, 230, 150),
        Color::LightYellow => (250, 230, 130),
        Color::LightBlue => (140, 180, 255),
        Color::LightMagenta => (230, 150, 240),
        Color::LightCyan => (150, 230, 240),
        Color::White => (240, 240, 240),
        Color::Rgb(r, g, b) => (r, g, b),
        Color::Indexed(i) => (i, i, i),
    };
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One <rect> per background run and one <text> per cell run of equal style.
fn to_svg(buf: &Buffer) -> String {
    let (cw, ch) = (8.4_f64, 17.0_f64);
    let (w, h) = (buf.area.width as f64 * cw, buf.area.height as f64 * ch);
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}'>\
         <rect width='100%' height='100%' fill='{}'/>\
         <g font-family='DejaVu Sans Mono' font-size='14px' xml:space='preserve'>",
        hex(Color::Reset, false)
    );
    for y in 0..buf.area.height {
        let mut x = 0;
        while x < buf.area.width {
            let c = &buf[(x, y)];
            let (fg, bg, m) = (c.fg, c.bg, c.modifier);
            let start = x;
            let mut text = String::new();
            while x < buf.area.width {
                let d = &buf[(x, y)];
                if d.fg != fg || d.bg != bg || d.modifier != m {
                    break;
                }
                text.push_str(d.symbol());
                x += 1;
            }
            let px = start as f64 * cw;
            let py = y as f64 * ch;
            if bg != Color::Reset {
                let _ = write!(
                    s,
                    "<rect x='{px}' y='{py}' width='{}' height='{ch}' fill='{}'/>",
                    (x - start) as f64 * cw,
                    hex(bg, false)
                );
            }
            if !text.trim().is_empty() {
                let weight = if m.contains(Modifier::BOLD) {
                    " font-weight='bold'"
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    "<text x='{px}' y='{}' fill='{}'{weight} textLength='{}' lengthAdjust='spacingAndGlyphs'>{}</text>",
                    py + ch * 0.78,
                    hex(fg, true),
                    (x - start) as f64 * cw,
                    esc(&text)
                );
            }
        }
    }
    s.push_str("</g></svg>\n");
    s
}

/// Renders `app` at its size.
fn shot(app: &App, out: &Path, name: &str) -> Res<()> {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h))?;
    t.draw(|f| view::draw(f, app))?;
    std::fs::write(
        out.join(format!("{name}.svg")),
        to_svg(t.backend().buffer()),
    )?;
    eprintln!("rendered {name}");
    Ok(())
}

async fn run(out: &Path) -> Res<()> {
    std::fs::create_dir_all(out)?;
    let lake = tempfile::tempdir()?;
    let demo = ensure_demo_table(
        &lake.path().join("streaming"),
        DemoShape::default(),
        false,
        &|_| {},
    )
    .await?;
    // A second, smaller unhealthy table and a healthy one make the root view meaningful.
    ensure_demo_table(
        &lake.path().join("clickstream"),
        DemoShape {
            small_days: 2,
            small_files_per_day: 400,
            healthy_days: 0,
            healthy_file_bytes: 0,
        },
        false,
        &|_| {},
    )
    .await?;

    // A third due table: with one job slot, the janitor over the root has one running while
    // another waits its turn.
    ensure_demo_table(
        &lake.path().join("orders"),
        DemoShape {
            small_days: 1,
            small_files_per_day: 300,
            healthy_days: 0,
            healthy_file_bytes: 0,
        },
        false,
        &|_| {},
    )
    .await?;

    // Followed, as a streaming table is watched: the live log shows beside a running job.
    let mut d = Driven::following(demo.display(), Follow::On { poll: None });
    d.settle().await?;
    shot(&d.app, out, "table")?;
    d.resize(SMALL);
    shot(&d.app, out, "table-80x24")?;
    d.resize(WIDE);
    d.keys(&[KeyCode::Char('G'), KeyCode::Char('k')]).await?;
    shot(&d.app, out, "table-healthy-partition")?;
    // The skipping panel (`d`): each column's depth from the file statistics.
    d.keys(&[KeyCode::Char('d')]).await?;
    d.until(|_, a| matches!(a, Some(Action::SkippingReady { .. })))
        .await?;
    shot(&d.app, out, "skipping")?;
    d.keys(&[KeyCode::Esc, KeyCode::Char('?')]).await?;
    shot(&d.app, out, "help")?;
    d.keys(&[
        KeyCode::Esc,
        KeyCode::Char('g'),
        KeyCode::Char(' '),
        KeyCode::Char(' '),
        KeyCode::Char('c'),
    ])
    .await?;
    shot(&d.app, out, "plan")?;
    // `o`: the same partitions z-ordered, planned again with the depth now and expected.
    let typed = "zorder sensor_id,event_time";
    let mut keys = vec![KeyCode::Char('o')];
    keys.extend(typed.chars().map(KeyCode::Char));
    keys.push(KeyCode::Enter);
    d.keys(&keys).await?;
    shot(&d.app, out, "plan-zorder")?;
    // Back to the table's default order for the job below.
    let mut keys = vec![KeyCode::Char('o')];
    keys.extend(typed.chars().map(|_| KeyCode::Backspace));
    keys.push(KeyCode::Enter);
    d.keys(&keys).await?;
    // The job runs for real; the shot is taken once its first commit landed and the table
    // reloaded, with the second partition still in flight.
    d.keys(&[KeyCode::Enter]).await?;
    d.until(|_, a| match a {
        Some(Action::Progress {
            progress: TaskProgress::Job(ev),
            ..
        }) => matches!(**ev, JobEvent::Committed(_)),
        _ => false,
    })
    .await?;
    d.settle().await?;
    shot(&d.app, out, "jobs")?;
    d.resize(SMALL);
    shot(&d.app, out, "jobs-80x24")?;
    d.resize(WIDE);
    d.until(|a, _| a.jobs.iter().all(|j| !j.status().is_active()))
        .await?;
    d.loader.wait_jobs(Duration::from_secs(60)).await;

    let root = Location::parse(&lake.path().to_string_lossy())?;
    let mut d = Driven::new(root.display());
    d.settle().await?;
    shot(&d.app, out, "tables")?;

    // The janitor over the root (`a`): one job slot, so one table runs while the other waits.
    let history = tempfile::tempdir()?;
    d.loader.set_janitor(
        Policy::parse(
            "max_jobs = 1\n",
            "policy.toml",
            OpenOptions::default().thresholds,
        )?,
        history.path().join("history.jsonl"),
    );
    d.keys(&[KeyCode::Char('a')]).await?;
    d.until(|a, _| {
        a.fleet.snapshot.as_ref().is_some_and(|s| {
            s.rows
                .iter()
                .any(|r| matches!(r.state, FleetState::Running { done, .. } if done > 0.2))
                && s.rows
                    .iter()
                    .any(|r| matches!(r.state, FleetState::Queued { .. }))
        })
    })
    .await?;
    shot(&d.app, out, "fleet")?;
    d.keys(&[KeyCode::Char('a')]).await?;
    d.until(|a, _| !a.fleet.is_on()).await?;
    d.loader.wait_jobs(Duration::from_secs(60)).await;

    let empty = tempfile::tempdir()?;
    let mut d = Driven::new(empty.path().display().to_string());
    d.settle().await?;
    shot(&d.app, out, "error")?;
    Ok(())
}

fn main() -> Res<()> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: screenshots OUT_DIR")?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(Path::new(&out)))
}
