//! The conversion preview: what converting the folder to Delta does, and what the user must do
//! first (the same text `lakehealth convert` prints).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::style;
use crate::tui::app::ConvertDialog;
use crate::tui::layout::centered;

pub fn draw(f: &mut Frame, area: Rect, d: &ConvertDialog) {
    let b = centered(area, 100, 24);
    f.render_widget(Clear, b);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(" Convert to Delta ", style::title()));
    let inner = block.inner(b);
    f.render_widget(block, b);
    let mut lines: Vec<Line> = Vec::new();
    match &d.result {
        None => lines.push(Line::from(format!("listing {} ...", d.table_uri))),
        Some(Err(e)) => {
            lines.push(Line::from(Span::styled(
                format!("cannot convert: {e}"),
                style::score(0),
            )));
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled("Esc close", style::dim())));
        }
        Some(Ok(p)) => {
            lines.extend(p.text().lines().map(|l| Line::from(l.to_string())));
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                if d.running {
                    "converting ..."
                } else {
                    "Enter / y: the steps before are done, convert now    Esc / n: close"
                },
                style::dim(),
            )));
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
