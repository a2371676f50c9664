//! The file sizes every statistic and every compaction plan is measured against.

use serde::Serialize;

/// Thresholds every statistic is computed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// Size compaction aims for; `ideal_files` divides by it.
    pub target_file_size: u64,
    /// Files strictly below it count as small (lower bound of the target band).
    pub small_file_size: u64,
    /// Upper bound of the target band.
    pub max_file_size: u64,
}

/// Delta's default `maxDeletedRowsRatio`: above it a file's deleted rows make it worth a rewrite.
pub const DEFAULT_MAX_DELETED_RATIO: f64 = 0.05;
