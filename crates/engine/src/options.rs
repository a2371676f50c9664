//! What opening a table takes (thresholds, replay bounds, storage options, discovery depth):
//! vocabulary shared by every layer, from the log reader to the CLI.

use std::collections::HashMap;

use crate::model::thresholds::Thresholds;
use crate::size::{GIB, MIB};

#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// How many of the newest commits to summarise for the history panel.
    pub history_commits: usize,
    /// Concurrent object reads.
    pub io_concurrency: usize,
    /// Commits before the checkpoint read in full to look for files removed twice: at most
    /// this many, and this many bytes (newest first; the rest of the history window is read
    /// as before).
    pub scan_commits: usize,
    pub scan_bytes: u64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            history_commits: 100,
            io_concurrency: 16,
            scan_commits: 500,
            scan_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Everything needed to load tables, shared by the CLI, the TUI and tests.
#[derive(Clone)]
pub struct OpenOptions {
    pub thresholds: Thresholds,
    pub replay: ReplayOptions,
    pub storage_options: HashMap<String, String>,
    pub discovery_depth: usize,
    /// Iceberg: read manifest lists and manifests wherever the metadata points, not only under
    /// the table's folder (for tables copied or moved without rewriting their metadata).
    pub trust_metadata_paths: bool,
    /// What each store charges: plans and jobs are priced at their table's store's rates.
    pub prices: crate::model::cost::Prices,
}

/// Secret storage options never show, even in a debug print.
impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("thresholds", &self.thresholds)
            .field("replay", &self.replay)
            .field(
                "storage_options",
                &crate::secrets::redacted_options(&self.storage_options),
            )
            .field("discovery_depth", &self.discovery_depth)
            .field("trust_metadata_paths", &self.trust_metadata_paths)
            .field("prices", &self.prices)
            .finish()
    }
}

impl Default for OpenOptions {
    /// The documented defaults: target and small-file threshold 128 MiB, band up to 1 GiB,
    /// 100 commits of history, 3 folder levels of discovery, no storage options.
    fn default() -> Self {
        Self {
            thresholds: Thresholds {
                target_file_size: 128 * MIB,
                small_file_size: 128 * MIB,
                max_file_size: GIB,
            },
            replay: ReplayOptions::default(),
            storage_options: HashMap::new(),
            discovery_depth: 3,
            trust_metadata_paths: false,
            prices: Default::default(),
        }
    }
}
