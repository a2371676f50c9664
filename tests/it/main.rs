//! Integration tests, one binary (each test binary links all of delta-rs, so fewer is faster).

mod cli;
mod commit_safety;
mod common;
mod compact;
mod errors;
mod findings;
mod fixtures;
mod harness;
mod iceberg;
mod janitor;
mod race;
mod replay;
mod stream;
mod tui;
mod tui_driver;
mod tui_jobs;
mod tui_real;
mod tui_snapshots;
mod values;
mod where_sql;
