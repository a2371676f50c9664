//! Watching many tables cheaply: an idle table is read at doubling intervals (and costs no
//! request between its reads), a new commit brings it back to every cycle, and a root is listed
//! for new tables only every `discover_every`, its known tables not probed again.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::support::common::{loc, opts, runtime, sensor_table_with};
use lakehealth::engine::janitor::Janitor;
use lakehealth::engine::janitor::history::History;
use lakehealth::engine::janitor::policy::Policy;

/// A janitor over `targets` whose every log and listing request is noted in `seen`.
fn janitor(
    targets: Vec<lakehealth::engine::location::Location>,
    policy: &str,
    history: &std::path::Path,
    seen: &Arc<Mutex<Vec<String>>>,
) -> Janitor {
    let wrap = crate::support::tally::wrapper(seen);
    let policy = Policy::parse(policy, "p.toml", opts().thresholds).unwrap();
    Janitor::new(
        targets,
        policy,
        opts(),
        History::open(history).unwrap(),
        Box::new(|_| {}),
        false,
    )
    .with_log_store_wrapper(wrap)
}

/// One table of six small files (never due, so nothing but the janitor's reads touches it)
/// and a janitor over it noting every request in `seen`: 10 s cycles, an idle table read at
/// least every 80 s (after its first read, all new, gaps of 1, 1, 2, 4, then 8 cycles).
fn idle_table(
    tmp: &tempfile::TempDir,
) -> (
    std::path::PathBuf,
    lakehealth::engine::location::Location,
    Arc<Mutex<Vec<String>>>,
    Janitor,
) {
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6)]);
    let l = loc(&dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let j = janitor(
        vec![l.clone()],
        "interval = \"10s\"\nidle_poll_max = \"80s\"\n",
        &tmp.path().join("h.jsonl"),
        &seen,
    );
    (dir, l, seen, j)
}

/// Runs cycles `from..=to`; the cycles in which any request was made.
async fn cycles_reading(
    j: &mut Janitor,
    seen: &Arc<Mutex<Vec<String>>>,
    range: std::ops::RangeInclusive<u64>,
) -> Vec<u64> {
    let cancel = CancellationToken::new();
    let mut read = Vec::new();
    for c in range {
        seen.lock().unwrap().clear();
        j.cycle(&cancel, true).await;
        if !seen.lock().unwrap().is_empty() {
            read.push(c);
        }
    }
    read
}

