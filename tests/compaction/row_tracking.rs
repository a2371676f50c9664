//! Tables whose writer features delta-rs 1.1 cannot commit to, compacted through lakehealth's
//! own commit (`delta::features`, `delta::commit::actions`): a Databricks-written liquid table
//! with row tracking and domain metadata keeps every row's id (read back by delta-kernel's
//! default engine, which reconstructs row ids itself), a table with in-commit timestamps gets
//! one on the compaction commit (rows read by Python deltalake), and a feature lakehealth cannot
//! honour is refused by name before anything is written.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch};
use lakehealth::engine::compact::events::JobSummary;
use lakehealth::engine::compact::job::prepare;
use lakehealth::engine::delta::features::FeatureNote;
use lakehealth::engine::location::Location;
use serde_json::{Value, json};

use crate::dv_tables::{Storage, active_adds, descriptor};
use crate::kernel_reader::kernel_read_with_row_ids;
use crate::kernel_writer::{create_partitioned_table, kernel_append};
use crate::support::common::*;
use crate::support::request;

const ROW_ID_COL: &str = "_row-id-col-4cbc7924-f662-4db1-aa59-22c23f59eb5d";
const ROW_VERSION_COL: &str = "_row-commit-version-col-2f60dcc1-9e36-4424-95e7-799b707e4ddb";

/// Plans and runs a compaction of every small file; returns the plan's notes and the summary.
async fn compact(l: &Location) -> (Vec<FeatureNote>, JobSummary) {
    let job = prepare(l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    assert!(job.plan.bins > 0, "nothing planned: {:?}", job.plan);
    let notes = job.plan.notes.clone();
    let s = run_job(job).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    (notes, s)
}

pub(crate) fn liquid_table() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table_with_liquid_clustering"), d.path());
    d
}

/// The row id high-water mark the log's latest `delta.rowTracking` domain holds.
fn high_water_mark(table: &Path) -> i64 {
    let mut mark = None;
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(d) = a.get("domainMetadata")
                && d["domain"] == "delta.rowTracking"
            {
                let conf: Value =
                    serde_json::from_str(d["configuration"].as_str().unwrap()).unwrap();
                mark = conf["rowIdHighWaterMark"].as_i64();
            }
        }
    }
    mark.expect("the table has a high-water mark")
}

/// The last commit's actions.
pub(crate) fn last_commit(table: &Path) -> Vec<Value> {
    commits_from(table, 0).pop().unwrap()
}

/// One Int64 column of a data file of the table, as pyarrow-independent code reads it: the
/// Parquet file itself, with the `parquet` crate.
pub(crate) fn column_of(table: &Path, file: &str, column: &str) -> Vec<Option<i64>> {
    let f = std::fs::File::open(table.join(decoded(file))).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b: RecordBatch = b.unwrap();
        let c = b
            .column_by_name(column)
            .unwrap_or_else(|| panic!("{file} has no column {column}"));
        let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..c.len()).map(|i| c.is_valid(i).then(|| c.value(i))));
    }
    out
}

/// Commits, as the next version, one new data file of `ids` the way a row-tracking writer
/// does: fresh row ids above the high-water mark (`baseRowId`), its commit version as
/// `defaultRowCommitVersion`, and the mark raised. Returns the version.
pub(crate) fn append_tracked_rows(table: &Path, ids: &[i64]) -> u64 {
    let version = commits_from(table, 0).len() as u64;
    let name = format!("part-appended-{version}.parquet");
    let batch = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(ids.to_vec())) as _)])
        .unwrap();
    let f = std::fs::File::create(table.join(&name)).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let size = std::fs::metadata(table.join(&name)).unwrap().len();
    let base = high_water_mark(table) + 1;
    let n = ids.len() as i64;
    let stats = json!({"numRecords": n, "minValues": {"id": ids.iter().min()},
        "maxValues": {"id": ids.iter().max()}, "nullCount": {"id": 0}});
    let lines = [
        json!({"commitInfo": {"timestamp": chrono::Utc::now().timestamp_millis(),
            "operation": "WRITE", "engineInfo": "lakehealth-tests"}}),
        json!({"add": {"path": name, "partitionValues": {}, "size": size,
            "modificationTime": chrono::Utc::now().timestamp_millis(), "dataChange": true,
            "stats": stats.to_string(), "baseRowId": base, "defaultRowCommitVersion": version}}),
        json!({"domainMetadata": {"domain": "delta.rowTracking",
            "configuration": json!({"rowIdHighWaterMark": base + n - 1}).to_string(),
            "removed": false}}),
    ];
    write_commit(table, version, &lines);
    version
}

