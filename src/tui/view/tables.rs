//! The tables list of a root, worst health first.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::{ago, style};
use crate::engine::formats::TableFormat;
use crate::engine::open::RootReport;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::TableReport;
use crate::tui::app::App;
use crate::tui::layout::TablesAreas;

pub fn draw(f: &mut Frame, a: &TablesAreas, app: &App) {
    let Some(r) = &app.root else { return };
    draw_totals(f, a.header, r);
    draw_list(f, a.list, app, r);
}

/// Totals over the root's tables, and the first table that could not be read.
fn draw_totals(f: &mut Frame, area: Rect, r: &RootReport) {
    let files: u64 = r.tables.iter().map(|t| t.stats.files).sum();
    let bytes: u64 = r.tables.iter().map(|t| t.stats.bytes).sum();
    let excess: u64 = r.tables.iter().map(|t| t.stats.excess_files).sum();
    let unhealthy = r
        .tables
        .iter()
        .filter(|t| t.stats.health_score < 50)
        .count();
    let mut head = vec![Span::raw(format!(
        " {} tables  {} files  {}  excess files {}  unhealthy (<50) {}",
        r.tables.len(),
        format_count(files),
        format_bytes(bytes),
        format_count(excess),
        unhealthy
    ))];
    if let Some(e) = r.errors.first() {
        head.push(Span::styled(
            format!("  {} unreadable: {}", r.errors.len(), e.error),
            style::score(0),
        ));
    }
    f.render_widget(
        Paragraph::new(Line::from(head)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(format!(" {} ", r.root), style::title())),
        ),
        area,
    );
}

fn table_row(t: &TableReport, now_ms: i64) -> Row<'static> {
    let s = &t.stats;
    Row::new(vec![
        // Delta is the default: other formats are labelled.
        Cell::from(match t.format {
            TableFormat::Delta => t.name.clone(),
            other => format!("{} [{}]", t.name, other.label()),
        }),
        Cell::from(match t.format {
            TableFormat::ParquetFolder => "-".to_string(),
            _ => format!("v{}", t.version),
        }),
        Cell::from(format_count(s.files)),
        Cell::from(format_bytes(s.bytes)),
        Cell::from(format!("{:.0}%", s.small_share() * 100.0)),
        Cell::from(format_count(s.excess_files)),
        Cell::from(format!("+{}", t.log.commits_since_checkpoint)),
        Cell::from(ago(t.log.last_commit_ms, now_ms)),
        Cell::from(Span::styled(
            s.health_score.to_string(),
            style::score(s.health_score),
        )),
    ])
}

fn draw_list(f: &mut Frame, area: Rect, app: &App, r: &RootReport) {
    let list = &app.tables;
    let height = area.height.saturating_sub(3) as usize;
    let now_ms = app.clock.wall_ms();
    let rows: Vec<Row> = list
        .visible(height)
        .filter_map(|(pos, idx)| Some((pos, r.tables.get(idx)?)))
        .map(|(pos, t)| super::mark_selected(table_row(t, now_ms), pos, list))
        .collect();
    let title = Line::from(vec![
        Span::styled(" Tables ", style::title()),
        Span::raw(format!(
            "{}  Enter opens ",
            super::list_state_text(app, list)
        )),
    ]);
    let header = Row::new([
        "table",
        "version",
        "files",
        "bytes",
        "small",
        "excess",
        "ckpt lag",
        "last commit",
        "health",
    ])
    .style(style::dim());
    let widths = [
        Constraint::Min(20),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(12),
        Constraint::Length(6),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}
