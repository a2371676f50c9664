//! The engine: table access, log replay, statistics, discovery, streaming writer, demo.
//! It never imports terminal code, so the CLI, the TUI and the tests drive the same engine.

pub mod discover;
pub mod error;
pub mod location;
pub mod log;
pub mod open;
pub mod progress;
pub mod size;
pub mod stats;
pub mod demo;
pub mod stream;
pub mod compact;