/// Commits, as the next version, a deletion vector on `path` marking `rows` (indexes in the
/// file) deleted, as a row-tracking writer does: the re-added file keeps its `baseRowId` and
/// `defaultRowCommitVersion`, the remove carries them too.
fn delete_tracked_rows(table: &Path, path: &str, rows: &[u64]) -> u64 {
    let version = commits_from(table, 0).len() as u64;
    let add = active_adds(table).remove(path).expect("the file is active");
    let mut remove = json!({"path": path, "dataChange": true,
        "deletionTimestamp": chrono::Utc::now().timestamp_millis(),
        "extendedFileMetadata": true, "partitionValues": add["partitionValues"],
        "size": add["size"], "baseRowId": add["baseRowId"],
        "defaultRowCommitVersion": add["defaultRowCommitVersion"]});
    if let Some(old) = add.get("deletionVector") {
        remove["deletionVector"] = old.clone();
    }
    let mut new = add.clone();
    new["deletionVector"] = descriptor(table, Storage::Inline, rows);
    write_commit(
        table,
        version,
        &[
            json!({"commitInfo": {"timestamp": 1, "operation": "DELETE", "engineInfo": "lakehealth-tests"}}),
            json!({ "remove": remove }),
            json!({ "add": new }),
        ],
    );
    version
}

