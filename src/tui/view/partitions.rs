//! The partitions table. Only the visible rows are built, so 100,000 partitions draw as fast as 10.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::style;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::TableReport;
use crate::tui::app::App;

/// The selected partition's janitor flag in full, at the bottom of the panel.
fn janitor_reason<'a>(b: Block<'a>, app: &App, t: &TableReport) -> Block<'a> {
    let Some((_, why)) = app
        .partitions
        .selected(&t.partitions)
        .and_then(|p| Some((p.values.label(), app.janitor.flag(&p.values)?)))
        .map(|(label, (_, why))| (label.clone(), format!(" ⚑ {label}: {why} ")))
    else {
        return b;
    };
    b.title_bottom(Line::from(Span::styled(why, style::small_band())))
}

pub fn draw(f: &mut Frame, area: Rect, app: &App, t: &TableReport) {
    let list = &app.partitions;
    let height = area.height.saturating_sub(3) as usize;
    let rows: Vec<Row> = list
        .visible(height)
        .filter_map(|(pos, idx)| Some((pos, t.partitions.get(idx)?)))
        .map(|(pos, p)| {
            let s = &p.stats;
            let label = p.values.label();
            let mark = if app.marks.contains(&p.values) {
                "● "
            } else {
                "  "
            };
            // The janitor's flag: a due partition (its reason follows the label, and the
            // selected one's is at the bottom of the panel in full).
            let flag = app
                .janitor
                .flag(&p.values)
                .map_or(String::new(), |(_, why)| {
                    format!("  ⚑ {}", why.trim_start_matches("due: "))
                });
            let row = Row::new(vec![
                Cell::from(format!("{mark}{label}{flag}")),
                Cell::from(format_count(s.files)),
                Cell::from(format_bytes(s.bytes)),
                Cell::from(format!("{:.0}%", s.small_share() * 100.0)),
                Cell::from(format_count(s.excess_files)),
                Cell::from(format_bytes(s.median_file_size)),
                Cell::from(Span::styled(
                    s.health_score.to_string(),
                    style::score(s.health_score),
                )),
            ]);
            super::mark_selected(row, pos, list)
        })
        .collect();
    let title = Line::from(vec![
        Span::styled(" Partitions ", style::title()),
        Span::raw(format!(
            "{}/{}  {} ",
            list.len(),
            t.partitions.len(),
            super::list_state_text(app, list)
        )),
        Span::styled(
            app.janitor
                .status()
                .map_or(String::new(), |s| format!(" {s} ")),
            style::small_band(),
        ),
    ]);
    let header = Row::new([
        "partition",
        "files",
        "bytes",
        "small",
        "excess",
        "median",
        "health",
    ])
    .style(style::dim());
    let table = Table::new(
        rows,
        [
            Constraint::Min(16),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Length(5),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Length(6),
        ],
    )
    .header(header)
    .block(janitor_reason(
        Block::default().borders(Borders::ALL).title(title),
        app,
        t,
    ));
    f.render_widget(table, area);
}
