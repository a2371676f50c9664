//! Reading the Delta transaction log (read-only).

pub mod actions;
pub mod cache;
pub mod checkpoint;
pub mod file_rows;
pub mod file_size;
pub mod listing;
pub mod opened_checkpoint;
pub mod partition_key;
pub mod reconcile;
pub mod replay;
#[cfg(test)]
mod replay_tests;
pub mod state;
pub mod tail;
#[cfg(test)]
mod tail_tests;
pub mod walker;
