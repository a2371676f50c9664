//! Delta Lake: reading the transaction log (`log/`: listing, replay, checkpoints, the live tail)
//! and the table's report (`report.rs`).

pub mod log;
pub(crate) mod report;
pub mod watch;
