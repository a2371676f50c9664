//! Integration tests of reading tables: the fixtures, Iceberg (and its compaction through
//! catalogs), other formats, the log replay, findings, the streaming writer and root links.
//! One binary per subject (each links all of delta-rs, so a few, not one per file).

// Tests report measurements on stderr; the no-print rule is for the program's own output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// Shared by several test binaries, each of which uses only part of it (helpers, re-exports).
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod findings;
mod fixtures;
mod formats;
mod iceberg;
mod iceberg_compact;
mod iceberg_order;
mod iceberg_vacuum;
mod replay;
mod root_links;
mod skipping;
mod stream;
