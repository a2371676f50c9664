//! Every line the process prints passes through `engine::secrets::scrub`: a library's error,
//! a table's metadata or a `--json` document may quote a credential. Then through
//! `engine::model::inert::inert_text`: a table's text may hold terminal controls (an ESC
//! sequence in a partition value, a `\r` in a file name), shown escaped; the output's own
//! `\n` and `\t` stay, and lakehealth prints no escape sequence of its own (no colours), so
//! nothing it means to send is lost. A `--json` line passes unchanged in meaning (see
//! `inert`). The crate denies `println!` and friends (lib.rs), so these are the only way to
//! stdout and stderr.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::OnceLock;

use crate::engine::model::inert::inert_text;
use crate::engine::secrets::scrub;

/// What became of standard output, once a write to it failed (the first failure is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdoutLost {
    /// Its reader closed it (`lakehealth report ROOT | head`): nothing is wrong, nothing more
    /// is shown; the command ends quietly, as ripgrep and git do.
    Closed,
    /// Another failure (a full disk under a redirect): the output is incomplete, and the
    /// command must fail saying so.
    Failed(String),
}

static LOST: OnceLock<StdoutLost> = OnceLock::new();

/// Whether standard output can no longer be written, and why.
pub fn stdout_lost() -> Option<&'static StdoutLost> {
    LOST.get()
}

/// `text` on stdout, scrubbed. A failed write never panics (as `println!` would on a closed
/// pipe): it is recorded (`stdout_lost`), and commands that print for long (`stream`, `watch`)
/// stop on it while `main` decides the exit status.
#[allow(clippy::print_stdout)]
pub fn out(text: &str) {
    if LOST.get().is_some() {
        return;
    }
    if let Err(e) = write_to(&mut io::stdout().lock(), text) {
        let _ = LOST.set(e);
    }
}

/// What leaves the process for `text`: credentials scrubbed (they are matched raw, so first),
/// then terminal controls made inert.
pub fn shown(text: &str) -> Cow<'_, str> {
    match scrub(text) {
        Cow::Borrowed(clean) => inert_text(clean),
        Cow::Owned(clean) => {
            if let Cow::Owned(inert) = inert_text(&clean) {
                return Cow::Owned(inert);
            }
            Cow::Owned(clean)
        }
    }
}

fn write_to(w: &mut impl Write, text: &str) -> Result<(), StdoutLost> {
    w.write_all(shown(text).as_bytes())
        .and_then(|()| w.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => StdoutLost::Closed,
            _ => StdoutLost::Failed(e.to_string()),
        })
}

/// `text` on stderr, scrubbed and inert.
#[allow(clippy::print_stderr)]
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(shown(text).as_bytes());
}

/// `println!`, scrubbed.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::print::out("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::print::out(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `print!`, scrubbed.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::print::out(&::std::format!($($arg)*))
    };
}

/// `eprintln!`, scrubbed.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::cli::print::err("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::print::err(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `eprint!`, scrubbed.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::cli::print::err(&::std::format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink whose reader is gone, as stdout is after `| head` exits.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct FullDisk;

    impl Write for FullDisk {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_a_quiet_end_and_another_failure_is_kept_to_fail_the_command() {
        assert_eq!(write_to(&mut ClosedPipe, "row\n"), Err(StdoutLost::Closed));
        match write_to(&mut FullDisk, "row\n") {
            Err(StdoutLost::Failed(why)) => assert!(why.contains("No space left"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_is_written_is_scrubbed() {
        crate::engine::secrets::register(["print-rs-secret-1234".to_string()]);
        let mut buf = Vec::new();
        write_to(&mut buf, "token=print-rs-secret-1234\n").unwrap();
        assert!(
            !String::from_utf8(buf)
                .unwrap()
                .contains("print-rs-secret-1234")
        );
    }

    #[test]
    fn what_is_written_holds_no_terminal_control_from_a_table() {
        let mut buf = Vec::new();
        write_to(
            &mut buf,
            "p=\x1b[31m\x1b]52;c;eA==\x07\rx\u{9b}\u{202e}\n\tnext\n",
        )
        .unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "p=\\x1b[31m\\x1b]52;c;eA==\\x07\\x0dx\\u009b\\u202e\n\tnext\n"
        );
    }

    #[test]
    fn a_json_line_is_written_as_json_that_reads_back_the_same() {
        let value = "\x1b[2J\u{9b}\u{7f}\u{202e}\r\n";
        let line = format!("{}\n", serde_json::json!({ "path": value }));
        let mut buf = Vec::new();
        write_to(&mut buf, &line).unwrap();
        let written = String::from_utf8(buf).unwrap();
        assert!(!written.contains(['\x1b', '\u{9b}', '\u{7f}', '\u{202e}', '\r']));
        let back: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(back["path"], value);
    }

    #[test]
    fn a_plain_line_is_written_without_a_copy() {
        assert!(matches!(shown("files 12 bytes 3 MiB\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn printed_lines_are_scrubbed() {
        crate::engine::secrets::register(["print-secret-42".to_string()]);
        let line = format!("{}\n", "x print-secret-42 y");
        assert_eq!(crate::engine::secrets::scrub(&line), "x *** y\n");
    }
}
