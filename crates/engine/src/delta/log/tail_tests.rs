//! The incremental state against a full replay of the same version, on hand-written logs
//! (`replay_tests::Log`), and the watcher's requests counted.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use serde_json::{Value, json};

use super::replay_tests::{Log, add, optimize, remove};
use super::state::LogState;
use super::tail::{ReloadReason, Tail};
use super::walker::FetchedCommit;
use crate::compact::counting_store::{ByteCounters, CountingStore};
use crate::delta::watch::{LogEvent, LogWatcher, WatchOptions};
use crate::options::OpenOptions;
use crate::stats::table_report::TableReport;

const NOW: i64 = 1_800_000_000_000;

fn report(s: &LogState) -> TableReport {
    TableReport::from_state(
        crate::model::format::TableFormat::Delta,
        "t".into(),
        "t".into(),
        s,
        OpenOptions::default().thresholds,
        NOW,
    )
}

/// Everything the statistics show, except what only a listing knows (log bytes and files).
fn assert_same(incremental: &LogState, full: &LogState) {
    let (a, b) = (report(incremental), report(full));
    assert_eq!(a.version, b.version);
    assert_eq!(a.partitions, b.partitions, "per-partition statistics");
    assert_eq!(a.stats, b.stats, "whole-table statistics");
    assert_eq!(a.commits, b.commits, "history");
    assert_eq!(a.streaming_writers, b.streaming_writers);
    assert_eq!(a.vacuum, b.vacuum);
    assert_eq!(a.findings, b.findings);
    assert_eq!(
        (
            a.log.commits_since_checkpoint,
            a.log.json_bytes_since_checkpoint
        ),
        (
            b.log.commits_since_checkpoint,
            b.log.json_bytes_since_checkpoint
        )
    );
}

fn fetched(log: &Log, version: u64) -> (FetchedCommit, u64) {
    let path = format!("_delta_log/{version:020}.json");
    let full = log.dir.path().join(&path);
    let bytes = std::fs::read(&full).expect("commit written");
    let modified = std::fs::metadata(&full)
        .and_then(|m| m.modified())
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t).timestamp_millis())
        .ok();
    let size = bytes.len() as u64;
    (
        FetchedCommit {
            version,
            path,
            modified_ms: modified,
            bytes: bytes.into(),
            head_only: false,
        },
        size,
    )
}

/// Applies every commit after the tail's version.
fn catch_up(log: &Log, tail: &mut Tail) {
    while tail.version() + 1 < log.next {
        let (c, size) = fetched(log, tail.version() + 1);
        tail.apply("t", c, size)
            .expect("parses")
            .unwrap_or_else(|r| panic!("applies: {r:?}"));
    }
}

fn info(op: &str) -> Value {
    json!({"commitInfo": {"timestamp": NOW - 1000, "operation": op,
        "operationParameters": {"queryId": "q1", "epochId": "7"}, "engineInfo": "Spark/3.5"}})
}

#[tokio::test]
async fn incremental_state_after_many_commits_equals_a_full_replay() {
    let mut log = Log::new(&["d"]);
    let (d1, d2, dn) = (json!({"d": "1"}), json!({"d": "2"}), json!({"d": null}));
    log.commit(&[add("a", d1.clone(), 100), add("b", d1.clone(), 100)]);
    log.checkpoint().await;
    log.commit(&[add("c", d2.clone(), 300)]);
    let mut tail = Tail::new(log.replay().await, 100);
    // Streaming appends (with a txn), a NULL and an "" partition (one partition), a compaction
    // of files the checkpoint holds (placed by partition and size), and one of files added
    // while following (placed by key).
    for i in 0..5 {
        log.commit(&[
            info("STREAMING UPDATE"),
            json!({"txn": {"appId": "q1", "version": i, "lastUpdated": NOW}}),
            add(&format!("s{i}"), d2.clone(), 10 + i),
        ]);
    }
    log.commit(&[add("n1", dn.clone(), 7), add("n2", json!({"d": ""}), 8)]);
    log.commit(&[
        optimize(),
        remove("a", Some(d1.clone()), Some(100)),
        remove("b", Some(d1.clone()), Some(100)),
        add("ab", d1.clone(), 200),
    ]);
    log.commit(&[
        optimize(),
        remove("s0", None, None),
        remove("s1", Some(d2.clone()), Some(11)),
        add("s01", d2.clone(), 21),
    ]);
    // The last file of a partition removed: the partition goes.
    log.commit(&[
        remove("n1", Some(dn.clone()), Some(7)),
        remove("n2", Some(json!({"d": ""})), Some(8)),
    ]);
    catch_up(&log, &mut tail);
    assert_same(tail.state(), &log.replay().await);
    assert_eq!(tail.version(), 11);
}

