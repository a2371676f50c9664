//! Deletion vectors on tables the tests write: a DELETE-like commit that marks rows of chosen
//! files deleted, storing each vector as Delta writers do (inline in the log, in a file named by
//! a UUID relative to the table root, or at an absolute path), written with delta-kernel's own
//! deletion-vector writer. The protocol is upgraded to reader 3 / writer 7 with the
//! `deletionVectors` feature, as Spark does when deletion vectors are enabled.

use std::collections::BTreeMap;
use std::path::Path;

use delta_kernel::actions::deletion_vector_writer::{
    DeletionVector, KernelDeletionVector, StreamingDeletionVectorWriter,
};
use serde_json::{Value, json};

use crate::support::common::commits_from;

/// Where a test deletion vector is stored.
#[derive(Debug, Clone, Copy)]
pub enum Storage {
    Inline,
    /// `<prefix><z85 uuid>`: `<root>/<prefix>/deletion_vector_<uuid>.bin`.
    Relative,
    /// An absolute URL (`p`).
    Absolute,
}

/// The portable RoaringBitmapArray magic (PROTOCOL.md, Deletion Vector Format).
const MAGIC: u32 = 1681511377;

fn kernel_dv(rows: &[u64]) -> KernelDeletionVector {
    let mut dv = KernelDeletionVector::new();
    dv.add_deleted_row_indexes(rows.iter().copied());
    dv
}

/// A DV file holding one vector; returns (bytes, offset, size).
fn dv_file(rows: &[u64]) -> (Vec<u8>, i32, i32) {
    let mut buf = Vec::new();
    let mut w = StreamingDeletionVectorWriter::new(&mut buf);
    let r = w.write_deletion_vector(kernel_dv(rows)).unwrap();
    w.finalize().unwrap();
    (buf, r.offset, r.size_in_bytes)
}

/// The descriptor of a vector deleting `rows`, its file written under `table` when it has one.
pub fn descriptor(table: &Path, storage: Storage, rows: &[u64]) -> Value {
    let cardinality = rows.len() as i64;
    match storage {
        Storage::Inline => {
            let mut bytes = MAGIC.to_le_bytes().to_vec();
            bytes.extend(kernel_dv(rows).serialize().unwrap());
            let size = bytes.len();
            // Z85 works on 4-byte groups; the reader ignores the padding.
            bytes.resize(size.div_ceil(4) * 4, 0);
            json!({"storageType": "i", "pathOrInlineDv": z85::encode(&bytes),
                   "sizeInBytes": size, "cardinality": cardinality})
        }
        Storage::Relative => {
            let uuid = uuid::Uuid::new_v4();
            let (bytes, offset, size) = dv_file(rows);
            std::fs::create_dir_all(table.join("dv")).unwrap();
            std::fs::write(table.join(format!("dv/deletion_vector_{uuid}.bin")), bytes).unwrap();
            json!({"storageType": "u", "pathOrInlineDv": format!("dv{}", z85::encode(uuid.as_bytes())),
                   "offset": offset, "sizeInBytes": size, "cardinality": cardinality})
        }
        Storage::Absolute => {
            let (bytes, offset, size) = dv_file(rows);
            let f = table.join(format!("abs-dv-{}.bin", uuid::Uuid::new_v4()));
            std::fs::write(&f, bytes).unwrap();
            let url = url::Url::from_file_path(&f).unwrap();
            json!({"storageType": "p", "pathOrInlineDv": url.as_str(),
                   "offset": offset, "sizeInBytes": size, "cardinality": cardinality})
        }
    }
}

/// The active add actions by path, replayed from every JSON commit.
pub fn active_adds(table: &Path) -> BTreeMap<String, Value> {
    let mut live = BTreeMap::new();
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(r) = a.get("remove") {
                live.remove(r["path"].as_str().unwrap());
            }
            if let Some(add) = a.get("add") {
                live.insert(add["path"].as_str().unwrap().to_string(), add.clone());
            }
        }
    }
    live
}

/// Active files that carry a deletion vector.
pub fn files_with_dv(table: &Path) -> Vec<String> {
    active_adds(table)
        .into_iter()
        .filter(|(_, a)| a.get("deletionVector").is_some_and(|d| !d.is_null()))
        .map(|(p, _)| p)
        .collect()
}

/// Whether the table's latest protocol already supports deletion vectors.
fn supports_deletion_vectors(table: &Path) -> bool {
    let mut supported = false;
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(p) = a.get("protocol") {
                supported = p["readerFeatures"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == "deletionVectors"));
            }
        }
    }
    supported
}

/// Commits, as the next version, deletion vectors on `files` (path, storage, deleted row
/// indexes), upgrading the protocol to deletion vectors unless it supports them. Returns the
/// version written.
pub fn delete_rows(table: &Path, files: &[(&str, Storage, Vec<u64>)]) -> u64 {
    let version = commits_from(table, 0).len() as u64;
    let adds = active_adds(table);
    let mut lines = vec![
        json!({"commitInfo": {"timestamp": chrono::Utc::now().timestamp_millis(),
            "operation": "DELETE", "operationParameters": {"predicate": "[\"test\"]"},
            "engineInfo": "lakehealth-tests"}}),
    ];
    if !supports_deletion_vectors(table) {
        lines.push(
            json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}),
        );
    }
    for (path, storage, rows) in files {
        let add = adds
            .get(*path)
            .unwrap_or_else(|| panic!("{path} is active"));
        let mut remove = json!({"path": path, "deletionTimestamp": chrono::Utc::now().timestamp_millis(),
            "dataChange": true, "extendedFileMetadata": true,
            "partitionValues": add["partitionValues"], "size": add["size"]});
        if let Some(old) = add.get("deletionVector") {
            remove["deletionVector"] = old.clone();
        }
        let mut new = add.clone();
        new["dataChange"] = json!(true);
        new["deletionVector"] = descriptor(table, *storage, rows);
        lines.push(json!({"remove": remove}));
        lines.push(json!({"add": new}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(table.join(format!("_delta_log/{version:020}.json")), text).unwrap();
    version
}