#[test]
fn an_idle_table_is_read_at_doubling_intervals_and_a_new_commit_brings_it_back_to_every_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, l, seen, mut j) = idle_table(&tmp);
    runtime().block_on(async {
        assert_eq!(
            cycles_reading(&mut j, &seen, 1..=9).await,
            vec![1, 2, 3, 5, 9]
        );
        lakehealth::engine::demo::seed_small_files(&l, &["2026-12-01".to_string()], 1, 50)
            .await
            .unwrap();
        let version = std::fs::read_dir(dir.join("_delta_log"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
            - 1;
        seen.lock().unwrap().clear();
        let read = cycles_reading(&mut j, &seen, 10..=17).await;
        assert_eq!(read, vec![17], "the next read, 8 cycles after the last");
        let got = seen.lock().unwrap().clone();
        assert!(
            got.iter()
                .any(|r| r == &format!("GET _delta_log/{version:020}.json")),
            "the new commit was read: {got:#?}"
        );
        assert_eq!(
            cycles_reading(&mut j, &seen, 18..=19).await,
            vec![18, 19],
            "a table that just changed is read every cycle again (1, then 2 cycles apart)"
        );
    });
}

#[test]
fn a_root_is_listed_for_new_tables_every_discover_every_and_its_tables_in_between_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lake");
    for t in ["a", "b", "gone"] {
        let dir = root.join("db").join(t);
        std::fs::create_dir_all(&dir).unwrap();
        sensor_table_with(&dir, &[("2026-12-01", 4)]);
    }
    // Made beside the root, moved in while the janitor runs.
    let staged = tmp.path().join("c");
    std::fs::create_dir_all(&staged).unwrap();
    sensor_table_with(&staged, &[("2026-12-01", 4)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    // Listed every 3 cycles; idle tables read at least every 2.
    let mut j = janitor(
        vec![loc(&root)],
        "interval = \"10s\"\nidle_poll_max = \"20s\"\ndiscover_every = \"30s\"\n",
        &tmp.path().join("h.jsonl"),
        &seen,
    );
    runtime().block_on(async {
        let cancel = CancellationToken::new();
        let mut listings = Vec::new();
        let mut folders_listed = Vec::new();
        let mut tables = Vec::new();
        for c in 1..=7u64 {
            if c == 5 {
                // A table appears under the root and one is removed: both seen at the next
                // listing (cycle 7).
                std::fs::rename(&staged, root.join("db").join("c")).unwrap();
                std::fs::remove_dir_all(root.join("db").join("gone")).unwrap();
            }
            seen.lock().unwrap().clear();
            let stats = j.cycle(&cancel, true).await;
            tables.push(stats.tables);
            // Discovery lists folders with a delimiter (a table's log is listed without).
            let listed: Vec<String> = seen
                .lock()
                .unwrap()
                .iter()
                .filter_map(|r| r.strip_prefix("LIST/ ").map(str::to_string))
                .collect();
            if !listed.is_empty() {
                listings.push(c);
                folders_listed.push(listed);
            }
        }
        assert_eq!(listings, vec![1, 4, 7], "listed every 3 cycles");
        assert_eq!(
            tables,
            vec![3, 3, 3, 3, 3, 3, 3],
            "the new table and the removed one both from cycle 7"
        );
        let mut relisted = folders_listed[1].clone();
        relisted.sort();
        assert_eq!(
            relisted,
            vec!["".to_string(), "db".to_string()],
            "a re-listing lists the folders above the tables, not each known table"
        );
        let mut with_new = folders_listed[2].clone();
        with_new.sort();
        assert_eq!(
            with_new,
            vec!["".to_string(), "db".to_string(), "db/c".to_string()],
            "only the new folder is probed"
        );
        let fleet: Vec<String> = j
            .fleet_snapshot()
            .rows
            .into_iter()
            .map(|r| r.table.rsplit('/').next().unwrap_or_default().to_string())
            .collect();
        let mut fleet = fleet;
        fleet.sort();
        assert_eq!(fleet, vec!["a", "b", "c"], "the removed table is retired");
    });
}

#[test]
fn a_partition_not_due_for_the_same_reason_is_said_once_and_again_when_its_reason_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    sensor_table_with(&dir, &[("2026-12-01", 6)]);
    let l = loc(&dir);
    let said = Arc::new(Mutex::new(Vec::<String>::new()));
    let s2 = said.clone();
    let policy = Policy::parse("interval = \"10s\"\n", "p.toml", opts().thresholds).unwrap();
    let mut j = Janitor::new(
        vec![l.clone()],
        policy,
        opts(),
        History::open(&tmp.path().join("h.jsonl")).unwrap(),
        Box::new(move |line| {
            let v = serde_json::to_value(line).unwrap();
            if v["type"] == "decision" {
                s2.lock()
                    .unwrap()
                    .push(v["reason"].as_str().unwrap().to_string());
            }
        }),
        false,
    );
    runtime().block_on(async {
        let cancel = CancellationToken::new();
        for _ in 0..3 {
            j.cycle(&cancel, true).await;
        }
        assert_eq!(
            *said.lock().unwrap(),
            vec!["not due: 6 small files < 50".to_string()],
            "said once in three cycles"
        );
        lakehealth::engine::demo::seed_small_files(&l, &["2026-12-01".to_string()], 1, 50)
            .await
            .unwrap();
        // Read again within a few cycles (the table is idle: doubling gaps).
        for _ in 0..4 {
            j.cycle(&cancel, true).await;
        }
        assert_eq!(
            said.lock().unwrap().last().map(String::as_str),
            Some("not due: 7 small files < 50"),
            "said again with its new reason"
        );
        assert_eq!(said.lock().unwrap().len(), 2);
    });
}

/// Memory follows the tables that move: a table idle for three reads in a row keeps only its
/// summary (no file list), is still decided from it, costs one request per read as before, and
/// a new commit brings its log back (replayed once, the new file counted).
#[test]
fn an_idle_table_keeps_only_its_summary_and_a_new_commit_brings_its_files_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, l, seen, mut j) = idle_table(&tmp);
    let small = |j: &Janitor| j.fleet_snapshot().rows[0].debt.expect("read").small_files;
    runtime().block_on(async {
        // Read at cycles 1 (new), 2, 3 and 5: the third quiet read is at 5.
        assert_eq!(cycles_reading(&mut j, &seen, 1..=4).await, vec![1, 2, 3]);
        assert_eq!(j.summarized_tables(), 0, "two quiet reads: still followed");
        assert_eq!(cycles_reading(&mut j, &seen, 5..=5).await, vec![5]);
        assert_eq!(
            j.summarized_tables(),
            1,
            "three quiet reads: its summary only"
        );
        let got = seen.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "one request for the read: {got:?}");
        assert_eq!(small(&j), 6, "decided from its summary");

        lakehealth::engine::demo::seed_small_files(&l, &["2026-12-01".to_string()], 1, 50)
            .await
            .unwrap();
        assert_eq!(
            cycles_reading(&mut j, &seen, 6..=9).await,
            vec![9],
            "a summary is read on the same back-off"
        );
        assert_eq!(j.summarized_tables(), 0, "it moved: followed again");
        assert_eq!(small(&j), 7, "the new commit's file counted");
        // Quiet again: reads at 10, 11, 13; summarized at the third.
        assert_eq!(
            cycles_reading(&mut j, &seen, 10..=13).await,
            vec![10, 11, 13]
        );
        assert_eq!(j.summarized_tables(), 1);
        assert_eq!(small(&j), 7);
    });
}
