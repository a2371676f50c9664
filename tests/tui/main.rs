//! Integration tests of the terminal UI: journeys, jobs, the live view and the janitor panel,
//! renders at every size (insta snapshots in `snapshots/`), and the binary in a pseudo-terminal.
//! One binary per subject (each links all of delta-rs, so a few, not one per file).

// Tests report measurements on stderr; the no-print rule is for the program's own output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// Shared by several test binaries, each of which uses only part of it (helpers, re-exports).
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod live;
mod tui;
mod tui_fleet;
mod tui_inert;
mod tui_janitor;
mod tui_jobs;
mod tui_live;
mod tui_pty;
mod tui_real;
mod tui_size_matrix;
mod tui_sizes;
mod tui_snapshots;
