//! The `lakehealth` binary: JSON schema of `report`, and clear failures for bad input.

use std::process::{Command, Output};

use crate::common::*;

fn lakehealth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lakehealth"))
        .args(args)
        .env("LAKEHEALTH_CONFIG", "/dev/null")
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
    let mapped = tempfile::tempdir().unwrap();
    copy_dir(&fixture("table_with_column_mapping"), mapped.path());
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
            vec!["compact", mapped.path().to_str().unwrap()],
            "column mapping",
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
