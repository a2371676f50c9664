//! The janitor end to end: the real binary's `watch --once` on real tables, its JSON lines and
//! history file, and the rows read back by the independent Python reader (Python deltalake +
//! pyarrow, not lakehealth) before and after.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use lakehealth::engine::demo::seed_small_files;
use serde_json::Value;

use crate::support::common::*;

/// `lakehealth ARGS MORE` with its output in `logs`: NAME.out, NAME.err and NAME.log (its log
/// file); no stdin. The janitor tests' `watch` and `stream` runs.
fn logged(args: &[&str], more: &[&str], logs: &Path, name: &str) -> Command {
    let file = |ext: &str| std::fs::File::create(logs.join(format!("{name}.{ext}"))).unwrap();
    let mut c = lakehealth_cmd();
    c.args(args)
        .args(more)
        .arg("--log-file")
        .arg(logs.join(format!("{name}.log")))
        .stdin(Stdio::null())
        .stdout(file("out"))
        .stderr(file("err"));
    c
}

pub(crate) fn path(d: &Path) -> &str {
    d.to_str().unwrap()
}

/// A sensor table in a temp dir with `files` small files in each of `partitions`.
fn table(partitions: &[(&str, u32)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sensor_table_with(dir.path(), partitions);
    dir
}

/// `lakehealth watch TABLE --once --history HISTORY ...` without a config file.
fn watch_cmd(table: &Path, history: &Path, extra: &[&str]) -> Command {
    let mut c = lakehealth_cmd();
    c.args(["watch", path(table), "--once", "--history", path(history)])
        .args(extra)
        .arg("--log-file")
        .arg(history.with_extension("log"))
        .stdin(Stdio::null());
    c
}

pub(crate) fn watch(table: &Path, history: &Path, extra: &[&str]) -> Output {
    watch_cmd(table, history, extra).output().unwrap()
}

/// Ages every failure the history records by `by`, as if that much time had passed since: a
/// back-off ends without waiting for it (the next run restores failures from these lines).
fn age_failures(history: &Path, by: std::time::Duration) {
    let mut aged = 0;
    let lines: Vec<String> = std::fs::read_to_string(history)
        .unwrap()
        .lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(mut v) if v["type"] == "schedule" && v["last_failure_ms"].is_i64() => {
                let ms = v["last_failure_ms"].as_i64().unwrap() - by.as_millis() as i64;
                v["last_failure_ms"] = ms.into();
                aged += 1;
                v.to_string()
            }
            _ => l.to_string(),
        })
        .collect();
    assert!(aged > 0, "no failure in {}", history.display());
    std::fs::write(history, lines.join("\n") + "\n").unwrap();
}

pub(crate) fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

/// The line of `type` for partition `ingestion_date = date`.
pub(crate) fn for_partition<'a>(lines: &'a [Value], t: &str, date: &str) -> Vec<&'a Value> {
    of_type(lines, t)
        .into_iter()
        .filter(|l| l["partition"] == serde_json::json!({ "ingestion_date": date }))
        .collect()
}

pub(crate) fn one<'a>(v: Vec<&'a Value>, what: &str) -> &'a Value {
    assert_eq!(v.len(), 1, "exactly one {what}: {v:#?}");
    v[0]
}

