//! The commit feed, newest first: version, time, operation, files and bytes added and removed,
//! and the engine that wrote it (`commitInfo`). Commits that landed while the table is followed
//! are marked `●`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Row, Table};

use super::{ago, style};
use crate::engine::size::format_bytes;
use crate::engine::stats::table_report::TableReport;

/// `now` is the app clock's wall time, for the "ago" column; `live_from`: the first version the
/// watcher applied (rows from it on are marked).
pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now: i64, live_from: Option<u64>) {
    let rows: Vec<Row> = t
        .commits
        .iter()
        .take(area.height.saturating_sub(3) as usize)
        .map(|c| {
            let live = live_from.is_some_and(|v| c.version >= v);
            let row = Row::new(vec![
                format!("{}v{}", if live { "●" } else { " " }, c.version),
                ago(c.timestamp_ms, now),
                c.operation.clone(),
                format!("+{} -{}", c.files_added, c.files_removed),
                format!(
                    "+{} -{}",
                    short_bytes(c.bytes_added),
                    short_bytes(c.bytes_removed)
                ),
                c.engine.clone().unwrap_or_else(|| "-".into()),
            ]);
            if c.data_change {
                row
            } else {
                // Compactions and other rewrites: no data changed.
                row.style(style::dim())
            }
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
        Row::new(["version", "when", "operation", "files", "bytes", "engine"]).style(style::dim());
    f.render_widget(
        Table::new(
            rows,
            [
                // "●v12345"
                Constraint::Length(7),
                // "1022d ago"
                Constraint::Length(9),
                Constraint::Length(16),
                // "+12 -345"
                Constraint::Length(9),
                // "+1.2G -512M"
                Constraint::Length(11),
                Constraint::Min(0),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// "512B", "2.4K", "1.2M", "128M", "1.0G": bytes in at most five characters.
pub fn short_bytes(n: u64) -> String {
    let full = format_bytes(n);
    let Some((num, unit)) = full.split_once(' ') else {
        return full;
    };
    let unit = unit.chars().next().unwrap_or('B');
    let num: f64 = num.parse().unwrap_or(0.0);
    if unit == 'B' {
        format!("{n}B")
    } else if num >= 10.0 {
        format!("{num:.0}{unit}")
    } else {
        format!("{num:.1}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::short_bytes;

    #[test]
    fn short_bytes_fit_five_characters() {
        assert_eq!(short_bytes(0), "0B");
        assert_eq!(short_bytes(512), "512B");
        assert_eq!(short_bytes(2458), "2.4K");
        assert_eq!(short_bytes(128 * 1024 * 1024), "128M");
        assert_eq!(short_bytes(1024 * 1024 * 1024), "1.0G");
    }
}
