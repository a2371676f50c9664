//! The command line: flags, headless commands, and dispatch to the TUI.

pub mod args;
pub mod checkpoint;
pub mod compact;
pub mod compact_iceberg;
pub mod convert;
pub mod key;
pub mod print;
pub mod report_skipping;
pub mod report_text;
pub mod run;
pub mod vacuum;
pub mod vacuum_iceberg;
pub mod watch;
pub mod worker;

/// The error and its causes on one line, each cause once. Engine errors include their
/// source's text in their own message (the TUI shows one line), so a cause already spelled out
/// by the message before it is not repeated.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let msg = cause.to_string();
        if out.is_empty() {
            out = msg;
        } else if !out.contains(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::EngineError;

    #[test]
    fn error_text_names_each_cause_once() {
        let inner = EngineError::from_delta(
            "/t",
            "loading the table",
            deltalake::DeltaTableError::NoSchema,
        );
        let e = anyhow::Error::new(inner).context("the demo table could not be prepared");
        let text = error_text(&e);
        assert_eq!(text.matches("No schema found").count(), 1, "{text}");
        assert!(
            text.starts_with("the demo table could not be prepared: /t: loading the table failed"),
            "{text}"
        );
    }
}
