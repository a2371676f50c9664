//! Everything lakehealth computes from a replayed log: file-size statistics and histograms,
//! log health, vacuum debt, streaming writers, findings, assembled into a `TableReport`; and
//! from the files' statistics, how well they skip (`skipping`).

pub mod deleted_rows;
pub mod details;
pub mod file_sizes;
pub mod findings;
pub mod histogram;
pub(crate) mod log_health;
pub(crate) mod rewrite_preview;
pub mod skipping;
pub mod table_report;
pub(crate) mod vacuum;
pub(crate) mod writers;
