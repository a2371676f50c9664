//! The `lakehealth` binary: JSON schema of `report`, and clear failures for bad input.

use std::process::{Command, Output};

use crate::support::common::*;

#[test]
fn report_json_has_the_documented_schema() {
    let path = fixture("delta-0.8.0-null-partition");
    let o = lakehealth(&["report", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (files, bytes, _) = naive_replay(&path);
    assert_eq!(v["version"], 0);
    assert_eq!(v["files"], files);
    assert_eq!(v["bytes"], bytes);
    let h = v["histogram"].as_array().unwrap();
    assert!(h.len() >= 5);
    for b in h {
        assert!(b["min_bytes"].is_u64() && b["files"].is_u64() && b["bytes"].is_u64());
        assert!(b["max_bytes"].is_u64() || b["max_bytes"].is_null());
    }
    let parts = v["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["values"]["k"], "A");
    assert!(parts[1]["values"]["k"].is_null());
    for p in parts {
        assert!(p["files"].is_u64() && p["bytes"].is_u64() && p["small_files"].is_u64());
        assert!(p["histogram"].is_array());
    }
    let sum: u64 = parts.iter().map(|p| p["files"].as_u64().unwrap()).sum();
    assert_eq!(sum, files);
}

#[test]
fn report_text_of_a_root_lists_every_table() {
    let o = lakehealth(&["report", fixtures_dir().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for t in fixture_tables() {
        assert!(out.contains(&t), "{t} missing from:\n{out}");
    }
}

#[test]
fn bad_input_fails_with_an_actionable_message() {
    let empty = tempfile::tempdir().unwrap();
    let nullp = fixture("delta-0.8.0-null-partition");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "compact",
                nullp.to_str().unwrap(),
                "--where",
                "v > 3",
                "--dry-run",
            ],
            "not a partition column",
        ),
        (
            vec![
                "compact",
                nullp.to_str().unwrap(),
                "--where",
                "k LIKE 'A%'",
                "--dry-run",
            ],
            "is not supported: use =, !=",
        ),
        (
            vec![
                "compact",
                nullp.to_str().unwrap(),
                "--where",
                "(k = 'A' OR k IS NULL",
                "--dry-run",
            ],
            "not valid SQL",
        ),
        (
            vec![
                "compact",
                nullp.to_str().unwrap(),
                "--min-file-size",
                "lots",
            ],
            "invalid size",
        ),
        (
            vec!["report", empty.path().to_str().unwrap()],
            "not a Delta table",
        ),
        (vec!["report", "/no/such/table"], "does not exist"),
        (vec!["report", "ftp://host/table"], "unsupported scheme"),
        (vec!["report", ".", "--target", "12parsecs"], "invalid size"),
        (vec!["report", ".", "--frobnicate"], "--frobnicate"),
        (
            vec![
                "stream",
                empty.path().to_str().unwrap(),
                "--interval",
                "soon",
            ],
            "--interval",
        ),
    ];
    for (args, needle) in cases {
        let o = lakehealth(&args);
        assert!(!o.status.success(), "{args:?} should fail");
        let err = stderr(&o);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_invalid_config_names_the_key_and_line() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[health]\ntarget_file_size = \"64MiB\"\nmax_fille_size = \"1GiB\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .args([
            "report",
            fixture("delta-0.8.0-null-partition").to_str().unwrap(),
        ])
        .env("LAKEHEALTH_CONFIG", &cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("max_fille_size") && err.contains("line 3"),
        "{err}"
    );
}

/// Runs the binary with `args`, extra environment, and its log in `log`.
fn lakehealth_logged(args: &[&str], env: &[(&str, &str)], log: &std::path::Path) -> Output {
    lakehealth_cmd()
        .args(args)
        .arg("--log-file")
        .arg(log)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

/// Asserts that none of `secrets` is on stdout, stderr or in the log.
fn assert_hidden(case: &str, o: &Output, log: &std::path::Path, secrets: &[&str]) {
    let out = String::from_utf8_lossy(&o.stdout);
    let err = stderr(o);
    let logged = std::fs::read_to_string(log).unwrap_or_default();
    for s in secrets {
        for (name, text) in [("stdout", &*out), ("stderr", &*err), ("log", &*logged)] {
            assert!(!text.contains(s), "{case}: {s:?} on {name}:\n{text}");
        }
    }
}

#[test]
fn secrets_never_show_on_stdout_stderr_or_in_the_log() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    copy_dir(&fixture("delta-0.8.0-null-partition"), &table);
    let t = table.to_str().unwrap();
    let log = d.path().join("lakehealth.log");

    // A Ray address's user info: the plan names the executor (and the log gets the line).
    let o = lakehealth_logged(
        &[
            "compact",
            t,
            "--dry-run",
            "--executor",
            "ray",
            "--ray-address",
            "http://rayuser:rpw@127.0.0.1:9",
        ],
        &[],
        &log,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Ray cluster at http://127.0.0.1:9"),
        "{}",
        stderr(&o)
    );
    assert_hidden("ray address", &o, &log, &["rpw", "rayuser"]);

    // ... also from $RAY_ADDRESS, in the TUI-less `watch` policy summary of a policy file.
    let policy = d.path().join("p.toml");
    std::fs::write(
        &policy,
        "executor = \"ray\"\nray_address = \"http://puser:ppw@127.0.0.1:9\"\n",
    )
    .unwrap();
    let history = d.path().join("h.jsonl");
    let o = lakehealth_logged(
        &[
            "watch",
            t,
            "--once",
            "--policy",
            policy.to_str().unwrap(),
            "--history",
            history.to_str().unwrap(),
        ],
        &[],
        &log,
    );
    assert!(
        stderr(&o).contains("Ray cluster at http://127.0.0.1:9"),
        "{}",
        stderr(&o)
    );
    assert_hidden("policy", &o, &log, &["ppw", "puser"]);
    let hist = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(!hist.contains("ppw"), "{hist}");

    // A mistyped -o KEY:VALUE: clap quotes the argument.
    let o = lakehealth_logged(&["report", t, "-o", "AWS_SECRET_ACCESS_KEY:sk9"], &[], &log);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("KEY=VALUE"), "{}", stderr(&o));
    assert_hidden("-o typo", &o, &log, &["sk9"]);

    // A config file that does not parse, on its secret line.
    let cfg = d.path().join("config.toml");
    for text in [
        "[storage]\nAWS_SECRET_ACCESS_KEY = \"cfgsecret\nAWS_REGION = \"x\"\n",
        "[storage]\nAWS_SECRET_ACCESS_KEY = cfgsecret\n",
        "[storage]\nAWS_SECRET_ACCESS_KEY = 4242\n",
    ] {
        std::fs::write(&cfg, text).unwrap();
        let o = lakehealth_logged(&["report", t, "--config", cfg.to_str().unwrap()], &[], &log);
        assert!(!o.status.success(), "{text}");
        assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
        assert_hidden(text, &o, &log, &["cfgsecret", "4242"]);
    }
    // The log holds the errors above: the checks read something.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("invalid config file"), "{logged}");
}

