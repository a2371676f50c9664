//! Standard output of the headless commands: one place that scrubs secrets and notices a reader
//! that went away. `lakehealth report ROOT | head` closes the pipe after ten lines; `println!`
//! would then panic (Rust ignores SIGPIPE), so every write goes through here and a closed pipe
//! becomes [`StdoutClosed`], which `main` turns into a quiet exit as ripgrep and git do.

use std::io::{self, Write};

/// The reader of standard output closed it: nothing more can be shown, and nothing is wrong.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed by its reader")]
pub struct StdoutClosed;

/// Writing to standard output failed for another reason than a closed pipe (a full disk under a
/// redirect, say): the output is incomplete and the command must fail.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output: {0}")]
pub struct StdoutFailed(#[source] io::Error);

/// Prints `text` as it is (no newline added), scrubbed of every registered secret.
pub fn print(text: &str) -> anyhow::Result<()> {
    write_to(&mut io::stdout().lock(), text)
}

/// Prints `text` and a newline, scrubbed of every registered secret.
pub fn line(text: &str) -> anyhow::Result<()> {
    let mut s = String::with_capacity(text.len() + 1);
    s.push_str(text);
    s.push('\n');
    print(&s)
}

/// Prints `value` as pretty JSON and a newline, scrubbed.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    line(&serde_json::to_string_pretty(value)?)
}

/// Whether an error chain ends in a closed standard output (the command ends quietly).
pub fn is_closed(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<StdoutClosed>().is_some())
}

fn write_to(w: &mut impl Write, text: &str) -> anyhow::Result<()> {
    let shown = crate::engine::secrets::scrub(text);
    w.write_all(shown.as_bytes())
        .and_then(|()| w.flush())
        .map_err(classify)
}

fn classify(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        StdoutClosed.into()
    } else {
        StdoutFailed(e).into()
    }
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
            Err(io::Error::from(io::ErrorKind::StorageFull))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_a_quiet_end_not_a_failure() {
        let e = write_to(&mut ClosedPipe, "row\n").unwrap_err();
        assert!(is_closed(&e), "{e}");
        assert!(is_closed(&e.context("printing the report")));
    }

    #[test]
    fn another_write_error_fails_the_command() {
        let e = write_to(&mut FullDisk, "row\n").unwrap_err();
        assert!(!is_closed(&e));
        assert!(
            e.to_string().contains("cannot write to standard output"),
            "{e}"
        );
    }

    #[test]
    fn what_is_printed_is_scrubbed() {
        crate::engine::secrets::register(["out-rs-test-secret-1234".to_string()]);
        let mut buf = Vec::new();
        write_to(&mut buf, "token=out-rs-test-secret-1234\n").unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains("out-rs-test-secret-1234"), "{text}");
    }
}
