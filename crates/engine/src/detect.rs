//! What a folder is, from its listing (one `list_with_delimiter`): a Delta table, a plain
//! Parquet folder, a Spark file sink or an Iceberg table. Every reader and the discovery of
//! tables under a root decide it here.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use super::error::{EngineError, Result};

use crate::model::format::TableFormat;

/// What one level of a folder holds: child folder names and file names.
#[derive(Debug, Default, Clone)]
pub struct FolderChildren {
    pub folders: Vec<String>,
    pub files: Vec<String>,
}

impl FolderChildren {
    pub fn has_folder(&self, name: &str) -> bool {
        self.folders.iter().any(|f| f == name)
    }
}

/// A data file name: `*.parquet`, not hidden (Spark's `_SUCCESS`, `.crc`, `_committed_*`).
pub fn is_data_file(name: &str) -> bool {
    !is_hidden(name) && name.to_ascii_lowercase().ends_with(".parquet")
}

/// Names Spark and Hive keep out of a table: `_` and `.` prefixed files and folders.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

/// A Hive partition folder name (`key=value`).
pub fn is_partition_folder(name: &str) -> bool {
    !is_hidden(name) && name.split_once('=').is_some_and(|(k, _)| !k.is_empty())
}

/// What the folder is, from its children alone. Logs win over data files: `_delta_log/` makes
/// a Delta table even when the folder also holds Parquet files (it always does), then Spark's
/// sink log, then Iceberg's `metadata/` (confirmed by `probe_format`), then Parquet files, or
/// `key=value/` folders (confirmed by `probe_format` finding a Parquet file below one).
pub fn detect_format(children: &FolderChildren) -> Option<TableFormat> {
    if children.has_folder("_delta_log") {
        return Some(TableFormat::Delta);
    }
    if children.has_folder("_spark_metadata") {
        return Some(TableFormat::SparkFileSink);
    }
    if children.files.iter().any(|f| is_data_file(f)) {
        return Some(TableFormat::ParquetFolder);
    }
    if children.has_folder("metadata") {
        return Some(TableFormat::Iceberg);
    }
    if children.folders.iter().any(|f| is_partition_folder(f)) {
        return Some(TableFormat::ParquetFolder);
    }
    None
}

/// Lists one folder level (`None`: the store's root).
pub async fn list_children(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    prefix: Option<&Path>,
) -> Result<FolderChildren> {
    let l = store
        .list_with_delimiter(prefix)
        .await
        .map_err(|e| EngineError::from_store(uri, "folder listing", e))?;
    Ok(FolderChildren {
        folders: l
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect(),
        files: l
            .objects
            .iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect(),
    })
}

/// How deep `probe_format` follows `key=value/` folders looking for a Parquet file.
const PROBE_DEPTH: usize = 8;

/// The format of the folder at `prefix`, confirmed where its children alone are not proof: an
/// Iceberg `metadata/` must hold a `*.metadata.json`, and `key=value/` folders must lead to a
/// Parquet file (following the first such folder, a few list requests).
pub async fn probe_format(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    prefix: Option<&Path>,
    children: &FolderChildren,
) -> Result<Option<TableFormat>> {
    match detect_format(children) {
        Some(TableFormat::Iceberg) => {
            let meta = child(prefix, "metadata");
            let listed = list_children(store, uri, Some(&meta)).await?;
            if listed.files.iter().any(|f| f.ends_with(".metadata.json")) {
                return Ok(Some(TableFormat::Iceberg));
            }
            // A folder that merely contains `metadata/` may still be a partitioned folder.
            let rest = FolderChildren {
                folders: children
                    .folders
                    .iter()
                    .filter(|f| *f != "metadata")
                    .cloned()
                    .collect(),
                files: children.files.clone(),
            };
            Box::pin(probe_format(store, uri, prefix, &rest)).await
        }
        Some(TableFormat::ParquetFolder) if !children.files.iter().any(|f| is_data_file(f)) => {
            let mut level = children.clone();
            let mut at = prefix.cloned();
            for _ in 0..PROBE_DEPTH {
                let Some(next) = level.folders.iter().find(|f| is_partition_folder(f)) else {
                    return Ok(None);
                };
                let p = child(at.as_ref(), next);
                level = list_children(store, uri, Some(&p)).await?;
                if level.files.iter().any(|f| is_data_file(f)) {
                    return Ok(Some(TableFormat::ParquetFolder));
                }
                at = Some(p);
            }
            Ok(None)
        }
        other => Ok(other),
    }
}

