//! Every file a table's metadata still references, as Iceberg's `remove_orphan_files` counts
//! them: each snapshot's manifest list, its manifests and their live entries (data and delete
//! files), the statistics files, the current metadata file and those in its metadata log. A
//! file not in this set, inside the table's folder, is no snapshot's.
//!
//! Anything that cannot be read ends the count with an error: a file missing from the set would
//! be deleted.

use std::collections::HashSet;

use serde_json::Value;

use super::super::compact::IcebergCompactError as E;
use super::super::compact::confine::path_key;
use crate::iceberg::Stores;
use crate::iceberg::manifests::{read_manifest_list, read_manifest_with};
use crate::iceberg::metadata::TableMetadata;

/// The files `json` (the metadata file at `location`) references, each as `path_key` spells it.
pub async fn referenced(
    stores: &mut Stores<'_>,
    table: &str,
    location: &str,
    json: &Value,
) -> Result<HashSet<String>, E> {
    let meta: TableMetadata = serde_json::from_value(json.clone()).map_err(|source| E::Json {
        file: location.to_string(),
        source,
    })?;
    let mut keys = HashSet::new();
    let add = |keys: &mut HashSet<String>, p: &str| -> Result<(), E> {
        let k = path_key(p).ok_or_else(|| E::Malformed {
            what: "metadata file",
            file: location.to_string(),
            detail: format!("{p:?} is not a path or URI"),
        })?;
        keys.insert(k);
        Ok(())
    };
    add(&mut keys, location)?;
    for p in metadata_files(json).chain(statistics_files(json)) {
        add(&mut keys, p)?;
    }
    let mut manifests: Vec<String> = Vec::new();
    for s in &meta.snapshots {
        if let Some(list) = &s.manifest_list {
            add(&mut keys, list)?;
            let (bytes, _) = stores.read(table, "manifest list", list).await?;
            let rows = read_manifest_list(&bytes).map_err(|e| E::Malformed {
                what: "manifest list",
                file: list.clone(),
                detail: e.to_string(),
            })?;
            manifests.extend(rows.into_iter().map(|r| r.path));
        }
        manifests.extend(s.manifests.iter().flatten().cloned());
    }
    manifests.sort();
    manifests.dedup();
    for m in &manifests {
        add(&mut keys, m)?;
        let (bytes, _) = stores.read(table, "manifest", m).await?;
        let files = read_manifest_with(&bytes, false).map_err(|e| E::Malformed {
            what: "manifest",
            file: m.clone(),
            detail: e.to_string(),
        })?;
        for f in files {
            add(&mut keys, &f.path)?;
        }
    }
    Ok(keys)
}

fn metadata_files(json: &Value) -> impl Iterator<Item = &str> {
    json.get("metadata-log")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("metadata-file").and_then(Value::as_str))
}

fn statistics_files(json: &Value) -> impl Iterator<Item = &str> {
    ["statistics", "partition-statistics"]
        .into_iter()
        .filter_map(|k| json.get(k).and_then(Value::as_array))
        .flatten()
        .filter_map(|e| e.get("statistics-path").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_log_and_statistics_files_are_referenced() {
        let j = serde_json::json!({
            "metadata-log": [{"metadata-file": "/t/metadata/1.metadata.json"}],
            "statistics": [{"snapshot-id": 1, "statistics-path": "/t/metadata/s.puffin"}],
            "partition-statistics": [{"snapshot-id": 1, "statistics-path": "/t/metadata/p.parquet"}]
        });
        assert_eq!(
            metadata_files(&j)
                .chain(statistics_files(&j))
                .collect::<Vec<_>>(),
            [
                "/t/metadata/1.metadata.json",
                "/t/metadata/s.puffin",
                "/t/metadata/p.parquet"
            ]
        );
    }
}
