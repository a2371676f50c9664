//! Bad input gets a clear error naming what is wrong, never a panic, and nothing is written.

use lakehealth::engine::error::EngineError;
use lakehealth::engine::location::Location;
use lakehealth::engine::open::{load_table, open};

use crate::support::common::*;

fn tree_snapshot(p: &std::path::Path) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for e in files_under(p) {
        let m = std::fs::metadata(&e).unwrap();
        v.push((e.display().to_string(), m.len()));
    }
    v.sort();
    v
}

#[tokio::test]
async fn an_empty_folder_is_not_a_table() {
    let d = tempfile::tempdir().unwrap();
    let e = open(&loc(d.path()), &opts(), &|_| {}).await.unwrap_err();
    assert!(matches!(e, EngineError::NotATable { .. }), "{e}");
    assert!(e.to_string().contains("no _delta_log/"), "{e}");
}

#[tokio::test]
async fn a_missing_path_says_so() {
    let e = Location::parse("/no/such/lake/table").unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[tokio::test]
async fn a_corrupt_commit_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("checkpoints"), d.path());
    let commit = d.path().join("_delta_log/00000000000000000012.json");
    let mut text = std::fs::read_to_string(&commit).unwrap();
    text.push_str("{\"add\": {\"path\": truncated\n");
    std::fs::write(&commit, text).unwrap();
    let before = tree_snapshot(d.path());
    let e = load_table(&loc(d.path()), &opts(), &|_| {})
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, EngineError::CorruptCommit { .. }), "{msg}");
    assert!(msg.contains("00000000000000000012.json"), "{msg}");
    assert!(msg.contains("line"), "{msg}");
    assert_eq!(before, tree_snapshot(d.path()), "nothing may be written");
}

#[tokio::test]
async fn a_missing_checkpoint_part_without_old_commits_is_explained() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("simple_table_with_checkpoint"), d.path());
    let log = d.path().join("_delta_log");
    // Log cleanup removed the commits the checkpoint replaced...
    for v in 0..10 {
        std::fs::remove_file(log.join(format!("{v:020}.json"))).unwrap();
    }
    // ...and the checkpoint is a two-part one whose second part is lost.
    std::fs::rename(
        log.join("00000000000000000010.checkpoint.parquet"),
        log.join("00000000000000000010.checkpoint.0000000001.0000000002.parquet"),
    )
    .unwrap();
    let e = load_table(&loc(d.path()), &opts(), &|_| {})
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, EngineError::LogGap { .. }), "{msg}");
    assert!(msg.contains("1/2 parts"), "{msg}");
}

#[tokio::test]
async fn a_missing_checkpoint_with_commits_falls_back_and_warns() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("simple_table_with_checkpoint"), d.path());
    std::fs::remove_file(
        d.path()
            .join("_delta_log/00000000000000000010.checkpoint.parquet"),
    )
    .unwrap();
    let r = load_table(&loc(d.path()), &opts(), &|_| {}).await.unwrap();
    let (files, bytes, _) = naive_replay(d.path());
    assert_eq!((r.stats.files, r.stats.bytes), (files, bytes));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("_last_checkpoint names version 10")),
        "{:?}",
        r.warnings
    );
}

#[tokio::test]
async fn a_corrupt_checkpoint_is_named() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("simple_table_with_checkpoint"), d.path());
    std::fs::write(
        d.path()
            .join("_delta_log/00000000000000000010.checkpoint.parquet"),
        b"this is not parquet",
    )
    .unwrap();
    let e = load_table(&loc(d.path()), &opts(), &|_| {})
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, EngineError::CorruptCheckpoint { .. }), "{msg}");
    assert!(
        msg.contains("00000000000000000010.checkpoint.parquet"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_gap_in_the_log_is_named() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("checkpoints"), d.path());
    std::fs::remove_file(d.path().join("_delta_log/00000000000000000005.json")).unwrap();
    let e = load_table(&loc(d.path()), &opts(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("00000000000000000005.json is missing"),
        "{e}"
    );
}

#[tokio::test]
async fn a_missing_data_file_does_not_change_log_statistics() {
    // Statistics come from the log; a deleted data file is the log's business, not a crash.
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-partitioned"), d.path());
    let victim = files_under(d.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "parquet"))
        .unwrap();
    std::fs::remove_file(victim).unwrap();
    let r = load_table(&loc(d.path()), &opts(), &|_| {}).await.unwrap();
    let (files, _, _) = naive_replay(d.path());
    assert_eq!(r.stats.files, files);
}
