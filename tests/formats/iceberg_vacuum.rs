//! VACUUM of an Iceberg table through its SQL catalog, read back by pyiceberg on the same
//! catalog: snapshots older than the retention are expired and the files no retained snapshot
//! references are deleted, so that after `--retention 0s` the data files on disk are exactly
//! those the current snapshot holds, with the same rows, and pyiceberg can still read and
//! append. A dry run changes nothing and lists what the real run deletes; with the table's
//! retention only old orphans go; files of a table nested in the folder, metadata files and
//! young files stay.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::iceberg_compact::{Table, ids};
use crate::support::common::*;

fn vacuum(t: &Table, extra: &[&str]) -> std::process::Output {
    let uri = t.catalog_uri();
    lakehealth_cmd()
        .arg("vacuum")
        .arg(&t.table)
        .args(["--catalog", &uri])
        .args(extra)
        .output()
        .unwrap()
}

fn vacuum_json(t: &Table, extra: &[&str]) -> Value {
    let o = vacuum(t, extra);
    assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn parquet_under(t: &Table, folder: &str) -> BTreeSet<String> {
    t.files()
        .into_iter()
        .filter(|f| f.starts_with(folder) && f.ends_with(".parquet"))
        .collect()
}

/// The current snapshot's live files, relative to the table (pyiceberg's entries).
fn live_files(t: &Table) -> BTreeSet<String> {
    let root = format!("{}/", t.table.display());
    t.read()
        .entry_list
        .iter()
        .filter(|e| e.1 != 2)
        .map(|e| {
            let p = e.0.strip_prefix("file://").unwrap_or(&e.0);
            p.strip_prefix(&root).unwrap_or(p).to_string()
        })
        .collect()
}

fn age(path: &std::path::Path, days: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(days * 86_400))
        .unwrap();
}

