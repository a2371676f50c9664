//! Delta Lake: reading the transaction log (`log/`: listing, replay, checkpoints, the live tail),
//! the table's report (`report.rs`), and the protocol a compaction writes by: the table's
//! features (`features.rs`), column mapping, row tracking and deletion vectors, and the commit
//! with our own validation (`commit/`); a table's file statistics for its skipping health
//! (`skipping.rs`).

pub(crate) mod column_mapping;
pub mod commit;
pub mod deletion_vectors;
pub(crate) mod delta_rs;
pub(crate) mod domains;
pub mod features;
pub mod log;
pub(crate) mod report;
pub(crate) mod row_tracking;
pub mod skipping;
pub mod watch;
