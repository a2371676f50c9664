//! Streaming writers found in the log's `txn` actions. A writer quiet for a few of its usual
//! intervals reads "idle, last 5m ago" rather than a rate it no longer has.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::header::{activity, activity_text};
use super::{ago, style};
use crate::engine::stats::table_report::TableReport;

/// `now` is the app clock's wall time, for the "ago" column.
pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now: i64) {
    if area.height == 0 {
        return;
    }
    let name_w = usize::from(area.width.saturating_sub(2))
        .saturating_sub(40)
        .clamp(8, 24);
    let mut lines: Vec<Line> = t
        .streaming_writers
        .iter()
        .take(area.height.saturating_sub(2) as usize)
        .map(|w| {
            let a = activity(w.batches_per_minute, w.last_updated_ms, now);
            let state = match a {
                super::header::Activity::Stopped { .. } => activity_text(&a, now),
                _ => format!(
                    "{}  {}",
                    ago(w.last_updated_ms, now),
                    activity_text(&a, now)
                ),
            };
            Line::from(format!(
                " {:<name_w$} batch {}  {state}",
                truncate(&w.app_id, name_w),
                w.last_batch,
            ))
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from(Span::styled(
            " none: no txn action in the log",
            style::dim(),
        )));
    }
    let title = Span::styled(
        format!(" Streaming writers ({}) ", t.streaming_writers.len()),
        style::title(),
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

pub fn truncate(s: &str, n: usize) -> String {
    super::fit::truncate(s, n)
}
