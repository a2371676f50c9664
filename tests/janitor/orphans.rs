//! Orphan files (data files no version references): a compaction SIGKILLed between writing an
//! output and committing it leaves one; `report` lists exactly those files with their bytes,
//! `vacuum --dry-run` lists them and deletes nothing, `vacuum` deletes them once older than its
//! retention, and Python deltalake still reads every row. Files a writer may still commit, a
//! lakehealth job's ledgered outputs and files behind a symbolic link are never offered.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::support::common::*;

const DAY: Duration = Duration::from_secs(86_400);

fn ok_json(args: &[&str]) -> Value {
    let o = lakehealth(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// Sets a file's modification time `ago` into the past (the time a killed output has waited).
fn age(file: &Path, ago: Duration) {
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(SystemTime::now() - ago)
        .unwrap();
}

/// Every file below `dir` (the log included), relative, with its bytes.
fn everything(dir: &Path) -> BTreeSet<(String, u64)> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    let log = dir.join("_delta_log");
    for e in std::fs::read_dir(&log).unwrap() {
        out.push(format!(
            "_delta_log/{}",
            e.unwrap().file_name().to_string_lossy()
        ));
    }
    out.into_iter()
        .map(|p| {
            let bytes = std::fs::symlink_metadata(dir.join(&p)).unwrap().len();
            (p, bytes)
        })
        .collect()
}

fn paths(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `lakehealth compact` on the table and SIGKILLs it the instant an output has landed
/// and before it is committed; returns the outputs it left (empty when it committed first).
fn kill_compaction_midway(dir: &Path) -> Vec<String> {
    let mut child = lakehealth_cmd()
        .args(["compact", dir.to_str().unwrap()])
        // Several outputs per bin (a wide window between the first output and the commit).
        .args(["--target", "1MiB", "--min-file-size", "64KiB"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if !leftover_files(dir).is_empty() {
            child.kill().unwrap();
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    child.wait().unwrap();
    let mut left = leftover_files(dir);
    left.sort();
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_compactions_outputs_are_reported_offered_by_the_dry_run_and_vacuumed_past_the_retention()
 {
    // The kill can land after the commit: then the table is compacted and it is tried again.
    let mut attempt = None;
    for _ in 0..5 {
        let (d, _, rows) = seeded(400).await;
        let left = kill_compaction_midway(d.path());
        if !left.is_empty() {
            attempt = Some((d, rows, left));
            break;
        }
    }
    let (d, rows, left) = attempt.expect("a kill between an output and its commit");
    let dir = d.path();
    let uri = dir.to_str().unwrap();
    let sizes: Vec<(String, u64)> = left
        .iter()
        .map(|p| (p.clone(), std::fs::metadata(dir.join(p)).unwrap().len()))
        .collect();
    let bytes: u64 = sizes.iter().map(|(_, b)| b).sum();

    // Just killed: a writer could still commit such files, so they are not orphans yet.
    let r = ok_json(&["report", uri, "--json", "--orphans"]);
    assert_eq!(r["orphans"]["files"], 0, "{}", r["orphans"]);
    assert_eq!(r["orphans"]["recent"]["files"], left.len() as u64);
    assert!(r["findings"].as_array().unwrap().is_empty());

    // Eight days later.
    for p in &left {
        age(&dir.join(p), 8 * DAY);
    }
    // Only when asked: a plain report neither scans (it would read every live path) nor
    // reports orphans it did not look for.
    let plain = ok_json(&["report", uri, "--json"]);
    assert!(plain["orphans"].is_null(), "{}", plain["orphans"]);
    assert!(plain["findings"].as_array().unwrap().is_empty());
    let r = ok_json(&["report", uri, "--json", "--orphans"]);
    let o = &r["orphans"];
    assert_eq!(o["files"], left.len() as u64, "{o}");
    assert_eq!(o["bytes"], bytes);
    let listed: Vec<(String, u64)> = o["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = f["path"].as_str().unwrap();
            (decoded(p), f["bytes"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        listed, sizes,
        "exactly the killed outputs, with their bytes"
    );
    let finding = &r["findings"][0];
    assert_eq!(finding["kind"], "orphan_files");
    assert_eq!(
        (&finding["files"], &finding["bytes"]),
        (&o["files"], &o["bytes"])
    );
    let text = lakehealth(&["report", uri, "--orphans"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("orphans: {} files", left.len())),
        "{text}"
    );
    assert!(text.contains(&left[0]), "{text}");

    // The dry run lists them and changes nothing.
    let before = everything(dir);
    let v = ok_json(&["vacuum", uri, "--dry-run", "--json"]);
    let plan = &v["orphans"]["plan"];
    assert_eq!(plan["files_to_delete"], left.len() as u64, "{plan}");
    assert_eq!(plan["bytes_to_delete"], bytes);
    let planned: Vec<String> = paths(&plan["scan"]["orphans"])
        .iter()
        .map(|p| decoded(p))
        .collect();
    assert_eq!(planned, left);
    let o = lakehealth(&["vacuum", uri, "--dry-run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("would delete {} files", left.len())),
        "{out}"
    );
    assert!(out.contains(&left[0]), "{out}");
    assert_eq!(everything(dir), before, "a dry run deletes nothing");

    // The real run (the table's 7-day retention) deletes exactly them.
    let v = ok_json(&["vacuum", uri, "--json"]);
    let outcome = &v["orphans"]["outcome"];
    let deleted: Vec<String> = outcome["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| decoded(p.as_str().unwrap()))
        .collect();
    assert_eq!(deleted, left, "{outcome}");
    assert_eq!(outcome["bytes_deleted"], bytes);
    let gone: BTreeSet<(String, u64)> = sizes.iter().cloned().collect();
    let expected: BTreeSet<(String, u64)> = before.difference(&gone).cloned().collect();
    assert_eq!(everything(dir), expected, "nothing else changed");
    assert!(leftover_files(dir).is_empty());
    let back = read_back(uri, None);
    assert_eq!(
        (back.rows, back.distinct_ids),
        (rows, rows),
        "every row, once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn young_ledgered_hidden_and_symlinked_files_are_never_deleted_nor_any_while_a_job_file_is_unreadable()
 {
    let (d, _, rows) = seeded(6).await;
    let dir = d.path();
    let uri = dir.to_str().unwrap();
    let active = read_back(uri, None).paths;
    let src = dir.join(&active[0]);
    let part = Path::new(&active[0]).parent().unwrap().to_path_buf();
    let put = |rel: &str, ago: Duration| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&src, &p).unwrap();
        age(&p, ago);
    };
    let orphan = part
        .join("part-orphan.parquet")
        .to_str()
        .unwrap()
        .to_string();
    let young = part
        .join("part-young.parquet")
        .to_str()
        .unwrap()
        .to_string();
    let ledgered = part
        .join("part-ledgered.parquet")
        .to_str()
        .unwrap()
        .to_string();
    put(&orphan, 30 * DAY);
    put(&young, Duration::ZERO);
    put(&ledgered, 30 * DAY);
    // A Ray worker's ledger lists its output: `compact --pickup` settles it, not vacuum.
    let jobs = dir.join("_lakehealth/jobs/j-1");
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::write(
        jobs.join("bin-1.outputs.json"),
        serde_json::to_vec(&[&ledgered]).unwrap(),
    )
    .unwrap();
    // Hidden folders Delta's VACUUM skips.
    put("_temporary/0/part-tmp.parquet", 30 * DAY);
    put(
        &format!("{}/_staging/part-s.parquet", part.display()),
        30 * DAY,
    );
    // A partition folder that is a link to a folder outside the table.
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("part-outside.parquet");
    std::fs::copy(&src, &outside_file).unwrap();
    age(&outside_file, 30 * DAY);
    std::os::unix::fs::symlink(outside.path(), dir.join("ingestion_date=2099-01-01")).unwrap();

    let r = ok_json(&["report", uri, "--json", "--orphans"]);
    let o = &r["orphans"];
    assert_eq!(paths(&o["orphans"]), vec![orphan.clone()], "{o}");
    assert_eq!(o["recent"]["examples"], serde_json::json!([young]));
    assert_eq!(o["job_owned"]["examples"], serde_json::json!([ledgered]));
    assert_eq!(o["jobs"], serde_json::json!(["j-1"]));
    assert_eq!(
        o["behind_symlinks"]["examples"],
        serde_json::json!(["ingestion_date=2099-01-01/part-outside.parquet"])
    );

    // vacuum never works through a link out of the table: it refuses the table, naming it.
    let before = everything(dir);
    let refused = lakehealth_cmd()
        .args(["vacuum", uri, "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(everything(dir), before);
    assert!(outside_file.exists(), "nothing outside the table root");
    std::fs::remove_file(dir.join("ingestion_date=2099-01-01")).unwrap();

    let before = everything(dir);
    let v = ok_json(&["vacuum", uri, "--json"]);
    assert_eq!(
        v["orphans"]["outcome"]["deleted"],
        serde_json::json!([orphan]),
        "{}",
        v["orphans"]
    );
    let after = everything(dir);
    let removed: Vec<_> = before.difference(&after).map(|(p, _)| p.clone()).collect();
    assert_eq!(removed, vec![orphan]);
    assert!(outside_file.exists(), "nothing outside the table root");

    // A job file that cannot be read: which outputs its job owns is unknown, so no orphan goes.
    let second = part
        .join("part-orphan-2.parquet")
        .to_str()
        .unwrap()
        .to_string();
    put(&second, 30 * DAY);
    std::fs::write(jobs.join("bin-2.result.json"), b"{ not json").unwrap();
    let before = everything(dir);
    let v = ok_json(&["vacuum", uri, "--json"]);
    let plan = &v["orphans"]["plan"];
    assert_eq!(plan["files_to_delete"], 0, "{plan}");
    assert!(
        plan["refused"]
            .as_str()
            .unwrap()
            .contains("_lakehealth/jobs/j-1/bin-2.result.json"),
        "{plan}"
    );
    assert_eq!(v["orphans"]["outcome"]["files_deleted"], 0);
    assert_eq!(everything(dir), before);
    let back = read_back(uri, None);
    assert_eq!((back.rows, back.distinct_ids), (rows, rows));
}

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Another Delta table inside this one's folder: none of its files is referenced by this
/// table's log, all are old, and still none is an orphan of this table: its own log says they
/// are live. Neither `report` offers them nor `vacuum` deletes them, and it reads every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_never_deletes_the_files_of_another_table_nested_in_the_folder() {
    let (outer, _, outer_rows) = seeded(6).await;
    let (inner, _, inner_rows) = seeded(6).await;
    let dir = outer.path();
    let nested = dir.join("nested_table");
    copy_dir(inner.path(), &nested);
    let mut inner_files = Vec::new();
    walk(&nested, &nested, &mut inner_files);
    inner_files.retain(|f| f.ends_with(".parquet"));
    assert!(!inner_files.is_empty());
    for f in &inner_files {
        age(&nested.join(f), 30 * DAY);
    }
    let uri = dir.to_str().unwrap();

    let r = ok_json(&["report", uri, "--json", "--orphans"]);
    let o = &r["orphans"];
    assert_eq!(o["files"], 0, "{o}");
    assert_eq!(
        o["in_other_tables"]["files"],
        inner_files.len() as u64,
        "{o}"
    );

    let v = ok_json(&["vacuum", uri, "--json"]);
    assert_eq!(
        v["orphans"]["outcome"]["files_deleted"], 0,
        "{}",
        v["orphans"]
    );
    for f in &inner_files {
        assert!(nested.join(f).exists(), "{f} was deleted");
    }
    let back = read_back(nested.to_str().unwrap(), None);
    assert_eq!((back.rows, back.distinct_ids), (inner_rows, inner_rows));
    let back = read_back(uri, None);
    assert_eq!((back.rows, back.distinct_ids), (outer_rows, outer_rows));
}
