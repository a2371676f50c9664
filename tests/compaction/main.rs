//! Integration tests of compaction: plans, jobs and their commits beside writers, on Delta
//! features (column mapping, row tracking, deletion vectors), locally and on Ray.
//! One binary per subject (each links all of delta-rs, so a few, not one per file).

// Tests report measurements on stderr; the no-print rule is for the program's own output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// Shared by several test binaries, each of which uses only part of it (helpers, re-exports).
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod column_mapping;
mod commit_safety;
mod compact;
mod crash_consistency;
mod deletion_vectors;
mod dv_tables;
mod kernel_reader;
mod kernel_writer;
mod ordering;
mod price;
mod race;
mod ray;
mod row_tracking;
mod table_open;
mod trust;
mod values;
mod where_sql;
