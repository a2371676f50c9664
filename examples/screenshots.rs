//! Renders real app screens (the same `view::draw` the TUI uses, on a TestBackend) to SVG.
//! `scripts/screenshots.sh` converts them to the PNGs in `screenshots/`.
//!
//!   screenshots OUT_DIR

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lakehealth::engine::compact::events::JobEvent;
use lakehealth::engine::compact::job::{CompactRequest, PreparedJob, prepare, run_isolated};
use lakehealth::engine::compact::locks::PartitionLocks;
use tokio_util::sync::CancellationToken;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lakehealth::engine::demo::{DemoShape, ensure_demo_table};
use lakehealth::engine::location::Location;
use lakehealth::engine::open::{OpenOptions, open};
use lakehealth::tui::action::{Action, Effect};
use lakehealth::tui::app::App;
use lakehealth::tui::{key_to_action, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const W: u16 = 150;
const H: u16 = 42;

fn opts() -> OpenOptions {
    OpenOptions::default()
}

/// Fulfils effects like the TUI's loader, synchronously: loads, real plans and real jobs.
async fn settle(app: &mut App, effects: Vec<Effect>, jobs: &mut HashMap<u64, PreparedJob>) {
    let mut q = effects;
    while let Some(e) = q.pop() {
        match e {
            Effect::Load { id, uri } => {
                let result = match Location::parse(&uri) {
                    Ok(l) => open(&l, &opts(), &|_| {}).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                q.extend(app.update(Action::Loaded { load: id, result }));
            }
            Effect::PlanCompaction {
                id,
                uri,
                partitions,
            } => {
                let req = CompactRequest::for_partitions(partitions, Default::default());
                let result = match Location::parse(&uri) {
                    Ok(l) => prepare(&l, &req, opts().thresholds, 1.0)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                let result = result.map(|job| {
                    let plan = Box::new(job.plan.clone());
                    jobs.insert(id, job);
                    plan
                });
                q.extend(app.update(Action::PlanReady { id, result }));
            }
            Effect::StartJob { id } => {
                let Some(job) = jobs.remove(&id) else {
                    continue;
                };
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let _ = run_isolated(
                    job,
                    Arc::new(PartitionLocks::default()),
                    CancellationToken::new(),
                    tx,
                )
                .await;
                let mut events = Vec::new();
                while let Ok(ev) = rx.try_recv() {
                    events.push(ev);
                }
                // Stop short of the end so the panel shows a job in flight with commits landed.
                let keep = events
                    .iter()
                    .rposition(|e| matches!(e, JobEvent::Committed(_)))
                    .unwrap_or(0);
                for ev in events.into_iter().take(keep + 1) {
                    // Real spacing between progress samples, so the throughput sparkline fills.
                    if matches!(ev, JobEvent::Progress(_)) {
                        std::thread::sleep(Duration::from_millis(210));
                    }
                    let more = app.update(Action::Job { job: id, event: ev });
                    q.extend(more);
                }
            }
            _ => {}
        }
    }
}

async fn keys(app: &mut App, codes: &[KeyCode], jobs: &mut HashMap<u64, PreparedJob>) {
    for &c in codes {
        if let Some(a) = key_to_action(app, KeyEvent::new(c, KeyModifiers::NONE)) {
            let e = app.update(a);
            settle(app, e, jobs).await;
        }
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

fn shot(app: &App, out: &Path, name: &str) -> Res<()> {
    let mut t = Terminal::new(TestBackend::new(W, H))?;
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
    let demo =
        ensure_demo_table(&lake.path().join("streaming"), DemoShape::default(), false).await?;
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
    )
    .await?;

    let jobs = &mut HashMap::new();
    let mut app = App::new(demo.display(), Duration::ZERO, (W, H));
    let e = app.start();
    settle(&mut app, e, jobs).await;
    shot(&app, out, "table")?;
    keys(&mut app, &[KeyCode::Char('G'), KeyCode::Char('k')], jobs).await;
    shot(&app, out, "table-healthy-partition")?;
    keys(&mut app, &[KeyCode::Char('?')], jobs).await;
    shot(&app, out, "help")?;
    keys(
        &mut app,
        &[
            KeyCode::Esc,
            KeyCode::Char('g'),
            KeyCode::Char(' '),
            KeyCode::Char(' '),
            KeyCode::Char('c'),
        ],
        jobs,
    )
    .await;
    shot(&app, out, "plan")?;
    keys(&mut app, &[KeyCode::Enter], jobs).await;
    shot(&app, out, "jobs")?;

    let root = Location::parse(&lake.path().to_string_lossy())?;
    let mut app = App::new(root.display(), Duration::ZERO, (W, H));
    let e = app.start();
    settle(&mut app, e, jobs).await;
    shot(&app, out, "tables")?;

    let empty = tempfile::tempdir()?;
    let mut app = App::new(empty.path().display().to_string(), Duration::ZERO, (W, H));
    let e = app.start();
    settle(&mut app, e, jobs).await;
    shot(&app, out, "error")?;
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
