//! Re-clustering by the janitor (`max_depth`): a partition with no small files whose files
//! overlap on the policy's order is rewritten whole in that order by `watch --once`, with
//! that reason; every row kept (Python deltalake + pyarrow read them back), lookups opening
//! fewer files by the statistics Python deltalake reads, its commit marked apart and its
//! bytes counted apart from the small-file merges; and not re-clustered again.

use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use serde_json::Value;

use crate::janitor::{for_partition, of_type, one, optimize_commit_infos, path, watch};
use crate::support::common::*;

/// Files of 24,000 rows (about 15 MiB in the first partition, so a rewrite at the 1 MiB target
/// writes several files): 24 in the first partition, 3 in the second; every file holds sensors
/// and readings from the whole range, so a lookup on either opens every file.
fn spread_table() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let l = loc(dir.path());
    runtime().block_on(async {
        create_sensor_table(&l).await.unwrap();
        seed_small_files(&l, &["2026-11-01".into()], 24, 24_000)
            .await
            .unwrap();
        seed_small_files(&l, &["2026-11-02".into()], 3, 24_000)
            .await
            .unwrap();
    });
    dir
}

const POLICY: &str = r#"
# No file is small: only the layout can make a partition due.
small_file_size = "1KiB"
target_file_size = "1MiB"
strategy = "zorder"
columns = ["sensor_id", "reading"]
max_depth = 4
"#;

