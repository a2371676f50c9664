//! A plan's estimate of its requests and bytes against what the job made on S3 (moto): the
//! price a user is shown before a compaction is the price it has.

use std::sync::Arc;

use lakehealth::engine::compact::job::run_isolated;
use lakehealth::engine::compact::locks::PartitionLocks;
use lakehealth::engine::demo::seed_small_files;
use lakehealth::engine::location::Location;
use lakehealth::engine::model::cost::{Cost, Rates};
use lakehealth::engine::options::OpenOptions;
use lakehealth::engine::table::Table;
use tokio_util::sync::CancellationToken;

use crate::support::common::{kib64_thresholds, loc, opts, runtime, sensor_table_with};
use crate::support::harness::Moto;
use crate::support::{RequestExt, request};

/// `estimate` is within `share` of `actual`, give or take `slack` (a count of a few).
fn close(what: &str, estimate: u64, actual: u64, share: f64, slack: u64) {
    let off = estimate.abs_diff(actual) as f64;
    let allowed = (actual as f64 * share).max(slack as f64);
    assert!(
        off <= allowed,
        "{what}: estimated {estimate}, made {actual} (allowed {allowed:.1})"
    );
}

/// Compacts every small file of `loc`; the job's estimate, actuals and commits.
async fn compact(loc: &Location, o: &OpenOptions) -> (Cost, Cost, u64) {
    let table = Table::open(loc, o, &|_| {}).await.unwrap();
    let req = request()
        .min_file_size(lakehealth::engine::size::MIB)
        .storage_options(o.storage_options.clone());
    let job = table
        .prepare_compaction(&req, kib64_thresholds())
        .await
        .unwrap();
    let planned = job.plan.estimate;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = run_isolated(
        job,
        Arc::new(PartitionLocks::default()),
        CancellationToken::new(),
        tx,
    )
    .await;
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert!(!summary.commits.is_empty(), "the job committed");
    assert_eq!(
        summary.estimate.as_deref(),
        Some(&planned),
        "the summary carries the plan's estimate"
    );
    let actual = *summary
        .actual
        .expect("a job that ran measures its requests");
    (planned, actual, summary.commits.len() as u64)
}

/// A table compacted once already (so its plans know how much smaller merged files come out,
/// as the janitor's do), then `days` of small files, compacted on S3.
fn compact_on_s3(days: &[(&str, u32)]) -> (Cost, Cost, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-11-30", 30)]);
    let local = loc(&dir);
    runtime().block_on(async {
        compact(&local, &opts()).await;
        for (day, files) in days {
            seed_small_files(&local, &[day.to_string()], *files, 50)
                .await
                .unwrap();
        }
    });
    let moto = Moto::start();
    moto.create_bucket("lake");
    runtime().block_on(async {
        let s3 = moto.upload(&dir, "s3://lake/t").await;
        let mut o = opts();
        o.storage_options = moto.storage_options();
        compact(&s3, &o).await
    })
}

fn assert_estimate_holds(estimate: Cost, actual: Cost, commits: u64) {
    eprintln!("estimate {estimate:?}\nactual   {actual:?}");
    let (e, a) = (estimate.requests, actual.requests);
    close("requests", e.total_requests(), a.total_requests(), 0.10, 0);
    close("GET", e.get, a.get, 0.10, 0);
    // The small kinds: a request per commit either way at most.
    close("PUT", e.put, a.put, 0.10, commits);
    close("LIST", e.list, a.list, 0.10, commits);
    close("DELETE", e.delete, a.delete, 0.0, 0);
    close("bytes read", e.bytes_read, a.bytes_read, 0.25, 0);
    close("bytes written", e.bytes_written, a.bytes_written, 0.25, 0);
    // Both are priced at S3 Standard's rates (an s3:// table with no [price] override).
    assert_eq!(actual.usd, Rates::S3_STANDARD.usd(&a));
    assert_eq!(estimate.usd, Rates::S3_STANDARD.usd(&e));
    assert!(actual.usd > 0.0);
}

#[test]
fn a_one_partition_compaction_on_s3_makes_the_requests_its_plan_estimated_within_ten_percent() {
    let (estimate, actual, commits) = compact_on_s3(&[("2026-12-01", 40)]);
    assert_eq!(commits, 1);
    assert_estimate_holds(estimate, actual, commits);
}

#[test]
fn a_compaction_of_several_partitions_and_commits_on_s3_stays_within_ten_percent_of_its_estimate() {
    let (estimate, actual, commits) =
        compact_on_s3(&[("2026-12-01", 25), ("2026-12-02", 30), ("2026-12-03", 12)]);
    assert!(commits >= 3, "one commit per partition's bin: {commits}");
    assert_estimate_holds(estimate, actual, commits);
}
