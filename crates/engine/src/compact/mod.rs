//! Compaction: planning which small files to rewrite, executing bins, and committing each
//! finished bin atomically (OPTIMIZE, dataChange=false: the Delta protocol's side lives in
//! `delta/`: `delta::commit`, `delta::features`, column mapping, row tracking, deletion vectors),
//! after our own validation (`delta::commit`) and a proof that its outputs hold exactly its inputs' rows
//! (`rewrite`, `fingerprint`), so concurrent writers, readers and compactors never lose,
//! duplicate or change a row.

pub mod budget;
pub mod cadence;
mod column_digest;
pub(crate) mod conform;
pub mod counting_store;
pub mod events;
pub mod execute;
pub mod executor;
pub mod fingerprint;
pub mod job;
pub mod job_ledger;
pub(crate) mod ledger_store;
pub(crate) mod liveness;
pub mod locks;
pub(crate) mod order_sample;
pub(crate) mod ordered_bin;
pub mod ordering;
pub(crate) mod pace;
pub(crate) mod physical_writer;
pub mod plan;
pub mod price;
pub(crate) mod priority;
pub(crate) mod read_ahead;
pub(crate) mod rewrite;
pub(crate) mod row_set_digest;
pub(crate) mod schema;
pub mod selection;
pub(crate) mod sink;
pub mod spacing;
pub mod table;
pub(crate) mod tiers;
