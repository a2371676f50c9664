//! The streaming writer commits like Spark's Structured Streaming sink, exactly once.

use std::collections::HashMap;
use std::time::Duration;

use lakehealth::engine::demo::create_sensor_table;
use lakehealth::engine::open::load_table;
use lakehealth::engine::stream::writer::{StreamOptions, run_stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::common::*;

fn stream_opts(batches: u64) -> StreamOptions {
    StreamOptions {
        query_id: "test-query".into(),
        interval: Duration::from_millis(10),
        rows: 50,
        max_batches: Some(batches),
        storage_options: HashMap::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_commits_streaming_updates_and_resumes_after_its_last_batch() {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let n = run_stream(&l, &stream_opts(3), CancellationToken::new(), tx)
        .await
        .unwrap();
    assert_eq!(n, 3);
    let mut batches = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        batches.push(ev.batch_id);
    }
    assert_eq!(batches, vec![0, 1, 2]);

    // A restart with the same query id continues at batch 3, never recommitting 0..2.
    let (tx, mut rx) = mpsc::unbounded_channel();
    run_stream(&l, &stream_opts(2), CancellationToken::new(), tx)
        .await
        .unwrap();
    let mut resumed = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        resumed.push(ev.batch_id);
    }
    assert_eq!(resumed, vec![3, 4]);

    let r = load_table(&l, &opts(), &|_| {}).await.unwrap();
    assert_eq!(r.log.operations.get("STREAMING UPDATE"), Some(&5));
    let w = r
        .streaming_writers
        .iter()
        .find(|w| w.app_id == "test-query")
        .expect("the writer's txn is in the log");
    assert_eq!(w.last_batch, 4);
    assert_eq!(w.window_commits, 5);
    assert_eq!(r.stats.files, 5, "one file per micro-batch");
    assert_eq!(r.partition_columns, vec!["ingestion_date"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_stops_on_cancel() {
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    create_sensor_table(&l).await.unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut o = stream_opts(100);
    o.interval = Duration::from_secs(3600);
    let n = run_stream(&l, &o, cancel, tx).await.unwrap();
    assert_eq!(n, 0, "a cancelled writer stops before its next batch");
}

#[tokio::test]
async fn writer_refuses_a_table_of_another_shape() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-partitioned"), d.path());
    let (tx, _rx) = mpsc::unbounded_channel();
    let e = run_stream(
        &loc(d.path()),
        &stream_opts(1),
        CancellationToken::new(),
        tx,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("partitioned by"), "{e}");
}
