//! Checkpoint + later removes: lakehealth drops removed files from the checkpoint by
//! (partition, size) when removes record them, else by path. Both must match delta-rs exactly.

use std::collections::HashMap;
use std::io::Write;

use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::open::load_table;

use crate::common::*;

async fn delta_rs_counts(path: &std::path::Path) -> (u64, u64, HashMap<String, u64>) {
    let t = deltalake::open_table(loc(path).url.clone()).await.unwrap();
    let (mut files, mut bytes, mut parts) = (0, 0, HashMap::new());
    for f in t.snapshot().unwrap().log_data() {
        files += 1;
        bytes += f.size() as u64;
        let pv = f.partition_values_map();
        *parts
            .entry(format!(
                "ingestion_date={}",
                pv["ingestion_date"].clone().unwrap_or_default()
            ))
            .or_insert(0) += 1;
    }
    (files, bytes, parts)
}

async fn checkpointed_table() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();
    seed_small_files(&l, &["2026-11-01".into(), "2026-11-02".into()], 30, 100)
        .await
        .unwrap();
    let t = deltalake::open_table(l.url.clone()).await.unwrap();
    deltalake::checkpoints::create_checkpoint(&t, None)
        .await
        .unwrap();
    d
}

/// Appends a commit removing `n` files of the first partition (with or without size/partition).
fn remove_after_checkpoint(dir: &std::path::Path, n: usize, extended: bool) {
    let log = dir.join("_delta_log");
    let mut versions: Vec<u64> = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_suffix(".json").and_then(|v| v.parse().ok())
        })
        .collect();
    versions.sort();
    let next = versions.last().unwrap() + 1;
    // Pick files from the first commit with adds.
    let mut removes = Vec::new();
    for v in &versions {
        let text = std::fs::read_to_string(log.join(format!("{v:020}.json"))).unwrap();
        for line in text.lines() {
            let j: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(a) = j.get("add")
                && removes.len() < n
                && a["path"].as_str().unwrap().contains("2026-11-01")
            {
                let mut r = serde_json::json!({"path": a["path"], "deletionTimestamp": 1_764_000_000_000i64, "dataChange": true});
                if extended {
                    r["size"] = a["size"].clone();
                    r["partitionValues"] = a["partitionValues"].clone();
                    r["extendedFileMetadata"] = serde_json::json!(true);
                }
                removes.push(serde_json::json!({"remove": r}));
            }
        }
    }
    let mut f = std::fs::File::create(log.join(format!("{next:020}.json"))).unwrap();
    writeln!(f, "{}", serde_json::json!({"commitInfo": {"timestamp": 1_764_000_000_000i64, "operation": "DELETE"}})).unwrap();
    for r in removes {
        writeln!(f, "{r}").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removes_after_a_checkpoint_match_delta_rs_with_and_without_sizes() {
    for extended in [true, false] {
        let d = checkpointed_table().await;
        remove_after_checkpoint(d.path(), 7, extended);
        let r = load_table(&loc(d.path()), &opts(), &|_| {}).await.unwrap();
        assert!(r.log.checkpoint_version.is_some());
        assert_eq!(r.log.commits_since_checkpoint, 1);
        let (files, bytes, parts) = delta_rs_counts(d.path()).await;
        assert_eq!(
            (r.stats.files, r.stats.bytes),
            (files, bytes),
            "extended={extended}"
        );
        assert_eq!(files, 53);
        for p in &r.partitions {
            assert_eq!(
                Some(&p.stats.files),
                parts.get(&p.values.label()),
                "{}",
                p.values.label()
            );
        }
        assert_eq!(r.vacuum.removed_files, 7);
    }
}
