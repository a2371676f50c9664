//! A streaming writer beside a job, and the independent reader's account of the rows that stayed:
//! expected rows come from what the writer reports; actual rows from reading the final
//! snapshot's Parquet files with Python deltalake + pyarrow, not through lakehealth.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use lakehealth::engine::location::Location;
use lakehealth::engine::stream::writer::{BatchCommitted, StreamOptions, run_stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::harness::python;

#[derive(Debug, serde::Deserialize)]
pub struct Verified {
    pub files: u64,
    pub rows: u64,
    pub distinct_ids: u64,
    pub reading_sum: i64,
    pub files_per_partition: HashMap<String, u64>,
    pub optimize_commits: Vec<OptimizeCommit>,
}

#[derive(Debug, serde::Deserialize)]
pub struct OptimizeCommit {
    pub data_change: Vec<bool>,
}

/// What Python deltalake + pyarrow (tests/py/verify_table.py) read in a sensor table.
pub fn verify(path: &Path) -> Verified {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/verify_table.py");
    let o = Command::new(python())
        .arg(script)
        .arg(path)
        .output()
        .expect("the venv's python runs");
    assert!(
        o.status.success(),
        "verify_table.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn stream_opts(query: &str, interval_ms: u64, batches: Option<u64>) -> StreamOptions {
    StreamOptions {
        query_id: query.into(),
        interval: Duration::from_millis(interval_ms),
        rows: 200,
        max_batches: batches,
        storage_options: HashMap::new(),
    }
}

/// The in-process writer on its own thread and runtime, as the demo runs it.
pub fn background_writer(
    l: Location,
    cancel: CancellationToken,
) -> std::thread::JoinHandle<Vec<BatchCommitted>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (tx, mut rx) = mpsc::unbounded_channel();
            run_stream(&l, &stream_opts("live", 40, None), cancel, tx)
                .await
                .unwrap();
            let mut evs = Vec::new();
            while let Ok(e) = rx.try_recv() {
                evs.push(e);
            }
            evs
        })
    })
}

fn expect_rows(batches: &[BatchCommitted]) -> (u64, i64) {
    (
        batches.iter().map(|b| b.rows as u64).sum(),
        batches.iter().map(|b| b.reading_sum).sum(),
    )
}

pub fn assert_no_row_lost(v: &Verified, written: &[BatchCommitted]) {
    let (rows, sum) = expect_rows(written);
    assert_eq!(v.rows, rows, "row count");
    assert_eq!(v.distinct_ids, rows, "no row appears twice");
    assert_eq!(v.reading_sum, sum, "checksum of reading");
}

/// Whether the table's log holds commit `version` (a local table: the commit file is there).
pub fn has_version(table: &Path, version: u64) -> bool {
    table
        .join(format!("_delta_log/{version:020}.json"))
        .exists()
}
