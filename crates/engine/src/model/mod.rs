//! The shared vocabulary of the engine: plain data types and small pure functions that every
//! layer uses. A leaf: nothing here imports other `crate` modules, so anything may
//! import it without a cycle.

pub mod cost;
pub mod duration;
pub mod format;
pub mod inert;
pub mod output_name;
pub mod partition;
pub(crate) mod percent;
pub mod thresholds;
pub(crate) mod trigger;