#[tokio::test]
async fn a_commit_that_cannot_be_placed_changes_nothing_and_says_why() {
    let mut log = Log::new(&["d"]);
    let d1 = json!({"d": "1"});
    log.commit(&[add("a", d1.clone(), 100)]);
    let mut tail = Tail::new(log.replay().await, 100);
    let before = report(tail.state());
    // A size no live file of the partition has, with a valid add beside it.
    log.commit(&[
        add("x", d1.clone(), 5),
        remove("a", Some(d1.clone()), Some(99)),
    ]);
    let (c, size) = fetched(&log, 2);
    let r = tail.apply("t", c, size).unwrap().unwrap_err();
    assert!(
        matches!(&r, ReloadReason::Unplaceable { version: 2, detail } if detail.contains("99 bytes")),
        "{r:?}"
    );
    assert_eq!(report(tail.state()), before, "nothing applied");
}

#[tokio::test]
async fn deltas_say_what_each_partition_gained_and_lost() {
    let mut log = Log::new(&["d"]);
    let (d1, d2) = (json!({"d": "1"}), json!({"d": "2"}));
    log.commit(&[add("a", d1.clone(), 100), add("b", d1.clone(), 50)]);
    let mut tail = Tail::new(log.replay().await, 100);
    log.commit(&[
        info("WRITE"),
        remove("a", Some(d1.clone()), Some(100)),
        add("c", d2.clone(), 30),
        add("e", d2.clone(), 40),
    ]);
    let (c, size) = fetched(&log, 2);
    let applied = tail.apply("t", c, size).unwrap().unwrap();
    assert_eq!(applied.summary.operation, "WRITE");
    assert_eq!(applied.summary.engine.as_deref(), Some("Spark/3.5"));
    let p: Vec<(String, u64, u64, u64, u64, Vec<u64>)> = applied
        .partitions
        .iter()
        .map(|d| {
            (
                d.values.label(),
                d.files_added,
                d.files_removed,
                d.bytes_added,
                d.bytes_removed,
                d.added_sizes.clone(),
            )
        })
        .collect();
    assert_eq!(
        p,
        vec![
            ("d=1".into(), 0, 1, 0, 100, vec![]),
            ("d=2".into(), 2, 0, 70, 0, vec![30, 40]),
        ]
    );
}

#[tokio::test]
async fn schema_and_protocol_changes_ask_for_a_replay_and_configuration_changes_apply() {
    let mut log = Log::new(&["d"]);
    log.commit(&[add("a", json!({"d": "1"}), 100)]);
    let state = log.replay().await;
    let mut md = state.metadata.clone();
    let mut tail = Tail::new(state, 100);
    let md_json = |md: &super::actions::MetaData| {
        json!({"metaData": {"id": md.id, "format": {"provider": "parquet", "options": {}},
            "schemaString": md.schema_string, "partitionColumns": md.partition_columns,
            "configuration": md.configuration, "createdTime": 0}})
    };
    md.configuration
        .insert("delta.targetFileSize".into(), Some("1048576".into()));
    log.commit(&[md_json(&md)]);
    catch_up(&log, &mut tail);
    assert_eq!(
        report(tail.state()).table_target_file_size,
        Some(1_048_576),
        "a configuration change applies in place"
    );
    md.partition_columns = vec![];
    log.commit(&[md_json(&md)]);
    let (c, size) = fetched(&log, 3);
    let r = tail.apply("t", c, size).unwrap().unwrap_err();
    assert!(
        matches!(&r, ReloadReason::MetadataChanged { version: 3, what } if what.contains("partition columns")),
        "{r:?}"
    );
    let mut log2 = Log::new(&["d"]);
    let mut tail2 = Tail::new(log2.replay().await, 100);
    log2.commit(&[
        json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}),
    ]);
    let (c, size) = fetched(&log2, 1);
    let r = tail2.apply("t", c, size).unwrap().unwrap_err();
    assert!(
        matches!(r, ReloadReason::ProtocolChanged { version: 1, .. }),
        "{r:?}"
    );
}

