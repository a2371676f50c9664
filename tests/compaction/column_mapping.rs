//! Column-mapped tables (`delta.columnMapping.mode` `name` and `id`) are compacted as physical
//! files (`delta::column_mapping`, `compact::physical_writer`): a Databricks-written table and
//! tables written by delta-kernel-rs, with deletion vectors, a renamed column, nested columns,
//! racing compactions and a writer appending meanwhile. Every check reads with delta-kernel-rs's
//! default engine (which resolves physical names and field ids itself) and the output files
//! with the `parquet` crate: the same rows and values, physical names and field ids in the
//! files, statistics and partition values keyed by physical names, protocol and metadata
//! untouched.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use lakehealth::engine::compact::events::JobSummary;
use lakehealth::engine::compact::job::prepare;
use lakehealth::engine::location::Location;
use object_store::ObjectStoreExt;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;

use crate::dv_tables::{Storage, active_adds, delete_rows, files_with_dv};
use crate::kernel_reader::kernel_read;
use crate::kernel_writer::{create_mapped_table, create_partitioned_table, kernel_append};
use crate::support::common::*;
use crate::support::{RequestExt, request};

async fn compact(l: &Location) -> JobSummary {
    let job = prepare(l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    assert!(job.plan.bins > 0, "nothing planned: {:?}", job.plan);
    let s = run_job(job).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

/// The last commit's actions.
pub(crate) fn last_commit(table: &Path) -> Vec<Value> {
    commits_from(table, 0).pop().unwrap()
}

pub(crate) fn added(commit: &[Value]) -> Vec<Value> {
    commit
        .iter()
        .filter_map(|a| a.get("add").cloned())
        .collect()
}

/// The top-level columns of a data file: (name, Parquet field id), as the file itself says.
fn file_columns(table: &Path, path: &str) -> Vec<(String, Option<i32>)> {
    let f = std::fs::File::open(table.join(decoded(path))).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let root = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .clone();
    root.get_fields()
        .iter()
        .map(|t| {
            let info = t.get_basic_info();
            (t.name().to_string(), info.has_id().then(|| info.id()))
        })
        .collect()
}

/// The table's columns' physical names and ids, by logical name, from its `metaData`.
pub(crate) fn physical_columns(table: &Path) -> HashMap<String, (String, i64)> {
    let mut schema = None;
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(m) = a.get("metaData") {
                schema = Some(m["schemaString"].as_str().unwrap().to_string());
            }
        }
    }
    let schema: Value = serde_json::from_str(&schema.unwrap()).unwrap();
    schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let m = &f["metadata"];
            (
                f["name"].as_str().unwrap().to_string(),
                (
                    m["delta.columnMapping.physicalName"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    m["delta.columnMapping.id"].as_i64().unwrap(),
                ),
            )
        })
        .collect()
}

fn stats(add: &Value) -> Value {
    serde_json::from_str(add["stats"].as_str().unwrap()).unwrap()
}

