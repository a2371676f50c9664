//! What a report carries beyond the common statistics, by kind of table: an Iceberg
//! snapshot's metadata and delete files, a folder listing's other and hidden files, the orphan
//! scan. Plain data (the readers that fill it live with their formats), so every reader of a
//! report can hold it.

use std::time::Duration;

use serde::Serialize;

use super::findings::{Finding, FindingKind};
use super::rewrite_preview::RewritePreview;
use crate::size::{format_bytes, plural};

/// Examples of a file group kept for a report.
const EXAMPLES: usize = 5;

/// Delete files of the current snapshot (merge-on-read): readers apply them on every scan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeleteFiles {
    pub position_files: u64,
    pub position_bytes: u64,
    pub position_records: u64,
    pub equality_files: u64,
    pub equality_bytes: u64,
    pub equality_records: u64,
    /// Partitions holding at least one delete file.
    pub partitions: u64,
}

impl DeleteFiles {
    pub fn files(&self) -> u64 {
        self.position_files + self.equality_files
    }

    pub fn bytes(&self) -> u64 {
        self.position_bytes + self.equality_bytes
    }

    /// "3 position (1.2 KiB), 1 equality (800 B)".
    pub fn describe(&self) -> String {
        format!(
            "{} position ({}), {} equality ({})",
            self.position_files,
            format_bytes(self.position_bytes),
            self.equality_files,
            format_bytes(self.equality_bytes)
        )
    }
}

/// What only an Iceberg table has, shown beside the common statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IcebergDetails {
    pub format_version: u8,
    /// The metadata file read (the table's current metadata).
    pub metadata_file: String,
    /// The table's `location`.
    pub location: String,
    pub snapshot_id: Option<i64>,
    pub sequence_number: u64,
    pub snapshots: u64,
    pub data_manifests: u64,
    pub delete_manifests: u64,
    /// Bytes of the manifest list and manifests a reader of this snapshot reads to plan a scan.
    pub manifest_bytes: u64,
    pub delete_files: DeleteFiles,
    pub rewrite_preview: RewritePreview,
}

impl IcebergDetails {
    /// One line for the CLI and the TUI header.
    pub fn summary(&self) -> String {
        format!(
            "iceberg v{}  snapshot {}  {} snapshots  manifests {} data + {} delete ({})",
            self.format_version,
            self.snapshot_id.map_or("none".into(), |s| s.to_string()),
            self.snapshots,
            self.data_manifests,
            self.delete_manifests,
            format_bytes(self.manifest_bytes),
        )
    }

    /// What `rewrite_data_files` would do, in one line.
    pub fn rewrite_summary(&self) -> String {
        let p = &self.rewrite_preview;
        if p.groups.is_empty() {
            return format!(
                "rewrite_data_files (defaults): nothing to rewrite ({} files outside {}–{}, no group of {}+ files or more than the {} target)",
                p.candidate_files,
                format_bytes(p.options.min_file_size),
                format_bytes(p.options.max_file_size),
                p.options.min_input_files,
                format_bytes(p.options.target_file_size),
            );
        }
        format!(
            "rewrite_data_files (defaults) would rewrite {} files ({}) in {} partitions into ~{} files (target {}; files outside {}–{} are candidates, groups of {}+ files)",
            p.files_in,
            format_bytes(p.bytes_in),
            p.partitions,
            p.files_out,
            format_bytes(p.options.target_file_size),
            format_bytes(p.options.min_file_size),
            format_bytes(p.options.max_file_size),
            p.options.min_input_files,
        )
    }
}

/// What listing the folder cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ListingCost {
    pub objects_listed: u64,
    /// List requests sent (pages of 1,000 keys); None on a local file system.
    pub list_requests: Option<u64>,
    pub seconds: f64,
}

/// Files that are not part of the table, and Spark's sink files its log does not name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileGroup {
    pub files: u64,
    pub bytes: u64,
    /// A few of their paths (relative to the table), to look at.
    pub examples: Vec<String>,
}

impl FileGroup {
    pub fn add(&mut self, rel: &str, size: u64) {
        self.files += 1;
        self.bytes += size;
        if self.examples.len() < EXAMPLES {
            self.examples.push(rel.to_string());
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrphanFile {
    /// Relative to the table root, as the object store names it.
    pub path: String,
    pub bytes: u64,
    /// Last modified (ms since the epoch), as storage reports it.
    pub modified_ms: i64,
}

/// What a scan of the table's folders found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OrphanScan {
    /// The log version the files were checked against.
    pub version: u64,
    /// The instant ages were measured from.
    pub scanned_at_ms: i64,
    /// Only files last modified longer ago than this are orphans.
    pub min_age_ms: u64,
    /// Orphans: count and bytes of all of them.
    pub files: u64,
    pub bytes: u64,
    /// Sorted by path; a report keeps the first `REPORT_LISTED` (`files` counts all).
    pub orphans: Vec<OrphanFile>,
    /// Unreferenced, but younger than `min_age_ms`: a writer may be about to commit them.
    pub recent: FileGroup,
    /// Unreferenced outputs an unsettled lakehealth job lists (`compact --pickup` settles them).
    pub job_owned: FileGroup,
    /// The jobs (folders under `_lakehealth/jobs/`) that own them.
    pub jobs: Vec<String>,
    /// Unreferenced files of partitions a compaction of this process is rewriting.
    pub in_flight: FileGroup,
    /// Reached through a symbolic link (local tables): never offered.
    pub behind_symlinks: FileGroup,
    /// Inside another table nested in this one's folder: never offered.
    pub in_other_tables: FileGroup,
    /// Job files that could not be read: which outputs their jobs own is unknown, so nothing
    /// is deleted while any is left.
    pub unreadable_job_files: Vec<String>,
}

impl OrphanScan {
    /// The same scan listing at most `n` orphans by name.
    pub fn truncated(mut self, n: usize) -> Self {
        self.orphans.truncate(n);
        self
    }

    /// The report's finding, when there are orphans.
    pub fn finding(&self) -> Option<Finding> {
        if self.files == 0 {
            return None;
        }
        let example = self
            .orphans
            .first()
            .map(|f| format!(", e.g. {}", f.path))
            .unwrap_or_default();
        Some(Finding {
            kind: FindingKind::OrphanFiles,
            versions: Vec::new(),
            operations: Vec::new(),
            engines: Vec::new(),
            first_remove_in_checkpoint: None,
            files: self.files,
            bytes: self.bytes,
            message: format!(
                "orphan files: {} ({}) in the table's folders that no version of the log \
                 references and no running job owns, older than {}{example}: a writer or \
                 compaction stopped before committing them. Readers never see them; `lakehealth \
                 vacuum` deletes them once they are older than its retention.",
                plural(self.files, "file"),
                format_bytes(self.bytes),
                crate::model::duration::exact(Duration::from_millis(self.min_age_ms)),
            ),
        })
    }
}

/// What a folder listing found beside the table's data files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FolderDetails {
    pub listing: ListingCost,
    /// Files that are not Parquet (not hidden): not counted as data.
    pub other_files: FileGroup,
    /// `_`/`.` prefixed files and folders (Spark's `_SUCCESS`, `.crc`, `_temporary/`).
    pub hidden_files: FileGroup,
    /// Spark file sink only: Parquet files its log does not list (left by failed batches);
    /// readers of the sink never see them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphans: Option<FileGroup>,
    /// Spark file sink only: files its log lists that are not on storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<FileGroup>,
}
