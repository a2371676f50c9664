//! Drawing: a pure function of `App` state onto a ratatui frame.

mod commits;
pub(super) mod convert_dialog;
mod findings;
pub mod fit;
pub mod fleet;
pub mod header;
mod help;
pub mod histogram;
pub(super) mod iceberg_dialog;
pub mod inert;
mod janitor;
pub mod jobs;
mod live;
mod overlays;
mod partitions;
pub(super) mod plan_dialog;
pub mod preview_dialog;
pub(super) mod skipping_dialog;
mod status;
pub mod tables;
pub(super) mod vacuum_dialog;
mod why;
mod writers;

use ratatui::Frame;

use super::app::{App, Modal, Screen};
use super::layout;
use super::list::{ListRow, SortedList};

/// The table screen's shape at the app's size (shared with scrolling and the mouse, see
/// `layout::Shape`).
pub fn table_shape(app: &App) -> layout::Shape {
    let Some(t) = app.table.as_ref() else {
        return layout::Shape::default();
    };
    let area = layout::full(app.size);
    let shown = histogram::shown_histogram(app, t);
    // The left column's width, as `layout::table_areas` splits it.
    let left = layout::table_areas(area, &layout::Shape::default())
        .partitions
        .width;
    layout::Shape {
        header_rows: header::header_rows(t, area.width, app.clock.wall_ms()),
        buckets: shown.buckets.len(),
        buckets_compact: histogram::compact_rows(shown),
        writers: t.streaming_writers.len(),
        marks: !app.marks.is_empty(),
        janitor_rows: janitor::rows(app, left),
        jobs: app.jobs.len() + app.maintenance.len().min(1),
        live: app.live.is_some(),
    }
}

/// The tables screen's shape at the app's size.
pub fn tables_shape(app: &App) -> layout::TablesShape {
    let width = app.size.0;
    let header_rows = app.root.as_ref().map_or(3, |r| {
        let lines = tables::header_lines(r, &app.fleet, width);
        let n = fit::wrapped_rows(&lines, usize::from(width.saturating_sub(2)));
        u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2)
    });
    layout::TablesShape {
        header_rows,
        detail_rows: tables::detail_rows(app, width),
    }
}

/// Rows of the help screen (for scrolling it).
pub fn help_len() -> usize {
    help::len()
}

/// What the health colours mean, as one item of a header or footer.
/// A score at or above it reads "ok" (the legend's first band).
pub const HEALTH_OK: u8 = 80;

/// What the health colours mean, for the help and the tables list's header.
pub fn health_legend() -> Vec<ratatui::text::Span<'static>> {
    use ratatui::text::Span;
    vec![
        Span::styled("health:", style::dim()),
        Span::styled(" ≥80 ok", style::score(100)),
        Span::styled(" ≥50 fair", style::score(50)),
        Span::styled(" <50 poor", style::score(0)),
    ]
}

/// The frame for `app`. Every frame the TUI shows is drawn here, so here its buffer is
/// guarded before the backend sees it: no terminal control from a table reaches the terminal
/// (`inert`), whichever view drew it.
pub fn draw(f: &mut Frame, app: &App) {
    draw_screen(f, app);
    inert::guard(f.buffer_mut());
}

fn draw_screen(f: &mut Frame, app: &App) {
    let area = f.area();
    match (&app.screen, &app.table) {
        (Screen::Table, Some(t)) => {
            let a = layout::table_areas(area, &table_shape(app));
            let now_ms = app.clock.wall_ms();
            header::draw(f, a.header, t, now_ms);
            partitions::draw(f, a.partitions, app, t);
            janitor::draw(f, a.janitor, app);
            jobs::draw_marks(f, a.marks, app);
            histogram::draw_panel(f, a.histogram, app, t);
            jobs::draw(f, a.jobs, app);
            writers::draw(f, a.writers, t, now_ms);
            let [found, live_area, commits] = layout::bottom_areas(
                a.commits,
                app.live.is_some(),
                findings::wanted_rows(t, a.commits.width),
            );
            findings::draw(f, found, t);
            live::draw(f, live_area, app, t, now_ms);
            let live_from = app.live.as_ref().and_then(|l| l.live_from);
            commits::draw(f, commits, t, now_ms, live_from);
            status::draw(f, a.status, app);
        }
        (Screen::Tables, _) if app.root.is_some() => {
            let a = layout::tables_areas(area, &tables_shape(app));
            tables::draw(f, &a, app);
            status::draw(f, a.status, app);
        }
        _ => {
            overlays::draw_splash(f, area, app);
        }
    }
    match app.modals.modal() {
        Some(Modal::ConfirmCancel { number, .. }) => {
            plan_dialog::draw_confirm_cancel(f, area, *number)
        }
        Some(Modal::ConfirmQuit { running }) => plan_dialog::draw_confirm_quit(f, area, *running),
        Some(Modal::Help { scroll }) => help::draw(f, area, *scroll),
        Some(Modal::Why { scroll }) => why::draw(f, area, &app.janitor, *scroll),
        Some(m) => {
            // The filter (no preview) shows in the list's title and the hint bar.
            if let Some(p) = m.preview() {
                preview_dialog::draw(f, area, p.view());
            }
        }
        None => {}
    }
    if let Some(e) = app.modals.error() {
        overlays::draw_error(f, area, e);
    }
}

