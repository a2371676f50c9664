//! The tables list of a root, worst health first.

use ratatui::Frame;
use ratatui::layout::Constraint;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::{ago, style};
use crate::engine::open::now_ms;
use crate::engine::size::{format_bytes, format_count};
use crate::tui::app::App;
use crate::tui::layout::TablesAreas;

pub fn draw(f: &mut Frame, a: &TablesAreas, app: &App) {
    let Some(r) = &app.root else { return };
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
    if !r.errors.is_empty() {
        head.push(Span::styled(
            format!("  {} unreadable: {}", r.errors.len(), r.errors[0].error),
            style::score(0),
        ));
    }
    f.render_widget(
        Paragraph::new(Line::from(head)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(format!(" {} ", r.root), style::title())),
        ),
        a.header,
    );
    let list = &app.tables;
    let height = a.list.height.saturating_sub(3) as usize;
    let now = now_ms();
    let rows: Vec<Row> = super::visible(list, height)
        .map(|(pos, idx)| {
            let t = &r.tables[idx];
            let s = &t.stats;
            let row = Row::new(vec![
                Cell::from(t.name.clone()),
                Cell::from(format!("v{}", t.version)),
                Cell::from(format_count(s.files)),
                Cell::from(format_bytes(s.bytes)),
                Cell::from(format!("{:.0}%", s.small_share() * 100.0)),
                Cell::from(format_count(s.excess_files)),
                Cell::from(format!("+{}", t.log.commits_since_checkpoint)),
                Cell::from(ago(t.log.last_commit_ms, now)),
                Cell::from(Span::styled(
                    s.health_score.to_string(),
                    style::score(s.health_score),
                )),
            ]);
            super::mark_selected(row, pos, list)
        })
        .collect();
    let filter = super::filter_text(app, list);
    let title = Line::from(vec![
        Span::styled(" Tables ", style::title()),
        Span::raw(format!(
            "sort: {} {}{filter}  Enter opens ",
            app.sort.label(),
            if app.sort_desc { "▼" } else { "▲" }
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
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Min(20),
                Constraint::Length(8),
                Constraint::Length(7),
                Constraint::Length(10),
                Constraint::Length(6),
                Constraint::Length(7),
                Constraint::Length(9),
                Constraint::Length(12),
                Constraint::Length(6),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title)),
        a.list,
    );
}
