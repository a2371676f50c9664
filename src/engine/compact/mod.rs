//! Compaction: planning which small files to rewrite, executing bins, and committing each
//! finished bin atomically through delta-rs's transaction machinery (OPTIMIZE, dataChange=false,
//! conflict checking and retries), so concurrent streaming writers and readers are never broken.

pub mod counting_store;
pub mod events;
pub mod execute;
pub mod job;
pub mod locks;
pub mod plan;
pub mod selection;
pub mod table;
