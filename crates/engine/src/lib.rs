//! lakehealth-engine: table access, log replay, health statistics, compaction, the janitor,
//! the streaming writer and the demo. It never imports terminal code, so the CLI, the TUI and the
//! tests drive the same engine.

pub mod clock;
pub mod compact;
pub mod delta;
pub mod demo;
pub(crate) mod detect;
pub(crate) mod discover;
pub mod error;
pub mod exec;
pub mod failpoint;
pub mod formats;
pub(crate) mod forward_store;
pub mod iceberg;
pub mod janitor;
pub mod local_fs;
pub mod location;
pub mod maintenance;
pub mod model;
pub mod nested_tables;
pub mod open;
pub mod options;
pub mod panic_guard;
pub mod parquet_folder;
pub(crate) mod parquet_reader;
pub mod progress;
pub(crate) mod properties;
pub mod root_links;
pub mod rotating_file;
pub mod sealed;
pub mod secrets;
pub mod size;
pub mod stats;
pub mod stream;
pub mod table;