#[test]
fn watch_once_re_clusters_a_partition_whose_files_overlap_past_max_depth_and_counts_its_bytes_apart()
 {
    let t = spread_table();
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let before = read_back(path(t.path()), None);
    let spread = admitting(t.path(), "sensor_id", 250);
    assert!(
        spread.admitting * 10 >= spread.files * 9,
        "random sensors: nearly every file admits: {} of {}",
        spread.admitting,
        spread.files
    );

    let o = watch(t.path(), &history, &["--json", "--policy", path(&policy)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&text(&o.stdout));
    let deep = one(for_partition(&lines, "decision", "2026-11-01"), "decision");
    assert_eq!(deep["decision"], "recluster", "{deep:#}");
    let reason = deep["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("due for re-clustering: a lookup on ")
            && reason.contains("(max_depth 4); rewriting the partition in z-order by sensor_id, reading is expected to bring it to"),
        "{reason}"
    );
    let shallow = one(for_partition(&lines, "decision", "2026-11-02"), "decision");
    assert_eq!(
        shallow["decision"], "not_due",
        "3 files overlap 3 deep: {shallow:#}"
    );
    let cycle = one(of_type(&lines, "cycle"), "cycle");
    assert_eq!(
        (cycle["recluster"].as_u64(), cycle["due"].as_u64()),
        (Some(1), Some(0))
    );

    let r = one(for_partition(&lines, "result", "2026-11-01"), "result");
    assert_eq!(r["outcome"], "compacted", "{r:#}");
    assert_eq!(r["decision"], "recluster");
    assert_eq!(
        r["number_of_compacted_files"], 24,
        "the whole partition: {r:#}"
    );
    assert!(for_partition(&lines, "result", "2026-11-02").is_empty());
    let triggers: Vec<Value> = optimize_commit_infos(t.path())
        .iter()
        .map(|ci| ci["lakehealth.trigger"].clone())
        .collect();
    assert_eq!(triggers, ["janitor-recluster"]);

    // Every row once, values unchanged.
    let after = read_back(path(t.path()), None);
    assert_eq!(
        (after.rows, after.distinct_ids, after.reading_sum),
        (before.rows, before.distinct_ids, before.reading_sum)
    );
    // A lookup on either column now opens a fraction of the partition's new files.
    let outputs = r["number_of_output_files"].as_u64().unwrap();
    assert!(outputs >= 6, "{r:#}");
    for (col, v) in [("sensor_id", 250), ("reading", 500_000)] {
        let a = admitting(t.path(), col, v);
        let new: Vec<&String> = a
            .paths
            .iter()
            .filter(|p| p.contains("2026-11-01"))
            .collect();
        // Before, every file admitted both; in z-order each output covers a box of both.
        assert!(
            new.len() as u64 * 4 <= outputs * 3,
            "{col}: {} of {outputs} outputs admit {v}",
            new.len()
        );
    }

    // Its bytes are re-clustering's, apart from the small-file merges' (there were none).
    let report = lakehealth(&["report", path(t.path()), "--json"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let rw = &serde_json::from_slice::<Value>(&report.stdout).unwrap()["log"]["rewrite"];
    assert_eq!(rw["janitor_bytes"], 0, "{rw:#}");
    assert!(rw["recluster_bytes"].as_u64().unwrap() > 0, "{rw:#}");
    assert_eq!(rw["write_amplification"].as_f64(), Some(0.0), "{rw:#}");
    assert!(
        rw["recluster_amplification"].as_f64().unwrap() > 0.0,
        "{rw:#}"
    );

    // Re-clustered means not due again: the next run reads the new layout and leaves it.
    let o = watch(t.path(), &history, &["--json", "--policy", path(&policy)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&text(&o.stdout));
    let again = one(for_partition(&lines, "decision", "2026-11-01"), "decision");
    assert_eq!(again["decision"], "not_due", "{again:#}");
    assert!(of_type(&lines, "result").is_empty());
}

/// A policy whose bound the table's order cannot keep is refused before anything is read.
#[test]
fn max_depth_with_binpack_is_refused_naming_the_line() {
    let t = spread_table();
    let logs = tempfile::tempdir().unwrap();
    let policy = logs.path().join("policy.toml");
    std::fs::write(&policy, "strategy = \"binpack\"\nmax_depth = 4\n").unwrap();
    let o = watch(
        t.path(),
        &logs.path().join("h.jsonl"),
        &["--policy", path(&policy)],
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("line 2: max_depth needs an order to keep"),
        "{err}"
    );
    assert!(optimize_commit_infos(t.path()).is_empty());
}

/// A column of two values cannot tile: sorted, each value still spans half the outputs. The
/// model expects depth 1, so without the floor the janitor would re-cluster it at every run.
/// The read after the job keeps the depth it left (a `floor` line in the history), and the
/// next `--once` run (a new process, as from cron) starts from it and leaves the partition.
#[test]
fn a_column_of_two_values_is_re_clustered_once_and_its_floor_keeps_the_next_run_from_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let o = py_script("skipping_depth.py")
        .args(["make-flags", path(&t)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        "small_file_size = \"1KiB\"\ntarget_file_size = \"1MiB\"\nstrategy = \"sort\"\ncolumns = [\"flag\"]\nmax_depth = 4\n",
    )
    .unwrap();
    let count = || {
        let o = py_script("skipping_depth.py")
            .args(["count", path(&t)])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let before = count();
    assert_eq!(before["rows"], 24 * 60_000);
    let run = || {
        let o = watch(&t, &history, &["--json", "--policy", path(&policy)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        json_lines(&text(&o.stdout))
    };
    let day = |lines: &[Value]| {
        lines
            .iter()
            .find(|l| l["type"] == "decision")
            .cloned()
            .unwrap()
    };
    let first = run();
    assert_eq!(day(&first)["decision"], "recluster", "{:#}", day(&first));
    assert_eq!(of_type(&first, "result").len(), 1);

    let second = run();
    let floor = one(of_type(&second, "floor"), "floor");
    let left = floor["left"][0]["mean"].as_f64().unwrap();
    assert_eq!(floor["left"][0]["column"], "flag");
    assert!(left > 4.0, "two values stay deep after a sort: {floor:#}");
    let d = day(&second);
    assert_eq!(d["decision"], "not_due", "{d:#}");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .contains("less than a 2x gain"),
        "{d:#}"
    );
    assert!(of_type(&second, "result").is_empty());
    // And a third run, from the history's floor alone.
    let third = run();
    assert_eq!(day(&third)["decision"], "not_due");
    assert!(of_type(&third, "floor").is_empty(), "set once, kept");
    assert_eq!(count(), before, "rows, distinct ids and the flags' sum");
}
