//! The one preview dialog (`tui::preview`): a bordered box over the screen, its title, and a
//! body each kind of preview fills.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::style;
use crate::tui::layout::centered;

/// A preview as drawn: a box of `width` percent of the screen and `height` rows.
pub struct PreviewView<'a> {
    pub title: &'static str,
    pub border: Color,
    pub width: u16,
    pub height: u16,
    pub body: Body<'a>,
}

/// Draws a body inside the box.
pub type DrawBody<'a> = Box<dyn FnOnce(&mut Frame, Rect) + 'a>;

pub enum Body<'a> {
    /// Lines, wrapped as given, or cut at the box's edge (None).
    Lines(Vec<Line<'a>>, Option<Wrap>),
    /// A body with its own layout.
    Custom(DrawBody<'a>),
}

/// "cannot plan: …" in red, then how to close: the body of a preview that has no plan.
pub fn failed(text: String, close: &'static str) -> Vec<Line<'static>> {
    vec![
        Line::from(Span::styled(text, style::score(0))),
        Line::from(""),
        Line::from(Span::styled(close, style::dim())),
    ]
}

pub fn draw(f: &mut Frame, area: Rect, v: PreviewView<'_>) {
    let b = centered(area, v.width, v.height);
    f.render_widget(Clear, b);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(v.border))
        .title(Span::styled(v.title, style::title()));
    let inner = block.inner(b);
    f.render_widget(block, b);
    match v.body {
        Body::Lines(lines, wrap) => {
            let p = Paragraph::new(lines);
            let p = match wrap {
                Some(w) => p.wrap(w),
                None => p,
            };
            f.render_widget(p, inner);
        }
        Body::Custom(draw) => draw(f, inner),
    }
}
