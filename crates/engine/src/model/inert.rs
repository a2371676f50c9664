//! Text a table wrote is inert. Whoever can write one table writes its log, its metadata and
//! its file names; partition values, paths, names, app ids and the errors quoting them may
//! hold terminal controls (ESC sequences that clear the screen or set the clipboard, BEL, a
//! `\r` that overwrites a line, C1 controls such as U+009B CSI, bidi overrides that reorder
//! what follows). Before such text reaches a terminal or a log, every one of them becomes a
//! visible escape: an ASCII control as `\x1b`, the others as `\u202e`.
//!
//! The `\uXXXX` form is JSON's own escape: serde_json leaves DEL, C1 and bidi controls raw in
//! its strings (it escapes only U+0000–U+001F), so a `--json` line passed through `inert_text`
//! still parses, to the same text. Backslashes are left alone (Windows paths, JSON's escapes):
//! the aim is a safe terminal, not a reversible encoding.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` acts on a terminal (or reorders text) instead of showing: the C0 controls, DEL,
/// the C1 controls (`char::is_control`), and the bidi controls of CVE-2021-42574.
pub fn is_active(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The Unicode bidi controls: marks, embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// One field (a partition value, a path, a name) made inert: `\n` and `\t` are escaped too,
/// so the field stays on its line and in its column.
pub fn inert_line(text: &str) -> Cow<'_, str> {
    escape(text, is_active)
}

/// A printed block made inert: as `inert_line`, but its line breaks and tabs are kept (the
/// block's own layout). A `\r` is escaped: it would overwrite the line it ends.
pub fn inert_text(text: &str) -> Cow<'_, str> {
    escape(text, |c| c != '\n' && c != '\t' && is_active(c))
}

/// `text` with each character `active` picks replaced by its escape; borrowed when there is
/// none (this runs on every printed line).
fn escape(text: &str, active: impl Fn(char) -> bool) -> Cow<'_, str> {
    // Printable ASCII needs no look at its characters.
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Cow::Borrowed(text);
    }
    let Some(first) = text.find(&active) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if active(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `\x1b` for an ASCII control (JSON never holds one raw), `\u009b` for the rest.
fn push_escape(out: &mut String, c: char) {
    let n = u32::from(c);
    // Writing to a String cannot fail.
    let _ = if n < 0x20 {
        write!(out, "\\x{n:02x}")
    } else {
        write!(out, "\\u{n:04x}")
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escape_sequence_is_shown_not_sent() {
        assert_eq!(inert_line("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(inert_line("\x1b[31mred"), "\\x1b[31mred");
    }

    #[test]
    fn an_osc_52_clipboard_write_is_shown_not_sent() {
        assert_eq!(
            inert_line("\x1b]52;c;cm0gLXJmIH4=\x07"),
            "\\x1b]52;c;cm0gLXJmIH4=\\x07"
        );
    }

    #[test]
    fn bel_backspace_and_del_are_escaped() {
        assert_eq!(inert_line("ding\x07"), "ding\\x07");
        assert_eq!(inert_line("abc\x08\x08"), "abc\\x08\\x08");
        assert_eq!(inert_line("x\x7fy"), "x\\u007fy");
    }

    #[test]
    fn a_carriage_return_cannot_overwrite_a_line() {
        assert_eq!(inert_line("ok\rFAKE"), "ok\\x0dFAKE");
        assert_eq!(inert_text("ok\rFAKE\n"), "ok\\x0dFAKE\n");
    }

    #[test]
    fn a_c1_csi_is_escaped() {
        assert_eq!(inert_line("a\u{9b}2Jb"), "a\\u009b2Jb");
        assert_eq!(inert_line("\u{85}\u{9d}"), "\\u0085\\u009d");
    }

    #[test]
    fn bidi_controls_are_escaped() {
        assert_eq!(inert_line("file\u{202e}txt.exe"), "file\\u202etxt.exe");
        for c in [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            let shown = inert_line(&c.to_string()).into_owned();
            assert_eq!(shown, format!("\\u{:04x}", u32::from(c)));
        }
    }

    #[test]
    fn a_field_keeps_to_its_line_and_a_block_keeps_its_layout() {
        assert_eq!(inert_line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(inert_text("a\nb\tc\n"), "a\nb\tc\n");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in [
            "date=2026-11-30/hour=3",
            "",
            "C:\\lake\\t1 \\x1b",
            "a\nb\tc",
        ] {
            let shown = inert_text(s);
            assert!(matches!(shown, Cow::Borrowed(_)), "{s:?}");
            assert_eq!(shown, s);
        }
        assert!(matches!(inert_line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn multi_byte_utf8_is_untouched() {
        for s in [
            "città=Zürich/日付=2026年",
            "👩‍👩‍👧 ✓ …",
            "\u{200B}zero width space",
        ] {
            assert!(matches!(inert_line(s), Cow::Borrowed(_)), "{s:?}");
        }
        assert_eq!(inert_line("Zürich\x1b日"), "Zürich\\x1b日");
    }

    #[test]
    fn no_active_character_survives() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(!inert_line(&all).chars().any(is_active));
        assert!(
            !inert_text(&all)
                .chars()
                .any(|c| c != '\n' && c != '\t' && is_active(c))
        );
    }

    #[test]
    fn an_escaped_json_line_parses_to_the_same_text() {
        let value = "p=\x1b[31m\u{9b}\u{7f}\u{202e}\\\r\n\"".to_string();
        let json = serde_json::to_string(&serde_json::json!({ "partition": value })).unwrap();
        let shown = inert_text(&json);
        assert!(!shown.chars().any(is_active), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["partition"], value);
    }
}
