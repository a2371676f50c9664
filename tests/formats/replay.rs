//! Checkpoint + later commits: lakehealth drops removed files from the checkpoint by
//! (partition, size) when removes record them, checks the ambiguous rows by path, and reads
//! every path when a remove cannot be matched. All must match delta-rs exactly, with files added
//! again, removed twice, and removes spelling their partition unlike the checkpoint.

use std::collections::HashMap;
use std::io::Write;

use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::open::load_table;

use crate::support::common::*;

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

/// Every `add` action of the table's JSON commits, in commit order.
fn logged_adds(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let log = dir.join("_delta_log");
    let mut names: Vec<String> = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.len() == 25 && n.ends_with(".json"))
        .collect();
    names.sort();
    let mut adds = Vec::new();
    for n in names {
        for line in std::fs::read_to_string(log.join(n)).unwrap().lines() {
            let j: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(a) = j.get("add") {
                adds.push(a.clone());
            }
        }
    }
    adds
}

/// Writes the next commit with `actions`.
fn append_commit(dir: &std::path::Path, actions: &[serde_json::Value]) {
    let log = dir.join("_delta_log");
    let next = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_suffix(".json").and_then(|v| v.parse::<u64>().ok())
        })
        .max()
        .unwrap()
        + 1;
    let mut f = std::fs::File::create(log.join(format!("{next:020}.json"))).unwrap();
    writeln!(f, "{}", serde_json::json!({"commitInfo": {"timestamp": 1_764_000_000_000i64, "operation": "OPTIMIZE"}})).unwrap();
    for a in actions {
        writeln!(f, "{a}").unwrap();
    }
}

fn remove_of(add: &serde_json::Value, partition_values: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"remove": {"path": add["path"], "deletionTimestamp": 1_764_000_000_000i64,
        "dataChange": false, "extendedFileMetadata": true, "size": add["size"],
        "partitionValues": partition_values}})
}

fn compacted(path: &str, size: u64) -> serde_json::Value {
    serde_json::json!({"add": {"path": path, "partitionValues": {"ingestion_date": "2026-11-01"},
        "size": size, "modificationTime": 1_764_000_000_000i64, "dataChange": false}})
}

/// After a checkpoint: a file it holds added again, a file removed and added again, a remove
/// whose partition values are spelled unlike the checkpoint's, and two compactions of the same
/// two files. The live files must be delta-rs's, however much of the log is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_adds_second_removes_and_odd_spellings_after_a_checkpoint_match_delta_rs() {
    let d = checkpointed_table().await;
    let adds = logged_adds(d.path());
    let day1: Vec<&serde_json::Value> = adds
        .iter()
        .filter(|a| a["partitionValues"]["ingestion_date"] == "2026-11-01")
        .collect();
    let day2: Vec<&serde_json::Value> = adds
        .iter()
        .filter(|a| a["partitionValues"]["ingestion_date"] == "2026-11-02")
        .collect();
    assert!(day1.len() >= 6 && day2.len() >= 2);
    let pv = |a: &serde_json::Value| a["partitionValues"].clone();
    // Added again while the checkpoint holds it.
    append_commit(d.path(), &[serde_json::json!({"add": day2[0]})]);
    // Removed, then added again.
    append_commit(d.path(), &[remove_of(day2[1], pv(day2[1]))]);
    append_commit(d.path(), &[serde_json::json!({"add": day2[1]})]);
    // A remove with an empty partitionValues map: (partition, size) cannot find it.
    append_commit(d.path(), &[remove_of(day1[0], serde_json::json!({}))]);
    // Two compactions of the same two files.
    let both: u64 = day1[1..3].iter().map(|a| a["size"].as_u64().unwrap()).sum();
    append_commit(
        d.path(),
        &[
            remove_of(day1[1], pv(day1[1])),
            remove_of(day1[2], pv(day1[2])),
            compacted("compacted-1.parquet", both),
        ],
    );
    append_commit(
        d.path(),
        &[
            remove_of(day1[1], pv(day1[1])),
            remove_of(day1[2], pv(day1[2])),
            compacted("compacted-2.parquet", both),
        ],
    );

    let (files, bytes, parts) = delta_rs_counts(d.path()).await;
    let (n_files, n_bytes, _) = naive_replay(d.path());
    assert_eq!(
        (files, bytes),
        (n_files, n_bytes),
        "delta-rs and the naive replay"
    );
    // 60 seeded, one removed, two compacted twice into two files.
    assert_eq!(files, 60 - 1 - 2 + 2);
    let mut scan_off = opts();
    scan_off.replay.scan_commits = 0;
    scan_off.replay.history_commits = 1;
    for o in [opts(), scan_off] {
        let r = load_table(&loc(d.path()), &o, &|_| {}).await.unwrap();
        assert_eq!((r.stats.files, r.stats.bytes), (files, bytes));
        for p in &r.partitions {
            assert_eq!(Some(&p.stats.files), parts.get(&p.values.label()));
        }
        assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
        assert_eq!(r.findings[0].files, 2);
        assert_eq!(r.findings[0].bytes, both);
    }
}
