//! Compactions that order rows (`compact --sort-by`, `--zorder`, a clustered table's
//! clustering): every row kept exactly once beside a concurrent writer (Python deltalake +
//! pyarrow read it back), the files skipping better by the statistics Python deltalake reads
//! from the log (`tests/py/skipping_depth.py admits`), and a liquid-clustered table compacted
//! with its clustering kept: `clusteringProvider` on the new adds, its domain metadata
//! untouched (read by delta-kernel-rs), every row with its row id (the kernel's reading).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use delta_kernel::Snapshot;
use delta_kernel_engine::DefaultEngine;
use lakehealth::engine::compact::job::{CompactRequest, prepare};
use lakehealth::engine::compact::ordering::{LayoutRequest, OrderKind};
use lakehealth::engine::delta::features::FeatureNote;
use lakehealth::engine::location::Location;
use object_store::local::LocalFileSystem;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::column_mapping::{added, physical_columns, rename_column};
use crate::kernel_reader::{kernel_read, kernel_read_with_row_ids};
use crate::kernel_writer::{create_mapped_table, kernel_append};
use crate::row_tracking::{append_tracked_rows, column_of, last_commit, liquid_table};
use crate::support::common::*;
use crate::support::writer::{assert_no_row_lost, background_writer, has_version, verify};
use crate::support::{RequestExt, request, wait_until};
use lakehealth::engine::size::KIB;

fn order(kind: OrderKind, columns: &[&str]) -> LayoutRequest {
    LayoutRequest::Order {
        kind,
        columns: columns.iter().map(|c| c.to_string()).collect(),
        whole_partitions: true,
    }
}

async fn plan_and_run(
    l: &Location,
    req: &CompactRequest,
) -> lakehealth::engine::compact::events::JobSummary {
    let job = prepare(l, req, kib64_thresholds(), 1.0).await.unwrap();
    assert!(job.plan.bins > 0, "nothing planned: {:?}", job.plan);
    let s = run_job(job).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    s
}

