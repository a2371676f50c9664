//! Iceberg compaction through the table's catalog (SQL on sqlite, and REST through a loopback
//! shim over it), proven by pyiceberg 0.12 on the same catalog (tests/py/iceberg_table.py): the
//! table pyiceberg wrote with many small appends (tests/py/make_iceberg.py) reads back with
//! exactly the same rows, through a full scan and a scan pruned by the new files' bounds, with
//! `replace` snapshots, DELETED entries and far fewer data files; a pyiceberg append or delete
//! racing a bin's commit is never lost, doubled or undone; a SIGKILL leaves the table as of its
//! last committed bin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use lakehealth::engine::iceberg::compact::job::{IceRequest, compact_iceberg};
use serde::Deserialize;
use tempfile::TempDir;

use crate::support::common::*;

#[derive(Debug, Deserialize)]
pub(crate) struct Read {
    pub(crate) rows: Vec<(i64, Option<String>, Option<String>)>,
    pub(crate) rows_id_lt_40: Vec<(i64, Option<String>, Option<String>)>,
    pub(crate) data_files: usize,
    pub(crate) operations: Vec<String>,
    pub(crate) current: BTreeMap<String, String>,
    pub(crate) entries: BTreeMap<String, u64>,
    /// (file path, status, snapshot id, data sequence number, file sequence number)
    pub(crate) entry_list: Vec<(String, i64, i64, i64, i64)>,
    pub(crate) sequence_number: i64,
    pub(crate) snapshot_id: i64,
    pub(crate) metadata_location: String,
    /// Manifests of the current snapshot.
    pub(crate) manifests: usize,
}

pub(crate) struct Table {
    pub(crate) dir: TempDir,
    pub(crate) table: PathBuf,
    pub(crate) catalog_dir: PathBuf,
    /// Another SQL catalog than sqlite in `catalog_dir` (a SQLAlchemy URI both sides take).
    pub(crate) catalog: Option<String>,
}

impl Table {
    /// db.events written by pyiceberg: `appends` small appends, then two deletes.
    pub(crate) fn new(appends: u32) -> Self {
        Self::in_catalog(appends, None)
    }

    fn in_catalog(appends: u32, catalog: Option<String>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("events");
        Self::at(dir, table, appends, catalog)
    }

