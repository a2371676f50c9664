//! Text from a table is inert on screen (#43 item 5): a partition value holding an ESC
//! sequence is drawn as `\x1b[31m`, and the terminal receives none of a table's controls (ESC,
//! OSC 52, BEL, `\r`, C1 CSI, a bidi override), whichever view draws them (`view::inert`).

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{TerminalOptions, Viewport};

use crate::support::common::{loc, runtime, sensor_table_with};
use crate::support::tui_driver::Driven;

const SIZE: (u16, u16) = (140, 40);
const COLOUR: &str = "p\x1b[31mred";
const CLIPBOARD: &str = "q\x1b]52;c;aGk=\x07\rFAKE\u{9b}2J\u{202e}";

/// A table whose partition values a hostile writer chose, opened in the TUI.
fn hostile_table_opened() -> (tempfile::TempDir, Driven) {
    let d = tempfile::tempdir().unwrap();
    sensor_table_with(d.path(), &[(COLOUR, 3), (CLIPBOARD, 2)]);
    let t = runtime().block_on(async {
        Driven::new(loc(d.path()).display(), SIZE)
            .frozen()
            .open()
            .await
    });
    (d, t)
}

/// What the backend writes, kept for the test to read after the draw.
#[derive(Clone, Default)]
struct Sent(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn is_active(c: char) -> bool {
    (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c)
}

#[test]
fn a_partition_value_with_an_escape_sequence_is_drawn_escaped() {
    let (_d, t) = hostile_table_opened();
    let screen = t.screen();
    assert!(screen.contains("p\\x1b[31mred"), "{screen}");
    let active: Vec<char> = screen.chars().filter(|c| is_active(*c)).collect();
    assert!(active.is_empty(), "{active:?}\n{screen}");
}

#[test]
fn the_terminal_receives_no_control_a_table_wrote() {
    let (_d, t) = hostile_table_opened();
    let area = Rect::new(0, 0, SIZE.0, SIZE.1);
    let out = Sent::default();
    let mut term = Terminal::with_options(
        CrosstermBackend::new(out.clone()),
        TerminalOptions {
            viewport: Viewport::Fixed(area),
        },
    )
    .unwrap();
    term.draw(|f| lakehealth::tui::view::draw(f, &t.app))
        .unwrap();
    let sent = String::from_utf8_lossy(&out.0.lock().unwrap()).into_owned();
    // ratatui's own styling is ESC sequences; a table's ESC, BEL, CR, C1 and bidi are not.
    for (what, bytes) in [
        ("the colour sequence", "\x1b[31mred"),
        ("the OSC 52 write", "\x1b]52"),
        ("BEL", "\x07"),
        ("CR", "\r"),
        ("C1 CSI", "\u{9b}"),
        ("a bidi override", "\u{202e}"),
    ] {
        assert!(!sent.contains(bytes), "{what} reached the terminal");
    }
    assert!(sent.contains("p\\x1b[31mred"), "drawn escaped");
}