/// Appends byte copies of the table's Databricks-written file `path` under new names (each an
/// `add` like the original's): more files of the same partition, none written by lakehealth or
/// the kernel (which refuses to write this legacy-protocol table).
fn append_copies(table: &Path, path: &str, copies: usize) {
    let version = commits_from(table, 0).len() as u64;
    let add = active_adds(table).remove(path).unwrap();
    let mut lines = vec![serde_json::json!({"commitInfo": {
        "timestamp": chrono::Utc::now().timestamp_millis(), "operation": "WRITE",
        "engineInfo": "lakehealth-tests"}})];
    for i in 0..copies {
        let name = path.replace("part-00000", &format!("part-0000{}", i + 1));
        std::fs::copy(table.join(path), table.join(&name)).unwrap();
        let mut copy = add.clone();
        copy["path"] = Value::from(name);
        lines.push(serde_json::json!({ "add": copy }));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(table.join(format!("_delta_log/{version:020}.json")), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_databricks_name_mapped_table_is_compacted_into_physical_files_and_reads_the_same() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table_with_column_mapping"), d.path());
    append_copies(
        d.path(),
        "BH/part-00000-4d6e745c-8e04-48d9-aa60-438228358f1a.c000.zstd.parquet",
        3,
    );
    let before = kernel_read(d.path());
    assert_eq!(before.rows.len(), 4 * 4 + 1);
    let cols = physical_columns(d.path());
    let (company, company_id) = cols["Company Very Short"].clone();
    let (name, name_id) = cols["Super Name"].clone();

    let s = compact(&loc(d.path())).await;
    assert_eq!((s.files_removed, s.files_added), (4, 1), "{s:?}");
    let after = kernel_read(d.path());
    assert_eq!(after.rows, before.rows, "same rows and values");
    assert_eq!(after.columns, before.columns);

    let commit = last_commit(d.path());
    assert!(
        commit
            .iter()
            .all(|a| a.get("protocol").is_none() && a.get("metaData").is_none()),
        "{commit:?}"
    );
    let adds = added(&commit);
    assert_eq!(adds.len(), 1);
    let out = &adds[0];
    // Keyed by physical names, as PROTOCOL.md's column mapping asks.
    assert_eq!(out["partitionValues"][&company], "BMS", "{out}");
    let st = stats(out);
    assert_eq!(st["numRecords"], 16);
    assert_eq!(st["minValues"][&name], "Anthony Johnson", "{st}");
    assert_eq!(st["maxValues"][&name], "Stephanie Mcgrath", "{st}");
    assert_eq!(st["nullCount"][&name], 0);
    assert!(st["minValues"].get("Super Name").is_none());
    let path = out["path"].as_str().unwrap();
    assert_eq!(
        file_columns(d.path(), path),
        vec![(name.clone(), Some(name_id as i32))],
        "physical name and field id; no partition column in the file"
    );
    assert!(company_id > 0);
    // Every removed file is one of BMS's four; BME's single file stays.
    for a in commit.iter().filter_map(|a| a.get("remove")) {
        assert_eq!(a["partitionValues"][&company], "BMS", "{a}");
    }
    assert_eq!(active_adds(d.path()).len(), 2);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
}

/// Commits a schema change as Spark's `ALTER TABLE` does on a column-mapped table: a new
/// `metaData` whose schema (and configuration) `edit` changed; data files untouched.
fn alter_table(table: &Path, operation: &str, edit: impl FnOnce(&mut Value, &mut Value)) {
    let version = commits_from(table, 0).len() as u64;
    let mut metadata = None;
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(m) = a.get("metaData") {
                metadata = Some(m.clone());
            }
        }
    }
    let mut metadata = metadata.unwrap();
    let mut schema: Value =
        serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap();
    edit(&mut schema, &mut metadata["configuration"]);
    metadata["schemaString"] = Value::from(schema.to_string());
    let lines = [
        serde_json::json!({"commitInfo": {"timestamp": chrono::Utc::now().timestamp_millis(),
            "operation": operation, "engineInfo": "lakehealth-tests"}}),
        serde_json::json!({ "metaData": metadata }),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(table.join(format!("_delta_log/{version:020}.json")), text).unwrap();
}

/// Renames a column (`RENAME COLUMN`): its physical name and id unchanged.
pub(crate) fn rename_column(table: &Path, from: &str, to: &str) {
    alter_table(table, "RENAME COLUMN", |schema, _| {
        for f in schema["fields"].as_array_mut().unwrap() {
            if f["name"] == from {
                f["name"] = Value::from(to);
            }
        }
    });
}

/// Drops `nested.y` and adds `nested.z` (`DROP COLUMN` then `ADD COLUMN`): a new field with a
/// fresh physical name and id, the struct keeping two fields.
fn replace_nested_field(table: &Path) {
    alter_table(table, "ADD COLUMNS", |schema, config| {
        let next = config["delta.columnMapping.maxColumnId"]
            .as_str()
            .and_then(|m| m.parse::<i64>().ok())
            .unwrap_or(100)
            + 1;
        for f in schema["fields"].as_array_mut().unwrap() {
            if f["name"] == "nested" {
                let children = f["type"]["fields"].as_array_mut().unwrap();
                children.retain(|c| c["name"] != "y");
                children.push(serde_json::json!({"name": "z", "type": "string",
                    "nullable": true, "metadata": {"delta.columnMapping.id": next,
                    "delta.columnMapping.physicalName": format!("col-{}", uuid::Uuid::new_v4())}}));
            }
        }
        config["delta.columnMapping.maxColumnId"] = Value::from(next.to_string());
    });
}

/// Old files hold `nested.y`; the table now has `nested.z` in its place: readers see NULL in
/// `z` for those rows, and so do they after the compaction (no value moved by position).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_field_dropped_and_another_added_keeps_old_values_out_of_the_new_one() {
    for mode in ["name", "id"] {
        let d = tempfile::tempdir().unwrap();
        create_mapped_table(d.path(), mode);
        for i in 0..3 {
            kernel_append(d.path(), &[i * 10 + 1, i * 10 + 2], "2026-12-01");
        }
        replace_nested_field(d.path());
        let before = kernel_read(d.path());
        // The old files' y values ("y1", ...) are not z's.
        assert!(
            before.rows.iter().all(|r| !r.contains("z: y")),
            "{:?}",
            before.rows
        );
        let s = compact(&loc(d.path())).await;
        assert_eq!((s.files_removed, s.files_added), (3, 1), "{mode}: {s:?}");
        assert_eq!(kernel_read(d.path()).rows, before.rows, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_mapped_table_with_a_renamed_column_and_deletion_vectors_keeps_every_value() {
    let d = tempfile::tempdir().unwrap();
    create_mapped_table(d.path(), "id");
    for i in 0..6 {
        kernel_append(d.path(), &[i * 10, i * 10 + 1, i * 10 + 2], "2026-12-01");
    }
    kernel_append(d.path(), &[100, 101], "2026-12-02");
    let first = active_adds(d.path())
        .into_iter()
        .find(|(_, a)| a["partitionValues"].to_string().contains("2026-12-01"))
        .unwrap()
        .0;
    delete_rows(d.path(), &[(first.as_str(), Storage::Inline, vec![1])]);
    rename_column(d.path(), "name", "full name");
    let before = kernel_read(d.path());
    assert_eq!(before.rows.len(), 6 * 3 + 2 - 1);
    assert!(before.columns.contains(&"full name".to_string()));
    let cols = physical_columns(d.path());

    let s = compact(&loc(d.path())).await;
    // The second day's single file stays as it is.
    assert_eq!((s.files_removed, s.files_added), (6, 1), "{s:?}");
    let after = kernel_read(d.path());
    assert_eq!(after.rows, before.rows, "same rows and values");
    assert!(
        files_with_dv(d.path()).is_empty(),
        "the deleted row is gone"
    );
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());

    for out in added(&last_commit(d.path())) {
        let path = out["path"].as_str().unwrap();
        let expected: Vec<(String, Option<i32>)> = ["id", "full name", "nested"]
            .iter()
            .map(|c| (cols[*c].0.clone(), Some(cols[*c].1 as i32)))
            .collect();
        assert_eq!(file_columns(d.path(), path), expected, "{path}");
        let st = stats(&out);
        let id = &cols["id"].0;
        assert!(st["minValues"][id].is_i64(), "{st}");
        assert!(
            st["minValues"][&cols["nested"].0].is_object(),
            "nested statistics by physical names: {st}"
        );
        assert!(out["partitionValues"][&cols["day"].0].is_string(), "{out}");
    }
}

/// The `id` of each row kernel read, sorted (rows print as `id=N|…`).
fn ids(rows: &[String]) -> Vec<i64> {
    let mut out: Vec<i64> = rows
        .iter()
        .map(|r| {
            let v = r.strip_prefix("id=").unwrap();
            v.split('|').next().unwrap().parse().unwrap()
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_compactions_beside_a_kernel_writer_on_a_mapped_table_with_deletion_vectors_keep_every_row_once()
 {
    let d = tempfile::tempdir().unwrap();
    create_mapped_table(d.path(), "name");
    for i in 0..8 {
        kernel_append(d.path(), &[i * 10, i * 10 + 1, i * 10 + 2], "2026-12-01");
    }
    let files: Vec<String> = active_adds(d.path()).into_keys().take(2).collect();
    delete_rows(
        d.path(),
        &[
            (files[0].as_str(), Storage::Inline, vec![0]),
            (files[1].as_str(), Storage::Relative, vec![1, 2]),
        ],
    );
    let before = ids(&kernel_read(d.path()).rows);
    assert_eq!(before.len(), 8 * 3 - 3);

    // A writer appends to the same partition throughout.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (table, stop) = (d.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let mut written = Vec::new();
            let mut next = 1000;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                kernel_append(&table, &[next, next + 1], "2026-12-01");
                written.extend([next, next + 1]);
                next += 2;
            }
            written
        })
    };
    let l = loc(d.path());
    let a = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    let b = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    assert!(a.plan.bins > 0 && b.plan.bins > 0);
    let (sa, sb) = tokio::join!(run_job(a), run_job(b));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(!written.is_empty(), "the writer appended during the race");
    assert!(
        !sa.commits.is_empty() || !sb.commits.is_empty(),
        "one compaction committed: {sa:?} {sb:?}"
    );

    let mut expected = before.clone();
    expected.extend(written);
    expected.sort();
    let after = ids(&kernel_read(d.path()).rows);
    assert_eq!(
        after, expected,
        "every row exactly once, no deleted row back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ray_executor_refuses_a_mapped_table_before_anything_is_written() {
    use lakehealth::engine::compact::executor::{Executor, RayOptions};
    let d = tempfile::tempdir().unwrap();
    create_mapped_table(d.path(), "name");
    for i in 0..4 {
        kernel_append(d.path(), &[i], "2026-12-01");
    }
    let versions = commits_from(d.path(), 0).len();
    let mut job = prepare(&loc(d.path()), &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    // Refused before the cluster is asked anything: no cluster listens here.
    job.exec.executor = Executor::Ray(RayOptions::new("http://127.0.0.1:9"));
    let s = run_job(job).await;
    assert!(s.commits.is_empty());
    let why = format!("{:?}", s.errors);
    assert!(why.contains("column mapping"), "{why}");
    assert_eq!(commits_from(d.path(), 0).len(), versions);
    assert_eq!(leftover_files(d.path()), Vec::<String>::new());
}

/// Copies every file under `dir` to `store` (keys relative to `dir`).
async fn upload(dir: &Path, store: &Arc<dyn object_store::ObjectStore>) {
    let mut files = Vec::new();
    walk_all(dir, dir, &mut files);
    for rel in files {
        let bytes = std::fs::read(dir.join(&rel)).unwrap();
        store
            .put(&object_store::path::Path::from(rel.as_str()), bytes.into())
            .await
            .unwrap();
    }
}

/// Copies every object of `store` into `dir`.
async fn download(store: &Arc<dyn object_store::ObjectStore>, dir: &Path) {
    use futures::TryStreamExt;
    let objects: Vec<_> = store.list(None).try_collect().await.unwrap();
    for o in objects {
        let bytes = store.get(&o.location).await.unwrap().bytes().await.unwrap();
        let to = dir.join(o.location.as_ref());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
}

/// Every file below `dir`, `_delta_log` included, relative to `root`.
fn walk_all(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk_all(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// On S3 (moto) the outputs are multipart uploads through the object store and their size is
/// the store's: an id-mapped table with a deletion vector, written by the kernel locally and
/// uploaded, compacted on S3, downloaded and read by the kernel.
#[test]
fn an_id_mapped_table_on_s3_is_compacted_and_reads_the_same() {
    let moto = Moto::start();
    moto.create_bucket("lake");
    let local = tempfile::tempdir().unwrap();
    create_mapped_table(local.path(), "id");
    for i in 0..5 {
        kernel_append(local.path(), &[i * 10, i * 10 + 1], "2026-12-01");
    }
    let first = active_adds(local.path()).into_keys().next().unwrap();
    delete_rows(local.path(), &[(first.as_str(), Storage::Inline, vec![0])]);
    let before = kernel_read(local.path());

    let rt = runtime();
    let l = Location::parse("s3://lake/mapped").unwrap();
    let options = moto.storage_options();
    let store = l.open_store(&options).unwrap();
    rt.block_on(upload(local.path(), &store));
    let req = request().storage_options(options.clone());
    let s = rt.block_on(async {
        let job = prepare(&l, &req, kib64_thresholds(), 1.0).await.unwrap();
        run_job(job).await
    });
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!((s.files_removed, s.files_added), (5, 1), "{s:?}");

    let back = tempfile::tempdir().unwrap();
    rt.block_on(download(&store, back.path()));
    let after = kernel_read(back.path());
    assert_eq!(after.rows, before.rows, "same rows and values");
    assert!(files_with_dv(back.path()).is_empty());
    let out = added(&last_commit(back.path())).pop().unwrap();
    let path = out["path"].as_str().unwrap();
    assert_eq!(
        out["size"].as_u64().unwrap(),
        std::fs::metadata(back.path().join(path)).unwrap().len(),
        "the add's size is the object's"
    );
}

/// A bin whose every row a deletion vector removed is compacted into nothing: its files'
/// removes and no empty output (as REORG PURGE leaves no file), whichever writer writes it
/// (delta-rs's without column mapping, the physical writer with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_whose_rows_are_all_deleted_leave_no_empty_output() {
    for mapping in ["none", "name"] {
        let d = tempfile::tempdir().unwrap();
        create_partitioned_table(
            d.path(),
            &[
                ("delta.columnMapping.mode", mapping),
                ("delta.enableDeletionVectors", "true"),
            ],
        );
        for i in 0..3 {
            kernel_append(d.path(), &[i * 10, i * 10 + 1], "2026-12-01");
        }
        kernel_append(d.path(), &[100], "2026-12-02");
        let files: Vec<String> = active_adds(d.path())
            .into_iter()
            .filter(|(_, a)| a["partitionValues"].to_string().contains("2026-12-01"))
            .map(|(p, _)| p)
            .collect();
        let all: Vec<(&str, Storage, Vec<u64>)> = files
            .iter()
            .map(|f| (f.as_str(), Storage::Inline, vec![0, 1]))
            .collect();
        delete_rows(d.path(), &all);
        let before = kernel_read(d.path());
        assert_eq!(before.rows.len(), 1);

        let s = compact(&loc(d.path())).await;
        assert_eq!((s.files_removed, s.files_added), (3, 0), "{mapping}: {s:?}");
        assert_eq!(kernel_read(d.path()).rows, before.rows);
        assert!(added(&last_commit(d.path())).is_empty());
        assert_eq!(active_adds(d.path()).len(), 1);
        assert_eq!(leftover_files(d.path()), Vec::<String>::new(), "{mapping}");
    }
}
