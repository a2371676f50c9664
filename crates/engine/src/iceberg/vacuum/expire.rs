//! The metadata of an expiry: the current metadata JSON kept whole, without the expired
//! snapshots, their snapshot-log entries and their statistics files, the metadata log extended
//! (Iceberg spec: Table Metadata; Java `TableMetadata.removeSnapshots`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::super::compact::IcebergCompactError as E;

/// `base` (the metadata file at `base_location`) without the snapshots `expired`, at `now_ms`.
pub fn expired_metadata(
    base: &Value,
    base_location: &str,
    expired: &BTreeSet<i64>,
    now_ms: i64,
) -> Result<Value, E> {
    let mut m = base.clone();
    let obj = m
        .as_object_mut()
        .ok_or_else(|| E::Unsupported("the metadata file is not a JSON object".into()))?;
    let is_expired = |v: &Value| {
        v.get("snapshot-id")
            .and_then(Value::as_i64)
            .is_some_and(|id| expired.contains(&id))
    };
    for key in ["snapshots", "statistics", "partition-statistics"] {
        if let Some(a) = obj.get_mut(key).and_then(Value::as_array_mut) {
            a.retain(|v| !is_expired(v));
        }
    }
    // The log stays a history of the current snapshot: what precedes an expired entry goes too.
    if let Some(log) = obj.get_mut("snapshot-log").and_then(Value::as_array_mut) {
        let after = log.iter().rposition(&is_expired).map_or(0, |i| i + 1);
        log.drain(..after);
    }
    let last_updated = obj
        .get("last-updated-ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let entry = json!({"metadata-file": base_location, "timestamp-ms": last_updated});
    match obj.get_mut("metadata-log").and_then(Value::as_array_mut) {
        Some(a) => a.push(entry),
        None => {
            obj.insert("metadata-log".into(), Value::Array(vec![entry]));
        }
    }
    obj.insert("last-updated-ms".into(), json!(now_ms.max(last_updated)));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_snapshots_their_log_entries_and_statistics_go_and_the_rest_is_kept_whole() {
        let base = json!({
            "format-version": 2,
            "location": "/t",
            "last-updated-ms": 300,
            "current-snapshot-id": 3,
            "refs": {"main": {"snapshot-id": 3, "type": "branch"}},
            "snapshots": [
                {"snapshot-id": 1, "timestamp-ms": 100},
                {"snapshot-id": 2, "timestamp-ms": 200},
                {"snapshot-id": 3, "timestamp-ms": 300}
            ],
            "snapshot-log": [
                {"snapshot-id": 1, "timestamp-ms": 100},
                {"snapshot-id": 3, "timestamp-ms": 150},
                {"snapshot-id": 2, "timestamp-ms": 200},
                {"snapshot-id": 3, "timestamp-ms": 300}
            ],
            "statistics": [{"snapshot-id": 2, "statistics-path": "/t/metadata/s2.stats"}],
            "metadata-log": [{"metadata-file": "/t/metadata/00001-a.metadata.json", "timestamp-ms": 200}],
            "unknown-field": {"kept": true}
        });
        let m = expired_metadata(
            &base,
            "/t/metadata/00002-b.metadata.json",
            &[1, 2].into(),
            400,
        )
        .unwrap();
        assert_eq!(
            m["snapshots"],
            json!([{"snapshot-id": 3, "timestamp-ms": 300}])
        );
        assert_eq!(
            m["snapshot-log"],
            json!([{"snapshot-id": 3, "timestamp-ms": 300}])
        );
        assert_eq!(m["statistics"], json!([]));
        assert_eq!(
            m["metadata-log"][1],
            json!({"metadata-file": "/t/metadata/00002-b.metadata.json", "timestamp-ms": 300})
        );
        assert_eq!(m["last-updated-ms"], 400);
        assert_eq!(m["refs"], base["refs"]);
        assert_eq!(m["unknown-field"], base["unknown-field"]);
        assert_eq!(m["current-snapshot-id"], 3);
    }
}
