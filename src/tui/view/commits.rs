//! Recent commits, newest first.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Row, Table};

use super::{ago, style};
use crate::engine::size::format_bytes;
use crate::engine::stats::table_report::TableReport;

/// `now` is the app clock's wall time, for the "ago" column.
pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now: i64) {
    let rows: Vec<Row> = t
        .commits
        .iter()
        .take(area.height.saturating_sub(3) as usize)
        .map(|c| {
            Row::new(vec![
                format!("v{}", c.version),
                ago(c.timestamp_ms, now),
                c.operation.clone(),
                format!("+{} -{}", c.files_added, c.files_removed),
                format_bytes(c.bytes_added),
                if c.data_change {
                    String::new()
                } else {
                    "no data change".into()
                },
            ])
        })
        .collect();
    let ops: Vec<String> = t
        .log
        .operations
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let title = ratatui::text::Line::from(vec![
        Span::styled(" Commits ", style::title()),
        Span::raw(format!(
            "last {}: {} ",
            t.log.window_commits,
            ops.join(", ")
        )),
    ]);
    let header =
        Row::new(["version", "when", "operation", "files", "added", ""]).style(style::dim());
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(8),
                // "1022d ago"
                Constraint::Length(10),
                Constraint::Length(16),
                Constraint::Length(11),
                Constraint::Length(10),
                Constraint::Min(0),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}