fn write_commit(table: &Path, version: u64, lines: &[Value]) {
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(
        table.join(format!("_delta_log/{version:020}.json")),
        text.join("\n") + "\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_liquid_table_with_row_tracking_is_compacted_twice_and_every_row_keeps_its_id() {
    let d = liquid_table();
    let l = loc(d.path());
    let before = kernel_read_with_row_ids(d.path());
    assert_eq!(before.rows.len(), 10);
    assert!(
        before.rows.contains(&"id=7|row_id=7".to_string()),
        "{:?}",
        before.rows
    );

    let (notes, s) = compact(&l).await;
    // Clustered by its clustering column (`ordering.rs` tests the clustering itself).
    assert_eq!(notes, [FeatureNote::RowIdsKept]);
    assert_eq!((s.files_removed, s.files_added), (10, 1), "{s:?}");
    let after = kernel_read_with_row_ids(d.path());
    assert_eq!(after.version, 1);
    assert_eq!(
        after.rows, before.rows,
        "same rows, each with the same row id"
    );

    // The commit: no protocol or metadata change; the fresh ids above the old mark, the mark
    // raised past them, commitInfo first, the ids said to be preserved.
    let commit = last_commit(d.path());
    assert!(commit[0].get("commitInfo").is_some(), "{commit:?}");
    assert_eq!(
        commit[0]["commitInfo"]["tags"]["delta.rowTracking.preserved"],
        "true"
    );
    assert!(
        commit
            .iter()
            .all(|a| a.get("protocol").is_none() && a.get("metaData").is_none())
    );
    let adds: Vec<&Value> = commit.iter().filter_map(|a| a.get("add")).collect();
    assert_eq!(adds.len(), 1);
    assert_eq!(adds[0]["baseRowId"], 10);
    assert_eq!(adds[0]["defaultRowCommitVersion"], 1);
    assert_eq!(high_water_mark(d.path()), 19);
    let removes: Vec<&Value> = commit.iter().filter_map(|a| a.get("remove")).collect();
    assert!(
        removes
            .iter()
            .all(|r| r["baseRowId"].is_i64() && r["defaultRowCommitVersion"] == 0),
        "removes keep their adds' ids: {removes:?}"
    );
    // The output holds every row's id and commit version, read from the file itself.
    let out = adds[0]["path"].as_str().unwrap();
    let mut ids = column_of(d.path(), out, ROW_ID_COL);
    ids.sort();
    assert_eq!(ids, (0..10).map(Some).collect::<Vec<_>>());
    assert_eq!(column_of(d.path(), out, ROW_VERSION_COL), vec![Some(0); 10]);

    // A writer appends 5 rows (fresh ids 20..=24), then deletes two in the middle of that file
    // with a deletion vector; compacting again keeps the materialized ids of the first output
    // and gives the new rows theirs, counted by their index before the deletion.
    let v = append_tracked_rows(d.path(), &[100, 101, 102, 103, 104]);
    delete_tracked_rows(d.path(), &format!("part-appended-{v}.parquet"), &[1, 3]);
    let before = kernel_read_with_row_ids(d.path());
    assert!(
        before.rows.contains(&"id=104|row_id=24".to_string()),
        "{:?}",
        before.rows
    );
    assert_eq!(before.rows.len(), 13, "the kernel applies the vector");
    let (_, s) = compact(&l).await;
    assert_eq!(s.deleted_rows, 2, "{s:?}");
    let after = kernel_read_with_row_ids(d.path());
    assert_eq!(after.version, v + 2);
    assert_eq!(
        after.rows, before.rows,
        "same rows, each with the same row id"
    );
    assert_eq!(active_adds(d.path()).len(), 1);
    let add = active_adds(d.path()).into_values().next().unwrap();
    assert_eq!(add["baseRowId"], 25, "fresh ids above the mark 24");
    assert_eq!(high_water_mark(d.path()), 37, "13 rows given fresh ids");
    let mut versions = column_of(d.path(), add["path"].as_str().unwrap(), ROW_VERSION_COL);
    versions.sort();
    let mut want = vec![Some(0); 10];
    want.extend(vec![Some(v as i64); 3]);
    assert_eq!(versions, want, "each row keeps the version that wrote it");
    assert!(leftover_files(d.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_feature_lakehealth_cannot_honour_is_refused_by_name_before_any_rewrite() {
    let d = liquid_table();
    let mut protocol = commits_from(d.path(), 0)[0]
        .iter()
        .find_map(|a| a.get("protocol").cloned())
        .unwrap();
    for key in ["readerFeatures", "writerFeatures"] {
        protocol[key]
            .as_array_mut()
            .unwrap()
            .push(json!("variantType"));
    }
    write_commit(
        d.path(),
        1,
        &[
            json!({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}),
            json!({ "protocol": protocol }),
        ],
    );
    let files = leftover_files(d.path());
    let e = match prepare(&loc(d.path()), &request(), kib64_thresholds(), 1.0).await {
        Ok(_) => panic!("a variant table is not compacted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("variantType (lakehealth does not rewrite variant columns yet)")
            && e.contains("changed nothing"),
        "{e}"
    );
    assert!(!e.contains("rowTracking"), "row tracking is honoured: {e}");
    assert_eq!(commits_from(d.path(), 0).len(), 2, "no commit was written");
    assert_eq!(leftover_files(d.path()), files, "no file was written");
}

#[test]
fn vacuum_checks_the_write_protocol_first_and_deletes_nothing() {
    let d = liquid_table();
    let o = lakehealth(&["vacuum", d.path().to_str().unwrap(), "--dry-run"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("VACUUM")
            && err.contains("rowTracking")
            && err.contains("nothing was changed"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_with_in_commit_timestamps_gets_one_past_the_previous_commit_s() {
    let (d, l, written) = seeded(6).await;
    let version = commits_from(d.path(), 0).len() as u64;
    let mut metadata = commits_from(d.path(), 0)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("metaData").cloned())
        .next_back()
        .unwrap();
    // An enablement commit whose timestamp is ahead of this machine's clock: the next must be
    // one millisecond past it, not "now".
    let ahead = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let conf = metadata["configuration"].as_object_mut().unwrap();
    conf.insert("delta.enableInCommitTimestamps".into(), json!("true"));
    conf.insert(
        "delta.inCommitTimestampEnablementVersion".into(),
        json!(version.to_string()),
    );
    conf.insert(
        "delta.inCommitTimestampEnablementTimestamp".into(),
        json!(ahead.to_string()),
    );
    write_commit(
        d.path(),
        version,
        &[
            json!({"commitInfo": {"inCommitTimestamp": ahead, "timestamp": ahead,
                "operation": "SET TBLPROPERTIES", "engineInfo": "lakehealth-tests"}}),
            json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["appendOnly", "invariants", "inCommitTimestamp"]}}),
            json!({ "metaData": metadata }),
        ],
    );
    let uri = d.path().to_str().unwrap();
    let before = read_back(uri, None);
    assert_eq!(before.rows, written);

    let (notes, s) = compact(&l).await;
    assert!(
        notes.contains(&FeatureNote::InCommitTimestamps),
        "{notes:?}"
    );
    assert!(s.files_removed > 1, "{s:?}");
    let commit = last_commit(d.path());
    let info = &commit[0]["commitInfo"];
    assert_eq!(info["inCommitTimestamp"], ahead + 1, "{info}");
    assert_eq!(info["timestamp"], ahead + 1);
    let after = read_back(uri, None);
    assert_eq!(
        (after.rows, after.distinct_ids, after.reading_sum),
        (before.rows, before.distinct_ids, before.reading_sum)
    );
    assert!(after.files < before.files);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_racing_compactions_of_a_row_tracking_table_commit_once_and_keep_every_id() {
    let d = liquid_table();
    let l = loc(d.path());
    append_tracked_rows(d.path(), &[100, 101, 102]);
    let before = kernel_read_with_row_ids(d.path());
    let run = |l: Location| async move {
        let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
            .await
            .unwrap();
        run_job(job).await
    };
    // Both plan the same 11 files before either commits; one commit takes them.
    let (a, b) = tokio::join!(run(l.clone()), run(l.clone()));
    let landed = a.commits.len() + b.commits.len();
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{a:?} {b:?}");
    let after = kernel_read_with_row_ids(d.path());
    assert_eq!(
        after.rows, before.rows,
        "no row lost or doubled, every id kept"
    );
    let ids: std::collections::BTreeSet<&str> = after
        .rows
        .iter()
        .map(|r| r.rsplit("row_id=").next().unwrap())
        .collect();
    assert_eq!(ids.len(), 13, "row ids stay unique");
    assert!(landed >= 1, "{a:?} {b:?}");
    assert_eq!(active_adds(d.path()).len(), 1, "one output holds every row");
    assert!(leftover_files(d.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_tracking_write_after_the_plan_is_compacted_too_with_fresh_ids_above_its_mark() {
    let d = liquid_table();
    let l = loc(d.path());
    let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    // Lands between the plan and the commit, taking ids 10..=12 (mark 12).
    append_tracked_rows(d.path(), &[50, 51, 52]);
    let want = kernel_read_with_row_ids(d.path()).rows;
    assert_eq!(want.len(), 13);
    let s = run_job(job).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    // The job sees the table moved and plans again: the new file joins the bin.
    assert_eq!((s.table_version_read, s.files_removed), (1, 11), "{s:?}");
    let commit = last_commit(d.path());
    let add = commit.iter().find_map(|a| a.get("add")).unwrap();
    assert_eq!(add["baseRowId"], 13, "above the append's mark 12");
    assert_eq!(add["defaultRowCommitVersion"], 2);
    assert_eq!(high_water_mark(d.path()), 25);
    assert_eq!(kernel_read_with_row_ids(d.path()).rows, want);
}

/// A partitioned table with row tracking enabled, written by delta-kernel-rs (which gives each
/// file its `baseRowId`), without and with column mapping: delta-rs's writer cannot add the
/// hidden columns to partitioned files, so the physical writer writes them; every row keeps its
/// id (kernel reads them), a deletion vector mid-file included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_row_tracking_table_keeps_every_row_id_with_and_without_column_mapping() {
    for mapping in [None, Some("name")] {
        let d = tempfile::tempdir().unwrap();
        let mut properties = vec![
            ("delta.enableRowTracking", "true"),
            ("delta.enableDeletionVectors", "true"),
        ];
        if let Some(mode) = mapping {
            properties.push(("delta.columnMapping.mode", mode));
        }
        create_partitioned_table(d.path(), &properties);
        for i in 0..4 {
            kernel_append(d.path(), &[i * 10, i * 10 + 1, i * 10 + 2], "2026-12-01");
        }
        kernel_append(d.path(), &[100], "2026-12-02");
        let in_first_day = active_adds(d.path())
            .into_iter()
            .find(|(_, a)| a["partitionValues"].to_string().contains("2026-12-01"))
            .unwrap();
        assert!(in_first_day.1["baseRowId"].is_i64(), "{}", in_first_day.1);
        delete_tracked_rows(d.path(), &in_first_day.0, &[1]);
        let before = kernel_read_with_row_ids(d.path());
        assert_eq!(before.rows.len(), 4 * 3 + 1 - 1, "{mapping:?}");

        let (notes, s) = compact(&loc(d.path())).await;
        assert!(notes.contains(&FeatureNote::RowIdsKept), "{notes:?}");
        assert_eq!(
            (s.files_removed, s.files_added),
            (4, 1),
            "{mapping:?}: {s:?}"
        );
        let after = kernel_read_with_row_ids(d.path());
        assert_eq!(
            after.rows, before.rows,
            "{mapping:?}: same rows, each with the same row id"
        );
        let commit = last_commit(d.path());
        let out = commit.iter().find_map(|a| a.get("add")).expect("an output");
        assert!(out["baseRowId"].is_i64(), "{out}");
        assert_eq!(
            out["partitionValues"]
                .as_object()
                .unwrap()
                .values()
                .collect::<Vec<_>>(),
            vec!["2026-12-01"],
            "{out}"
        );
    }
}
