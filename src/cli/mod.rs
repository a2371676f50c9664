//! The command line: flags, headless commands, and dispatch to the TUI.

pub mod args;
pub mod compact;
pub mod report_text;
pub mod run;
pub mod watch;
