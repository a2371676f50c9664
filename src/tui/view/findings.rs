//! Findings: a red panel above the commits, shown only when the log shows damage (files removed
//! by two commits: their rows are in the table twice).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::inert;
use crate::engine::stats::table_report::TableReport;

/// Rows the panel needs at `width`: each finding wrapped, plus the borders; 0 without findings
/// (`layout::bottom_areas` places it).
pub fn wanted_rows(t: &TableReport, width: u16) -> u16 {
    if t.findings.is_empty() {
        return 0;
    }
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let lines: usize = t
        .findings
        .iter()
        .map(|f| (f.message.chars().count() + 2).div_ceil(inner))
        .sum();
    u16::try_from(lines).unwrap_or(u16::MAX).saturating_add(2)
}

pub fn draw(f: &mut Frame, area: Rect, t: &TableReport) {
    if t.findings.is_empty() || area.height == 0 {
        return;
    }
    let red = Style::default().fg(Color::Red);
    let lines: Vec<Line> = t
        .findings
        .iter()
        .map(|fd| Line::from(Span::styled(format!("! {}", inert::text(&fd.message)), red)))
        .collect();
    let title = Span::styled(
        format!(
            " Findings ({}) · checked {} ",
            t.findings.len(),
            t.findings_checked.describe()
        ),
        red.add_modifier(Modifier::BOLD),
    );
    f.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(red)
                .title(title),
        ),
        area,
    );
}