/// The path of child `name` (as listed: already in the store's encoding) of `prefix`.
pub fn child(prefix: Option<&Path>, name: &str) -> Path {
    let full = match prefix {
        Some(p) => format!("{p}/{name}"),
        None => name.to_string(),
    };
    // Listed names are valid parts; `from` (which would encode `%` again) only as a fallback.
    Path::parse(&full).unwrap_or_else(|_| Path::from(full.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(folders: &[&str], files: &[&str]) -> FolderChildren {
        FolderChildren {
            folders: folders.iter().map(|s| s.to_string()).collect(),
            files: files.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn detects_each_format_from_a_listing() {
        let d = detect_format;
        assert_eq!(
            d(&kids(&["_delta_log", "_spark_metadata"], &["a.parquet"])),
            Some(TableFormat::Delta)
        );
        assert_eq!(
            d(&kids(&["_spark_metadata", "day=1"], &[])),
            Some(TableFormat::SparkFileSink)
        );
        assert_eq!(
            d(&kids(&["metadata", "data"], &[])),
            Some(TableFormat::Iceberg)
        );
        assert_eq!(
            d(&kids(&[], &["part-0.snappy.parquet", "_SUCCESS"])),
            Some(TableFormat::ParquetFolder)
        );
        assert_eq!(d(&kids(&["day=1"], &[])), Some(TableFormat::ParquetFolder));
        assert_eq!(
            d(&kids(&["raw", "_tmp"], &["_SUCCESS", ".x.parquet"])),
            None
        );
        assert_eq!(d(&kids(&["=x"], &["notes.txt"])), None);
    }

    #[test]
    fn hidden_and_data_names() {
        assert!(is_data_file("part-00000-abc.c000.snappy.parquet"));
        assert!(!is_data_file("_committed_123"));
        assert!(!is_data_file(".part-0.parquet.crc"));
        assert!(!is_data_file("_part.parquet"));
        assert!(is_partition_folder("k=__HIVE_DEFAULT_PARTITION__"));
        assert!(!is_partition_folder("_k=1"));
    }

    #[tokio::test]
    async fn probe_follows_partition_folders_to_a_parquet_file() {
        use object_store::memory::InMemory;
        use object_store::{ObjectStoreExt, PutPayload};
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        for p in [
            "t/a=1/b=2/part-0.parquet",
            "csv/a=1/x.csv",
            "ice/metadata/v1.metadata.json",
            "notice/metadata/readme.txt",
            "notice/k=1/p.parquet",
            "pct/a=x%2Fy/b=1/p.parquet",
        ] {
            store
                .put(&Path::parse(p).unwrap(), PutPayload::from_static(b"x"))
                .await
                .unwrap();
        }
        for (folder, want) in [
            ("t", Some(TableFormat::ParquetFolder)),
            ("csv", None),
            ("ice", Some(TableFormat::Iceberg)),
            ("notice", Some(TableFormat::ParquetFolder)),
            ("pct", Some(TableFormat::ParquetFolder)),
        ] {
            let p = Path::from(folder);
            let c = list_children(&store, "mem", Some(&p)).await.unwrap();
            let got = probe_format(&store, "mem", Some(&p), &c).await.unwrap();
            assert_eq!(got, want, "{folder}");
        }
    }
}
