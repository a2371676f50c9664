//! The table metadata of a `replace` commit: the metadata JSON read from the catalog, kept whole,
//! with the new snapshot appended and made current on `main`, the sequence number advanced and
//! the logs extended (Iceberg spec: Table Metadata, Snapshots).

use serde_json::{Value, json};

use super::IcebergCompactError as E;
use super::plan::IceBin;
use super::rewrite::OutputFile;
use super::table_state::TableState;

/// A new snapshot id: positive, random, not one the table has.
pub fn new_snapshot_id(base: &TableState) -> i64 {
    loop {
        let id = (uuid::Uuid::new_v4().as_u128() >> 65) as i64;
        if id > 0 && !base.meta.snapshots.iter().any(|s| s.snapshot_id == id) {
            return id;
        }
    }
}

/// The version number a catalog's metadata file name starts with (`00012-<uuid>.metadata.json`).
fn version_of(location: &str) -> u64 {
    let name = location.rsplit('/').next().unwrap_or("");
    let digits: String = name
        .trim_start_matches('v')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

/// The new metadata file's location, beside the current one, the next version.
pub fn next_metadata_location(base: &TableState) -> String {
    let dir = base
        .metadata_location
        .rsplit_once('/')
        .map_or("", |(d, _)| d);
    format!(
        "{dir}/{:05}-{}.metadata.json",
        version_of(&base.metadata_location) + 1,
        uuid::Uuid::new_v4()
    )
}

/// The summary of the replace: what it added and removed, and the table's new totals (when the
/// parent carries them).
fn summary(
    base: &TableState,
    bin: &IceBin,
    outputs: &[OutputFile],
    job: &str,
) -> serde_json::Map<String, Value> {
    let added_files = outputs.len() as i64;
    let added_records: i64 = outputs.iter().map(|o| o.records as i64).sum();
    let added_size: i64 = outputs.iter().map(|o| o.size as i64).sum();
    let removed_files = bin.files.len() as i64;
    let removed_records = bin.records() as i64;
    let removed_size = bin.bytes() as i64;
    let mut s = serde_json::Map::new();
    let mut put = |k: &str, v: String| {
        s.insert(k.to_string(), Value::String(v));
    };
    put("operation", "replace".into());
    put("added-data-files", added_files.to_string());
    put("deleted-data-files", removed_files.to_string());
    put("added-records", added_records.to_string());
    put("deleted-records", removed_records.to_string());
    put("added-files-size", added_size.to_string());
    put("removed-files-size", removed_size.to_string());
    put("changed-partition-count", "1".into());
    put("engine-name", "lakehealth".into());
    put("engine-version", env!("CARGO_PKG_VERSION").into());
    // What a killed job left is told apart from what it committed by this (`ledger`).
    put(super::ledger::JOB_KEY, job.into());
    let parent = base.snapshot();
    let total = |k: &str| parent.and_then(|p| p.summary.get(k)?.parse::<i64>().ok());
    let totals = [
        ("total-data-files", added_files - removed_files),
        ("total-records", added_records - removed_records),
        ("total-files-size", added_size - removed_size),
        ("total-delete-files", 0),
        ("total-position-deletes", 0),
        ("total-equality-deletes", 0),
    ];
    for (k, delta) in totals {
        if let Some(t) = total(k) {
            put(k, (t + delta).to_string());
        }
    }
    s
}

/// Who and where a new snapshot is: its id and sequence number, its manifest list, the time
/// and the job that commits it.
pub struct SnapshotHeader<'a> {
    pub snapshot_id: i64,
    pub sequence: i64,
    pub list_path: &'a str,
    pub now_ms: i64,
    pub job: &'a str,
}

/// The new snapshot: a `replace` of `bin`'s files by `outputs`, on `base`'s current snapshot.
pub fn snapshot_json(
    base: &TableState,
    bin: &IceBin,
    outputs: &[OutputFile],
    h: &SnapshotHeader,
) -> Value {
    let SnapshotHeader {
        snapshot_id,
        sequence,
        list_path,
        now_ms,
        job,
    } = *h;
    let last_updated = base
        .json
        .get("last-updated-ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    // Snapshot times never go back (Iceberg refuses a snapshot older than the table's last update).
    let ts = now_ms.max(last_updated + 1);
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": ts,
        "manifest-list": list_path,
        "summary": summary(base, bin, outputs, job),
    });
    if let Some(p) = base.snapshot() {
        snapshot["parent-snapshot-id"] = json!(p.snapshot_id);
    }
    if let Some(schema_id) = base.json.get("current-schema-id") {
        snapshot["schema-id"] = schema_id.clone();
    }
    snapshot
}

/// The new metadata JSON: `snapshot` (from `snapshot_json`) added and made current on main.
pub fn new_metadata(base: &TableState, snapshot: &Value) -> Result<Vec<u8>, E> {
    let mut m = base.json.clone();
    let obj = m
        .as_object_mut()
        .ok_or_else(|| E::Unsupported("the metadata file is not a JSON object".into()))?;
    let last_updated = obj
        .get("last-updated-ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let field = |k: &str| snapshot.get(k).cloned().unwrap_or(Value::Null);
    let (snapshot_id, ts, sequence) = (
        field("snapshot-id"),
        field("timestamp-ms"),
        field("sequence-number"),
    );
    push(obj, "snapshots", snapshot.clone());
    push(
        obj,
        "snapshot-log",
        json!({"snapshot-id": snapshot_id, "timestamp-ms": ts}),
    );
    push(
        obj,
        "metadata-log",
        json!({"metadata-file": base.metadata_location, "timestamp-ms": last_updated}),
    );
    obj.insert("last-sequence-number".into(), sequence);
    obj.insert("last-updated-ms".into(), ts);
    obj.insert("current-snapshot-id".into(), snapshot_id.clone());
    let refs = obj
        .entry("refs")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| E::Unsupported("the metadata's refs is not an object".into()))?;
    let main = refs
        .entry("main")
        .or_insert_with(|| json!({"type": "branch"}));
    main["snapshot-id"] = snapshot_id;
    serde_json::to_vec_pretty(&m).map_err(|source| E::Json {
        file: "new metadata".into(),
        source,
    })
}

fn push(obj: &mut serde_json::Map<String, Value>, key: &str, v: Value) {
    match obj.get_mut(key).and_then(Value::as_array_mut) {
        Some(a) => a.push(v),
        None => {
            obj.insert(key.to_string(), Value::Array(vec![v]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_versions_of_catalog_and_hadoop_names() {
        assert_eq!(version_of("file:///t/metadata/00012-abc.metadata.json"), 12);
        assert_eq!(version_of("s3://b/t/metadata/v3.metadata.json"), 3);
        assert_eq!(version_of("/t/metadata/x.metadata.json"), 0);
    }
}