/// Shared styles.
pub mod style {
    use ratatui::style::{Color, Modifier, Style};

    pub fn title() -> Style {
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD)
    }
    pub fn dim() -> Style {
        Style::default().fg(Color::DarkGray)
    }
    pub fn selected() -> Style {
        Style::default()
            .bg(Color::Rgb(40, 60, 90))
            .add_modifier(Modifier::BOLD)
    }
    pub fn target_band() -> Style {
        Style::default().fg(Color::Green)
    }
    pub fn small_band() -> Style {
        Style::default().fg(Color::Yellow)
    }
    pub fn large_band() -> Style {
        Style::default().fg(Color::Magenta)
    }
    /// Green ≥ 80, yellow ≥ 50, red below.
    pub fn score(score: u8) -> Style {
        let c = if score >= super::HEALTH_OK {
            Color::Green
        } else if score >= 50 {
            Color::Yellow
        } else {
            Color::Red
        };
        Style::default().fg(c).add_modifier(Modifier::BOLD)
    }
}

/// Highlights the row at `pos` when it is the selected one.
pub fn mark_selected<'a, R: ListRow>(
    row: ratatui::widgets::Row<'a>,
    pos: usize,
    list: &SortedList<R>,
) -> ratatui::widgets::Row<'a> {
    if pos == list.selected_position() {
        row.style(style::selected())
    } else {
        row
    }
}

/// "  filter: abc▏" while typing, "  filter: abc" once set, nothing otherwise; then the sort.
pub fn list_state_text<R: ListRow>(app: &App, list: &SortedList<R>) -> String {
    let typing = matches!(app.modals.modal(), Some(Modal::Filter));
    let filter = match (typing, list.filter().is_empty()) {
        (true, _) => format!("  filter: {}▏", list.filter()),
        (false, false) => format!("  filter: {}", list.filter()),
        _ => String::new(),
    };
    let sort = list.sort();
    format!("sort: {} {}{filter}", sort.key.label(), sort.arrow())
}

/// "3m ago": the screen's compact age, owned by `model::duration`.
pub use crate::engine::model::duration::ago;

/// Secrets never show on screen: every span's text with registered secrets and URL user info
/// replaced (`engine::secrets::scrub`), then made inert (`inert::line`: a table's controls
/// shown escaped). For panels that show engine text (errors, reasons, the live feed).
pub fn scrubbed<'a>(
    lines: impl IntoIterator<Item = ratatui::text::Line<'a>>,
) -> Vec<ratatui::text::Line<'a>> {
    lines
        .into_iter()
        .map(|mut l| {
            for s in &mut l.spans {
                if let std::borrow::Cow::Owned(clean) = crate::engine::secrets::scrub(&s.content) {
                    s.content = std::borrow::Cow::Owned(clean);
                }
            }
            inert::line(l)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use ratatui::text::{Line, Span};

    #[test]
    fn panel_text_never_shows_a_registered_secret() {
        crate::engine::secrets::register(["tui-panel-secret-value".to_string()]);
        let lines = vec![Line::from(vec![
            Span::raw("commit failed: s3 said key tui-panel-secret-value is invalid"),
            Span::raw(" http://user:pw@head:8265 unreachable"),
        ])];
        let text: String = super::scrubbed(lines)
            .iter()
            .flat_map(|l| l.spans.iter().map(|s| s.content.to_string()))
            .collect();
        assert!(!text.contains("tui-panel-secret-value"), "{text}");
        assert!(!text.contains("user:pw"), "{text}");
    }
}
