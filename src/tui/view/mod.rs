//! Drawing: a pure function of `App` state onto a ratatui frame.

mod commits;
mod convert_dialog;
mod findings;
mod header;
mod help;
pub mod histogram;
pub mod jobs;
mod live;
mod overlays;
mod partitions;
mod plan_dialog;
mod status;
mod tables;
mod vacuum_dialog;
mod why;
mod writers;

use ratatui::Frame;

use super::app::{App, Modal, Screen};
use super::layout;
use super::list::{ListRow, SortedList};

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    match (&app.screen, &app.table) {
        (Screen::Table, Some(t)) => {
            let a = layout::table_areas(
                area,
                t.stats.histogram.buckets.len(),
                t.streaming_writers.len(),
                !app.marks.is_empty(),
                app.jobs.len() + app.maintenance.len().min(1),
            );
            let now_ms = app.clock.wall_ms();
            header::draw(f, a.header, t);
            partitions::draw(f, a.partitions, app, t);
            jobs::draw_marks(f, a.marks, app);
            histogram::draw_panel(f, a.histogram, app, t);
            jobs::draw(f, a.jobs, app);
            writers::draw(f, a.writers, t, now_ms);
            let (found, commits) = findings::split(a.commits, t);
            findings::draw(f, found, t);
            let (live_area, commits) = live::split(commits, app);
            live::draw(f, live_area, app, t, now_ms);
            let live_from = app.live.as_ref().and_then(|l| l.live_from);
            commits::draw(f, commits, t, now_ms, live_from);
            status::draw(f, a.status, app);
        }
        (Screen::Tables, _) if app.root.is_some() => {
            let a = layout::tables_areas(area);
            tables::draw(f, &a, app);
            status::draw(f, a.status, app);
        }
        _ => {
            overlays::draw_splash(f, area, app);
        }
    }
    match app.modals.modal() {
        Some(Modal::Plan(d)) => plan_dialog::draw(f, area, d),
        Some(Modal::ConfirmCancel { job }) => plan_dialog::draw_confirm_cancel(f, area, *job),
        Some(Modal::Help) => help::draw(f, area),
        Some(Modal::Vacuum(d)) => vacuum_dialog::draw(f, area, d),
        Some(Modal::Why) => why::draw(f, area, &app.janitor),
        Some(Modal::Convert(d)) => convert_dialog::draw(f, area, d),
        // Shown in the list's title and the hint bar.
        Some(Modal::Filter) | None => {}
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
        let c = if score >= 80 {
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

/// "12s ago", "3m ago", "5h ago", "2d ago".
pub fn ago(ts_ms: Option<i64>, now_ms: i64) -> String {
    let Some(ts) = ts_ms else {
        return "-".into();
    };
    let s = ((now_ms - ts) / 1000).max(0);
    if s < 60 {
        format!("{s}s ago")
    } else if s < 3600 {
        format!("{}m ago", s / 60)
    } else if s < 86_400 {
        format!("{}h ago", s / 3600)
    } else {
        format!("{}d ago", s / 86_400)
    }
}
