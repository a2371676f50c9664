//! Reading the Delta transaction log (read-only).

pub mod actions;
pub(crate) mod cache;
pub mod checkpoint;
pub(crate) mod file_rows;
pub(crate) mod file_size;
pub mod listing;
pub(crate) mod opened_checkpoint;
pub mod partition_key;
pub(crate) mod reconcile;
pub mod replay;
#[cfg(test)]
mod replay_tests;
pub mod state;
pub mod tail;
#[cfg(test)]
mod tail_tests;
pub mod walker;
