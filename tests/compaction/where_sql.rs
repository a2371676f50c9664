//! `compact --where` takes SQL (OR, parentheses, quoted names) and records the parsed SQL as
//! the OPTIMIZE commit's predicate; table properties Delta cannot parse are named, with the
//! table, instead of being silently replaced by a default.

use std::path::Path;

use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::open::load_table;

use crate::support::common::*;

const DAYS: [&str; 3] = ["2026-11-28", "2026-11-29", "2026-11-30"];

/// A sensor table of three days of 3 small files each; `configuration` replaces the empty
/// metadata configuration of its first commit.
async fn sensor_table(dir: &Path, configuration: Option<&str>) {
    let l = loc(dir);
    create_sensor_table(&l).await.unwrap();
    if let Some(conf) = configuration {
        let first = dir.join("_delta_log/00000000000000000000.json");
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(text.contains("\"configuration\":{}"), "{text}");
        let text = text.replace("\"configuration\":{}", &format!("\"configuration\":{conf}"));
        std::fs::write(&first, text).unwrap();
    }
    let days: Vec<String> = DAYS.iter().map(|d| d.to_string()).collect();
    seed_small_files(&l, &days, 3, 50).await.unwrap();
}

/// The `operationParameters.predicate` of every OPTIMIZE commit in the log.
fn optimize_predicates(dir: &Path) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut commits: Vec<_> = std::fs::read_dir(dir.join("_delta_log"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    commits.sort();
    for c in commits {
        for line in std::fs::read_to_string(&c).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let ci = &v["commitInfo"];
            if ci["operation"] == "OPTIMIZE" {
                out.push(
                    ci["operationParameters"]["predicate"]
                        .as_str()
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn or_and_parentheses_select_partitions_and_the_commit_records_the_parsed_sql() {
    let d = tempfile::tempdir().unwrap();
    sensor_table(d.path(), None).await;
    let path = d.path().to_str().unwrap();
    let o = lakehealth(&[
        "compact",
        path,
        "--where",
        "(ingestion_date='2026-11-28' or \"ingestion_date\" >= '2026-11-30') and ingestion_date is not null",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut days: Vec<String> = v["commits"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["partitions"].as_array().unwrap().clone())
        .map(|p| p["ingestion_date"].as_str().unwrap().to_string())
        .collect();
    days.sort();
    assert_eq!(days, ["2026-11-28", "2026-11-30"]);
    assert_eq!(v["failures"], serde_json::json!([]));
    assert_eq!(v["errors"], serde_json::json!([]));
    let sql = "(ingestion_date = '2026-11-28' OR \"ingestion_date\" >= '2026-11-30') AND ingestion_date IS NOT NULL";
    assert_eq!(
        optimize_predicates(d.path()),
        vec![Some(sql.to_string()); 2],
        "every OPTIMIZE commit records the parsed SQL"
    );
    let r = load_table(&loc(d.path()), &opts(), &|_| {}).await.unwrap();
    let files: Vec<(String, u64)> = r
        .partitions
        .iter()
        .map(|p| (p.values.label(), p.stats.files))
        .collect();
    assert_eq!(
        files,
        [
            ("ingestion_date=2026-11-28".to_string(), 1),
            ("ingestion_date=2026-11-29".to_string(), 3),
            ("ingestion_date=2026-11-30".to_string(), 1),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn marked_partitions_are_recorded_as_sql_too() {
    let d = tempfile::tempdir().unwrap();
    sensor_table(d.path(), None).await;
    let o = lakehealth(&[
        "compact",
        d.path().to_str().unwrap(),
        "--partition",
        "ingestion_date=2026-11-29",
        "--partition",
        "ingestion_date=2026-11-30",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sql = "(ingestion_date = '2026-11-29') OR (ingestion_date = '2026-11-30')";
    assert_eq!(
        optimize_predicates(d.path()),
        vec![Some(sql.to_string()); 2]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_table_properties_are_named_with_the_table() {
    let d = tempfile::tempdir().unwrap();
    sensor_table(
        d.path(),
        Some(r#"{"delta.targetFileSize":"12parsecs","delta.checkpointInterval":"0","delta.deletedFileRetentionDuration":"a week"}"#),
    )
    .await;
    // The report uses Delta's defaults and says which values it ignored.
    let r = load_table(&loc(d.path()), &opts(), &|_| {}).await.unwrap();
    assert_eq!(r.table_target_file_size, None);
    assert_eq!(r.log.checkpoint_interval, 10);
    assert_eq!(r.vacuum.retention_hours, 168.0);
    for key in [
        "delta.targetFileSize = \"12parsecs\"",
        "delta.checkpointInterval = \"0\"",
        "delta.deletedFileRetentionDuration = \"a week\"",
    ] {
        assert!(
            r.warnings.iter().any(|w| w.contains(key)),
            "{key}: {:?}",
            r.warnings
        );
    }
    // A compaction would need the target: it refuses, naming the property and the table...
    let path = d.path().to_str().unwrap();
    let o = lakehealth(&["compact", path, "--dry-run"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("delta.targetFileSize = \"12parsecs\"") && err.contains(path),
        "{err}"
    );
    assert!(err.contains("--target"), "{err}");
    // ...unless the target is given.
    let o = lakehealth(&["compact", path, "--dry-run", "--target", "1MiB"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_target_of_one_byte_is_refused_before_anything_is_planned() {
    let d = tempfile::tempdir().unwrap();
    sensor_table(d.path(), Some(r#"{"delta.targetFileSize":"1"}"#)).await;
    let path = d.path().to_str().unwrap();
    let o = lakehealth(&["compact", path, "--dry-run"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("delta.targetFileSize is 1 bytes") && err.contains("--target"),
        "{err}"
    );
    let o = lakehealth(&["compact", path, "--dry-run", "--target", "1MiB"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
