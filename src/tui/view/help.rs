//! The `?` screen, generated from the keymap (keys and mouse), with what the health colours
//! mean. It scrolls (j/k) when the terminal is shorter than the list.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use ratatui::style::Style;

use super::{fit, style};
use crate::tui::keymap::{Context, help_sections, hint_line};
use crate::tui::layout::centered;

/// The help at `width` cells: a description too long for its row wraps under itself, never
/// cut.
fn lines(spaced: bool, width: usize) -> Vec<Line<'static>> {
    let sections = help_sections();
    let key_w = sections
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|(k, _)| fit::width(k)))
        .max()
        .unwrap_or(0);
    let mut colours = vec![Span::raw("Colours: ")];
    colours.extend(super::health_legend());
    let sizes = vec![Span::styled(
        "file sizes: small yellow, target band green, large magenta",
        style::dim(),
    )];
    let mut lines = fit::flow(vec![colours, sizes], "  · ", width);
    if spaced {
        lines.push(Line::from(""));
    }
    let indent = 2 + key_w + 2;
    for (title, rows) in sections {
        lines.push(Line::from(Span::styled(title, style::title())));
        for (keys, help) in rows {
            let wrapped = fit::words(help, Style::default(), width.saturating_sub(indent).max(20));
            for (i, l) in wrapped.into_iter().enumerate() {
                let lead = if i == 0 {
                    format!("  {keys:<key_w$}  ")
                } else {
                    " ".repeat(indent)
                };
                let mut spans = vec![Span::raw(lead)];
                spans.extend(l.spans);
                lines.push(Line::from(spans));
            }
        }
        if spaced {
            lines.push(Line::from(""));
        }
    }
    lines
}

/// The narrowest inside width the help is laid out for (an 80-column terminal).
const NARROWEST: usize = 78;

/// Rows of the help at most (compact form, narrowest width): how far it can scroll.
pub fn len() -> usize {
    lines(false, NARROWEST).len()
}

/// `scroll`: rows scrolled down (clamped here so the last page stays full).
pub fn draw(f: &mut Frame, area: Rect, scroll: usize) {
    // The whole width on a narrow terminal (a box one cell inside the screen's panels would
    // double their borders), 90% on a wide one.
    let pct = if area.width < 120 { 100 } else { 90 };
    let inner = (u32::from(area.width) * u32::from(pct) / 100).saturating_sub(2) as usize;
    // Blank lines between sections only when everything fits with them (plus borders, footer).
    let spaced = lines(true, inner).len() + 3 <= usize::from(area.height);
    let body = lines(spaced, inner);
    // The whole height when it would leave a single row above or below.
    let wanted = body.len() as u16 + 3;
    let height = if wanted + 2 >= area.height {
        area.height
    } else {
        wanted
    };
    let b = centered(area, pct, height);
    let page = usize::from(b.height.saturating_sub(3));
    let first = scroll.min(body.len().saturating_sub(page));
    let more = body.len() > first + page;
    let mut shown: Vec<Line> = body.into_iter().skip(first).take(page).collect();
    let hint = Line::from(Span::styled(
        format!(
            "{}{}",
            hint_line(Context::Help, |_| true),
            if more { " · more below ↓" } else { "" }
        ),
        style::dim(),
    ));
    shown.push(fit::clip(hint, inner));
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
