//! Integration tests of the janitor (`watch`), its operations, and table maintenance (vacuum,
//! checkpoints, orphans).
//! One binary per subject (each links all of delta-rs, so a few, not one per file).

// Tests report measurements on stderr; the no-print rule is for the program's own output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// Shared by several test binaries, each of which uses only part of it (helpers, re-exports).
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod fleet;
mod janitor;
mod janitor_ops;
mod maintenance;
mod orphans;
mod polling;
mod recluster;
mod vacuum_nested;
