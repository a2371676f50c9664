//! Streaming writers found in the log's `txn` actions.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::{ago, style};
use crate::engine::stats::table_report::TableReport;

/// `now` is the app clock's wall time, for the "ago" column.
pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now: i64) {
    let mut lines: Vec<Line> = t
        .streaming_writers
        .iter()
        .take(area.height.saturating_sub(2) as usize)
        .map(|w| {
            Line::from(format!(
                " {:<24} batch {:>7}  {:>8}  {}",
                truncate(&w.app_id, 24),
                w.last_batch,
                ago(w.last_updated_ms, now),
                w.batches_per_minute
                    .map_or("-".into(), |r| format!("{r:.1}/min"))
            ))
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from(Span::styled(
            " no txn actions: no streaming writer has committed to this table",
            style::dim(),
        )));
    }
    let title = Span::styled(
        format!(" Streaming writers ({}) ", t.streaming_writers.len()),
        style::title(),
    );
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}
