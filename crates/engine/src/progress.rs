//! Typed progress of loading a table or scanning a root, for the TUI's loading indicator.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadProgress {
    Listing,
    ReadingCommits {
        done: usize,
        total: usize,
    },
    ReadingCheckpoint {
        rows: u64,
    },
    Computing,
    /// Iceberg: manifests of the current snapshot read.
    ReadingManifests {
        done: usize,
        total: usize,
    },
    /// Root scans: folders looked at and tables found so far.
    Discovering {
        folders: usize,
        tables: usize,
    },
    /// Listing a folder of data files (Parquet folders, Spark sinks): objects so far and rate.
    ListingObjects {
        objects: u64,
        per_second: u64,
    },
    /// Root scans: tables whose statistics are loaded.
    LoadingTables {
        done: usize,
        total: usize,
    },
}

impl LoadProgress {
    pub fn describe(&self) -> String {
        match self {
            LoadProgress::Listing => "listing _delta_log/".into(),
            LoadProgress::ReadingCommits { done, total } => {
                format!("reading commits {done}/{total}")
            }
            LoadProgress::ReadingCheckpoint { rows } => {
                format!("reading checkpoint: {rows} rows")
            }
            LoadProgress::Computing => "computing statistics".into(),
            LoadProgress::ReadingManifests { done, total } => {
                format!("reading Iceberg manifests {done}/{total}")
            }
            LoadProgress::Discovering { folders, tables } => {
                format!("searching for tables: {folders} folders, {tables} tables found")
            }
            LoadProgress::LoadingTables { done, total } => {
                format!("loading tables {done}/{total}")
            }
            LoadProgress::ListingObjects {
                objects,
                per_second,
            } => format!(
                "listing data files: {} objects ({}/s)",
                crate::size::format_count(*objects),
                crate::size::format_count(*per_second)
            ),
        }
    }

    /// 0.0–1.0 when the phase has a known size.
    pub fn ratio(&self) -> Option<f64> {
        match self {
            LoadProgress::ReadingCommits { done, total }
            | LoadProgress::ReadingManifests { done, total }
            | LoadProgress::LoadingTables { done, total }
                if *total > 0 =>
            {
                Some(*done as f64 / *total as f64)
            }
            _ => None,
        }
    }
}
