//! A compaction killed at each step of its commit (by a failpoint, `LAKEHEALTH_FAILPOINT`, not
//! by timing) leaves the table reading exactly the rows it had (Python deltalake reads), and the
//! next compaction settles what the killed one left: uncommitted outputs deleted, committed ones
//! kept, its ledger gone, every row still exact.

use std::path::Path;

use crate::support::common::*;

/// The ledgers of local jobs on the table.
fn ledgers(table: &Path) -> Vec<String> {
    let dir = table.join("_lakehealth/local-jobs");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ledger"))
        .collect()
}

/// `lakehealth compact` stopped dead at `failpoint`.
fn killed_at(table: &Path, failpoint: &str) {
    let o = lakehealth_cmd()
        .args(["compact", table.to_str().unwrap()])
        .env(lakehealth::engine::failpoint::ENV, failpoint)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(lakehealth::engine::failpoint::EXIT_CODE),
        "{failpoint}: the failpoint was not reached: {}",
        stderr(&o)
    );
}

/// The next compaction, its JSON summary.
fn next_run(table: &Path) -> serde_json::Value {
    let o = lakehealth(&["compact", table.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn optimize_commits(table: &Path) -> usize {
    commits_from(table, 0)
        .iter()
        .filter(|c| {
            c.iter()
                .any(|a| a["commitInfo"]["operation"].as_str() == Some("OPTIMIZE"))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_its_ledger_lists_an_output_not_yet_written() {
    let (d, _, rows) = seeded(30).await;
    killed_at(d.path(), "ledger-written");
    assert_eq!(ledgers(d.path()).len(), 1, "the ledger landed first");
    assert!(leftover_files(d.path()).is_empty(), "no output was created");
    assert_eq!(optimize_commits(d.path()), 0);
    assert_exact(d.path(), rows);

    let s = next_run(d.path());
    assert_eq!(s["swept"]["dead_jobs"].as_array().unwrap().len(), 1, "{s}");
    assert!(ledgers(d.path()).is_empty(), "{:?}", ledgers(d.path()));
    assert!(leftover_files(d.path()).is_empty());
    assert_eq!(optimize_commits(d.path()), 1);
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_its_outputs_are_written_the_next_run_deletes_them() {
    let (d, _, rows) = seeded(30).await;
    killed_at(d.path(), "outputs-written");
    let mut left = leftover_files(d.path());
    left.sort();
    assert!(!left.is_empty(), "the outputs were written");
    assert_eq!(optimize_commits(d.path()), 0, "nothing was committed");
    assert_exact(d.path(), rows);

    let s = next_run(d.path());
    let mut swept: Vec<String> = s["swept"]["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| decoded(p.as_str().unwrap()))
        .collect();
    swept.sort();
    assert_eq!(swept, left, "exactly the killed job's outputs are deleted");
    assert!(leftover_files(d.path()).is_empty());
    assert!(ledgers(d.path()).is_empty());
    assert_eq!(optimize_commits(d.path()), 1);
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_its_log_entry_the_commit_stands_and_its_outputs_are_kept() {
    let (d, _, rows) = seeded(30).await;
    killed_at(d.path(), "log-entry-written");
    assert_eq!(optimize_commits(d.path()), 1, "the log entry landed");
    assert_exact(d.path(), rows);
    let committed = read_back(d.path().to_str().unwrap(), None);

    let s = next_run(d.path());
    assert!(s["swept"]["deleted"].as_array().unwrap().is_empty(), "{s}");
    assert!(ledgers(d.path()).is_empty());
    // The killed job's committed outputs are still there and still read.
    for p in &committed.paths {
        assert!(d.path().join(decoded(p)).exists(), "{p} was deleted");
    }
    assert!(leftover_files(d.path()).is_empty());
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_ledger_entry_outside_the_table_is_refused_and_never_deleted() {
    let (d, _, rows) = seeded(10).await;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.parquet");
    std::fs::write(&victim, b"another table's file").unwrap();
    let log_file = "_delta_log/00000000000000000000.json";
    let dir = d.path().join("_lakehealth/local-jobs");
    std::fs::create_dir_all(&dir).unwrap();
    // A table nested in this one's folder, with a file of its own.
    let nested = d.path().join("nested");
    std::fs::create_dir_all(nested.join("_delta_log")).unwrap();
    std::fs::write(nested.join("_delta_log/00000000000000000000.json"), b"{}").unwrap();
    std::fs::write(nested.join("part-0.parquet"), b"the nested table's data").unwrap();
    let entries = serde_json::json!([
        "nested/part-0.parquet",
        victim.to_str().unwrap(),
        format!(
            "../{}/victim.parquet",
            outside.path().file_name().unwrap().to_str().unwrap()
        ),
        log_file,
    ]);
    // A dead job of another host, a day and more ago; sealed with the installation key, so
    // the checks behind the seal are what refuse each entry.
    let ledger = dir.join("0badc0de.1@some-other-host.ledger");
    crate::support::sealed::write_sealed(
        d.path(),
        "_lakehealth/local-jobs/0badc0de.1@some-other-host.ledger",
        lakehealth::engine::sealed::RecordKind::OutputLedger,
        &serde_json::json!({"job": "0badc0de", "outputs": entries}),
    );
    std::fs::File::options()
        .write(true)
        .open(&ledger)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400))
        .unwrap();

    let s = next_run(d.path());
    assert_eq!(s["swept"]["refused"].as_array().unwrap().len(), 4, "{s}");
    assert!(
        nested.join("part-0.parquet").exists(),
        "a nested table's file was deleted"
    );
    assert!(s["swept"]["deleted"].as_array().unwrap().is_empty(), "{s}");
    assert!(victim.exists(), "a file outside the table was deleted");
    assert!(d.path().join(log_file).exists(), "the log was touched");
    assert_exact(d.path(), rows);
}