#[test]
fn vacuum_with_no_retention_leaves_exactly_the_current_snapshots_data_files_and_its_rows() {
    let t = Table::new(6);
    let uri = t.catalog_uri();
    let o = lakehealth_cmd()
        .arg("compact")
        .arg(&t.table)
        .args(["--catalog", &uri])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let before = t.read();
    let snapshots_before = before.operations.len();
    assert!(snapshots_before > 2, "{:?}", before.operations);
    let data_before = parquet_under(&t, "data/");
    let live = live_files(&t);
    assert!(
        data_before.len() > live.len(),
        "the compaction left replaced files"
    );

    // Below the table's retention without the override: refused, nothing changed.
    let o = vacuum(&t, &["--retention", "0s"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("history.expire.max-snapshot-age-ms"),
        "{}",
        stderr(&o)
    );
    // With the table's retention (5 days) nothing is old enough.
    let v = vacuum_json(&t, &["--dry-run", "--json"]);
    assert_eq!(v["plan"]["files_to_delete"], 0, "{v}");
    assert_eq!(
        v["plan"]["snapshots_to_expire"],
        serde_json::json!([]),
        "{v}"
    );

    let all_before = t.files();
    let dry = vacuum_json(
        &t,
        &[
            "--retention",
            "0s",
            "--allow-short-retention",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(t.files(), all_before, "a dry run changed the folder");
    assert_eq!(t.read().operations.len(), snapshots_before);
    let planned: BTreeSet<String> = dry["plan"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        dry["plan"]["snapshots_to_expire"].as_array().unwrap().len(),
        snapshots_before - 1
    );

    let v = vacuum_json(
        &t,
        &["--retention", "0s", "--allow-short-retention", "--json"],
    );
    let deleted: BTreeSet<String> = v["outcome"]["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        deleted, planned,
        "the real run deletes what the dry run listed"
    );
    let after = t.read();
    assert_eq!(after.rows, before.rows, "rows changed");
    assert_eq!(after.operations.len(), 1, "{:?}", after.operations);
    assert_eq!(after.snapshot_id, before.snapshot_id);
    assert_eq!(
        parquet_under(&t, "data/"),
        live,
        "on disk: exactly the live data files"
    );
    // Every metadata file is kept; manifests of expired snapshots go.
    for f in all_before.iter().filter(|f| f.ends_with(".metadata.json")) {
        assert!(t.table.join(f).exists(), "{f} was deleted");
    }

    // The table is whole: pyiceberg appends on it and reads every row.
    t.py(&["append", "--first-id", "100000", "--rows", "5"]);
    let appended = t.read();
    let mut want = ids(&before.rows);
    want.extend(100_000..100_005);
    want.sort();
    let mut got = ids(&appended.rows);
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn with_the_tables_retention_only_old_orphans_go_and_other_tables_and_young_files_stay() {
    let t = Table::new(3);
    let before = t.read();
    let some_live = live_files(&t).into_iter().next().unwrap();
    let folder = std::path::Path::new(&some_live)
        .parent()
        .unwrap()
        .to_path_buf();
    // An orphan a crashed writer left a month ago, and one written now.
    let old = t.table.join(&folder).join("00000-0-crashed-writer.parquet");
    std::fs::write(&old, b"PAR1 left by a crashed writer").unwrap();
    age(&old, 30);
    let young = t.table.join(&folder).join("00000-0-in-flight.parquet");
    std::fs::write(&young, b"PAR1 a writer is about to commit").unwrap();
    // A Delta table nested in the folder: its files are its own log's, however old.
    let nested = t.table.join("nested");
    std::fs::create_dir_all(nested.join("_delta_log")).unwrap();
    std::fs::write(nested.join("_delta_log/00000000000000000000.json"), b"{}").unwrap();
    let nested_file = nested.join("part-0.parquet");
    std::fs::write(&nested_file, b"PAR1 another table's").unwrap();
    age(&nested_file, 30);

    let v = vacuum_json(&t, &["--json"]);
    let deleted: Vec<&str> = v["outcome"]["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(deleted.len(), 1, "{v}");
    assert!(
        deleted[0].ends_with("00000-0-crashed-writer.parquet"),
        "{v}"
    );
    assert!(!old.exists());
    assert!(young.exists(), "a young unreferenced file was deleted");
    assert!(nested_file.exists(), "a nested table's file was deleted");
    let whys: Vec<&str> = v["plan"]["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["why"].as_str().unwrap())
        .collect();
    assert!(
        whys.contains(&"young") && whys.contains(&"another_table"),
        "{whys:?}"
    );
    assert_eq!(v["outcome"]["snapshots_expired"], serde_json::json!([]));
    let after = t.read();
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.operations, before.operations);
}

#[test]
fn vacuum_of_an_iceberg_table_without_its_catalog_says_how_to_name_it() {
    let t = Table::new(1);
    let before = t.files();
    let o = lakehealth_cmd()
        .arg("vacuum")
        .arg(&t.table)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("--catalog") && e.contains("lakehealth vacuum"),
        "{e}"
    );
    assert_eq!(t.files(), before);
}

/// Vacuum with no retention, six times over, while a pyiceberg appender commits in a loop into the
/// partition the compaction rewrote: every row the appender committed is read back by
/// pyiceberg (a scan opens every live file: a deleted one fails it), every live file is on
/// disk, and the expiry commits either landed on the appender's latest snapshot or retried.
#[test]
fn vacuum_beside_a_pyiceberg_appender_loses_no_committed_row_and_no_live_file() {
    let t = Table::new(6);
    let uri = t.catalog_uri();
    let o = lakehealth_cmd()
        .arg("compact")
        .arg(&t.table)
        .args(["--catalog", &uri])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let before = t.read();
    let appender = t.appender_pausing(300_000, 0.05);
    t.wait_appender_ready();
    let unix = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let mut deleted = 0;
    let mut windows = Vec::new();
    for _ in 0..6 {
        let start = unix();
        let v = vacuum_json(
            &t,
            &["--retention", "0s", "--allow-short-retention", "--json"],
        );
        windows.push((start, unix()));
        deleted += v["outcome"]["deleted"].as_array().unwrap().len();
    }
    let (committed, times) = t.stop_appender_timed(appender);
    assert!(
        deleted > 0,
        "the vacuums deleted nothing: the test proves nothing"
    );
    let during = times
        .iter()
        .filter(|&&c| windows.iter().any(|&(s, e)| s <= c && c <= e))
        .count();
    eprintln!(
        "{during} of {} appends landed while a vacuum ran",
        times.len()
    );
    assert!(
        during > 0,
        "no append landed while a vacuum ran: {times:?} {windows:?}"
    );
    let after = t.read();
    let mut want = ids(&before.rows);
    want.extend(committed);
    want.sort();
    assert_eq!(ids(&after.rows), want, "every committed row, once");
    let on_disk: BTreeSet<String> = t.files().into_iter().collect();
    for f in live_files(&t) {
        assert!(on_disk.contains(&f), "live file {f} was deleted");
    }
}

fn watch_maintenance(t: &Table, policy: &str) -> Vec<Value> {
    super::iceberg_compact::watch_once(t, policy, "maintenance")
}

/// The janitor vacuums an Iceberg table by its policy's `vacuum_every`, through the catalog,
/// with the table's retention: a month-old orphan goes, a young one and every live file stay,
/// pyiceberg reads the same rows; the next run (its history says when) has nothing due, and a
/// policy retention below the table's is refused, deleting nothing.
#[test]
fn the_janitor_vacuums_an_iceberg_table_by_policy_with_the_tables_retention() {
    let t = Table::new(3);
    let before = t.read();
    let some_live = live_files(&t).into_iter().next().unwrap();
    let folder = t
        .table
        .join(std::path::Path::new(&some_live).parent().unwrap());
    let old = folder.join("00000-0-crashed-writer.parquet");
    std::fs::write(&old, b"PAR1 left by a crashed writer").unwrap();
    age(&old, 30);
    let young = folder.join("00000-0-in-flight.parquet");
    std::fs::write(&young, b"PAR1 a writer is about to commit").unwrap();
    let quiet = "min_small_files = 100000\n";

    let lines = watch_maintenance(&t, &format!("{quiet}vacuum_every = \"1h\"\n"));
    assert!(
        lines.iter().all(|l| l["action"] == "vacuum"),
        "an Iceberg table has no checkpoint: {lines:?}"
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    let v = &lines[0];
    assert_eq!(v["decision"], "due");
    assert_eq!(v["reason"], "due: no vacuum seen yet (vacuum_every 60 min)");
    assert_eq!(v["outcome"], "vacuumed", "{v}");
    assert_eq!(v["files_deleted"], 1, "{v}");
    assert!(!old.exists() && young.exists());
    let on_disk: BTreeSet<String> = t.files().into_iter().collect();
    for f in live_files(&t) {
        assert!(on_disk.contains(&f), "live file {f} was deleted");
    }
    assert_eq!(t.read().rows, before.rows);

    let again = watch_maintenance(&t, &format!("{quiet}vacuum_every = \"1h\"\n"));
    assert_eq!(again[0]["decision"], "not_due", "{again:?}");

    // A fresh history: the vacuum is due again.
    std::fs::remove_file(t.dir.path().join("history.jsonl")).unwrap();
    let files = t.files();
    let short = watch_maintenance(
        &t,
        &format!("{quiet}vacuum_every = \"1h\"\nvacuum_retention = \"1h\"\n"),
    );
    let v = &short[0];
    assert_eq!(v["outcome"], "failed", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("history.expire.max-snapshot-age-ms"),
        "{v}"
    );
    assert_eq!(t.files(), files, "nothing was deleted");
}
