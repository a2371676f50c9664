//! A table is opened once: planning a compaction on S3 lists `_delta_log/` once and fetches
//! each commit file once (our replay and delta-rs's snapshot share one read of the log), and
//! everything after planning reads the live log.

use std::sync::{Arc, Mutex};

use crate::support::common::{runtime, sensor_table_with};
use crate::support::harness::Moto;
use crate::support::tally::count;
use crate::support::{RequestExt, request};
use lakehealth::engine::table::Table;

#[test]
fn planning_a_compaction_on_s3_lists_the_log_once_and_reads_each_commit_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6), ("2026-12-02", 6)]);
    let commits = std::fs::read_dir(dir.join("_delta_log"))
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name().into_string().unwrap();
            n.ends_with(".json")
        })
        .count();
    assert!(commits >= 3, "a log of several commits ({commits})");
    let moto = Moto::start();
    moto.create_bucket("lake");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let wrap = crate::support::tally::wrapper(&seen);
    runtime().block_on(async {
        let s3 = moto.upload(&dir, "s3://lake/t").await;
        let mut opts = crate::support::common::opts();
        opts.storage_options = moto.storage_options();
        let table = Table::open_with(&s3, &opts, &|_| {}, Some(&*wrap))
            .await
            .unwrap();
        let req = request()
            .min_file_size(lakehealth::engine::size::MIB)
            .storage_options(moto.storage_options());
        let mut job = table
            .prepare_compaction(&req, crate::support::common::kib64_thresholds())
            .await
            .unwrap();
        assert!(
            job.plan.files_in > 0,
            "the plan has work: {:?}",
            job.plan.partitions.len()
        );

        let planned = count(&seen.lock().unwrap());
        eprintln!("requests while planning: {planned:#?}");
        let log_lists = planned.get("LIST t/_delta_log").copied().unwrap_or(0);
        assert_eq!(log_lists, 1, "one listing of _delta_log: {planned:#?}");
        let reread: Vec<_> = planned
            .iter()
            .filter(|(k, n)| k.starts_with("GET t/_delta_log/") && **n > 1)
            .collect();
        assert!(reread.is_empty(), "each log file fetched once: {reread:#?}");
        let commit_gets = planned
            .keys()
            .filter(|k| k.starts_with("GET t/_delta_log/") && k.ends_with(".json"))
            .count();
        assert!(
            commit_gets >= commits.min(2),
            "the commits were read: {planned:#?}"
        );

        // After planning the log is live again: a replan lists it anew.
        job.replan_if_stale().await.unwrap();
        let after = count(&seen.lock().unwrap());
        assert!(
            after.get("LIST t/_delta_log").copied().unwrap_or(0) > 1,
            "the checks after planning read the store, not the opening's cache: {after:#?}"
        );
    });
}

#[test]
fn the_janitor_advances_a_table_by_its_new_commits_instead_of_replaying_it() {
    use lakehealth::engine::janitor::Janitor;
    use lakehealth::engine::janitor::history::History;
    use lakehealth::engine::janitor::policy::Policy;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6)]);
    let l = crate::support::common::loc(&dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let wrap = crate::support::tally::wrapper(&seen);
    runtime().block_on(async {
        let base = crate::support::common::opts().thresholds;
        let policy = Policy::parse("", "p.toml", base).unwrap();
        let history = History::open(&tmp.path().join("history.jsonl")).unwrap();
        let mut janitor = Janitor::new(
            vec![l.clone()],
            policy,
            crate::support::common::opts(),
            history,
            Box::new(|_| {}),
            false,
        )
        .with_log_store_wrapper(wrap);
        let files = |d: &lakehealth::engine::janitor::TableDecisions| -> u64 {
            d.decisions.iter().map(|d| d.files).sum()
        };
        let first = janitor.decide_only(&l).await.unwrap();
        let replayed = count(&seen.lock().unwrap());
        assert!(
            replayed.keys().any(|k| k.starts_with("LIST _delta_log")),
            "the first read replays the log: {replayed:#?}"
        );

        seen.lock().unwrap().clear();
        lakehealth::engine::demo::seed_small_files(&l, &["2026-12-01".to_string()], 1, 50)
            .await
            .unwrap();
        let second = janitor.decide_only(&l).await.unwrap();
        assert_eq!(
            files(&second),
            files(&first) + 1,
            "the new commit's file is counted"
        );
        let advanced = count(&seen.lock().unwrap());
        assert!(
            !advanced.keys().any(|k| k.starts_with("LIST")),
            "no listing once the table is followed: {advanced:#?}"
        );
        assert!(
            advanced
                .keys()
                .all(|k| k.starts_with("GET _delta_log/") && k.ends_with(".json")),
            "only the commits after the version read: {advanced:#?}"
        );
    });
}

