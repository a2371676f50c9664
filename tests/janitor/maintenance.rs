//! Log maintenance: VACUUM deletes exactly the files its dry run listed, never an active file
//! nor one removed more recently than the retention, refuses a short retention; checkpoints are
//! read by Python deltalake. The table is written by hand (tests/py/make_vacuum_table.py) so
//! every tombstone's age is known; the reads after are Python deltalake's.

use std::collections::BTreeSet;
use std::path::Path;

use crossterm::event::KeyCode;
use lakehealth::engine::maintenance::checkpoint::checkpoint;
use lakehealth::engine::maintenance::vacuum::{VacuumRequest, plan_vacuum, run_vacuum};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

/// Builds the table in `dir` and returns the script's expectations.
pub(crate) fn make_table(dir: &Path) -> Value {
    let o = py_script("make_vacuum_table.py").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

pub(crate) fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Data files on storage (everything outside `_delta_log/`), relative.
pub(crate) fn on_storage(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "_delta_log" {
                    walk(root, &p, out);
                }
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_str().unwrap().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// Python deltalake's view: version, ids of every row, active files.
pub(crate) fn read_ids(dir: &Path) -> Value {
    let o = py_script("read_ids.py").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn json_commit_ops(dir: &Path, v: u64) -> Vec<String> {
    let s = std::fs::read_to_string(dir.join(format!("_delta_log/{v:020}.json"))).unwrap();
    s.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|a| a["commitInfo"]["operation"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn vacuum_deletes_exactly_its_dry_run_and_never_an_active_or_young_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let exp = make_table(&dir);
    let before_rows = read_ids(&dir);
    let before = on_storage(&dir);
    assert_eq!(before, strings(&exp["on_storage"]));
    let req = VacuumRequest::default();

    let plan = plan_vacuum(&loc(&dir), &req).await.unwrap();
    let listed: BTreeSet<String> = plan.files.iter().map(|f| f.path.clone()).collect();
    // Removed in 2023: past the 7-day default. Not: the file removed 2 days ago
    // (its mtime is 30 days old), 1 hour ago, the re-added file (old tombstone, active again),
    // the active files, the orphan no commit names.
    assert_eq!(listed, strings(&exp["deleted_default"]));
    assert_eq!(plan.retention_ms, 7 * 86_400_000);
    assert!(plan.retention_check);
    let bytes: u64 = listed
        .iter()
        .map(|p| exp["sizes"][p].as_u64().unwrap())
        .sum();
    assert_eq!(plan.bytes_to_delete, bytes);
    assert_eq!(plan.files_to_delete, 3);
    assert_eq!(plan.version, 10);
    assert_eq!(on_storage(&dir), before, "a dry run deletes nothing");

    let outcome = run_vacuum(&loc(&dir), &req, &plan, &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    let deleted: BTreeSet<String> = outcome.deleted.iter().cloned().collect();
    assert_eq!(
        deleted, listed,
        "the real run deletes exactly the dry run's list"
    );
    assert_eq!(outcome.bytes_deleted, bytes);
    let after = on_storage(&dir);
    let expected: BTreeSet<String> = before.difference(&listed).cloned().collect();
    assert_eq!(
        after, expected,
        "the listing after is exactly the expected set"
    );
    for active in strings(&exp["active"]) {
        assert!(after.contains(&active), "{active} (active) was deleted");
    }
    // delta-rs wrote VACUUM START and END after the table's version 10.
    assert_eq!(
        (outcome.vacuum_start_version, outcome.vacuum_end_version),
        (Some(11), Some(12))
    );
    assert_eq!(json_commit_ops(&dir, 11), ["VACUUM START"]);
    assert_eq!(json_commit_ops(&dir, 12), ["VACUUM END"]);
    // No checkpoint was written by the vacuum's commits.
    assert!(
        !dir.join("_delta_log/00000000000000000012.checkpoint.parquet")
            .exists()
    );

    // Python deltalake reads every row as before.
    let after_rows = read_ids(&dir);
    assert_eq!(after_rows["ids"], before_rows["ids"]);
    assert_eq!(after_rows["files"], exp["active"]);
    assert_eq!(after_rows["version"], 12);

    // A second vacuum finds nothing left to delete and writes no commit.
    let again = plan_vacuum(&loc(&dir), &req).await.unwrap();
    assert_eq!(again.files_to_delete, 0);
    assert_eq!(
        strings(&serde_json::to_value(&again.already_gone).unwrap()),
        listed
    );
    let o = run_vacuum(&loc(&dir), &req, &again, &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    assert_eq!((o.files_deleted, o.vacuum_end_version), (0, None));
    assert!(!dir.join("_delta_log/00000000000000000013.json").exists());
}

#[tokio::test]
async fn vacuum_refuses_a_plan_the_table_moved_away_from() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    make_table(&dir);
    let req = VacuumRequest::default();
    let plan = plan_vacuum(&loc(&dir), &req).await.unwrap();
    // Another writer adds one of the planned files back (as RESTORE would) after the dry run.
    let add = std::fs::read_to_string(dir.join("_delta_log/00000000000000000001.json")).unwrap();
    let add_line = add.lines().find(|l| l.contains("\"add\"")).unwrap();
    std::fs::write(
        dir.join("_delta_log/00000000000000000011.json"),
        format!("{add_line}\n"),
    )
    .unwrap();
    let before = on_storage(&dir);
    let e = run_vacuum(&loc(&dir), &req, &plan, &CancellationToken::new(), &|_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("moved from version 10 to 11"), "{e}");
    assert!(e.contains("Nothing was deleted"), "{e}");
    assert_eq!(on_storage(&dir), before);
}

#[test]
fn vacuum_cli_dry_run_lists_what_the_real_run_deletes_and_refuses_a_short_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let exp = make_table(&dir);
    let uri = dir.to_str().unwrap();
    let before = on_storage(&dir);

    // Below the table's 7 days: refused, with what to do, and nothing deleted.
    let o = lakehealth(&["vacuum", uri, "--retention", "1day"]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "a retention of 1day is below the table's delta.deletedFileRetentionDuration (7days)"
        ),
        "{err}"
    );
    assert!(err.contains("--allow-short-retention"), "{err}");
    assert_eq!(on_storage(&dir), before);

    // Text dry run.
    let o = lakehealth(&["vacuum", uri, "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("vacuum dry run of"), "{out}");
    assert!(
        out.contains("retention 7days (the table's delta.deletedFileRetentionDuration)"),
        "{out}"
    );
    assert!(out.contains("would delete 3 files (1.57 KiB)"), "{out}");
    assert!(out.contains("d=a/part-00002.parquet"), "{out}");
    assert!(!out.contains("d=a/part-00003.parquet"), "{out}");

    // With the override, files removed 2 days ago go too, the one removed 1 hour ago does not.
    let o = lakehealth(&[
        "vacuum",
        uri,
        "--retention",
        "1day",
        "--allow-short-retention",
        "--dry-run",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed: BTreeSet<String> = v["plan"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, strings(&exp["deleted_1d"]));
    assert_eq!(v["plan"]["retention_check"], false);
    assert_eq!(on_storage(&dir), before, "dry runs delete nothing");

    // Real run with the default retention, JSON.
    let o = lakehealth(&["vacuum", uri, "--dry-run", "--json"]);
    let dry: Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = lakehealth(&["vacuum", uri, "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let dry_paths: Vec<&str> = dry["plan"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        v["outcome"]["deleted"].as_array().unwrap(),
        &dry_paths
            .iter()
            .map(|p| Value::from(*p))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        v["outcome"]["bytes_deleted"],
        dry["plan"]["bytes_to_delete"]
    );
    assert_eq!(v["outcome"]["vacuum_end_version"], 12);
    assert_eq!(read_ids(&dir)["files"], exp["active"]);

    // Text of a run with nothing left.
    let o = lakehealth(&["vacuum", uri]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("nothing to delete in"),
        "{}",
        text(&o.stdout)
    );
}

#[tokio::test]
async fn checkpoint_is_read_by_python_deltalake_at_the_same_version_with_the_same_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    make_table(&dir);
    let before = read_ids(&dir);
    let o = checkpoint(&loc(&dir), &Default::default()).await.unwrap();
    assert!(o.written);
    assert_eq!((o.version, o.previous_checkpoint), (10, None));
    assert_eq!(o.commits_since_previous, 11);
    // Three files were removed long ago and not vacuumed: this checkpoint drops their
    // tombstones, and says so.
    assert_eq!(o.expired_tombstones, 3);
    assert!(
        o.reason
            .contains("3 files removed longer ago than the retention drop out"),
        "{}",
        o.reason
    );
    assert_eq!(
        o.files,
        ["_delta_log/00000000000000000010.checkpoint.parquet"]
    );
    assert!(o.bytes > 0);
    // Without the JSON commits before it, only the checkpoint can tell the table's state.
    for v in 0..10 {
        std::fs::remove_file(dir.join(format!("_delta_log/{v:020}.json"))).unwrap();
    }
    let after = read_ids(&dir);
    assert_eq!(after["version"], 10);
    assert_eq!(after["ids"], before["ids"]);
    assert_eq!(after["files"], before["files"]);
    // Our own reader agrees too.
    let report = lakehealth::engine::open::load_table(&loc(&dir), &opts(), &|_| {})
        .await
        .unwrap();
    assert_eq!(report.log.checkpoint_version, Some(10));
    assert_eq!(report.stats.files, 3);

    let again = checkpoint(&loc(&dir), &Default::default()).await.unwrap();
    assert!(!again.written);
    assert_eq!(
        again.reason,
        "not needed: version 10 already has a checkpoint"
    );
}

#[test]
fn checkpoint_cli_says_what_it_wrote_and_when_none_is_needed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    make_table(&dir);
    let uri = dir.to_str().unwrap();
    let o = lakehealth(&["checkpoint", uri]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("at version 10 written (1 file(s), ")
            && out.contains("no checkpoint yet: readers replay 11 JSON commits"),
        "{out}"
    );
    let o = lakehealth(&["checkpoint", uri, "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["written"], false);
    assert_eq!(v["version"], 10);
    assert_eq!(v["previous_checkpoint"], 10);
    assert_eq!(
        v["reason"],
        "not needed: version 10 already has a checkpoint"
    );
}

/// The cutoff moves with the wall clock: "removed before 2026-11-23 13:20 UTC" becomes
/// "removed before <cutoff>".
fn redact_cutoff(s: &str) -> String {
    const AT: &str = "removed before ";
    match s.find(AT) {
        Some(i) => {
            let start = i + AT.len();
            let end = (start + "2026-11-23 13:20 UTC".len()).min(s.len());
            format!("{}<cutoff>{}", &s[..start], &s[end..])
        }
        None => s.to_string(),
    }
}

#[tokio::test]
async fn snapshot_vacuum_preview_then_confirmed_job() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    make_table(&dir);
    let mut t = Driven::new(loc(&dir).display(), (140, 40))
        .frozen()
        .open()
        .await;
    t.keys(&[KeyCode::Char('V')]).await;
    t.until("the vacuum dry run", |app| {
        matches!(
            app.modals.modal(),
            Some(lakehealth::tui::app::Modal::Vacuum(d)) if d.result.is_some()
        )
    })
    .await;
    let root = tmp.path().to_str().unwrap();
    let screen = t
        .screen()
        .replace(root, "<tmp>")
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    let screen = redact_cutoff(&screen);
    assert!(
        screen.contains("deletes 3 files (1.57 KiB) of table version 10"),
        "{screen}"
    );
    assert!(screen.contains("d=a/part-00000.parquet"), "{screen}");
    insta::assert_snapshot!("vacuum_preview", screen);
    assert_eq!(on_storage(&dir).len(), 9, "the preview deleted nothing");

    t.keys(&[KeyCode::Char('y')]).await;
    t.until("the vacuum job", |app| {
        app.maintenance
            .iter()
            .any(|j| j.status() != lakehealth::tui::maintenance::MaintenanceStatus::Running)
    })
    .await;
    let j = &t.app.maintenance[0];
    assert_eq!(
        j.detail(),
        "deleted 3 files (1.57 KiB); VACUUM START v11, END v12"
    );
    assert_eq!(on_storage(&dir).len(), 6);
}

/// `watch --once --json` with `policy` (TOML) on `dir`; the maintenance lines.
pub(crate) fn watch_maintenance(dir: &Path, history: &Path, policy: &str) -> Vec<Value> {
    let policy_file = history.with_extension("toml");
    std::fs::write(&policy_file, policy).unwrap();
    let o = lakehealth_cmd()
        .args([
            "watch",
            dir.to_str().unwrap(),
            "--once",
            "--json",
            "--history",
        ])
        .arg(history)
        .arg("--policy")
        .arg(&policy_file)
        .arg("--log-file")
        .arg(history.with_extension("log"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    json_lines(&text(&o.stdout))
        .into_iter()
        .filter(|v| v["type"] == "maintenance")
        .collect()
}

pub(crate) fn action<'a>(lines: &'a [Value], a: &str) -> &'a Value {
    let found: Vec<&Value> = lines.iter().filter(|l| l["action"] == a).collect();
    assert_eq!(found.len(), 1, "{a}: {lines:?}");
    found[0]
}

#[test]
fn janitor_checkpoints_and_vacuums_by_policy_with_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let exp = make_table(&dir);
    let rows = read_ids(&dir);
    let history = tmp.path().join("h.jsonl");
    let policy = "checkpoint_after_commits = 5\nvacuum_every = \"1h\"\n";

    let lines = watch_maintenance(&dir, &history, policy);
    let c = action(&lines, "checkpoint");
    assert_eq!(c["decision"], "due");
    assert_eq!(c["reason"], "due: 11 commits and no checkpoint yet >= 5");
    assert_eq!(c["outcome"], "checkpointed");
    // After the vacuum (a checkpoint first would have dropped the expired tombstones).
    assert_eq!(c["versions"], serde_json::json!([12]));
    let v = action(&lines, "vacuum");
    assert_eq!(v["decision"], "due");
    assert_eq!(v["reason"], "due: no vacuum seen yet (vacuum_every 60 min)");
    assert_eq!(v["outcome"], "vacuumed");
    assert_eq!(v["files_deleted"], 3);
    assert_eq!(v["versions"], serde_json::json!([11, 12]));
    assert!(
        dir.join("_delta_log/00000000000000000012.checkpoint.parquet")
            .exists()
    );
    let after: BTreeSet<String> = on_storage(&dir);
    for p in strings(&exp["deleted_default"]) {
        assert!(!after.contains(&p), "{p} was not vacuumed");
    }
    let read = read_ids(&dir);
    assert_eq!(read["ids"], rows["ids"]);
    assert_eq!(read["files"], exp["active"]);

    // The next cycle (a new process: the history says when it vacuumed) has nothing due.
    let lines = watch_maintenance(&dir, &history, policy);
    let c = action(&lines, "checkpoint");
    assert_eq!(c["decision"], "not_due");
    assert_eq!(
        c["reason"],
        "not due: 0 commits since the checkpoint at version 12 < 5"
    );
    assert!(c.get("outcome").is_none());
    let v = action(&lines, "vacuum");
    assert_eq!(v["decision"], "not_due");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .starts_with("not due: last vacuum ")
            && v["reason"].as_str().unwrap().ends_with(" ago < 60 min"),
        "{v}"
    );
}

#[test]
fn janitor_vacuum_with_a_retention_below_the_tables_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    make_table(&dir);
    let before = on_storage(&dir);
    let lines = watch_maintenance(
        &dir,
        &tmp.path().join("h.jsonl"),
        "vacuum_every = \"1h\"\nvacuum_retention = \"1h\"\n",
    );
    let v = action(&lines, "vacuum");
    assert_eq!(v["decision"], "due");
    assert_eq!(v["outcome"], "failed");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("a retention of 1h is below the table's delta.deletedFileRetentionDuration"),
        "{e}"
    );
    assert_eq!(on_storage(&dir), before, "nothing was deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_and_checkpoint_work_on_s3_with_storage_options() {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let exp = make_table(&dir);
    let moto = Moto::start();
    moto.create_bucket("lake");
    let uri = "s3://lake/t";
    let s3 = lakehealth::engine::location::Location::parse(uri).unwrap();
    let store = s3.open_store(&moto.storage_options()).unwrap();
    let mut files: Vec<String> = on_storage(&dir).into_iter().collect();
    for e in std::fs::read_dir(dir.join("_delta_log")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        files.push(format!("_delta_log/{name}"));
    }
    for f in &files {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        store
            .put(&object_store::path::Path::from(f.as_str()), bytes.into())
            .await
            .unwrap();
    }
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend(moto.cli_args());
        v
    };
    let run = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        lakehealth(&refs)
    };
    let o = run(args(&["vacuum", uri, "--json"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        strings(&v["outcome"]["deleted"]),
        strings(&exp["deleted_default"])
    );
    let listed: BTreeSet<String> = store
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .filter(|p| !p.starts_with("_delta_log/"))
        .collect();
    let expected: BTreeSet<String> = strings(&exp["on_storage"])
        .difference(&strings(&exp["deleted_default"]))
        .cloned()
        .collect();
    assert_eq!(listed, expected);
    let o = run(args(&["checkpoint", uri, "--json"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (c["written"].clone(), c["version"].clone()),
        (Value::from(true), Value::from(12))
    );
    // No credential in what was printed.
    for out in [&o.stdout, &o.stderr] {
        assert!(!text(out).contains("testing"), "{}", text(out));
    }
}
