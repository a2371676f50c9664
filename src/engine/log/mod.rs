//! Reading the Delta transaction log (read-only).

pub mod actions;
pub mod checkpoint;
pub mod listing;
pub mod partition_key;
pub mod replay;
pub mod state;