/// Versions of the OPTIMIZE commits in the table's JSON log.
fn optimize_versions(table: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let version = name.strip_suffix(".json")?.parse::<u64>().ok()?;
            let text = std::fs::read_to_string(e.path()).ok()?;
            text.contains("\"operation\":\"OPTIMIZE\"")
                .then_some(version)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn watch_once_with_the_default_policy_compacts_a_partition_of_50_small_files_and_says_why() {
    let t = table(&[("2026-11-01", 60), ("2026-11-02", 10)]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let before = read_back(path(t.path()), None);
    assert_eq!(before.files, 70);

    let o = watch(t.path(), &history, &["--json"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert!(err.contains("built-in default"), "says which policy: {err}");
    let lines = json_lines(&out);

    // The first line is the policy, and says it is the default.
    assert_eq!(lines[0]["type"], "policy");
    assert_eq!(lines[0]["policy"]["source"], "built-in default");
    assert_eq!(lines[0]["policy"]["preset"], "default");

    let due = one(for_partition(&lines, "decision", "2026-11-01"), "decision");
    assert_eq!(due["decision"], "due");
    assert_eq!(due["reason"], "due: 60 small files >= 50 (default)");
    assert_eq!(due["rule"], "default");
    assert_eq!(due["table"], path(t.path()));
    let not_due = one(for_partition(&lines, "decision", "2026-11-02"), "decision");
    assert_eq!(not_due["decision"], "not_due");
    assert_eq!(not_due["reason"], "not due: 10 small files < 50");

    let r = one(for_partition(&lines, "result", "2026-11-01"), "result");
    assert_eq!(r["outcome"], "compacted", "{r:#}");
    assert_eq!(r["number_of_compacted_files"], 60);
    assert_eq!(r["number_of_output_files"], 1);
    assert!(r["amount_of_data_compacted_bytes"].as_u64().unwrap() > 0);
    assert!(r["amount_of_output_data_bytes"].as_u64().unwrap() > 0);
    assert_eq!(r["versions"].as_array().unwrap().len(), 1);
    assert!(r["duration_ms"].is_u64());
    assert_eq!(r["conflicts"], serde_json::json!([]));
    assert_eq!(r["errors"], serde_json::json!([]));
    // Its price, planned and measured: a GET per input file at least, on a free local disk.
    for k in ["estimate", "actual"] {
        assert!(r[k]["get"].as_u64().unwrap() >= 60, "{k}: {r:#}");
        assert_eq!(r[k]["usd"], 0.0, "{k}: {r:#}");
    }
    assert!(for_partition(&lines, "result", "2026-11-02").is_empty());
    assert_eq!(
        r["versions"].as_array().unwrap()[0].as_u64(),
        optimize_versions(t.path()).first().copied()
    );

    // The history file holds exactly the lines printed.
    let hist = json_lines(&std::fs::read_to_string(&history).unwrap());
    assert_eq!(hist, lines);

    // Every row once, none lost, none twice.
    let after = read_back(path(t.path()), None);
    assert_eq!(after.files, 11);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.distinct_ids);
    assert_eq!(after.reading_sum, before.reading_sum);

    // Compacted means not due any more: the next run leaves it alone and says why.
    let o = watch(t.path(), &history, &["--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&text(&o.stdout));
    let again = one(for_partition(&lines, "decision", "2026-11-01"), "decision");
    assert_eq!(again["reason"], "not due: 1 small file < 50");
    assert!(of_type(&lines, "result").is_empty());
}

/// Two databases of two due tables each, four job slots, one job per database at a time: two
/// jobs start, the other two wait saying their database runs its quota, and `--once` still
/// serves every table, rows exact.
#[test]
fn a_database_quota_holds_a_databases_second_job_while_every_table_is_still_served() {
    let root = tempfile::tempdir().unwrap();
    let mut before = Vec::new();
    for db in ["db1", "db2"] {
        for t in ["a", "b"] {
            let dir = root.path().join(db).join(t);
            std::fs::create_dir_all(&dir).unwrap();
            sensor_table_with(&dir, &[("2026-11-01", 52)]);
            before.push((dir.clone(), read_back(path(&dir), None)));
        }
    }
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(&policy, "max_jobs = 4\nmax_jobs_per_database = 1\n").unwrap();
    let o = watch(
        root.path(),
        &history,
        &["--json", "--policy", path(&policy)],
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    let lines = json_lines(&out);
    assert!(
        lines[0]["policy"]["max_jobs_per_database"] == 1,
        "{:#}",
        lines[0]
    );
    let held: Vec<&str> = of_type(&lines, "activity")
        .into_iter()
        .filter_map(|l| l["message"].as_str())
        .filter(|m| m.starts_with("queued ") && m.contains("runs its quota of 1 job(s)"))
        .collect();
    assert_eq!(
        held.len(),
        2,
        "one table of each database waits: {held:#?}\n{out}"
    );
    let results = of_type(&lines, "result");
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(
        results.iter().all(|r| r["outcome"] == "compacted"),
        "{results:#?}"
    );
    for (dir, b) in before {
        let after = read_back(path(&dir), None);
        assert_eq!(after.files, 1, "{}", dir.display());
        assert_eq!((after.rows, after.distinct_ids), (b.rows, b.distinct_ids));
        assert_eq!(after.reading_sum, b.reading_sum);
    }
}

/// Three due tables under one root and one job slot: `--once` runs every table's job, one after
/// the other as the slot frees, and each waiting job says its place in the queue.
#[test]
fn watch_once_on_a_root_runs_every_due_tables_job_through_one_queue() {
    let root = tempfile::tempdir().unwrap();
    let tables = [("t1", 60), ("t2", 55), ("t3", 70)];
    let mut before = Vec::new();
    for (name, files) in tables {
        let dir = root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        sensor_table_with(&dir, &[("2026-11-01", files)]);
        before.push(read_back(path(&dir), None));
    }
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(&policy, "max_jobs = 1\n").unwrap();

    let o = watch(
        root.path(),
        &history,
        &["--json", "--policy", path(&policy)],
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    let lines = json_lines(&out);
    let results = of_type(&lines, "result");
    assert_eq!(results.len(), 3, "one job per table: {results:#?}");
    for r in &results {
        assert_eq!(r["outcome"], "compacted", "{r:#}");
    }
    let queued: Vec<&str> = of_type(&lines, "activity")
        .into_iter()
        .filter_map(|l| l["message"].as_str())
        .filter(|m| m.starts_with("queued "))
        .collect();
    assert_eq!(queued.len(), 2, "two wait for the one slot: {queued:#?}");
    assert!(
        queued.iter().any(|m| m.starts_with("queued 2nd of 2: ")),
        "{queued:#?}"
    );
    assert!(
        queued.iter().all(|m| m.ends_with("at most 1 at once")),
        "{queued:#?}"
    );
    for ((name, _), before) in tables.iter().zip(before) {
        let after = read_back(path(&root.path().join(name)), None);
        assert_eq!(after.files, 1, "{name} compacted");
        assert_eq!(after.rows, before.rows, "{name}");
        assert_eq!(after.distinct_ids, before.distinct_ids, "{name}");
        assert_eq!(after.reading_sum, before.reading_sum, "{name}");
    }
}

/// `--max-duration` ends a run as a stop signal does: nothing new starts, and the last line
/// says what was left; no row is lost or doubled whatever had started.
#[test]
fn max_duration_stops_the_janitor_and_says_what_was_left() {
    let t = table(&[("2026-11-01", 60)]);
    let before = read_back(path(t.path()), None);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let o = watch(t.path(), &history, &["--json", "--max-duration", "1ms"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert!(err.contains("--max-duration 1ms reached"), "{err}");
    let lines = json_lines(&out);
    let stopped = one(of_type(&lines, "stopped"), "stopped line");
    let reason = stopped["reason"].as_str().unwrap();
    assert!(
        reason.contains("not started") || reason.contains("stopped running jobs"),
        "says what was left: {reason}"
    );
    let after = read_back(path(t.path()), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.distinct_ids);
    assert_eq!(after.reading_sum, before.reading_sum);
}

#[test]
fn watch_once_on_a_healthy_table_prints_not_due_lines_with_reasons() {
    let t = table(&[("2026-11-01", 5), ("2026-11-02", 3), ("2026-11-03", 1)]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let log_before = std::fs::read_dir(t.path().join("_delta_log"))
        .unwrap()
        .count();
    let before = read_back(path(t.path()), None);

    // For humans (no --json): one line per partition on stdout.
    let o = watch(t.path(), &history, &[]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    for (date, reason) in [
        ("2026-11-01", "not due: 5 small files < 50"),
        ("2026-11-02", "not due: 3 small files < 50"),
        ("2026-11-03", "not due: 1 small file < 50"),
    ] {
        let line = format!("{} ingestion_date={date}: {reason}", path(t.path()));
        assert!(out.lines().any(|l| l == line), "{line:?} in:\n{out}");
    }
    assert!(err.contains("0 due, 3 not due"), "{err}");
    // The history has them as JSON anyway.
    let hist = json_lines(&std::fs::read_to_string(&history).unwrap());
    assert_eq!(of_type(&hist, "decision").len(), 3);
    assert!(
        of_type(&hist, "decision")
            .iter()
            .all(|d| d["decision"] == "not_due")
    );
    // Nothing was written to the table.
    let log_after = std::fs::read_dir(t.path().join("_delta_log"))
        .unwrap()
        .count();
    assert_eq!(log_after, log_before);
    assert_eq!(read_back(path(t.path()), None).paths, before.paths);
}

#[test]
fn two_watch_once_processes_on_one_table_lose_and_duplicate_no_row() {
    let dates = ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"];
    let t = table(&dates.map(|d| (d, 70)));
    let logs = tempfile::tempdir().unwrap();
    // Both append to one history file, as two janitors of one machine would.
    let history = logs.path().join("shared.jsonl");
    let before = read_back(path(t.path()), None);
    let mut conflicts = 0;
    let mut results = Vec::new();
    for round in 0..3 {
        if round > 0 {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let l = loc(t.path());
            let parts: Vec<String> = dates.iter().map(|d| d.to_string()).collect();
            rt.block_on(seed_small_files(&l, &parts, 60, 50)).unwrap();
        }
        let expected = read_back(path(t.path()), None);
        let spawn = |name: &str| {
            watch_cmd(t.path(), &history, &["--json"])
                .stdout(
                    std::fs::File::create(logs.path().join(format!("{round}-{name}.out"))).unwrap(),
                )
                .stderr(
                    std::fs::File::create(logs.path().join(format!("{round}-{name}.err"))).unwrap(),
                )
                .spawn()
                .unwrap()
        };
        let (mut a, mut b) = (spawn("a"), spawn("b"));
        let (sa, sb) = (a.wait().unwrap(), b.wait().unwrap());
        let read = |n: &str, ext: &str| {
            std::fs::read_to_string(logs.path().join(format!("{round}-{n}.{ext}"))).unwrap()
        };
        assert!(sa.success(), "round {round} a: {}", read("a", "err"));
        assert!(sb.success(), "round {round} b: {}", read("b", "err"));
        let after = read_back(path(t.path()), None);
        assert_eq!(
            after.rows, expected.rows,
            "round {round}: rows lost or duplicated"
        );
        assert_eq!(after.distinct_ids, expected.distinct_ids, "round {round}");
        assert_eq!(after.reading_sum, expected.reading_sum, "round {round}");
        for n in ["a", "b"] {
            let lines = json_lines(&read(n, "out"));
            for r in of_type(&lines, "result") {
                let outcome = r["outcome"].as_str().unwrap();
                assert!(
                    ["compacted", "conflict", "nothing_to_compact"].contains(&outcome),
                    "round {round} {n}: {r:#}"
                );
                // A job that committed nothing lost its files to the other: the line says so,
                // or it planned after the other's commit and found nothing left.
                if outcome == "conflict" {
                    assert!(!r["conflicts"].as_array().unwrap().is_empty(), "{r:#}");
                }
                conflicts += r["conflicts"].as_array().unwrap().len();
                results.push(r.clone());
            }
        }
        // Every partition compacted by one of them: its new writer files (tier 0) became one
        // tier-1 file, beside the earlier rounds' (tiers merge at 8 files: `compact::tiers`).
        assert_eq!(
            after.files,
            4 * (round + 1),
            "round {round}: every partition compacted by one of them"
        );
    }
    // The JSON lines account for every OPTIMIZE commit, each claimed by one process (by every
    // partition whose bins it holds: one commit slot takes several partitions' bins).
    let mut claimed: Vec<u64> = results
        .iter()
        .flat_map(|r| {
            r["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
        })
        .collect();
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed, optimize_versions(t.path()));
    // The shared history is whole lines of JSON from both processes.
    let hist = json_lines(&std::fs::read_to_string(&history).unwrap());
    assert_eq!(of_type(&hist, "policy").len(), 6);
    let after = read_back(path(t.path()), None);
    assert_eq!(after.rows, before.rows + 2 * 4 * 60 * 50);
    eprintln!("{} results, {conflicts} conflicts reported", results.len());
}

#[test]
fn a_policy_file_selects_partitions_by_date_macros_and_waits_out_a_quiet_period() {
    let today = chrono::Utc::now().date_naive();
    let old = today - chrono::Days::new(5);
    let (today_s, old_s) = (today.to_string(), old.to_string());
    let t = table(&[(&today_s, 8), (&old_s, 8)]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        "preset = \"databricks-auto-compaction\"\nmin_small_files = 5\n\
         partitions = \"ingestion_date >= today - 1d\"\nquiet_period = \"1h\"\n",
    )
    .unwrap();
    let o = watch(t.path(), &history, &["--json", "--policy", path(&policy)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&text(&o.stdout));
    assert_eq!(lines[0]["policy"]["source"], path(&policy));
    let fresh = one(for_partition(&lines, "decision", &today_s), "decision");
    assert_eq!(fresh["decision"], "skipped");
    let reason = fresh["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("skipped: written ") && reason.contains("ago, quiet period 60 min"),
        "{reason}"
    );
    let outside = one(for_partition(&lines, "decision", &old_s), "decision");
    assert_eq!(outside["decision"], "skipped");
    let yesterday = today - chrono::Days::new(1);
    assert_eq!(
        outside["reason"],
        format!("skipped: outside partitions (ingestion_date >= '{yesterday}')")
    );
    assert!(of_type(&lines, "result").is_empty());

    // Without the quiet period the fresh partition is compacted, the old one still left alone.
    std::fs::write(
        &policy,
        "preset = \"databricks-auto-compaction\"\nmin_small_files = 5\n\
         partitions = \"ingestion_date >= today - 1d\"\n",
    )
    .unwrap();
    let o = watch(t.path(), &history, &["--json", "--policy", path(&policy)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&text(&o.stdout));
    assert_eq!(
        one(for_partition(&lines, "decision", &today_s), "decision")["reason"],
        "due: 8 small files >= 5 (databricks-auto-compaction)"
    );
    assert_eq!(
        one(for_partition(&lines, "result", &today_s), "result")["outcome"],
        "compacted"
    );
    assert!(for_partition(&lines, "result", &old_s).is_empty());
}

#[test]
fn a_bad_policy_file_is_refused_naming_the_key_and_line() {
    let t = table(&[("2026-11-01", 2)]);
    let logs = tempfile::tempdir().unwrap();
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        "preset = \"glue\"\ninterval = \"5s\"\nmax_job = 2\n",
    )
    .unwrap();
    let o = watch(
        t.path(),
        &logs.path().join("h.jsonl"),
        &["--policy", path(&policy)],
    );
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("max_job") && err.contains("line 3"), "{err}");
    assert!(err.contains(path(&policy)), "names the file: {err}");
}

#[test]
fn failing_jobs_back_off_then_suspend_across_runs_and_resume_tries_again() {
    let t = table(&[("2026-11-01", 6)]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        "min_small_files = 5\nmax_failures = 2\nbackoff_base = \"2s\"\n",
    )
    .unwrap();
    // A data file the log still lists is gone: every compaction of the partition fails.
    let part = t.path().join("ingestion_date=2026-11-01");
    let victim = std::fs::read_dir(&part)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .unwrap()
        .path();
    std::fs::remove_file(&victim).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["--json", "--policy", path(&policy)];
        args.extend_from_slice(extra);
        let o = watch(t.path(), &history, &args);
        (
            o.status.success(),
            json_lines(&text(&o.stdout)),
            text(&o.stderr),
        )
    };
    let decision =
        |lines: &[Value]| one(for_partition(lines, "decision", "2026-11-01"), "decision").clone();

    // 1: due, the job fails, the table is backing off; --once exits non-zero.
    let (ok, lines, err) = run(&[]);
    assert!(!ok, "a failed job fails --once: {err}");
    assert_eq!(decision(&lines)["decision"], "due");
    let r = one(for_partition(&lines, "result", "2026-11-01"), "result");
    assert_eq!(r["outcome"], "failed");
    assert!(!r["errors"].as_array().unwrap().is_empty());
    let s = one(of_type(&lines, "schedule"), "schedule line");
    assert_eq!(s["failures"], 1);

    // 2: right after, the next run (a new process) backs off and says until when.
    let (ok, lines, _) = run(&[]);
    assert!(ok);
    let d = decision(&lines);
    assert_eq!(d["decision"], "backing_off");
    let reason = d["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("backing off: 1 failure in a row, next try in "),
        "{reason}"
    );
    assert!(
        of_type(&lines, "result").is_empty(),
        "no job while backing off"
    );

    // 3: after the back-off (aged by the 2 s it lasts, not waited for) it tries again, fails
    // again: suspended (max_failures = 2).
    age_failures(&history, std::time::Duration::from_secs(2));
    let (ok, lines, _) = run(&[]);
    assert!(!ok);
    assert_eq!(
        one(for_partition(&lines, "result", "2026-11-01"), "result")["outcome"],
        "failed"
    );
    let (_, lines, _) = run(&[]);
    let d = decision(&lines);
    assert_eq!(d["decision"], "suspended");
    let reason = d["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("suspended: 2 failures in a row (last: "),
        "{reason}"
    );

    // --resume forgets the failures: the job runs (and fails) again.
    let (_, lines, _) = run(&["--resume"]);
    assert_eq!(decision(&lines)["decision"], "due");
    assert_eq!(
        one(for_partition(&lines, "result", "2026-11-01"), "result")["outcome"],
        "failed"
    );
}

#[test]
fn watch_beside_a_streaming_writer_keeps_small_files_bounded_and_every_row_once_until_sigterm() {
    let t = table(&[]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let policy = logs.path().join("policy.toml");
    // Commits as bins finish: this test is about the bound the thresholds set (spacing, the
    // default beside a fast writer, lets up to ~200 more small files wait).
    std::fs::write(
        &policy,
        "min_small_files = 20\ninterval = \"1s\"\ncommit_spacing = \"off\"\n",
    )
    .unwrap();
    let read = |n: &str| std::fs::read_to_string(logs.path().join(n)).unwrap();

    let watch = ["watch", path(t.path()), "--json", "--policy", path(&policy)];
    let mut janitor = logged(&watch, &["--history", path(&history)], logs.path(), "w")
        .spawn()
        .unwrap();
    let stream = logged(
        &[
            "stream",
            path(t.path()),
            "--interval",
            "30ms",
            "--rows",
            "40",
        ],
        &["--batches", "150", "--query-id", "janitor-test"],
        logs.path(),
        "s",
    )
    .status()
    .unwrap();
    assert!(
        stream.success(),
        "the writer never fails beside the janitor: {}",
        read("s.err")
    );
    // Once the writer stopped, wait (not a fixed time: a loaded machine is slower) for a
    // cycle that leaves every partition below the threshold, then stop.
    let writer_done = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let settled = |out: &str| {
        let lines: Vec<Value> = out
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let late: Vec<&Value> = of_type(&lines, "decision")
            .into_iter()
            .filter(|d| d["ts"].as_str().is_some_and(|ts| ts > writer_done.as_str()))
            .collect();
        let Some(last) = late.last().map(|d| d["ts"].clone()) else {
            return false;
        };
        late.iter()
            .filter(|d| d["ts"] == last)
            .all(|d| d["small_files"].as_u64().is_some_and(|n| n < 20))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while !settled(&read("w.out")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no cycle left every partition below the threshold within 3 minutes of the last append: {}",
            read("w.out")
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    terminate(&janitor);
    let status = janitor.wait().unwrap();
    let (out, err) = (read("w.out"), read("w.err"));
    assert!(status.success(), "SIGTERM stops it cleanly: {err}");
    assert!(
        err.contains("SIGTERM: stopping") && err.contains("stopped: "),
        "{err}"
    );
    let lines = json_lines(&out);
    assert_eq!(
        lines.last().unwrap()["type"],
        "stopped",
        "the last line says what it stopped"
    );

    // Every appended row exactly once.
    let batches = json_lines(&read("s.out"));
    assert_eq!(batches.len(), 150);
    let rows: u64 = batches.iter().map(|b| b["rows"].as_u64().unwrap()).sum();
    let sum: i64 = batches
        .iter()
        .map(|b| b["reading_sum"].as_i64().unwrap())
        .sum();
    let back = read_back(path(t.path()), None);
    assert_eq!(back.rows, rows);
    assert_eq!(back.distinct_ids, rows);
    assert_eq!(back.reading_sum, sum);

    // The JSON lines account for every commit the janitor made, and it made some.
    let results = of_type(&lines, "result");
    let mut claimed: Vec<u64> = results
        .iter()
        .flat_map(|r| {
            r["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
        })
        .collect();
    claimed.sort();
    claimed.dedup();
    assert!(
        !claimed.is_empty(),
        "the janitor compacted while the writer appended: {out}"
    );
    assert_eq!(claimed, optimize_versions(t.path()));
    assert!(
        results.iter().all(|r| r["outcome"] != "failed"),
        "{results:#?}"
    );

    // The janitor never left a due partition idle: every cycle that saw a partition at or
    // above the threshold started its job or had one running (how high the count climbs
    // while a job runs depends on the machine's speed, so it is reported, not bounded).
    let decisions = of_type(&lines, "decision");
    for d in &decisions {
        if d["small_files"].as_u64().unwrap() >= 20 {
            assert!(
                d["decision"] == "due" || d["decision"] == "running",
                "a partition over the threshold was left waiting: {d:#}"
            );
        }
    }
    let max_seen = decisions
        .iter()
        .map(|d| d["small_files"].as_u64().unwrap())
        .max()
        .unwrap();
    eprintln!(
        "{} janitor commits beside {} appends; small files per partition peaked at {max_seen}",
        claimed.len(),
        batches.len()
    );
}

#[test]
fn sigterm_during_a_cycle_stops_the_tables_job_before_its_next_commit_and_says_what_it_stopped() {
    let dates = ["2026-09-01", "2026-09-02", "2026-09-03"];
    let t = table(&dates.map(|d| (d, 60)));
    let before = read_back(path(t.path()), None);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let out = logs.path().join("w.out");
    let err = logs.path().join("w.err");
    let watch = ["watch", path(t.path()), "--json"];
    let mut child = logged(&watch, &["--history", path(&history)], logs.path(), "w")
        .spawn()
        .unwrap();
    // The decisions come before the job: once the third due line is out, the table's job (one
    // over its three due partitions) is about to run or running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&out)
        .unwrap_or_default()
        .matches("\"decision\":\"due\"")
        .count()
        < 3
    {
        assert!(std::time::Instant::now() < deadline, "no due lines");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    terminate(&child);
    let status = child.wait().unwrap();
    let (out, err) = (
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&err).unwrap(),
    );
    assert!(status.success(), "{err}");
    assert!(err.contains("SIGTERM: stopping"), "{err}");
    let lines = json_lines(&out);
    let stopped = lines.last().unwrap();
    assert_eq!(stopped["type"], "stopped", "{out}");
    let reason = stopped["reason"].as_str().unwrap();
    assert!(
        reason.contains("3 due partition(s) not started")
            || reason.contains("stopped running jobs before their next commit in 3 partition(s)"),
        "{reason}"
    );
    assert!(err.contains(&format!("stopped: {reason}")), "{err}");
    // A job stopped mid-way committed whole bins or nothing; the lines account for each commit.
    let mut claimed: Vec<u64> = of_type(&lines, "result")
        .iter()
        .flat_map(|r| {
            r["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
        })
        .collect();
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed, optimize_versions(t.path()));
    // One result per partition of the job, if it started, and never a job after the signal.
    let results = of_type(&lines, "result");
    assert!(results.len() == 3 || results.is_empty(), "{results:#?}");
    assert!(
        results.iter().all(|r| r["outcome"] != "failed"),
        "{results:#?}"
    );
    let after = read_back(path(t.path()), None);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.reading_sum, before.reading_sum);
}

/// Cycles never wait for a job: beside a streaming writer, with commits spaced 30 s apart, the
/// table's second job holds its finished bins for the next commit slot while cycles go on
/// every second, saying that the partition's job is running and how long until its slot; it is
/// not planned twice. SIGTERM then cancels the waiting job; every row is there once.
#[test]
fn cycles_go_on_deciding_while_a_job_waits_for_its_commit_slot() {
    let t = table(&[]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let policy = logs.path().join("policy.toml");
    std::fs::write(
        &policy,
        "min_small_files = 5\ninterval = \"1s\"\ncommit_spacing = \"30s\"\n",
    )
    .unwrap();
    let read = |n: &str| std::fs::read_to_string(logs.path().join(n)).unwrap_or_default();
    let watch = ["watch", path(t.path()), "--json", "--policy", path(&policy)];
    let mut janitor = logged(&watch, &["--history", path(&history)], logs.path(), "w")
        .spawn()
        .unwrap();
    let mut stream = logged(
        &[
            "stream",
            path(t.path()),
            "--interval",
            "50ms",
            "--rows",
            "20",
        ],
        // Long enough for a loaded machine; stopped once the test saw what it waits for.
        &["--batches", "3000", "--query-id", "waiting-test"],
        logs.path(),
        "s",
    )
    .spawn()
    .unwrap();
    // Wait (up to the writer's end) for a cycle that found the job waiting for its slot.
    let waiting = |out: &str| {
        json_lines(out).into_iter().any(|l| {
            l["type"] == "decision"
                && l["decision"] == "running"
                && l["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("waits for the next commit slot"))
        })
    };
    while !waiting(&read("w.out")) && stream.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Two more cycles while it waits (its commit slot is 30 s away).
    let cycles_in_flight = |out: &str| {
        out.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["type"] == "cycle" && l["jobs_in_flight"].as_u64().is_some_and(|n| n > 0))
            .count()
    };
    let seen = cycles_in_flight(&read("w.out"));
    // Stopped either way: the assertions below say whether they came.
    crate::support::eventually(std::time::Duration::from_secs(60), || {
        cycles_in_flight(&read("w.out")) >= seen + 2
    });
    terminate(&janitor);
    let status = janitor.wait().unwrap();
    // The writer stops on SIGINT after its batch in flight (Ctrl-C).
    let _ = std::process::Command::new("kill")
        .args(["-INT", &stream.id().to_string()])
        .status();
    assert!(stream.wait().unwrap().success(), "{}", read("s.err"));
    let (out, err) = (read("w.out"), read("w.err"));
    assert!(status.success(), "{err}");
    let lines = json_lines(&out);
    assert!(
        waiting(&out),
        "no cycle saw a job waiting for its slot:\n{err}"
    );
    // Cycles that ended with the job in flight, and no partition planned twice meanwhile: no
    // due decision for a partition whose job was running.
    let in_flight = of_type(&lines, "cycle")
        .iter()
        .filter(|c| c["jobs_in_flight"].as_u64().unwrap() > 0)
        .count();
    assert!(
        in_flight >= 2,
        "cycles while the job waited: {in_flight}\n{err}"
    );
    assert!(
        of_type(&lines, "activity").iter().any(|a| a["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("waiting") && m.contains("for the next commit slot"))),
        "watch says what it waits for: {out}"
    );
    let claimed: Vec<u64> = {
        let mut v: Vec<u64> = of_type(&lines, "result")
            .iter()
            .flat_map(|r| r["versions"].as_array().unwrap().clone())
            .map(|v| v.as_u64().unwrap())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(claimed, optimize_versions(t.path()));
    let batches = json_lines(&read("s.out"));
    let rows: u64 = batches.iter().map(|b| b["rows"].as_u64().unwrap()).sum();
    let sum: i64 = batches
        .iter()
        .map(|b| b["reading_sum"].as_i64().unwrap())
        .sum();
    let back = read_back(path(t.path()), None);
    assert_eq!(
        (back.rows, back.distinct_ids, back.reading_sum),
        (rows, rows, sum)
    );
}

/// The commitInfo of every OPTIMIZE in the table's JSON log, read as plain JSON.
pub(crate) fn optimize_commit_infos(table: &Path) -> Vec<Value> {
    optimize_versions(table)
        .into_iter()
        .map(|v| {
            let text =
                std::fs::read_to_string(table.join(format!("_delta_log/{v:020}.json"))).unwrap();
            let line = text.lines().find(|l| l.contains("\"commitInfo\"")).unwrap();
            serde_json::from_str::<Value>(line).unwrap()["commitInfo"].clone()
        })
        .collect()
}

/// Write amplification divides the janitor's rewrites by what was streamed in: a job run by
/// hand records itself as manual in its commit, is left out of the ratio and shown apart.
#[test]
fn a_manual_job_is_recorded_apart_from_the_janitors_and_left_out_of_write_amplification() {
    let t = table(&[("2026-11-01", 60), ("2026-11-02", 10)]);
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("history.jsonl");
    let by_hand = lakehealth(&[
        "compact",
        path(t.path()),
        "--partition",
        "ingestion_date=2026-11-02",
    ]);
    assert!(by_hand.status.success(), "{}", stderr(&by_hand));
    let o = watch(t.path(), &history, &["--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    let triggers: Vec<Value> = optimize_commit_infos(t.path())
        .iter()
        .map(|ci| ci["lakehealth.trigger"].clone())
        .collect();
    assert_eq!(triggers, ["manual", "janitor"], "in commit order");

    let report = lakehealth(&["report", path(t.path()), "--json"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let r = &serde_json::from_slice::<Value>(&report.stdout).unwrap()["log"]["rewrite"];
    let n = |k: &str| r[k].as_u64().unwrap();
    assert!(n("janitor_bytes") > 0, "{r:#}");
    assert!(n("compaction_bytes") > n("janitor_bytes"), "{r:#}");
    let wa = r["write_amplification"].as_f64().unwrap();
    let janitors = n("janitor_bytes") as f64 / n("writer_bytes") as f64;
    assert!((wa - janitors).abs() < 1e-9, "{wa} != {janitors}: {r:#}");
    let text_report = lakehealth(&["report", path(t.path())]);
    assert!(text_report.status.success(), "{}", stderr(&text_report));
    let out = text(&text_report.stdout);
    assert!(
        out.contains("other compactions (by hand, other engines)"),
        "{out}"
    );
}

/// `watch ROOT` finds a table created under the root while it runs (at its next listing) and
/// compacts it, and a broken table is a line with its error at each retry while the others are
/// served.
#[test]
fn a_table_created_under_the_root_while_watch_runs_is_discovered_and_compacted_beside_a_broken_one()
{
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("db/t1");
    std::fs::create_dir_all(&first).unwrap();
    sensor_table_with(&first, &[("2026-11-01", 60)]);
    let broken = root.path().join("db/broken/_delta_log");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("00000000000000000000.json"), "{not json\n").unwrap();
    let logs = tempfile::tempdir().unwrap();
    let history = logs.path().join("h.jsonl");
    let policy = logs.path().join("policy.toml");
    // Listed for new tables every 2 s; the broken table retried at least every 2 s.
    std::fs::write(
        &policy,
        "interval = \"1s\"\ndiscover_every = \"2s\"\nidle_poll_max = \"2s\"\n",
    )
    .unwrap();
    let read = |n: &str| std::fs::read_to_string(logs.path().join(n)).unwrap_or_default();
    let watch = [
        "watch",
        path(root.path()),
        "--json",
        "--policy",
        path(&policy),
    ];
    let mut janitor = logged(&watch, &["--history", path(&history)], logs.path(), "w")
        .spawn()
        .unwrap();
    let compacted = |out: &str, table: &str| {
        json_lines(out).into_iter().any(|l| {
            l["type"] == "result"
                && l["outcome"] == "compacted"
                && l["table"].as_str().is_some_and(|t| t.ends_with(table))
        })
    };
    let first_done = crate::support::eventually(std::time::Duration::from_secs(120), || {
        compacted(&read("w.out"), "/db/t1")
    });
    let second = root.path().join("db/t2");
    let mut before = None;
    if first_done {
        // Written beside the root, then moved in whole: the janitor never sees half a table.
        let staging = logs.path().join("t2");
        std::fs::create_dir_all(&staging).unwrap();
        sensor_table_with(&staging, &[("2026-11-02", 55)]);
        before = Some(read_back(path(&staging), None));
        std::fs::rename(&staging, &second).unwrap();
        crate::support::eventually(std::time::Duration::from_secs(120), || {
            compacted(&read("w.out"), "/db/t2")
        });
    }
    terminate(&janitor);
    let status = janitor.wait().unwrap();
    let (out, err) = (read("w.out"), read("w.err"));
    assert!(status.success(), "{err}");
    assert!(compacted(&out, "/db/t1"), "the first table:\n{out}");
    assert!(
        compacted(&out, "/db/t2"),
        "the table created while it ran:\n{out}"
    );
    let lines = json_lines(&out);
    let broken_lines = of_type(&lines, "table_error")
        .into_iter()
        .filter(|l| {
            l["table"]
                .as_str()
                .is_some_and(|t| t.ends_with("/db/broken"))
        })
        .count();
    assert!(broken_lines >= 2, "the broken table, at each retry:\n{out}");
    let after = read_back(path(&second), None);
    let before = before.unwrap();
    assert_eq!(after.files, 1);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.distinct_ids, before.distinct_ids);
    assert_eq!(after.reading_sum, before.reading_sum);
}
