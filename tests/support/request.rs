//! Compaction requests for tests: one default, changed a field at a time, instead of the
//! struct literal in every file.

use std::collections::HashMap;

use lakehealth::engine::compact::job::CompactRequest;
use lakehealth::engine::compact::ordering::LayoutRequest;
use lakehealth::engine::compact::plan::{DeletedRows, Selection};
use lakehealth::engine::size::KIB;

/// Every file below 64 KiB in every partition, into files of 64 KiB, one bin at a time, no
/// bound on a bin's bytes (the size for tables of small seeded files, `kib64_thresholds`).
pub fn request() -> CompactRequest {
    CompactRequest {
        selection: Selection::All,
        target_file_size: Some(64 * KIB),
        min_file_size: Some(64 * KIB),
        parallelism: 1,
        max_bin_bytes: None,
        strategy: Default::default(),
        deleted_rows: Default::default(),
        layout: Default::default(),
        sort_memory: None,
        storage_options: HashMap::new(),
    }
}

/// The request's fields, set by name in a chain (`request().max_bin(160 * KIB)`).
pub trait RequestExt {
    /// Output size to aim for.
    fn target(self, bytes: u64) -> Self;
    /// Files at or above it are left alone.
    fn min_file_size(self, bytes: u64) -> Self;
    fn parallelism(self, n: usize) -> Self;
    /// Input bytes per bin (one commit each).
    fn max_bin(self, bytes: u64) -> Self;
    fn deleted_rows(self, d: DeletedRows) -> Self;
    fn storage_options(self, o: HashMap<String, String>) -> Self;
    /// The order rows are written in.
    fn layout(self, l: LayoutRequest) -> Self;
}

impl RequestExt for CompactRequest {
    fn target(mut self, bytes: u64) -> Self {
        self.target_file_size = Some(bytes);
        self
    }
    fn min_file_size(mut self, bytes: u64) -> Self {
        self.min_file_size = Some(bytes);
        self
    }
    fn parallelism(mut self, n: usize) -> Self {
        self.parallelism = n;
        self
    }
    fn max_bin(mut self, bytes: u64) -> Self {
        self.max_bin_bytes = Some(bytes);
        self
    }
    fn deleted_rows(mut self, d: DeletedRows) -> Self {
        self.deleted_rows = d;
        self
    }
    fn storage_options(mut self, o: HashMap<String, String>) -> Self {
        self.storage_options = o;
        self
    }
    fn layout(mut self, l: LayoutRequest) -> Self {
        self.layout = l;
        self
    }
}
