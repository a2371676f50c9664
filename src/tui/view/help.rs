//! The `?` screen, generated from the keymap (keys and mouse), with what the health colours
//! mean. It scrolls (j/k) when the terminal is shorter than the list.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::style;
use crate::tui::keymap::{Context, help_sections, hint_line};
use crate::tui::layout::centered;

fn lines(spaced: bool) -> Vec<Line<'static>> {
    let sections = help_sections();
    let key_w = sections
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|(k, _)| super::fit::width(k)))
        .max()
        .unwrap_or(0);
    let mut legend = vec![Span::raw("Colours: ")];
    legend.extend(super::health_legend());
    legend.push(Span::styled(
        "  · file sizes: small yellow, target band green, large magenta",
        style::dim(),
    ));
    let mut lines = vec![Line::from(legend)];
    if spaced {
        lines.push(Line::from(""));
    }
    for (title, rows) in sections {
        lines.push(Line::from(Span::styled(title, style::title())));
        for (keys, help) in rows {
            lines.push(Line::from(format!("  {keys:<key_w$}  {help}")));
        }
        if spaced {
            lines.push(Line::from(""));
        }
    }
    lines
}

/// Rows of the help at most (compact form): how far it can scroll.
pub fn len() -> usize {
    lines(false).len()
}

/// `scroll`: rows scrolled down (clamped here so the last page stays full).
pub fn draw(f: &mut Frame, area: Rect, scroll: usize) {
    let compact = lines(false);
    // Blank lines between sections only when everything fits with them (plus borders, footer).
    let spaced = lines(true).len() + 3 <= usize::from(area.height);
    let body = if spaced { lines(true) } else { compact };
    // Nearly the whole width on a narrow terminal, so no help text is cut.
    let pct = if area.width < 120 { 98 } else { 90 };
    let b = centered(area, pct, body.len() as u16 + 3);
    let page = usize::from(b.height.saturating_sub(3));
    let first = scroll.min(body.len().saturating_sub(page));
    let more = body.len() > first + page;
    let mut shown: Vec<Line> = body.into_iter().skip(first).take(page).collect();
    shown.push(Line::from(Span::styled(
        format!(
            "{}{}",
            hint_line(Context::Help, |_| true),
            if more { " · more below ↓" } else { "" }
        ),
        style::dim(),
    )));
    f.render_widget(Clear, b);
    f.render_widget(
        Paragraph::new(shown).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(" Keys ", style::title())),
        ),
        b,
    );
}