    /// A table at `table` (anywhere, e.g. inside another table's folder), its catalog in `dir`.
    fn at(dir: TempDir, table: PathBuf, appends: u32, catalog: Option<String>) -> Self {
        let catalog_dir = dir.path().join("catalog");
        let mut c = py_script("make_iceberg.py");
        c.arg(&table)
            .arg("--catalog-dir")
            .arg(&catalog_dir)
            .args(["--appends", &appends.to_string()]);
        if let Some(uri) = &catalog {
            c.args(["--catalog-uri", uri]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        Self {
            dir,
            table,
            catalog_dir,
            catalog,
        }
    }

    pub(crate) fn catalog_uri(&self) -> String {
        match &self.catalog {
            Some(uri) => uri.clone(),
            None => format!(
                "sqlite:///{}",
                self.catalog_dir.join("catalog.db").display()
            ),
        }
    }

    pub(crate) fn py(&self, args: &[&str]) -> serde_json::Value {
        let mut c = py_script("iceberg_table.py");
        c.args(args).arg("--catalog-dir").arg(&self.catalog_dir);
        if let Some(uri) = &self.catalog {
            c.args(["--catalog-uri", uri]);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    pub(crate) fn read(&self) -> Read {
        serde_json::from_value(self.py(&["read"])).unwrap()
    }

    fn lakehealth(&self, extra: &[&str]) -> std::process::Output {
        lakehealth_cmd()
            .arg("compact")
            .arg(&self.table)
            .args(extra)
            .output()
            .unwrap()
    }

    /// Every file under the table's folder (relative paths).
    pub(crate) fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.table, &self.table, &mut out);
        out.sort();
        out
    }

    /// pyiceberg appending 3 rows per commit from `first_id` in a loop, until `stop_appender`.
    fn appender(&self, first_id: i64) -> std::process::Child {
        self.appender_pausing(first_id, 0.0)
    }

    /// As `appender`, waiting `pause` seconds between commits.
    pub(crate) fn appender_pausing(&self, first_id: i64, pause: f64) -> std::process::Child {
        let mut c = py_script("iceberg_table.py");
        if let Some(uri) = &self.catalog {
            c.args(["--catalog-uri", uri]);
        }
        c.args(["append", "--first-id", &first_id.to_string(), "--rows", "3"])
            .args(["--pause", &pause.to_string()])
            .arg("--ready")
            .arg(self.dir.path().join("appender-ready"))
            .arg("--loop-until")
            .arg(self.dir.path().join("stop"))
            .arg("--catalog-dir")
            .arg(&self.catalog_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Stops the appender; the ids of its commits that succeeded.
    pub(crate) fn stop_appender(&self, appender: std::process::Child) -> Vec<i64> {
        self.stop_appender_timed(appender).0
    }

    /// Waits (up to a minute) until the appender has committed once.
    pub(crate) fn wait_appender_ready(&self) {
        let ready = self.dir.path().join("appender-ready");
        crate::support::wait::wait_until(
            std::time::Duration::from_secs(60),
            "the appender's first commit",
            || ready.exists(),
        );
    }

    /// Stops the appender; the ids of its commits that succeeded, and the Unix time (s) each
    /// commit succeeded.
    pub(crate) fn stop_appender_timed(
        &self,
        appender: std::process::Child,
    ) -> (Vec<i64>, Vec<f64>) {
        std::fs::write(self.dir.path().join("stop"), "").unwrap();
        let o = appender.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            serde_json::from_value(v["committed"].clone()).unwrap(),
            serde_json::from_value(v["commit_times"].clone()).unwrap(),
        )
    }

    fn request(&self) -> IceRequest {
        IceRequest {
            catalog: self.catalog_uri(),
            max_retries: 3,
            ..Default::default()
        }
    }
}

pub(crate) fn ids(rows: &[(i64, Option<String>, Option<String>)]) -> Vec<i64> {
    rows.iter().map(|r| r.0).collect()
}

#[test]
fn pyiceberg_reads_the_same_rows_after_lakehealth_compacts_through_the_sqlite_catalog() {
    let t = Table::new(12);
    let before = t.read();
    let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let commits = summary["commits"].as_array().unwrap();
    assert!(commits.len() >= 3, "{summary:#}");
    assert!(err.contains("committed snapshot"), "{err}");

    let after = t.read();
    // Same rows, value for value, through a full scan and through one pruned by the outputs'
    // partition values and column bounds.
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.rows_id_lt_40, before.rows_id_lt_40);
    assert!(!after.rows_id_lt_40.is_empty());
    // One replace snapshot per bin, each with the summary pyiceberg's own commits carry.
    let replaces = after.operations.iter().filter(|o| *o == "replace").count();
    assert_eq!(replaces, commits.len());
    assert_eq!(
        after.operations.len(),
        before.operations.len() + commits.len()
    );
    assert_eq!(after.current["operation"], "replace");
    assert_eq!(
        after.current["total-records"],
        before.current["total-records"]
    );
    assert_eq!(
        after.current["total-data-files"],
        after.data_files.to_string()
    );
    // The last bin's replaced files are DELETED entries of the current snapshot.
    assert!(
        after.entries.get("2").copied().unwrap_or(0) > 0,
        "{:?}",
        after.entries
    );
    let removed: u64 = commits
        .iter()
        .map(|c| c["files_removed"].as_u64().unwrap())
        .sum();
    let added: u64 = commits
        .iter()
        .map(|c| c["files_added"].as_u64().unwrap())
        .sum();
    assert_eq!(
        after.data_files as u64,
        before.data_files as u64 - removed + added
    );
    assert!(
        after.data_files * 3 <= before.data_files,
        "{} -> {}",
        before.data_files,
        after.data_files
    );
    // Every bin's outputs hold exactly its inputs' rows.
    for c in commits {
        assert_eq!(c["rows"], c["fingerprint"]["rows"]);
    }
    assert_ne!(after.metadata_location, before.metadata_location);
    // As pyiceberg reads the entries: files kept (EXISTING) and replaced (DELETED) keep the
    // sequence numbers they were written with; the last replace's outputs (ADDED) inherit its
    // sequence number, and its DELETED entries carry its snapshot id.
    let was: BTreeMap<&str, (i64, i64)> = before
        .entry_list
        .iter()
        .filter(|e| e.1 != 2)
        .map(|e| (e.0.as_str(), (e.3, e.4)))
        .collect();
    let (mut kept, mut added_last) = (0, 0);
    for (path, status, snapshot, seq, file_seq) in &after.entry_list {
        if *status == 1 && *snapshot == after.snapshot_id {
            assert_eq!(
                (*seq, *file_seq),
                (after.sequence_number, after.sequence_number)
            );
            added_last += 1;
        } else if let Some(&(s, f)) = was.get(path.as_str()) {
            assert_eq!((*seq, *file_seq), (s, f), "{path} (status {status})");
            kept += 1;
        }
    }
    assert!(kept > 0 && added_last > 0, "{:?}", after.entry_list);
    let last_deleted: Vec<_> = after
        .entry_list
        .iter()
        .filter(|e| e.1 == 2 && e.2 == after.snapshot_id)
        .collect();
    assert_eq!(
        last_deleted.len() as u64,
        commits.last().unwrap()["files_removed"].as_u64().unwrap()
    );

    // lakehealth's own report reads the new snapshot as pyiceberg does.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt
        .block_on(lakehealth::engine::iceberg::load_iceberg(
            &loc(&t.table),
            &opts(),
            &|_| {},
        ))
        .unwrap();
    assert_eq!(r.stats.files, after.data_files as u64);

    // Compacting again finds nothing to do and changes nothing.
    let o = t.lakehealth(&["--catalog", &t.catalog_uri()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(t.read().metadata_location, after.metadata_location);
}

#[test]
fn compact_of_an_iceberg_table_names_the_catalog_and_a_dry_run_changes_nothing() {
    let t = Table::new(6);
    let files = t.files();
    let before = t.read();
    let o = t.lakehealth(&[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("an Iceberg table is committed through its catalog"),
        "{err}"
    );
    assert!(err.contains("--catalog sqlite:///"), "{err}");

    let o = t.lakehealth(&[
        "--catalog",
        &t.catalog_uri(),
        "--table",
        "db.events",
        "--dry-run",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !plan["plan"]["bins"].as_array().unwrap().is_empty(),
        "{plan:#}"
    );
    assert!(plan["commits"].as_array().unwrap().is_empty());
    assert_eq!(t.files(), files);
    assert_eq!(t.read().metadata_location, before.metadata_location);

    // A catalog without the table, and a table name the catalog lacks, are errors.
    let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--table", "db.nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no Iceberg table db.nope"));
}

/// Runs a pyiceberg command from the commit hook (blocking: the hook is synchronous).
fn hook_py(catalog_dir: &Path, args: Vec<String>) -> serde_json::Value {
    let o = py_script("iceberg_table.py")
        .args(&args)
        .arg("--catalog-dir")
        .arg(catalog_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A commit hook: before the first bin's first attempt, pyiceberg appends `rows` rows from
/// `first_id` (once), so that attempt loses the race; the ids it committed go to `got`.
fn append_before_the_first_commit(
    dir: PathBuf,
    first_id: i64,
    rows: u32,
    got: Arc<std::sync::Mutex<Vec<i64>>>,
) -> lakehealth::engine::iceberg::compact::job::BeforeCommit {
    Arc::new(move |_bin, attempt| {
        if attempt == 0 && got.lock().unwrap().is_empty() {
            let v = hook_py(
                &dir,
                vec![
                    "append".into(),
                    "--first-id".into(),
                    first_id.to_string(),
                    "--rows".into(),
                    rows.to_string(),
                ],
            );
            let ids: Vec<i64> = serde_json::from_value(v["committed"].clone()).unwrap();
            got.lock().unwrap().extend(ids);
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pyiceberg_append_that_wins_the_race_is_kept_and_the_bin_commits_on_top() {
    let t = Table::new(8);
    let before = t.read();
    let appended = Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let (dir, got) = (t.catalog_dir.clone(), appended.clone());
    let mut req = t.request();
    // Only the first bin's first attempt races: its commit must lose, reload and retry.
    req.before_commit = Some(append_before_the_first_commit(dir, 100000, 7, got));
    let s = compact_iceberg(&loc(&t.table), &req, &opts(), &|_| {})
        .await
        .unwrap();
    assert!(s.failures.is_empty() && s.conflicts.is_empty(), "{s:?}");
    assert_eq!(s.commits[0].retries, 1, "{s:?}");
    assert!(s.commits.iter().skip(1).all(|c| c.retries == 0));
    let after = t.read();
    let mut want = ids(&before.rows);
    want.extend(appended.lock().unwrap().iter());
    want.sort();
    assert_eq!(ids(&after.rows), want);
    // The append is a snapshot between the table's old history and the replaces.
    let n = before.operations.len();
    assert_eq!(after.operations[n], "append");
    assert!(after.operations[n + 1..].iter().all(|o| o == "replace"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pyiceberg_delete_in_the_partition_being_compacted_stops_that_bin_and_nothing_comes_back()
{
    let t = Table::new(8);
    let before = t.read();
    let deleted = Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let (dir, got) = (t.catalog_dir.clone(), deleted.clone());
    let victim = Arc::new(std::sync::Mutex::new(String::new()));
    let v2 = victim.clone();
    let mut req = t.request();
    // The first bin of a named category loses odd ids to a copy-on-write delete before it commits.
    req.before_commit = Some(Arc::new(move |bin, attempt| {
        if attempt == 0 && v2.lock().unwrap().is_empty() && !bin.label.contains("=null") {
            *v2.lock().unwrap() = bin.label.clone();
            let parts: BTreeMap<&str, &str> = bin
                .label
                .split('/')
                .filter_map(|kv| kv.split_once('='))
                .collect();
            let v = hook_py(
                &dir,
                vec![
                    "delete".into(),
                    "--category".into(),
                    parts["category"].into(),
                    "--day".into(),
                    parts["ts_day"].into(),
                ],
            );
            let ids: Vec<i64> = serde_json::from_value(v["deleted"].clone()).unwrap();
            got.lock().unwrap().extend(ids);
        }
    }));
    let s = compact_iceberg(&loc(&t.table), &req, &opts(), &|_| {})
        .await
        .unwrap();
    let victim = victim.lock().unwrap().clone();
    assert!(!deleted.lock().unwrap().is_empty());
    assert_eq!(s.conflicts.len(), 1, "{s:?}");
    assert_eq!(s.conflicts[0].partition, victim);
    assert!(
        s.conflicts[0].reason.contains("no longer live"),
        "{:?}",
        s.conflicts[0]
    );
    assert!(s.conflicts[0].outputs_left.is_empty());
    assert!(s.commits.iter().all(|c| c.partition != victim));
    assert!(!s.commits.is_empty());
    let after = t.read();
    let gone: std::collections::HashSet<i64> = deleted.lock().unwrap().iter().copied().collect();
    let want: Vec<i64> = ids(&before.rows)
        .into_iter()
        .filter(|i| !gone.contains(i))
        .collect();
    assert_eq!(ids(&after.rows), want);
    // The conflicted bin's outputs and metadata were deleted: every lakehealth file left is
    // referenced by a committed snapshot (one metadata file per commit).
    let ours: Vec<String> = t
        .files()
        .into_iter()
        .filter(|f| f.contains("-lakehealth-"))
        .collect();
    let outputs: usize = s.commits.iter().map(|c| c.files_added as usize).sum();
    assert_eq!(ours.len(), outputs, "{ours:?}");
}

#[test]
fn a_pyiceberg_appender_committing_in_a_loop_during_compaction_loses_and_doubles_no_row() {
    compact_beside_an_appender(&Table::new(12));
}

/// The same commit on PostgreSQL: pyiceberg and lakehealth share a catalog database, an
/// appender races every bin's compare-and-swap, and the password in the URI never shows.
#[test]
fn on_a_postgresql_catalog_an_appender_racing_the_compaction_loses_and_doubles_no_row() {
    let pg = crate::support::harness::Postgres::start();
    let uri = pg.uri("pw-never-shown");
    let t = Table::in_catalog(12, Some(uri.clone()));
    let o = compact_beside_an_appender(&t);
    for out in [&o.stdout, &o.stderr] {
        let text = String::from_utf8_lossy(out);
        assert!(!text.contains("pw-never-shown"), "{text}");
    }
    // A wrong database is named, without the password.
    let wrong = uri.replace("/postgres", "/nope");
    let o = t.lakehealth(&["--catalog", &wrong]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("nope") && !err.contains("pw-never-shown"),
        "{err}"
    );
}

/// The same race with the rows z-ordered: every file of the appender's partition is rewritten
/// through the sort while it commits there.
#[test]
fn a_zorder_compaction_racing_a_pyiceberg_appender_loses_doubles_and_alters_no_row() {
    let o = compact_beside_an_appender_with(&Table::new(12), &["--zorder", "id,ts"]);
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        summary["plan"]["order"]["order"]["kind"], "z_order",
        "{summary:#}"
    );
}

fn compact_beside_an_appender(t: &Table) -> std::process::Output {
    compact_beside_an_appender_with(t, &[])
}

/// A pyiceberg appender commits in a loop while lakehealth compacts `t` (with `extra` flags):
/// every row exactly once (read by pyiceberg), every row there before with the same values,
/// and at least one `replace` snapshot. Returns lakehealth's output.
fn compact_beside_an_appender_with(t: &Table, extra: &[&str]) -> std::process::Output {
    let before = t.read();
    let appender = t.appender(200000);
    let mut args = vec!["--catalog".to_string(), t.catalog_uri(), "--json".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = t.lakehealth(&args);
    let committed = t.stop_appender(appender);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !summary["commits"].as_array().unwrap().is_empty(),
        "{summary:#}"
    );
    assert!(!committed.is_empty());
    let after = t.read();
    let mut want = ids(&before.rows);
    want.extend(committed);
    want.sort();
    assert_eq!(ids(&after.rows), want, "every row exactly once");
    let old: std::collections::HashSet<i64> = ids(&before.rows).into_iter().collect();
    let kept: Vec<_> = after
        .rows
        .iter()
        .filter(|r| old.contains(&r.0))
        .cloned()
        .collect();
    assert_eq!(kept, before.rows, "the rows there before, value for value");
    assert!(after.operations.iter().any(|o| o == "replace"));
    o
}

/// A SIGKILL leaves the table as of its last committed bin; the next job finds the killed one's
/// record, deletes the outputs it wrote but never committed, keeps every committed one, and
/// finishes the compaction.
#[test]
fn a_sigkilled_compaction_leaves_the_table_as_of_its_last_committed_bin_and_a_rerun_finishes() {
    use std::io::{BufRead, BufReader};
    let t = Table::new(12);
    let before = t.read();
    let mut child = lakehealth_cmd()
        .arg("compact")
        .arg(&t.table)
        .args(["--catalog", &t.catalog_uri()])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    // Killed right after its first commit, while the next bin is being rewritten.
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push(l.clone());
        if l.starts_with("committed snapshot") {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        seen.iter().any(|l| l.starts_with("committed snapshot")),
        "{seen:?}"
    );
    let mid = t.read();
    assert_eq!(mid.rows, before.rows);
    let replaces = mid.operations.iter().filter(|o| *o == "replace").count();
    assert!((1..5).contains(&replaces), "{:?}", mid.operations);
    // The killed job's record is there; plant what a kill mid-rewrite leaves: an output of
    // that job, written, never committed.
    let records: Vec<String> = t
        .files()
        .into_iter()
        .filter(|f| f.starts_with("_lakehealth/iceberg-jobs/") && f.ends_with(".json"))
        .collect();
    assert_eq!(records.len(), 1, "{:?}", t.files());
    let job = records[0]
        .trim_start_matches("_lakehealth/iceberg-jobs/")
        .trim_end_matches(".json")
        .to_string();
    let some_input = t
        .files()
        .into_iter()
        .find(|f| f.starts_with("data/") && f.ends_with(".parquet") && !f.contains("-lakehealth-"))
        .unwrap();
    let planted = t.table.join(
        Path::new(&some_input).with_file_name(format!("00009-lakehealth-{job}-deadbeef.parquet")),
    );
    std::fs::copy(t.table.join(&some_input), &planted).unwrap();
    // A job lists each output in its record before creating it: so was this one.
    use lakehealth::engine::sealed::RecordKind;
    let mut record =
        crate::support::sealed::open_record(&t.table, &records[0], RecordKind::IcebergJob);
    record["outputs"]
        .as_array_mut()
        .unwrap()
        .push(planted.to_str().unwrap().into());
    crate::support::sealed::write_sealed(&t.table, &records[0], RecordKind::IcebergJob, &record);
    // Its committed outputs, as it said ("... -12 +1 files ..."); a bin it was writing when
    // killed may have left more files on disk, which are not committed.
    let committed_first: usize = seen
        .iter()
        .filter(|l| l.starts_with("committed snapshot"))
        .map(|l| {
            let plus = l.split(" +").nth(1).unwrap();
            plus.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    assert!(committed_first >= 1, "{seen:?}");

    // A second run sweeps the leftovers and compacts what is left; the rows never change.
    let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 killed job(s) left"), "{err}");
    assert!(!planted.exists(), "the uncommitted output is deleted");
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["sweep"]["dead_jobs"], serde_json::json!([job]));
    let after = t.read();
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.data_files, 5);
    // Every lakehealth output left is a committed one (each snapshot's added files), and no
    // job record remains.
    let ours = t
        .files()
        .into_iter()
        .filter(|f| f.contains("-lakehealth-") && f.ends_with(".parquet"))
        .count();
    let second: u64 = summary["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["files_added"].as_u64().unwrap())
        .sum();
    assert_eq!(ours as u64, committed_first as u64 + second);
    assert!(
        !t.files()
            .iter()
            .any(|f| f.starts_with("_lakehealth/iceberg-jobs/")),
        "{:?}",
        t.files()
    );
}

/// The loopback REST shim (tests/py/iceberg_rest_shim.py) over the table's SQL catalog.
struct RestShim {
    child: std::process::Child,
    uri: String,
}

impl RestShim {
    fn start(catalog_dir: &Path) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = py_script("iceberg_rest_shim.py")
            .arg("--catalog-dir")
            .arg(catalog_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let uri = format!("http://127.0.0.1:{}", port.trim());
        Self { child, uri }
    }
}

impl Drop for RestShim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rest_catalog_commit_is_checked_by_the_catalog_and_a_409_is_retried_on_the_new_table() {
    let t = Table::new(8);
    let before = t.read();
    let shim = RestShim::start(&t.catalog_dir);
    let appended = Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let (dir, got) = (t.catalog_dir.clone(), appended.clone());
    let mut req = t.request();
    req.catalog = shim.uri.clone();
    // The first bin's first attempt loses to a pyiceberg append: the catalog answers 409
    // (assert-ref-snapshot-id fails), lakehealth reloads and commits on top.
    req.before_commit = Some(append_before_the_first_commit(dir, 300000, 4, got));
    let s = compact_iceberg(&loc(&t.table), &req, &opts(), &|_| {})
        .await
        .unwrap();
    assert!(s.failures.is_empty() && s.conflicts.is_empty(), "{s:?}");
    assert_eq!(s.commits[0].retries, 1, "{s:?}");
    let after = t.read();
    let mut want = ids(&before.rows);
    want.extend(appended.lock().unwrap().iter());
    want.sort();
    assert_eq!(ids(&after.rows), want);
    assert_eq!(after.rows_id_lt_40, before.rows_id_lt_40);
    let n = before.operations.len();
    assert_eq!(after.operations[n], "append");
    assert_eq!(after.operations[n + 1..].len(), s.commits.len());
    assert!(after.operations[n + 1..].iter().all(|o| o == "replace"));
    // The catalog wrote the metadata files: the one it names is the last commit's.
    assert_eq!(
        s.commits.last().unwrap().metadata_location,
        after.metadata_location
    );

    // Through the CLI, the table found by its location in the REST catalog.
    let t2 = Table::new(6);
    let shim2 = RestShim::start(&t2.catalog_dir);
    let before2 = t2.read();
    let o = t2.lakehealth(&["--catalog", &shim2.uri]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after2 = t2.read();
    assert_eq!(after2.rows, before2.rows);
    assert!(after2.data_files < before2.data_files);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_c_on_an_iceberg_table_previews_then_commits_through_the_catalog() {
    use crossterm::event::KeyCode;
    use lakehealth::tui::app::Modal;
    let t = Table::new(6);
    let before = t.read();
    // Without a catalog, `c` says how to name one.
    let mut d = crate::support::tui_driver::Driven::new(loc(&t.table).display(), (140, 40))
        .open()
        .await;
    d.keys(&[KeyCode::Char('c')]).await;
    let e = d.app.error().map(str::to_string).unwrap_or_default();
    assert!(e.contains("--catalog URI"), "{e}");
    // The TUI's janitor is Delta's: `a` says where an Iceberg table's janitor runs.
    d.keys(&[KeyCode::Esc, KeyCode::Char('a')]).await;
    let e = d.app.error().map(str::to_string).unwrap_or_default();
    assert!(e.contains("lakehealth watch TABLE --catalog URI"), "{e}");
    assert!(!d.app.janitor.is_on());

    // With one: the plan of the selected partition, then, confirmed, its commit.
    let mut d = crate::support::tui_driver::Driven::new(loc(&t.table).display(), (140, 40));
    d.app.iceberg_catalog = Some(t.catalog_uri());
    let mut d = d.open().await;
    d.keys(&[KeyCode::Char('c')]).await;
    d.until(
        "the plan",
        |a| matches!(a.modals.modal(), Some(Modal::Iceberg(x)) if x.result.is_some()),
    )
    .await;
    let planned = match d.app.modals.modal() {
        Some(Modal::Iceberg(x)) => match &x.result {
            Some(Ok(s)) => s.plan.bins.len(),
            other => panic!("{other:?}"),
        },
        _ => unreachable!(),
    };
    assert_eq!(planned, 1, "one partition selected: one bin");
    assert!(d.screen().contains("Enter / y: compact"), "{}", d.screen());
    assert_eq!(
        t.read().metadata_location,
        before.metadata_location,
        "a preview changes nothing"
    );
    d.keys(&[KeyCode::Enter]).await;
    d.until(
        "the outcome",
        |a| matches!(a.modals.modal(), Some(Modal::Iceberg(x)) if x.outcome.is_some()),
    )
    .await;
    assert!(d.screen().contains("done: -"), "{}", d.screen());
    let after = t.read();
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.operations.last().map(String::as_str), Some("replace"));
    assert_eq!(after.operations.len(), before.operations.len() + 1);
}

/// The janitor on an Iceberg table, through the catalog its policy names, while pyiceberg
/// appends in a loop: partitions are decided due with their reason, compacted by `replace`
/// snapshots through the catalog, and every row is read back by pyiceberg exactly once.
#[test]
fn watch_compacts_an_iceberg_table_through_the_policys_catalog_beside_a_pyiceberg_appender() {
    let t = Table::new(12);
    let before = t.read();
    let policy = t.dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "min_small_files = 2\ninterval = \"1s\"\niceberg_catalog = \"{}\"\n",
            t.catalog_uri()
        ),
    )
    .unwrap();
    let history = t.dir.path().join("history.jsonl");
    let appender = t.appender(300000);
    let out = t.dir.path().join("watch.jsonl");
    let watch = lakehealth_cmd()
        .arg("watch")
        .arg(&t.table)
        .arg("--policy")
        .arg(&policy)
        .arg("--history")
        .arg(&history)
        .arg("--json")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until a job compacted beside the appender and two more cycles ran; stopped either way,
    // the assertions below say whether they came.
    let mut compacted_at_cycle = None;
    crate::support::eventually(std::time::Duration::from_secs(180), || {
        let lines = json_lines(&std::fs::read_to_string(&out).unwrap_or_default());
        let cycles = lines.iter().filter(|l| l["type"] == "cycle").count();
        if compacted_at_cycle.is_none()
            && lines
                .iter()
                .any(|l| l["type"] == "result" && l["outcome"] == "compacted")
        {
            compacted_at_cycle = Some(cycles);
        }
        compacted_at_cycle.is_some_and(|c| cycles >= c + 2)
    });
    terminate(&watch);
    let watched = watch.wait_with_output().unwrap();
    let committed = t.stop_appender(appender);
    let err = stderr(&watched);
    assert!(watched.status.success(), "{err}");
    let lines = json_lines(&std::fs::read_to_string(&out).unwrap());
    assert!(compacted_at_cycle.is_some(), "no job compacted: {err}");
    let due = lines
        .iter()
        .find(|l| l["type"] == "decision" && l["decision"] == "due")
        .unwrap_or_else(|| panic!("no due decision: {err}"));
    assert!(
        due["reason"].as_str().unwrap().starts_with("due: "),
        "{due}"
    );
    let result = lines
        .iter()
        .find(|l| l["type"] == "result" && l["outcome"] == "compacted")
        .unwrap();
    assert!(
        result["number_of_compacted_files"].as_u64().unwrap() >= 2,
        "{result}"
    );
    assert!(
        !result["versions"].as_array().unwrap().is_empty(),
        "{result}"
    );
    assert!(
        result["throttle"]
            .as_str()
            .unwrap()
            .contains("through the catalog"),
        "{result}"
    );
    assert!(
        lines.iter().any(|l| l["type"] == "activity"
            && l["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("committed snapshot")),
        "the job says what it commits"
    );

    // Settled after the appender stopped: one more cycle, then pyiceberg reads every row once.
    let o = lakehealth_cmd()
        .arg("watch")
        .arg(&t.table)
        .arg("--policy")
        .arg(&policy)
        .arg("--history")
        .arg(&history)
        .arg("--once")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!committed.is_empty());
    let after = t.read();
    let mut want = ids(&before.rows);
    want.extend(committed);
    want.sort();
    assert_eq!(ids(&after.rows), want, "every row exactly once");
    assert!(after.operations.iter().any(|o| o == "replace"));
    assert!(
        after.data_files < before.data_files,
        "{} data files before, {} after",
        before.data_files,
        after.data_files
    );
}

/// Without a catalog an Iceberg table is a table error that says how to name one; a catalog
/// URI lakehealth cannot commit through is refused before anything runs.
#[test]
fn watch_says_an_iceberg_table_needs_its_catalog_and_refuses_an_unknown_catalog_uri() {
    let t = Table::new(3);
    let before = t.files();
    let o = lakehealth_cmd()
        .arg("watch")
        .arg(&t.table)
        .arg("--once")
        .arg("--json")
        .arg("--history")
        .arg(t.dir.path().join("h.jsonl"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a table error fails --once");
    let lines = json_lines(&text(&o.stdout));
    let e = lines
        .iter()
        .find(|l| l["type"] == "table_error")
        .unwrap_or_else(|| panic!("{lines:?}"));
    let msg = e["error"].as_str().unwrap();
    assert!(
        msg.contains("iceberg_catalog") && msg.contains("--catalog"),
        "{msg}"
    );

    let o = lakehealth_cmd()
        .arg("watch")
        .arg(&t.table)
        .args(["--once", "--catalog", "thrift://metastore:9083"])
        .arg("--history")
        .arg(t.dir.path().join("h.jsonl"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("thrift://metastore:9083"),
        "{}",
        stderr(&o)
    );
    assert_eq!(t.files(), before, "nothing written");
}

/// A cancel (Ctrl-C, the janitor's stop) lets the bin being committed land and starts no
/// other: one `replace` snapshot, the same rows, and no output of an unstarted bin on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_bins_commit_lands_that_bin_and_starts_no_other() {
    let t = Table::new(8);
    let before = t.read();
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut req = t.request();
    req.cancel = Some(cancel.clone());
    req.before_commit = Some(Arc::new(move |_bin, _attempt| cancel.cancel()));
    let s = compact_iceberg(&loc(&t.table), &req, &opts(), &|_| {})
        .await
        .unwrap();
    assert!(s.plan.bins.len() >= 2, "{:?}", s.plan);
    assert!(s.cancelled);
    assert_eq!(s.commits.len(), 1, "{s:?}");
    let after = t.read();
    assert_eq!(ids(&after.rows), ids(&before.rows));
    assert_eq!(
        after.operations[before.operations.len()..],
        ["replace".to_string()]
    );
    let ours = t
        .files()
        .into_iter()
        .filter(|f| f.contains("-lakehealth-") && f.ends_with(".parquet"))
        .count();
    assert_eq!(ours as u64, s.commits[0].files_added);
}

/// Plants a job record in `t`'s `_lakehealth/iceberg-jobs/<file>.json`: a job `job` that died
/// long ago on another host, naming `folders` (as records of older versions did) and `outputs`.
/// Sealed with the installation key, as only a key holder could: what these tests prove is
/// what stands behind the seal (`plant_unsigned_record`: what any writer can plant).
fn plant_record(t: &Table, file: &str, job: &str, folders: &[String], outputs: &[String]) {
    crate::support::sealed::write_sealed(
        &t.table,
        &format!("_lakehealth/iceberg-jobs/{file}.json"),
        lakehealth::engine::sealed::RecordKind::IcebergJob,
        &record(job, folders, outputs),
    );
}

fn record(job: &str, folders: &[String], outputs: &[String]) -> serde_json::Value {
    serde_json::json!({
        "job": job, "host": "elsewhere", "pid": 1, "started_ms": 0,
        "folders": folders, "outputs": outputs,
    })
}

/// `plant_record` without a seal: what a table's writer can plant.
fn plant_unsigned_record(t: &Table, file: &str, job: &str, outputs: &[String]) {
    let dir = t.table.join("_lakehealth/iceberg-jobs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{file}.json")),
        record(job, &[], outputs).to_string(),
    )
    .unwrap();
}

/// Compacts `t` with lakehealth: the job's id and its outputs (absolute paths).
fn compacted_by_lakehealth(t: &Table) -> (String, Vec<PathBuf>) {
    let o = t.lakehealth(&["--catalog", &t.catalog_uri()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let outputs: Vec<PathBuf> = t
        .files()
        .into_iter()
        .filter(|f| f.contains("-lakehealth-") && f.ends_with(".parquet"))
        .map(|f| t.table.join(f))
        .collect();
    assert!(!outputs.is_empty(), "{:?}", t.files());
    let name = outputs[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let job = name
        .split("-lakehealth-")
        .nth(1)
        .and_then(|r| r.split('-').next())
        .unwrap()
        .to_string();
    (job, outputs)
}

fn folders_of(files: &[PathBuf]) -> Vec<String> {
    let mut f: Vec<String> = files
        .iter()
        .map(|p| p.parent().unwrap().to_str().unwrap().to_string())
        .collect();
    f.sort();
    f.dedup();
    f
}

/// Table B compacted by lakehealth (its live files are its job's outputs); records planted in
/// table A name B's folders and files every way a record can: by folder (old records), by
/// exact name, through `..`, and under a record whose job id is not its file's. A's compaction
/// sweeps them all as dead jobs' and deletes none: B reads every row, its files are all there.
#[test]
fn a_job_record_in_one_table_never_deletes_another_tables_files() {
    let b = Table::new(12);
    let (job, b_outputs) = compacted_by_lakehealth(&b);
    let b_before = b.read();
    let a = Table::new(12);
    let a_before = a.read();
    let tmp = a.dir.path().parent().unwrap();
    let uri = |p: &Path| format!("file://{}", p.display());
    let dotted: Vec<String> = b_outputs
        .iter()
        .map(|p| {
            a.table
                .join("../..")
                .join(p.strip_prefix(tmp).unwrap())
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut named: Vec<String> = b_outputs.iter().map(|p| uri(p)).collect();
    named.extend(dotted.iter().cloned());
    let mut folders = folders_of(&b_outputs);
    folders.extend(folders_of(&b_outputs).iter().map(|f| format!("file://{f}")));
    // B's job id, as the attack found it: the record is B's job in A's folder.
    plant_record(&a, &job, &job, &folders, &named);
    // A record whose job id is another file's (and one whose id is a path).
    plant_record(
        &a,
        "0000000000000000000000000000beef",
        &job,
        &folders,
        &named,
    );
    plant_record(&a, "up", "../up", &folders, &named);

    let o = a.lakehealth(&["--catalog", &a.catalog_uri(), "--json"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for p in &b_outputs {
        assert!(p.exists(), "{} was deleted: {err}", p.display());
    }
    assert_eq!(b.read().rows, b_before.rows, "{err}");
    assert_eq!(a.read().rows, a_before.rows);
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sweep = &summary["sweep"];
    assert_eq!(sweep["deleted"], serde_json::json!([]), "{sweep:#}");
    let refused: Vec<&str> = sweep["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        refused
            .iter()
            .any(|r| r.contains("outside the table's folder")),
        "{refused:#?}"
    );
    assert_eq!(
        refused.iter().filter(|r| r.contains("job id")).count(),
        2,
        "{refused:#?}"
    );
    assert!(err.contains("refused"), "{err}");
    // Refused records stay for someone to look at.
    assert!(
        a.table
            .join(format!("_lakehealth/iceberg-jobs/{job}.json"))
            .exists()
    );
}

/// Table B lives inside table A's folder and was compacted by lakehealth; a record in A with
/// B's job id names B's folders and files, all inside A's folder and unreferenced by A. B's
/// own metadata says they are live: A's sweep refuses them, B reads every row.
#[test]
fn a_job_record_never_deletes_the_files_of_a_table_nested_in_its_folder() {
    let a = Table::new(6);
    let a_before = a.read();
    let b = Table::at(
        tempfile::tempdir().unwrap(),
        a.table.join("data").join("nested"),
        6,
        None,
    );
    let (job, b_outputs) = compacted_by_lakehealth(&b);
    let b_before = b.read();
    let named: Vec<String> = b_outputs
        .iter()
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    plant_record(&a, &job, &job, &folders_of(&b_outputs), &named);

    let o = a.lakehealth(&["--catalog", &a.catalog_uri(), "--json"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for p in &b_outputs {
        assert!(p.exists(), "{} was deleted: {err}", p.display());
    }
    assert_eq!(b.read().rows, b_before.rows);
    assert_eq!(a.read().rows, a_before.rows);
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let refused = summary["sweep"]["refused"].to_string();
    assert!(refused.contains("another table"), "{refused}");
}

/// A record any writer of the table can plant (no seal) names a file of the table's folder
/// that no snapshot references, named as that job's output: it is refused whole and the file
/// stays. The control: the same record sealed is acted on, and the file goes.
#[test]
fn an_unsigned_job_record_is_refused_whole_and_a_sealed_one_is_acted_on() {
    let a = Table::new(6);
    let a_before = a.read();
    let job = "0000000000000000000000000000cafe";
    let data = a.table.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let stray = data.join(format!("00000-lakehealth-{job}-ab12.parquet"));
    std::fs::write(&stray, b"no snapshot references this").unwrap();
    let named = vec![stray.to_str().unwrap().to_string()];
    plant_unsigned_record(&a, job, job, &named);

    let o = a.lakehealth(&["--catalog", &a.catalog_uri(), "--json"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        stray.exists(),
        "an unsigned record had a file deleted: {err}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let refused = summary["sweep"]["refused"].to_string();
    assert!(refused.contains("not sealed by lakehealth"), "{refused}");
    assert!(
        a.table
            .join(format!("_lakehealth/iceberg-jobs/{job}.json"))
            .exists(),
        "left for a person"
    );

    plant_record(&a, job, job, &[], &named);
    let o = a.lakehealth(&["--catalog", &a.catalog_uri(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stray.exists(),
        "the sealed record's output was not deleted"
    );
    assert_eq!(a.read().rows, a_before.rows);
}

/// An Iceberg table whose partition folder, then whose manifests, are links to files outside
/// its folder: compacting it (which would write outputs beside the linked inputs and sweep
/// there) and reading it are refused with the link named; nothing outside changes.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iceberg_table_linked_out_of_its_folder_is_neither_compacted_nor_read() {
    use lakehealth::engine::error::EngineError;
    use lakehealth::engine::iceberg::load_iceberg;
    use lakehealth::engine::location::Location;
    use lakehealth::engine::options::OpenOptions;

    let t = Table::new(6);
    let before = t.read();
    let outside = tempfile::tempdir().unwrap();
    let part = std::fs::read_dir(t.table.join("data"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .file_name();
    let moved = outside.path().join(&part);
    std::fs::rename(t.table.join("data").join(&part), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, t.table.join("data").join(&part)).unwrap();
    let outside_before = contents(outside.path());

    let o = t.lakehealth(&["--catalog", &t.catalog_uri()]);
    let err = stderr(&o);
    assert!(!o.status.success(), "compacted through a link: {err}");
    assert!(
        err.contains("symbolic link")
            && err.contains("outside the table's folder")
            && err.contains(part.to_str().unwrap()),
        "{err}"
    );
    assert_eq!(contents(outside.path()), outside_before);
    assert!(!t.files().iter().any(|f| f.contains("-lakehealth-")));
    assert_eq!(t.read().rows, before.rows);

    // The partition back in place; the manifests (and manifest list) now live outside.
    std::fs::remove_file(t.table.join("data").join(&part)).unwrap();
    std::fs::rename(&moved, t.table.join("data").join(&part)).unwrap();
    let meta = t.table.join("metadata");
    for e in std::fs::read_dir(&meta).unwrap().filter_map(|e| e.ok()) {
        let name = e.file_name();
        if name.to_str().unwrap().ends_with(".avro") {
            std::fs::rename(e.path(), outside.path().join(&name)).unwrap();
            std::os::unix::fs::symlink(outside.path().join(&name), meta.join(&name)).unwrap();
        }
    }
    let loc = Location::parse(t.table.to_str().unwrap()).unwrap();
    let Err(e) = load_iceberg(&loc, &OpenOptions::default(), &|_| {}).await else {
        panic!("read through a link");
    };
    assert!(
        matches!(&e, EngineError::LinkLeavesTable(l) if l.link.starts_with("metadata/")),
        "{e}"
    );
    let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--dry-run"]);
    assert!(
        !o.status.success() && stderr(&o).contains("symbolic link"),
        "{}",
        stderr(&o)
    );
}

/// An idle Iceberg table is read through its catalog on the janitor's doubling back-off, as a
/// Delta table is, and decided from its last read in between: broken after the read of cycle 3,
/// its error shows at cycle 5 (its next read), not at 4.
#[test]
fn an_idle_iceberg_table_is_read_at_doubling_intervals_and_decided_from_its_last_read_between() {
    use lakehealth::engine::janitor::Janitor;
    use lakehealth::engine::janitor::history::History;
    use lakehealth::engine::janitor::policy::Policy;
    let t = Table::new(3);
    let o = lakehealth::engine::options::OpenOptions::default();
    let policy = Policy::parse(
        &format!(
            "interval = \"10s\"\nidle_poll_max = \"80s\"\niceberg_catalog = \"{}\"\n",
            t.catalog_uri()
        ),
        "p.toml",
        o.thresholds,
    )
    .unwrap();
    let mut j = Janitor::new(
        vec![loc(&t.table)],
        policy,
        o,
        History::open(&t.dir.path().join("h.jsonl")).unwrap(),
        Box::new(|_| {}),
        false,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    runtime().block_on(async {
        for cycle in 1..=3 {
            let s = j.cycle(&cancel, true).await;
            assert_eq!((s.tables, s.table_errors), (1, 0), "cycle {cycle}");
            assert_eq!(s.due, 0, "3 small files: never due");
        }
        std::fs::rename(t.table.join("metadata"), t.table.join("metadata.gone")).unwrap();
        let s = j.cycle(&cancel, true).await;
        assert_eq!(
            (s.tables, s.table_errors),
            (1, 0),
            "cycle 4: decided from the read of cycle 3, not read"
        );
        let s = j.cycle(&cancel, true).await;
        assert_eq!(s.table_errors, 1, "cycle 5: read, and its error said");
    });
}

/// Live data files of each partition folder (`category=a/ts_day=2026-11-30`), by pyiceberg.
fn live_per_partition(r: &Read) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (path, status, ..) in &r.entry_list {
        if *status == 2 {
            continue;
        }
        let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
        let part = folder.split("/data/").nth(1).unwrap_or(folder).to_string();
        *out.entry(part).or_default() += 1;
    }
    out
}

/// `--where` on the column a partition is derived from chooses, through `day(ts)`, exactly
/// the partitions of the days it may hold (the others keep every file), and the rows stay
/// exact; a condition on an unpartitioned column or a bad date is refused with nothing
/// changed.
#[test]
fn compact_where_on_a_source_column_compacts_only_the_partitions_its_transform_admits() {
    let t = Table::new(8);
    let before = t.read();
    let files_before = live_per_partition(&before);
    let o = t.lakehealth(&[
        "--catalog",
        &t.catalog_uri(),
        "--where",
        "ts >= '2026-11-30' AND category IS NOT NULL",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut done: Vec<&str> = s["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["partition"].as_str().unwrap())
        .collect();
    done.sort();
    assert_eq!(
        done,
        [
            "category=a/ts_day=2026-11-30",
            "category=b/ts_day=2026-11-30"
        ]
    );
    let after = t.read();
    assert_eq!(after.rows, before.rows, "rows exact");
    let files_after = live_per_partition(&after);
    for (part, n) in &files_before {
        let now = files_after.get(part).copied().unwrap_or(0);
        if done.contains(&part.as_str()) {
            assert_eq!(now, 1, "{part}: compacted");
        } else {
            assert_eq!(now, *n, "{part}: left alone");
        }
    }
    for (w, why) in [
        ("id = 3", "\"id\" is not a partition column"),
        ("ts >= 'yesterday'", "not a date or time"),
    ] {
        let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--where", w]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(why), "{w}: {}", stderr(&o));
    }
    assert_eq!(t.read().snapshot_id, after.snapshot_id, "nothing changed");
}

/// Two `compact` processes on the same Iceberg table at once: whichever loses a bin's race
/// finds its files replaced and leaves that bin (its outputs deleted), so pyiceberg reads
/// every row exactly once and no replaced file is live twice.
#[test]
fn two_compact_processes_on_one_iceberg_table_never_duplicate_a_row() {
    let t = Table::new(12);
    let before = t.read();
    let spawn = || {
        lakehealth_cmd()
            .arg("compact")
            .arg(&t.table)
            .args(["--catalog", &t.catalog_uri(), "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let mut commits = 0;
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        commits += s["commits"].as_array().unwrap().len();
    }
    let after = t.read();
    assert_eq!(after.rows, before.rows, "every row exactly once");
    let bins = before_bins(&before);
    assert!(commits >= bins, "every partition compacted by one of them");
    let live: Vec<&String> = after
        .entry_list
        .iter()
        .filter(|e| e.1 != 2)
        .map(|e| &e.0)
        .collect();
    let unique: std::collections::BTreeSet<&String> = live.iter().copied().collect();
    assert_eq!(live.len(), unique.len(), "a file live twice");
}

/// Partitions with more than one live file: the bins a compaction of `r` plans.
fn before_bins(r: &Read) -> usize {
    live_per_partition(r).values().filter(|&&n| n > 1).count()
}

/// A stream's appends each add a manifest of one file; once a compaction has replaced those
/// files, the next commit leaves their manifests (no live file left) out of its list, as
/// pyiceberg and Iceberg's writers do, so the manifest list stays bounded; rows stay exact.
#[test]
fn manifests_left_with_no_live_file_by_a_compaction_drop_out_of_the_next_commit() {
    let t = Table::new(6);
    for i in 0..10 {
        t.py(&[
            "append",
            "--first-id",
            &(500_000 + 10 * i).to_string(),
            "--rows",
            "3",
        ]);
    }
    let streamed = t.read();
    let compact = |part: &str| {
        let o = t.lakehealth(&["--catalog", &t.catalog_uri(), "--partition", part, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(s["commits"].as_array().unwrap().len(), 1, "{part}: {s:#}");
    };
    compact("category=a/ts_day=2026-11-30");
    let once = t.read();
    assert_eq!(
        once.manifests,
        streamed.manifests + 1,
        "the replaced files' manifests record their deletes in this snapshot"
    );
    compact("category=b/ts_day=2026-11-30");
    let twice = t.read();
    assert!(
        twice.manifests + 9 <= once.manifests,
        "the ten emptied manifests are gone: {} then {}",
        once.manifests,
        twice.manifests
    );
    assert_eq!(twice.rows, streamed.rows, "rows exact");
}

/// `watch --once` on `t` with `policy` (and its catalog; history in `history.jsonl` beside
/// the table): its JSON lines of type `kind`.
pub(crate) fn watch_once(t: &Table, policy: &str, kind: &str) -> Vec<serde_json::Value> {
    let file = t.dir.path().join("policy.toml");
    std::fs::write(
        &file,
        format!("iceberg_catalog = \"{}\"\n{policy}", t.catalog_uri()),
    )
    .unwrap();
    let o = lakehealth_cmd()
        .arg("watch")
        .arg(&t.table)
        .args(["--once", "--json", "--policy"])
        .arg(&file)
        .arg("--history")
        .arg(t.dir.path().join("history.jsonl"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    json_lines(&text(&o.stdout))
        .into_iter()
        .filter(|l| l["type"] == kind)
        .collect()
}

fn watch_decisions(t: &Table, policy: &str) -> Vec<serde_json::Value> {
    watch_once(t, policy, "decision")
}

/// The janitor's time rules on an Iceberg table read its snapshots' writes (each snapshot's
/// own manifests): a partition pyiceberg just wrote is inside the `quiet_period` ("written N s
/// ago", not "unknown"), within `written_within`, and its small files are all younger than the
/// age rule's hour.
#[test]
fn the_janitors_time_rules_on_an_iceberg_table_read_when_each_partition_was_written() {
    let t = Table::new(6);
    let before = t.read();
    let quiet = watch_decisions(&t, "min_small_files = 2\nquiet_period = \"1h\"\n");
    assert!(!quiet.is_empty());
    for d in &quiet {
        let r = d["reason"].as_str().unwrap();
        assert!(
            r.starts_with("skipped: written ") && r.contains("quiet period 60 min"),
            "{d}"
        );
    }
    let aged = watch_decisions(
        &t,
        "min_small_files = 1000\naged_min_small_files = 2\naged_after = \"1h\"\n",
    );
    assert!(!aged.is_empty());
    for d in &aged {
        let r = d["reason"].as_str().unwrap();
        assert!(r.contains("all of them are younger than 60 min"), "{d}");
    }
    let within = watch_decisions(&t, "min_small_files = 2\nwritten_within = \"1h\"\n");
    assert!(
        within.iter().any(|d| d["decision"] == "due"),
        "written within the hour: {within:?}"
    );
    assert_eq!(t.read().rows, before.rows);
}

/// The janitor's `strategy = "sort"` on an Iceberg table: each bin of small files it merges
/// is written sorted by the policy's columns (every output's ids ascending, read back by
/// pyarrow), and the table's rows stay exact.
#[test]
fn the_janitors_sort_strategy_writes_an_iceberg_tables_merged_bins_in_order() {
    let t = Table::new(12);
    let before = t.read();
    let decisions = watch_decisions(
        &t,
        "min_small_files = 2\nstrategy = \"sort\"\ncolumns = [\"id\"]\n",
    );
    assert!(
        decisions.iter().any(|d| d["decision"] == "due"),
        "{decisions:?}"
    );
    let after = t.read();
    assert_eq!(after.rows, before.rows, "rows exact");
    let ours: Vec<String> = after
        .entry_list
        .iter()
        .filter(|e| e.1 != 2 && e.0.contains("-lakehealth-"))
        .map(|e| e.0.trim_start_matches("file://").to_string())
        .collect();
    assert!(!ours.is_empty(), "the janitor compacted nothing");
    let o = std::process::Command::new(crate::support::harness::python())
        .arg("-c")
        .arg(
            "import sys, json, pyarrow.parquet as pq\n\
             print(json.dumps([pq.read_table(p).column('id').to_pylist() for p in sys.argv[1:]]))",
        )
        .args(&ours)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<Vec<i64>> = serde_json::from_slice(&o.stdout).unwrap();
    for (f, v) in ours.iter().zip(&ids) {
        assert!(
            v.windows(2).all(|w| w[0] <= w[1]),
            "{f} is not sorted by id: {v:?}"
        );
    }
}

/// A writer of table A adds (pyiceberg `add_files`) the data files of table B, nested in A's
/// folder, to A. Compacting A would write the bin's output beside them, into B's folder, where
/// B's own vacuum would delete it and A's rows with it: the bin is refused, naming B, nothing
/// is written into B's folder, A's other partitions are compacted, and both tables read back.
#[test]
fn a_bin_holding_a_nested_tables_files_is_refused_and_nothing_is_written_into_that_table() {
    let a = Table::new(6);
    let b = Table::at(
        tempfile::tempdir().unwrap(),
        a.table.join("nested"),
        6,
        None,
    );
    let part = "category=a/ts_day=2026-11-30";
    let planted: Vec<String> = walk_files(&b.table.join("data").join(part))
        .into_iter()
        .map(|p| format!("file://{}", p.display()))
        .collect();
    assert!(planted.len() >= 5, "{planted:?}");
    let o = std::process::Command::new(crate::support::harness::python())
        .arg("-c")
        .arg(
            "import sys\nfrom pyiceberg.catalog.sql import SqlCatalog\n\
             cat = SqlCatalog('lh', uri='sqlite:///' + sys.argv[1])\n\
             cat.load_table('db.events').add_files(file_paths=sys.argv[2:])",
        )
        .arg(a.catalog_dir.join("catalog.db"))
        .args(&planted)
        .output()
        .unwrap();
    assert!(o.status.success(), "add_files: {}", stderr(&o));
    let a_before = a.read();
    let b_before = b.read();
    let b_files = contents(&b.table);

    let o = a.lakehealth(&["--catalog", &a.catalog_uri(), "--json"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "the refused bin fails the job: {err}");
    assert!(
        err.contains("another table within this one's folder") && err.contains("nested"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !s["commits"].as_array().unwrap().is_empty(),
        "A's other partitions are compacted: {s:#}"
    );
    assert_eq!(
        contents(&b.table),
        b_files,
        "nothing written into B's folder"
    );
    assert_eq!(b.read().rows, b_before.rows);
    assert_eq!(a.read().rows, a_before.rows);
}

/// Every regular file under `dir`, absolute.
fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut rel = Vec::new();
    walk(dir, dir, &mut rel);
    rel.sort();
    rel.into_iter().map(|r| dir.join(r)).collect()
}
