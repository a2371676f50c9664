//! lakehealth: file health of lakehouse tables.
//!
//! `engine` holds everything about tables (no terminal code); `tui` and `cli` drive it.

// Output goes through `cli::print` (`outln!`, `errln!`, ...), which scrubs credentials.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod config;
pub mod engine;
pub mod logging;
pub mod tui;