#[test]
fn sizes_need_a_unit_and_a_sane_target() {
    let t = fixture("delta-0.8.0-null-partition");
    let t = t.to_str().unwrap();
    let o = lakehealth(&["report", t, "--target", "128"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("write 128MiB"), "{}", stderr(&o));
    let o = lakehealth(&["report", t, "--target", "4KiB"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--target 4 KiB is below the minimum of 1 MiB"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_dry_run_prints_its_plan_on_stdout_so_it_can_be_piped() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-null-partition"), d.path());
    let o = lakehealth(&["compact", d.path().to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("plan at version "), "{out}");
    assert!(!stderr(&o).contains("plan at version"), "{}", stderr(&o));
    // A real run reports its plan beside its progress, on stderr.
    let o = lakehealth(&["compact", d.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("plan at version "), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("plan at version"));
}

#[test]
fn a_selection_that_matches_nothing_lists_what_exists_and_fails() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-null-partition"), d.path());
    let t = d.path().to_str().unwrap();
    let o = lakehealth(&["compact", t, "--partition", "A", "--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--partition \"A\" matches none of the table's 2 partitions: k=A, k=null"),
        "{err}"
    );
    assert!(err.contains("did you mean --partition k=A?"), "{err}");
    let o = lakehealth(&["compact", t, "--where", "k = 'B'", "--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("matches none of the table's 2 partitions"),
        "{}",
        stderr(&o)
    );
    // What matches still plans.
    let o = lakehealth(&["compact", t, "--partition", "k=A", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_root_with_an_unreadable_table_prints_the_others_and_fails() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(
        &fixture("delta-0.8.0-null-partition"),
        &d.path().join("good"),
    );
    let bad = d.path().join("bad");
    copy_dir(&fixture("checkpoints"), &bad);
    std::fs::write(
        bad.join("_delta_log/00000000000000000012.json"),
        "{\"add\": {\"path\": truncated\n",
    )
    .unwrap();
    let root = d.path().to_str().unwrap();
    for json in [false, true] {
        let mut args = vec!["report", root];
        if json {
            args.push("--json");
        }
        let o = lakehealth(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("good"), "{out}");
        assert!(
            out.contains("00000000000000000012.json"),
            "the error row: {out}"
        );
        assert!(stderr(&o).contains("1 of 2 tables under"), "{}", stderr(&o));
    }
}

#[test]
fn the_log_folder_is_refused_naming_its_table() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("delta-0.8.0-null-partition"), d.path());
    let log = d.path().join("_delta_log");
    let o = lakehealth(&["report", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let table = std::fs::canonicalize(d.path()).unwrap();
    assert!(
        stderr(&o).contains(&format!("open the table itself: {}", table.display())),
        "{}",
        stderr(&o)
    );
    // Remote locations too, an Azure one with its container.
    let o = lakehealth(&[
        "report",
        "abfss://cont@acct.dfs.core.windows.net/lake/t/_delta_log",
    ]);
    assert!(
        stderr(&o).contains("open the table itself: abfss://cont@acct.dfs.core.windows.net/lake/t"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_mistyped_subcommand_gets_the_one_meant() {
    let t = fixture("delta-0.8.0-null-partition");
    for args in [vec!["reprot", t.to_str().unwrap()], vec!["compat"]] {
        let o = lakehealth(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a similar subcommand exists"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn help_lists_only_the_options_a_command_takes() {
    let help = |args: &[&str]| String::from_utf8_lossy(&lakehealth(args).stdout).into_owned();
    let config = help(&["config", "--help"]);
    assert!(config.contains("--config"), "{config}");
    for absent in [
        "--ray-address",
        "--target",
        "--storage-option",
        "--poll",
        "--depth",
    ] {
        assert!(
            !config.contains(absent),
            "config --help lists {absent}:\n{config}"
        );
    }
    let compact = help(&["compact", "--help"]);
    for present in ["--ray-address", "--target", "--storage-option"] {
        assert!(
            compact.contains(present),
            "compact --help lacks {present}:\n{compact}"
        );
    }
    assert!(!compact.contains("--poll"), "{compact}");
    let report = help(&["report", "--help"]);
    assert!(!report.contains("ceil("), "{report}");
    assert!(
        report.contains("floor(small bytes / max(target"),
        "{report}"
    );
}

#[test]
fn s3_without_credentials_says_what_to_set() {
    // A closed local port for both the endpoint and the instance metadata service (IMDS, the
    // credential chain's last resort): no network, no real credentials, quick failures.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("http://127.0.0.1:{port}");
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .args(["report", "s3://bucket/t", "-o", "AWS_REGION=us-east-1"])
        .args([
            "-o",
            &format!("AWS_ENDPOINT_URL={closed}"),
            "-o",
            "AWS_ALLOW_HTTP=true",
        ])
        .arg("--log-file")
        .arg(home.path().join("l.log"))
        .env_clear()
        .env("HOME", home.path())
        .env("LAKEHEALTH_CONFIG", "/dev/null")
        .env("AWS_METADATA_ENDPOINT", &closed)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("no credentials for s3://bucket/t"), "{err}");
    assert!(
        err.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
            && err.contains("-o AWS_ACCESS_KEY_ID="),
        "{err}"
    );
}

/// A new demo takes seconds to write: its build names each day as it lands, with the files
/// written of all, so the terminal is never blank meanwhile; a second run reuses the table and
/// writes nothing.
#[test]
fn the_demo_build_reports_each_day_as_it_lands_and_a_reused_demo_is_silent() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("demo");
    let dir = dir.to_str().unwrap();
    let o = lakehealth(&["demo", "--no-tui", "--dir", dir]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let days: Vec<&str> = err.lines().filter(|l| l.contains(" written, ")).collect();
    // Two compacted days, one mixed day, three days of small files and today's.
    assert_eq!(days.len(), 7, "{err}");
    let counts: Vec<(u64, u64)> = days
        .iter()
        .map(|l| {
            let tail = l.rsplit(", ").next().unwrap().trim_end_matches(" files");
            let (a, b) = tail.split_once('/').unwrap();
            let n = |s: &str| s.parse::<u64>().unwrap();
            (n(a), n(b))
        })
        .collect();
    assert!(counts.windows(2).all(|w| w[0].0 < w[1].0), "{err}");
    let (written, total) = *counts.last().unwrap();
    assert_eq!(written, total, "the last day completes the count: {err}");
    assert!(text(&o.stdout).contains("streaming_sensor_data"));

    let again = lakehealth(&["demo", "--no-tui", "--dir", dir]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains(" written, "), "{}", stderr(&again));
}

#[test]
fn compact_json_shows_the_plans_estimate_and_the_jobs_actuals_at_the_configured_prices() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    sensor_table_with(&table, &[("2026-12-01", 12), ("2026-12-02", 9)]);
    let t = table.to_str().unwrap();
    // A local disk is free by default: the config prices it here.
    let cfg = d.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[price.file]\nget_per_1000 = 1.0\nput_per_1000 = 10.0\nlist_per_1000 = 100.0\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let usd = |o: &serde_json::Value| {
        let n = |k: &str| o[k].as_u64().unwrap_or_else(|| panic!("{k} in {o}")) as f64;
        (n("get") + 10.0 * n("put") + 100.0 * n("list")) / 1000.0
    };
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;

    let o = lakehealth(&["compact", t, "--dry-run", "--json", "--config", c]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &plan["estimate"];
    for k in [
        "get",
        "put",
        "list",
        "delete",
        "bytes_read",
        "bytes_written",
    ] {
        assert!(e[k].as_u64().is_some(), "estimate.{k} in {e}");
    }
    assert!(
        e["get"].as_u64().unwrap() >= 21,
        "a GET per input at least: {e}"
    );
    assert!(near(e["usd"].as_f64().unwrap(), usd(e)), "{e}");

    let o = lakehealth(&["compact", t, "--json", "--config", c]);
    assert!(o.status.success(), "{}", stderr(&o));
    let done: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (e, a) = (&done["estimate"], &done["actual"]);
    assert_eq!(e, &plan["estimate"], "the job ran the plan it showed");
    assert!(a["get"].as_u64().unwrap() >= 21, "{a}");
    assert!(
        a["put"].as_u64().unwrap() >= 2,
        "an output and a commit per partition: {a}"
    );
    assert!(near(a["usd"].as_f64().unwrap(), usd(a)), "{a}");
    assert!(stderr(&o).contains("cost: "), "{}", stderr(&o));
}