#[test]
fn a_table_opened_for_its_report_is_followed_live_from_the_version_read_without_a_second_replay() {
    use lakehealth::engine::delta::watch::{LogEvent, WatchOptions};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6)]);
    let l = crate::support::common::loc(&dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let wrap = crate::support::tally::wrapper(&seen);
    runtime().block_on(async {
        let opts = crate::support::common::opts();
        let table = Table::open_with(&l, &opts, &|_| {}, Some(&*wrap))
            .await
            .unwrap();
        let (report, log) = table.into_report_and_log();
        let log = log.expect("a Delta table hands on its log");
        seen.lock().unwrap().clear();
        let poll = std::time::Duration::from_millis(10);
        let mut watcher = log.watcher(WatchOptions::new(&opts, poll));
        assert_eq!(
            watcher.version(),
            report.version,
            "it starts where the report read"
        );
        assert_eq!(
            watcher.report().stats.files,
            report.stats.files,
            "the same state"
        );

        lakehealth::engine::demo::seed_small_files(&l, &["2026-12-01".to_string()], 1, 50)
            .await
            .unwrap();
        let events = watcher.poll().await.unwrap();
        assert!(
            events.iter().any(|e| matches!(e, LogEvent::Commit(_))),
            "the new commit is followed: {events:?}"
        );
        assert_eq!(watcher.version(), report.version + 1);
        let followed = count(&seen.lock().unwrap());
        assert!(
            !followed.keys().any(|k| k.starts_with("LIST")),
            "no listing, so no replay: {followed:#?}"
        );
        assert!(
            followed
                .keys()
                .all(|k| k.starts_with("GET ") && k.contains("/_delta_log/")),
            "only log files after the version read: {followed:#?}"
        );
    });
}

#[test]
fn a_checkpoint_lists_the_log_once_for_its_listing_and_delta_rs_snapshot() {
    use lakehealth::engine::maintenance::checkpoint::{checkpoint, checkpoint_with};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6), ("2026-12-02", 6)]);
    let l = crate::support::common::loc(&dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let wrap = crate::support::tally::wrapper(&seen);
    runtime().block_on(async {
        let opts = crate::support::common::opts();
        let first = checkpoint(&l, &opts.storage_options).await.unwrap();
        assert!(first.written, "{first:?}");
        // The latest version now has its checkpoint: this run reads the log and writes nothing.
        let again = checkpoint_with(&l, &opts.storage_options, Some(&*wrap))
            .await
            .unwrap();
        assert!(!again.written, "{again:?}");
        assert_eq!(again.previous_checkpoint, Some(first.version));
        let read = count(&seen.lock().unwrap());
        let lists = read
            .iter()
            .filter(|(k, _)| k.starts_with("LIST") && k.ends_with("/_delta_log"))
            .map(|(_, n)| n)
            .sum::<usize>();
        assert_eq!(lists, 1, "one listing of _delta_log: {read:#?}");
        let reread: Vec<_> = read
            .iter()
            .filter(|(k, n)| k.starts_with("GET ") && k.contains("/_delta_log/") && **n > 1)
            .collect();
        assert!(reread.is_empty(), "each log file fetched once: {reread:#?}");
    });
}
