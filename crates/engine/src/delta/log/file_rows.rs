//! The live files of a table with deletion vectors, each with its vector's cardinality and its
//! row count: what the deleted-rows figures need, read only for tables that use vectors (the
//! replay reads neither paths nor statistics). The JSON commits after the checkpoint decide
//! every key they touch (newest first, as `walker`), the checkpoint's adds hold the rest.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Deserialize;

use super::actions::{DeletionVector, file_key, num_records};
use super::checkpoint::{FileRowsRow, OpenedFile, read_checkpoint_file_rows};
use super::reconcile::checkpoint_error;
use super::state::LogState;
use crate::error::{EngineError, Result};

/// What the pass reads of a commit line (other actions and fields are skipped).
#[derive(Deserialize)]
struct Line {
    add: Option<Add>,
    remove: Option<Remove>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Add {
    path: String,
    #[serde(default)]
    partition_values: std::collections::HashMap<String, Option<String>>,
    deletion_vector: Option<DeletionVector>,
    stats: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Remove {
    path: String,
    deletion_vector: Option<DeletionVector>,
}

/// Every live file at the replayed version of `state`, with its deleted rows and row count.
pub async fn live_file_rows(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    state: &LogState,
    io_concurrency: usize,
) -> Result<Vec<FileRowsRow>> {
    let first = state.checkpoint_version.map_or(0, |v| v + 1);
    let mut decided = HashSet::new();
    let mut out = Vec::new();
    // None after a checkpoint of the newest version (an empty range, not a reversed one).
    let commits: Vec<(u64, String)> = state
        .listing
        .commits
        .range(first..=state.version.max(first))
        .filter(|(v, _)| **v <= state.version)
        .rev()
        .map(|(v, (p, _, _))| (*v, p.clone()))
        .collect();
    let mut fetched = futures::stream::iter(commits.into_iter().map(|(_, path)| {
        let store = store.clone();
        async move {
            let bytes = match store.get(&Path::from(path.as_str())).await {
                Ok(r) => r.bytes().await,
                Err(e) => Err(e),
            }
            .map_err(|e| EngineError::from_store(uri, &path, e))?;
            Ok::<_, EngineError>((path, bytes))
        }
    }))
    .buffered(io_concurrency.max(1));
    while let Some(item) = fetched.next().await {
        let (path, bytes) = item?;
        apply_commit(uri, &path, &bytes, &mut decided, &mut out)?;
    }
    if let Some(cp) = state
        .checkpoint_version
        .and_then(|v| state.listing.checkpoints.get(&v))
    {
        let mut files = cp.files.clone();
        let mut i = 0;
        while i < files.len() {
            let mut rows = Vec::new();
            let mut sidecars = Vec::new();
            let file = OpenedFile::open(store, &files[i], cp.size_of(&files[i]))
                .await
                .map_err(|e| checkpoint_error(uri, &files[i], e))?;
            read_checkpoint_file_rows(&file, &mut rows, &mut sidecars)
                .await
                .map_err(|e| checkpoint_error(uri, &files[i], e))?;
            out.extend(rows.into_iter().filter(|r| !decided.contains(&r.key)));
            if i < cp.files.len() {
                files.extend(
                    sidecars
                        .into_iter()
                        .map(|sc| format!("_delta_log/_sidecars/{sc}")),
                );
            }
            i += 1;
        }
    }
    Ok(out)
}

/// A deletion vector's storage types (`PROTOCOL.md`): a UUID-named file, inline, a path.
pub const KNOWN_STORAGE_TYPES: [&str; 3] = ["u", "i", "p"];

/// Why a vector of another storage type cannot be counted (no reader can apply it).
pub fn unknown_storage_type(log_file: &str, data_file: &str, storage_type: &str) -> String {
    format!(
        "{log_file} gives {data_file} a deletion vector of unknown storage type {storage_type:?} \
         (the protocol knows u, i and p): no reader can apply it; the log is corrupt"
    )
}

/// One commit, newer than every commit applied before it: the first action on a key decides
/// it (an add is live, a remove is not); later ones (older) are ignored.
fn apply_commit(
    uri: &str,
    path: &str,
    bytes: &[u8],
    decided: &mut HashSet<String>,
    out: &mut Vec<FileRowsRow>,
) -> Result<()> {
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let l: Line = serde_json::from_slice(line).map_err(|e| EngineError::CorruptCommit {
            uri: uri.into(),
            file: path.into(),
            line: n + 1,
            detail: e.to_string(),
        })?;
        if let Some(a) = l.add {
            if let Some(t) = a
                .deletion_vector
                .as_ref()
                .map(|dv| dv.storage_type.as_str())
                && !KNOWN_STORAGE_TYPES.contains(&t)
            {
                return Err(EngineError::Unsupported {
                    uri: uri.into(),
                    detail: unknown_storage_type(path, &a.path, t),
                });
            }
            let key = file_key(&a.path, a.deletion_vector.as_ref());
            if decided.insert(key.clone()) {
                let deleted = a
                    .deletion_vector
                    .as_ref()
                    .and_then(|dv| dv.cardinality)
                    .map_or(0, |c| c.max(0) as u64);
                out.push(FileRowsRow {
                    key,
                    records: a.stats.as_deref().and_then(num_records),
                    path: a.path,
                    partition_values: a.partition_values.into_iter().collect(),
                    deleted,
                });
            }
        }
        if let Some(r) = l.remove {
            decided.insert(file_key(&r.path, r.deletion_vector.as_ref()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(lines: &[serde_json::Value]) -> Vec<u8> {
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes()
    }

    fn dv(id: &str, cardinality: i64) -> serde_json::Value {
        serde_json::json!({"storageType": "u", "pathOrInlineDv": id, "offset": 1,
            "sizeInBytes": 34, "cardinality": cardinality})
    }

    #[test]
    fn the_newest_action_on_a_key_decides_and_a_new_vector_is_a_new_key() {
        let mut decided = HashSet::new();
        let mut out = Vec::new();
        // Newest first: the file's vector was replaced (remove old key, add new key).
        let newest = commit(&[
            serde_json::json!({"remove": {"path": "a.parquet", "deletionVector": dv("old", 1)}}),
            serde_json::json!({"add": {"path": "a.parquet", "partitionValues": {"p": "1"},
                "size": 10, "deletionVector": dv("new", 3), "stats": "{\"numRecords\":9}"}}),
        ]);
        let older = commit(&[
            serde_json::json!({"add": {"path": "a.parquet", "partitionValues": {"p": "1"},
                "size": 10, "deletionVector": dv("old", 1), "stats": "{\"numRecords\":9}"}}),
            serde_json::json!({"add": {"path": "b.parquet", "partitionValues": {"p": "2"},
                "size": 10, "stats": "{\"minValues\":{\"numRecords\":1},\"numRecords\":4}"}}),
        ]);
        apply_commit("t", "1.json", &newest, &mut decided, &mut out).unwrap();
        apply_commit("t", "0.json", &older, &mut decided, &mut out).unwrap();
        let got: Vec<(&str, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.path.as_str(), r.deleted, r.records))
            .collect();
        assert_eq!(got, [("a.parquet", 3, Some(9)), ("b.parquet", 0, Some(4))]);
        // The checkpoint's entry for the old vector is decided by the JSON commits.
        assert!(decided.contains("a.parquet\u{1f}uold@1"));
    }

    #[test]
    fn a_corrupt_line_names_its_file_and_line() {
        let e = apply_commit(
            "t",
            "7.json",
            b"{}\n{not json",
            &mut HashSet::new(),
            &mut vec![],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("7.json") && e.contains('2'), "{e}");
    }

    #[test]
    fn a_vector_of_an_unknown_storage_type_is_an_error_naming_the_file() {
        let c = commit(&[serde_json::json!({"add": {"path": "a.parquet", "size": 1,
            "deletionVector": {"storageType": "t", "pathOrInlineDv": "x", "cardinality": 1}}})]);
        let e = apply_commit("t", "3.json", &c, &mut HashSet::new(), &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("3.json") && e.contains("a.parquet") && e.contains("\"t\""),
            "{e}"
        );
    }
}
