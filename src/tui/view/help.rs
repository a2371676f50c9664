//! The `?` screen, generated from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::style;
use crate::tui::keymap::{Context, help_sections, hint_line};
use crate::tui::layout::centered;

pub fn draw(f: &mut Frame, area: Rect) {
    let sections = help_sections();
    let rows: usize = sections.iter().map(|(_, r)| r.len() + 2).sum();
    // Blank lines between sections only when everything fits with them (plus borders, footer).
    let spaced = rows + 3 <= usize::from(area.height);
    let mut lines = Vec::new();
    for (title, rows) in sections {
        lines.push(Line::from(Span::styled(title, style::title())));
        for (keys, help) in rows {
            lines.push(Line::from(format!("  {keys:<28} {help}")));
        }
        if spaced {
            lines.push(Line::from(""));
        }
    }
    lines.push(Line::from(Span::styled(
        hint_line(Context::Help, |_| true),
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