fn counted(log: &Log) -> (Arc<dyn ObjectStore>, Arc<ByteCounters>) {
    let counters = Arc::new(ByteCounters::default());
    let local: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(log.dir.path()).expect("local store"));
    (
        Arc::new(CountingStore::new(local, counters.clone())),
        counters,
    )
}

fn opts() -> WatchOptions {
    WatchOptions::new(&OpenOptions::default(), std::time::Duration::from_secs(1))
}

#[tokio::test]
async fn following_reads_only_the_next_commits_and_never_lists() {
    let mut log = Log::new(&["d"]);
    let d1 = json!({"d": "1"});
    for i in 0..20 {
        log.commit(&[add(&format!("f{i}"), d1.clone(), 10)]);
    }
    let (store, n) = counted(&log);
    let mut w = LogWatcher::open(store, "t".into(), "t".into(), opts())
        .await
        .unwrap();
    assert_eq!(n.lists(), 1, "the first replay lists the log once");
    let (lists, gets) = (n.lists(), n.gets());
    // Idle polls: one GET of the next version each, and `_last_checkpoint` every 10th.
    for _ in 0..10 {
        assert!(w.poll().await.unwrap().is_empty());
    }
    assert_eq!((n.lists(), n.gets()), (lists, gets + 10 + 1));
    // Three commits land: three GETs that find them, one that does not.
    for i in 0..3 {
        log.commit(&[add(&format!("g{i}"), d1.clone(), 10)]);
    }
    let gets = n.gets();
    let events = w.poll().await.unwrap();
    assert_eq!(n.gets(), gets + 4);
    assert_eq!(n.lists(), lists, "no LIST once following");
    let versions: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            LogEvent::Commit(c) => Some(c.summary.version),
            _ => None,
        })
        .collect();
    assert_eq!(versions, vec![21, 22, 23]);
    match events.last() {
        Some(LogEvent::Updated(r)) => {
            assert_eq!((r.version, r.stats.files), (23, 23));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_log_cleanup_past_the_unread_commits_falls_back_to_a_replay_and_says_so() {
    let mut log = Log::new(&["d"]);
    let d1 = json!({"d": "1"});
    log.commit(&[add("a", d1.clone(), 10)]);
    let (store, _) = counted(&log);
    let mut w = LogWatcher::open(store, "t".into(), "t".into(), opts())
        .await
        .unwrap();
    // Two commits, a checkpoint at the second, then both commits cleaned up unread.
    log.commit(&[add("b", d1.clone(), 10)]);
    log.commit(&[add("c", d1.clone(), 10)]);
    log.checkpoint().await;
    for v in 0..=2u64 {
        std::fs::remove_file(log.dir.path().join(format!("_delta_log/{v:020}.json"))).unwrap();
    }
    let mut events = Vec::new();
    for _ in 0..10 {
        events.extend(w.poll().await.unwrap());
    }
    match events.as_slice() {
        [
            LogEvent::Reloaded {
                reason:
                    ReloadReason::LogCleanup {
                        missing: 2,
                        checkpoint: 3,
                    },
                report,
            },
        ] => assert_eq!((report.version, report.stats.files), (3, 3)),
        other => panic!("{other:?}"),
    }
}
