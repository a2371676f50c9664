//! lakehealth: file health of lakehouse tables.
//!
//! The engine (everything about tables, no terminal code) is its own crate, `lakehealth-engine`
//! in `crates/engine`, re-exported here as `engine`; `tui` and `cli` drive it. Output goes
//! through `cli::print` (`outln!`, `errln!`, ...), which scrubs credentials: the workspace's
//! lints forbid `println!` elsewhere.

pub mod cli;
pub mod config;
pub mod heap;
pub use lakehealth_engine as engine;
pub use lakehealth_engine::forward_to_inner;
pub mod logging;
pub mod tui;
