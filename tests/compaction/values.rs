//! Compaction changes the file layout and nothing else: tables built by Python (pyarrow +
//! deltalake, tests/py/make_tables.py) with the values that used to change are compacted by
//! lakehealth, and read before and after by the independent reader (tests/py/dump_rows.py:
//! pyarrow reads every active file; each row becomes a canonical string; the multiset of rows
//! is hashed). Every row and value must be the same.

use std::path::Path;

use lakehealth::engine::compact::events::JobSummary;
use lakehealth::engine::compact::job::prepare;
use lakehealth::engine::model::thresholds::Thresholds;
use lakehealth::engine::size::KIB;

use crate::support::common::*;
use crate::support::{RequestExt, request};

#[derive(Debug, serde::Deserialize)]
pub struct Dump {
    pub rows: u64,
    pub files: u64,
    pub fingerprint: String,
    pub distinct_rows: u64,
    #[serde(default)]
    pub row_strings: Vec<String>,
}

pub fn dump(uri: &str) -> Dump {
    let o = py_script("dump_rows.py")
        .args([uri, "--rows"])
        .output()
        .expect("the venv's python runs");
    assert!(
        o.status.success(),
        "dump_rows.py {uri}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("dump_rows.py prints JSON")
}

pub fn make_table(kind: &str, dest: &Path) {
    let o = py_script("make_tables.py")
        .arg(kind)
        .arg(dest)
        .output()
        .expect("the venv's python runs");
    assert!(
        o.status.success(),
        "make_tables.py {kind}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

pub fn small_thresholds() -> Thresholds {
    Thresholds {
        target_file_size: 256 * KIB,
        small_file_size: 256 * KIB,
        max_file_size: 4096 * KIB,
    }
}

pub async fn compact_all(path: &Path) -> JobSummary {
    let req = request()
        .target(256 * KIB)
        .min_file_size(256 * KIB)
        .parallelism(2);
    let job = prepare(&loc(path), &req, small_thresholds(), 1.0)
        .await
        .expect("plan");
    assert!(job.plan.bins > 0, "nothing to compact: {:?}", job.plan);
    run_job(job).await
}

/// Builds `kind`, compacts it, and checks every value survived.
async fn compaction_keeps_every_value(kind: &str) {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(kind);
    make_table(kind, &path);
    let before = dump(path.to_str().unwrap());
    assert!(before.rows > 0 && before.files > 4, "{kind}: {before:?}");
    let s = compact_all(&path).await;
    assert!(s.errors.is_empty(), "{kind}: {:?}", s.errors);
    assert!(!s.commits.is_empty(), "{kind}: nothing committed");
    let after = dump(path.to_str().unwrap());
    assert!(after.files < before.files, "{kind}: files were merged");
    assert_eq!(after.rows, before.rows, "{kind}: rows");
    assert_eq!(after.distinct_rows, before.distinct_rows, "{kind}");
    if after.fingerprint != before.fingerprint {
        let b: std::collections::HashSet<_> = before.row_strings.iter().collect();
        let changed: Vec<_> = after
            .row_strings
            .iter()
            .filter(|r| !b.contains(r))
            .take(3)
            .collect();
        panic!("{kind}: values changed, e.g. {changed:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_int96_timestamps_from_0001_to_9999() {
    compaction_keeps_every_value("int96").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_null_and_null_string_slash_equals_space_partitions_and_nested_types() {
    compaction_keeps_every_value("partitions").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_the_values_of_a_column_named_in_another_case() {
    compaction_keeps_every_value("case_mismatch").await;
}

/// Spark's special-character partitions (`x=A%252FA`: Hive-escaped, then URI-encoded in the
/// log): the compaction's `remove`s must name exactly the paths the `add`s wrote, or a reader
/// that matches paths as strings keeps the old files and sees every row twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removes_match_spark_encoded_paths_exactly() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("special");
    copy_dir(&fixture("delta-0.8.0-special-partition"), &t);
    // Three more copies of each data file, added in a commit spelled as Spark spells paths.
    let mut adds = String::new();
    for (dir, raw_dir, value) in [
        ("x=A%2FA", "x=A%252FA", "A/A"),
        ("x=B%20B", "x=B%2520B", "B B"),
    ] {
        let src = std::fs::read_dir(t.join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "parquet"))
            .unwrap();
        let size = std::fs::metadata(&src).unwrap().len();
        for i in 0..3 {
            let name = format!("part-9000{i}-copy.c000.snappy.parquet");
            std::fs::copy(&src, t.join(dir).join(&name)).unwrap();
            adds.push_str(&format!(
                "{{\"add\":{{\"path\":\"{raw_dir}/{name}\",\"partitionValues\":{{\"x\":\"{value}\"}},\"size\":{size},\"modificationTime\":1631873480391,\"dataChange\":true}}}}\n"
            ));
        }
    }
    std::fs::write(
        t.join("_delta_log/00000000000000000001.json"),
        format!(
            "{{\"commitInfo\":{{\"timestamp\":1631873480444,\"operation\":\"WRITE\"}}}}\n{adds}"
        ),
    )
    .unwrap();
    let (files_before, _, _) = naive_replay(&t);
    assert_eq!(files_before, 8);
    let s = compact_all(&t).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.files_removed, 8, "{s:?}");
    // Raw-string replay (no decoding, as a strict reader matches paths) agrees with delta-rs.
    let (files_after, _, parts) = naive_replay(&t);
    assert_eq!(files_after, s.files_added, "{parts:?}");
    let after = dump(t.to_str().unwrap());
    assert_eq!(after.rows, 8);
}
