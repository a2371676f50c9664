//! The `?` screen, generated from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::style;
use crate::tui::keymap::help_sections;
use crate::tui::layout::centered;

pub fn draw(f: &mut Frame, area: Rect) {
    let mut lines = Vec::new();
    for (title, rows) in help_sections() {
        lines.push(Line::from(Span::styled(title, style::title())));
        for (keys, help) in rows {
            lines.push(Line::from(format!("  {keys:<28} {help}")));
        }
        lines.push(Line::from(""));
    }
    lines.push(Line::from(Span::styled(
        "any key closes this help",
        style::dim(),
    )));
    let b = centered(area, 80, lines.len() as u16 + 2);
    f.render_widget(Clear, b);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(" Keys ", style::title())),
        ),
        b,
    );
}