/// The paths the OPTIMIZE commits of the log added.
fn optimize_outputs(table: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for c in commits_from(table, 0) {
        let optimize = c.iter().any(|a| a["commitInfo"]["operation"] == "OPTIMIZE");
        if optimize {
            out.extend(
                c.iter()
                    .filter_map(|a| a["add"]["path"].as_str().map(String::from)),
            );
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_compaction_beside_a_writer_keeps_every_row_once_and_its_outputs_tile_the_column() {
    let (d, l, mut written) = seeded_batches(60).await;
    let before = admitting(d.path(), "sensor_id", 17);
    assert!(
        before.admitting * 10 >= before.files * 9,
        "random sensors: nearly every file admits: {} of {}",
        before.admitting,
        before.files
    );
    let cancel_writer = CancellationToken::new();
    let writer = background_writer(l.clone(), cancel_writer.clone());
    wait_until(Duration::from_secs(60), "the writer's first commit", || {
        has_version(d.path(), 61)
    });
    let s = plan_and_run(
        &l,
        &request().layout(order(OrderKind::Sort, &["sensor_id"])),
    )
    .await;
    let last = s.commits.iter().map(|c| c.version).max().unwrap_or(60);
    wait_until(
        Duration::from_secs(60),
        "a writer commit after the compaction's",
        || has_version(d.path(), last + 1),
    );
    cancel_writer.cancel();
    let live = writer.join().unwrap();
    written.extend(live.iter().cloned());
    assert!(s.files_added > 2, "outputs rolled by size: {s:?}");

    let after = verify(d.path());
    assert_no_row_lost(&after, &written);
    // Sorted by sensor: the outputs hold consecutive ranges, so a lookup of one sensor
    // opens one output, or two when its rows straddle a boundary.
    let outputs = optimize_outputs(d.path());
    let now = admitting(d.path(), "sensor_id", 17);
    let opened = now.paths.iter().filter(|p| outputs.contains(p)).count();
    assert!(
        (1..=2).contains(&opened),
        "{opened} of {} outputs",
        outputs.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zorder_compaction_keeps_every_row_and_a_lookup_on_either_column_opens_fewer_files() {
    let (d, l, written) = seeded_batches(80).await;
    let s = plan_and_run(
        &l,
        // Outputs of 16 KiB: about twenty, enough for each to cover a box of both columns.
        &request()
            .target(16 * KIB)
            .layout(order(OrderKind::ZOrder, &["sensor_id", "reading"])),
    )
    .await;
    assert_eq!(s.files_removed, 80, "every file of the partition: {s:?}");
    assert!(s.files_added >= 12, "{s:?}");
    let after = verify(d.path());
    assert_no_row_lost(&after, &written);
    let sensor = admitting(d.path(), "sensor_id", 17);
    let reading = admitting(d.path(), "reading", 500_000);
    // Both columns were spread at random over all 80 files; in z-order each output covers a
    // box of both, so a lookup on either opens a fraction of them.
    assert_eq!(sensor.files, s.files_added);
    assert!(
        sensor.admitting * 4 <= sensor.files * 3,
        "sensor: {} of {}",
        sensor.admitting,
        sensor.files
    );
    assert!(
        reading.admitting * 4 <= reading.files * 3,
        "reading: {} of {}",
        reading.admitting,
        reading.files
    );
}

/// The table's domains as delta-kernel-rs reads them (none of lakehealth's code).
fn domains(table: &Path) -> Vec<(String, Option<String>)> {
    let engine = DefaultEngine::builder(Arc::new(LocalFileSystem::new())).build();
    let url = url::Url::from_directory_path(std::fs::canonicalize(table).unwrap()).unwrap();
    let snapshot = Snapshot::builder_for(url.as_str()).build(&engine).unwrap();
    ["delta.liquid", "delta.clustering", "delta.rowTracking"]
        .iter()
        .map(|d| {
            let conf = snapshot.get_domain_metadata_internal(d, &engine).unwrap();
            (d.to_string(), conf)
        })
        .collect()
}

fn adds(commit: &[Value]) -> Vec<&Value> {
    commit.iter().filter_map(|a| a.get("add")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clustered_tables_compaction_clusters_its_new_files_and_never_drops_its_domain_metadata()
{
    let d = liquid_table();
    // Rows in descending order: a bin-packing would write them so.
    append_tracked_rows(d.path(), &[104, 103, 102, 101, 100]);
    let l = loc(d.path());
    let domains_before = domains(d.path());
    assert!(domains_before[0].1.is_some(), "{domains_before:?}");
    let rows_before = kernel_read_with_row_ids(d.path());

    let job = prepare(&l, &request(), kib64_thresholds(), 1.0)
        .await
        .unwrap();
    let planned = job.plan.order.clone().expect("the clustering is kept");
    assert!(planned.clustering && !planned.whole_partitions);
    assert_eq!(planned.order.columns, ["id"]);
    assert_eq!(job.plan.notes, [FeatureNote::RowIdsKept]);
    let s = run_job(job).await;
    assert!(s.errors.is_empty() && s.failures.is_empty(), "{s:?}");

    let commit = last_commit(d.path());
    let new = adds(&commit);
    assert!(!new.is_empty());
    for a in &new {
        assert_eq!(a["clusteringProvider"], "liquid", "{a}");
    }
    assert!(
        commit.iter().all(|a| a.get("domainMetadata").is_none()
            || a["domainMetadata"]["domain"] == "delta.rowTracking"),
        "the commit writes no domain but row tracking's: {commit:?}"
    );
    let ids: Vec<Option<i64>> = new
        .iter()
        .flat_map(|a| column_of(d.path(), a["path"].as_str().unwrap(), "id"))
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "the output is clustered by id");
    assert_eq!(ids.len(), 15);

    // Read by the kernel: every row with its row id, and the clustering domain as it was.
    assert_eq!(kernel_read_with_row_ids(d.path()).rows, rows_before.rows);
    let domains_after = domains(d.path());
    assert_eq!(domains_after[0], domains_before[0], "delta.liquid kept");
    assert_eq!(
        domains_after[1], domains_before[1],
        "delta.clustering as it was"
    );
    assert!(domains_after[2].1.is_some(), "delta.rowTracking kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clustered_table_compacted_unclustered_says_so_and_still_keeps_its_domain_metadata() {
    let d = liquid_table();
    let l = loc(d.path());
    let domains_before = domains(d.path());
    let job = prepare(
        &l,
        &request().layout(LayoutRequest::Unclustered),
        kib64_thresholds(),
        1.0,
    )
    .await
    .unwrap();
    assert_eq!(job.plan.order, None);
    assert!(job.plan.notes.contains(&FeatureNote::NotReclustered));
    let s = run_job(job).await;
    assert!(s.errors.is_empty() && s.failures.is_empty(), "{s:?}");
    for a in adds(&last_commit(d.path())) {
        assert!(a["clusteringProvider"].is_null(), "{a}");
    }
    assert_eq!(domains(d.path())[0], domains_before[0]);
    // Ordering it by anything but its clustering is refused, naming both.
    let e = prepare(
        &l,
        &request().layout(order(OrderKind::ZOrder, &["id", "id2"])),
        kib64_thresholds(),
        1.0,
    )
    .await
    .err()
    .expect("refused");
    assert!(e.to_string().contains("clustered by id"), "{e}");
}

/// A string column's values in one data file, by its physical name.
fn strings_in(table: &Path, path: &str, column: &str) -> Vec<String> {
    use arrow::array::{Array, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let f = std::fs::File::open(table.join(decoded(path))).unwrap();
    let mut out = Vec::new();
    for b in ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
    {
        let b = b.unwrap();
        let a = b.column_by_name(column).unwrap();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        out.extend((0..a.len()).map(|i| a.value(i).to_string()));
    }
    out
}

/// A column-mapped table sorted by a renamed column: the order is asked by its logical name
/// (`full name`), the rows are sorted by its physical column in the files, and delta-kernel-rs
/// (which resolves the mapping itself) reads the same rows and values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapped_table_sorted_by_a_renamed_column_orders_its_physical_column_and_keeps_every_value()
 {
    let d = tempfile::tempdir().unwrap();
    create_mapped_table(d.path(), "name");
    // 2,000 rows an append, ids interleaved across appends: at the 64 KiB target the sorted
    // rows fill several outputs, whose ranges must tile the column.
    for i in [5, 2, 4, 0, 3, 1] {
        let ids: Vec<i64> = (0..2000).map(|k| k * 6 + i).collect();
        kernel_append(d.path(), &ids, "2026-12-01");
    }
    rename_column(d.path(), "name", "full name");
    let before = kernel_read(d.path());
    assert_eq!(before.rows.len(), 12_000);
    let s = plan_and_run(
        &loc(d.path()),
        &request().layout(order(OrderKind::Sort, &["full name"])),
    )
    .await;
    assert_eq!(s.files_removed, 6, "{s:?}");
    let after = kernel_read(d.path());
    assert_eq!(after.rows, before.rows, "same rows and values");
    let physical = physical_columns(d.path())["full name"].0.clone();
    assert_ne!(
        physical, "full name",
        "a mapped column has its own physical name"
    );
    let mut ranges = Vec::new();
    let mut total = 0;
    for out in added(&last_commit(d.path())) {
        let names = strings_in(d.path(), out["path"].as_str().unwrap(), &physical);
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "each output sorted by the physical column");
        total += names.len();
        ranges.push((names[0].clone(), names[names.len() - 1].clone()));
    }
    assert_eq!(total, 12_000);
    assert!(ranges.len() >= 2, "several outputs: {ranges:?}");
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].1 < w[1].0, "the outputs tile the column: {ranges:?}");
    }
}
