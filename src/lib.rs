//! lakehealth: file health of lakehouse tables.
//!
//! `engine` holds everything about tables (no terminal code); `tui` and `cli` drive it.

pub mod cli;
pub mod config;
pub mod engine;
pub mod logging;
pub mod tui;
