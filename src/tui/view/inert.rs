//! A table's text on screen is inert (`engine::model::inert`). Two defences:
//!
//! - The helpers that turn text into cells (`fit`, `scrubbed`) and the views' table fields
//!   pass it through `text`, so a control shows escaped (`\x1b[31m`), where ratatui alone
//!   would drop the ESC and show a misleading `[31m`.
//! - `guard` runs over every frame's buffer after it is drawn (`view::draw`), before the
//!   backend sees it: a cell still holding an active character (a view that forgot `text`, a
//!   zero-width bidi control ratatui appends to the cell before it) loses it. So no view can
//!   send one to the terminal. ratatui drops C0 and C1 controls itself (`Buffer::set_stringn`,
//!   `Span::styled_graphemes`), but not the bidi controls, nor what `Cell::set_symbol` is given.

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::text::Line;

use crate::engine::model::inert::{inert_line, is_active};

/// A table's text for one cell or span: every control escaped, `\n` and `\t` too.
pub fn text(s: &str) -> Cow<'_, str> {
    inert_line(s)
}

/// `line` with each span's text made inert (a span is on one row).
pub fn line(mut l: Line<'_>) -> Line<'_> {
    for s in &mut l.spans {
        if let Cow::Owned(shown) = text(&s.content) {
            s.content = Cow::Owned(shown);
        }
    }
    l
}

/// Shown where a cell held nothing but an active character.
const REPLACEMENT: &str = "\u{FFFD}";

/// Every cell of `buf` without an active character: they are removed from the cell's symbol
/// (a cell left empty shows U+FFFD, keeping its width).
pub fn guard(buf: &mut Buffer) {
    for cell in &mut buf.content {
        if !cell.symbol().contains(is_active) {
            continue;
        }
        let kept: String = cell.symbol().chars().filter(|c| !is_active(*c)).collect();
        cell.set_symbol(if kept.is_empty() {
            REPLACEMENT
        } else {
            kept.as_str()
        });
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;
    use ratatui::text::Span;
    use ratatui::widgets::{Paragraph, Widget};

    use super::*;

    fn symbols(buf: &Buffer) -> String {
        buf.content.iter().map(|c| c.symbol()).collect()
    }

    #[test]
    fn ratatui_drops_c0_and_c1_controls_but_not_bidi_controls() {
        // Why `text` and `guard` are needed: ratatui hides the ESC (the rest of the sequence
        // shows as if it were the value) and lets a bidi override through to the terminal.
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 1));
        Span::raw("a\x1b[31m\u{9b}b\u{202e}c").render(buf.area, &mut buf);
        let shown = symbols(&buf);
        assert!(!shown.contains(['\x1b', '\u{9b}']), "{shown:?}");
        assert!(shown.starts_with("a[31mb"), "{shown:?}");
        assert!(shown.contains('\u{202e}'), "{shown:?}");
    }

    #[test]
    fn a_guarded_buffer_holds_no_active_character() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 1));
        Span::raw("a\u{202e}b\u{2066}c").render(buf.area, &mut buf);
        buf[(10, 0)].set_symbol("\x1b");
        buf[(11, 0)].set_symbol("x\u{9b}");
        guard(&mut buf);
        let shown = symbols(&buf);
        assert!(!shown.contains(is_active), "{shown:?}");
        assert!(shown.starts_with("abc"), "{shown:?}");
        assert_eq!(buf[(10, 0)].symbol(), REPLACEMENT);
        assert_eq!(buf[(11, 0)].symbol(), "x");
    }

    #[test]
    fn table_text_in_a_span_is_drawn_escaped() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 40, 1));
        Paragraph::new(line(Line::raw("p=\x1b[31m\u{202e}x"))).render(buf.area, &mut buf);
        let shown = symbols(&buf);
        assert!(shown.starts_with("p=\\x1b[31m\\u202ex"), "{shown:?}");
    }
}
