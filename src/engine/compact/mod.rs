//! Compaction: planning which small files to rewrite, executing bins, and committing each
//! finished bin atomically through delta-rs's transaction machinery (OPTIMIZE, dataChange=false),
//! after our own validation (`commit`) and a proof that its outputs hold exactly its inputs'
//! rows (`rewrite`, `fingerprint`), so concurrent writers, readers and compactors never lose,
//! duplicate or change a row.

pub mod budget;
pub mod cadence;
mod column_digest;
pub mod commit;
pub mod conform;
pub mod counting_store;
pub mod deletion_vectors;
pub mod events;
pub mod execute;
pub mod executor;
pub mod fingerprint;
pub mod iceberg;
pub mod job;
pub mod locks;
pub mod pace;
pub mod plan;
pub mod priority;
pub mod read_ahead;
pub mod rewrite;
pub mod selection;
pub mod spacing;
pub mod table;
pub mod tiers;
