//! The live log on the engine API: commits another process writes (Python deltalake) arrive as
//! the watcher's events, the incremental statistics equal a full replay of the same version,
//! and following never lists the log again.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lakehealth::engine::compact::counting_store::{ByteCounters, CountingStore};
use lakehealth::engine::delta::watch::{LogEvent, LogWatcher, WatchOptions};
use lakehealth::engine::model::partition::PartitionValues;
use lakehealth::engine::open::load_table;

use crate::support::common::*;

/// One commit of Python deltalake appending `rows` (partition, row count); returns the version.
pub fn append(table: &Path, rows: &[(&str, usize)]) -> u64 {
    let mut c = py_script("append_rows.py");
    c.arg(table);
    for (p, n) in rows {
        c.arg("--rows").arg(format!("{p}={n}"));
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["version"].as_u64().unwrap()
}

pub fn day(d: &str) -> PartitionValues {
    PartitionValues(vec![("d".into(), Some(d.into()))])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_python_deltalake_writes_arrive_as_events_and_the_state_equals_a_full_replay() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    append(&table, &[("2026-11-01", 10), ("2026-11-02", 10)]);
    append(&table, &[("2026-11-01", 5)]);
    let l = loc(&table);
    let counters = Arc::new(ByteCounters::default());
    let store = Arc::new(CountingStore::new(
        l.open_store(&opts().storage_options).unwrap(),
        counters.clone(),
    ));
    let wopts = WatchOptions::new(&opts(), Duration::from_secs(1));
    let mut w = LogWatcher::open(store, l.display(), l.name(), wopts)
        .await
        .unwrap();
    let start = w.version();
    let lists = counters.lists();

    // Another process: appends to an existing and a new partition, then compacts one partition.
    append(&table, &[("2026-11-02", 7), ("2026-11-03", 3)]);
    append(&table, &[("2026-11-03", 4)]);
    let o = py_script("race_optimize.py")
        .arg(&table)
        .args(["--partition-filter", "d=2026-11-01"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let end = append(&table, &[("2026-11-01", 2)]);

    let mut events = Vec::new();
    while w.version() < end {
        let got = w.poll().await.unwrap();
        assert!(
            !got.is_empty(),
            "the commits are written: a poll finds them"
        );
        events.extend(got);
    }
    let commits: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LogEvent::Commit(c) => Some(c),
            _ => None,
        })
        .collect();
    let versions: Vec<u64> = commits.iter().map(|c| c.summary.version).collect();
    assert_eq!(versions, (start + 1..=end).collect::<Vec<_>>());
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, LogEvent::Reloaded { .. })),
        "applied incrementally: {events:?}"
    );

    let first = commits[0];
    assert_eq!(first.summary.operation, "WRITE");
    assert!(
        first
            .summary
            .engine
            .as_deref()
            .is_some_and(|e| e.starts_with("delta-rs")),
        "{:?}",
        first.summary.engine
    );
    let touched: Vec<(PartitionValues, u64, u64)> = first
        .partitions
        .iter()
        .map(|d| (d.values.clone(), d.files_added, d.files_removed))
        .collect();
    assert_eq!(
        touched,
        vec![(day("2026-11-02"), 1, 0), (day("2026-11-03"), 1, 0)]
    );
    let optimize = commits[2];
    assert_eq!(optimize.summary.operation, "OPTIMIZE");
    assert!(!optimize.summary.data_change);
    assert_eq!(optimize.partitions.len(), 1);
    let d = &optimize.partitions[0];
    assert_eq!(
        (d.values.clone(), d.files_removed, d.files_added),
        (day("2026-11-01"), 2, 1)
    );

    // The incremental state against a full replay of the same version.
    let full = load_table(&l, &opts(), &|_| {}).await.unwrap();
    let inc = w.report();
    assert_eq!(inc.version, full.version);
    assert_eq!(
        inc.partitions, full.partitions,
        "per-partition files, bytes, sizes"
    );
    assert_eq!(inc.stats, full.stats, "table files, bytes, sizes");
    assert_eq!(inc.commits, full.commits);
    assert_eq!(inc.vacuum, full.vacuum);
    assert_eq!(
        (inc.stats.files, inc.partitions.len()),
        (1 + 1 + 2 + 2, 3),
        "d=1: compacted 1 + appended 1; d=2: 2; d=3: 2"
    );
    assert_eq!(counters.lists(), lists, "no LIST of the log once following");
}
