//! Bounds at load (issue 43, item 7): numbers, sizes and durations from flags and policy files
//! outside their range are refused naming the flag or the setting, its file and line, and the
//! range (never a panic later); a data file that is empty or no Parquet is named as such, and
//! its compaction commits nothing.

use std::path::Path;

use crate::support::common::*;

/// A table with `files` small files in one partition.
fn small_table(dir: &Path, files: u32) -> String {
    std::fs::create_dir_all(dir).unwrap();
    sensor_table_with(dir, &[("2026-01-01", files)]);
    dir.to_str().unwrap().to_string()
}

/// Asserts a refused command line: exit code 2 (clap's), its flag and `range` in the message,
/// no panic.
fn assert_refused(args: &[&str], flag: &str, range: &str) {
    let o = lakehealth(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} was accepted: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.contains(flag), "{args:?}: names {flag}: {err}");
    assert!(
        err.contains(range),
        "{args:?}: says the range {range:?}: {err}"
    );
}

#[test]
fn negative_and_zero_numeric_flags_are_refused_naming_the_flag_and_range() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 2);
    let t = t.as_str();
    for n in ["-1", "0", "257", "-99999999999999999999"] {
        assert_refused(
            &["compact", t, "--parallelism", n],
            "--parallelism",
            "1 to 256",
        );
    }
    assert_refused(&["report", t, "--depth", "-1"], "--depth", "0 to 64");
    assert_refused(
        &["watch", t, "--metrics-tables", "-1"],
        "--metrics-tables",
        "0 to 100000",
    );
    assert_refused(&["stream", t, "--rows", "0"], "--rows", "1 to 100000000");
    assert_refused(&["stream", t, "--batches", "-3"], "--batches", "1 or more");
    assert_refused(
        &["compact", t, "--max-deleted-ratio", "-0.5"],
        "--max-deleted-ratio",
        "from 0 to 1",
    );
    for size in ["-1MiB", "0B", "2PiB"] {
        for flag in [
            "--target",
            "--small-below",
            "--max-file-size",
            "--min-file-size",
            "--sort-memory",
        ] {
            assert_refused(&["compact", t, flag, size], flag, "from 1 B to 1 PiB");
        }
    }
    assert_refused(
        &["vacuum", t, "--retention", "-1d"],
        "--retention",
        "from 0 to 10years",
    );
    assert_refused(
        &["vacuum", t, "--retention", "100000000000y"],
        "--retention",
        "from 0 to 10years",
    );
    for bad in ["0s", "-5s", "11y"] {
        assert_refused(
            &["watch", t, "--max-duration", bad],
            "--max-duration",
            "above zero and at most 10years",
        );
        assert_refused(
            &["stream", t, "--interval", bad],
            "--interval",
            "above zero and at most 10years",
        );
        assert_refused(
            &[t, "--poll", bad],
            "--poll",
            "above zero and at most 10years",
        );
    }
}

#[test]
fn watch_once_with_a_huge_interval_is_refused_at_load_with_its_line_and_no_panic() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 2);
    let policy = d.path().join("huge.toml");
    std::fs::write(
        &policy,
        "min_small_files = 2\ninterval = \"100000000000y\"\n",
    )
    .unwrap();
    let history = d.path().join("h.jsonl");
    let o = lakehealth(&[
        "watch",
        &t,
        "--once",
        "--policy",
        policy.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert!(!o.status.success(), "accepted: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("huge.toml"), "names the file: {err}");
    assert!(
        err.contains(
            "line 2: interval is 100000000000years: must be greater than 0 and at most 10years"
        ),
        "names the line, the setting and the range: {err}"
    );
}

/// Adds `name` (its bytes `content`) to the table's partition in a new commit, as a writer
/// that wrote something else than Parquet would; returns its relative path.
fn add_to_log(table: &Path, name: &str, content: &[u8]) -> String {
    let commits = commits_from(table, 0);
    let last_add = commits
        .iter()
        .flatten()
        .filter_map(|a| a.get("add"))
        .next_back()
        .expect("the table has a file")
        .clone();
    let dir = last_add["path"]
        .as_str()
        .unwrap()
        .rsplit_once('/')
        .unwrap()
        .0
        .to_string();
    let rel = format!("{dir}/{name}");
    std::fs::write(table.join(decoded(&rel)), content).unwrap();
    let add = serde_json::json!({ "add": {
        "path": rel,
        "partitionValues": last_add["partitionValues"],
        "size": content.len(),
        "modificationTime": last_add["modificationTime"],
        "dataChange": true,
    }});
    let v = commits.len();
    std::fs::write(
        table.join(format!("_delta_log/{v:020}.json")),
        format!("{add}\n"),
    )
    .unwrap();
    rel
}

/// The table's newest version: its last commit file.
fn version(table: &Path) -> usize {
    commits_from(table, 0).len() - 1
}

#[test]
fn compacting_an_empty_or_non_parquet_data_file_names_it_and_commits_nothing() {
    let d = tempfile::tempdir().unwrap();
    for (case, name, content, why) in [
        (
            "empty",
            "part-0-empty.parquet",
            &b""[..],
            "empty file (0 bytes), not Parquet",
        ),
        (
            "text",
            "part-0.parquet",
            &b"ts,sensor,value\n2026-01-01,s1,3.5\n"[..],
            "not a Parquet file (no PAR1 magic)",
        ),
    ] {
        let dir = d.path().join(case);
        let t = small_table(&dir, 4);
        let rel = add_to_log(&dir, name, content);
        let before = version(&dir);
        let o = lakehealth(&["compact", &t]);
        let (out, err) = (text(&o.stdout), stderr(&o));
        assert!(!o.status.success(), "{case}: compacted: {out}\n{err}");
        assert!(!err.contains("panicked"), "{case}: {err}");
        assert!(
            err.contains(&format!("{rel}: {why}"))
                || err.contains(&format!("{}: {why}", decoded(&rel))),
            "{case}: names the file and what it is: {out}\n{err}"
        );
        assert_eq!(version(&dir), before, "{case}: nothing may commit");
        assert_eq!(
            leftover_files(&dir),
            Vec::<String>::new(),
            "{case}: outputs left"
        );
    }
}
