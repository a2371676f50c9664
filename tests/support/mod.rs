//! Helpers shared by the integration test binaries (`tests/<subject>/main.rs`), each of which
//! includes this folder as its `support` module.

pub mod common;
pub mod harness;
pub mod request;
pub mod sealed;
pub mod tally;
pub mod tui_driver;
pub mod wait;
pub mod writer;

pub use request::{RequestExt, request};
pub use wait::{eventually, wait_until};
