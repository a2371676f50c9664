//! Plain Parquet folders and Spark file sinks: statistics from a listing (checked against an
//! independent listing by pyarrow), the sink's log (active files exactly the log's, orphans
//! apart), and the safe fix (convert to Delta, then compact: Python deltalake reads exactly the
//! original rows; a dry run changes nothing). Locally and on S3 (moto).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::support::common::lakehealth;
use crate::support::harness::{Moto, py_script};

fn ok(o: &Output, what: &str) -> serde_json::Value {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{what} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

fn py(args: &[&str], options: Option<&str>) -> serde_json::Value {
    let mut c = py_script("folders.py");
    c.args(args);
    if let Some(o) = options {
        c.args(["--storage-options", o]);
    }
    let o = c.output().expect("the venv's python runs");
    ok(&o, &format!("folders.py {args:?}"))
}

/// Partition values (as a JSON object) → (files, bytes), from a `report --json`.
fn report_partitions(report: &serde_json::Value) -> BTreeMap<String, (u64, u64)> {
    report["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                canonical(&p["values"]),
                (p["files"].as_u64().unwrap(), p["bytes"].as_u64().unwrap()),
            )
        })
        .collect()
}

fn listed_partitions(listing: &serde_json::Value) -> BTreeMap<String, (u64, u64)> {
    listing["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                canonical(&p["values"]),
                (p["files"].as_u64().unwrap(), p["bytes"].as_u64().unwrap()),
            )
        })
        .collect()
}

/// `compact` (target 1 MiB) on a converted table removes files, and the independent reader then
/// finds exactly `rows` in fewer than `files_before` files. `store_args`: the CLI's storage flags.
fn compacts_keeping_rows(
    uri: &str,
    opts: Option<&str>,
    store_args: &[String],
    rows: &serde_json::Value,
    files_before: u64,
) {
    let mut args = vec!["compact", uri, "--json", "--target", "1MiB"];
    args.extend(store_args.iter().map(String::as_str));
    let compacted = ok(&lakehealth(&args), "compact");
    assert!(
        compacted["files_removed"].as_u64().unwrap() > 0,
        "{compacted}"
    );
    let read = py(&["delta-rows", uri], opts);
    assert_eq!(&read["rows"], rows, "rows after convert + compact");
    assert!(read["files"].as_u64().unwrap() < files_before);
}

/// A JSON object with sorted keys, as text.
fn canonical(v: &serde_json::Value) -> String {
    let m: BTreeMap<String, serde_json::Value> = serde_json::from_value(v.clone()).unwrap();
    serde_json::to_string(&m).unwrap()
}

/// Every file below `dir` with its size, modification time and content.
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                out.insert(
                    rel,
                    (
                        m.len(),
                        m.modified().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    ),
                );
            }
        }
    }
    out
}

fn check_hive_report(report: &serde_json::Value, listing: &serde_json::Value, hidden: u64) {
    assert_eq!(report["format"], "parquet_folder");
    assert_eq!(
        report["partition_columns"],
        serde_json::json!(["day", "city"])
    );
    let ours = report_partitions(report);
    let theirs = listed_partitions(listing);
    assert_eq!(ours, theirs, "files and bytes per partition");
    // 3 days (one NULL) x 2 cities (one needing escapes), 4 files each.
    assert_eq!(ours.len(), 6);
    assert!(
        ours.contains_key(r#"{"city":"a b/c","day":null}"#),
        "{ours:?}"
    );
    let files: u64 = ours.values().map(|(f, _)| f).sum();
    assert_eq!(report["files"], files);
    // _SUCCESS, the .crc and _temporary/ (and S3 folder markers) are hidden, never data.
    assert_eq!(report["folder"]["hidden_files"]["files"], hidden);
    assert!(
        report["folder"]["listing"]["objects_listed"]
            .as_u64()
            .unwrap()
            >= files + 3
    );
}

#[test]
fn a_hive_folder_written_by_pyarrow_reports_each_partitions_files_and_bytes() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("events");
    let uri = root.to_str().unwrap();
    py(&["hive", uri], None);
    let listing = py(&["list", uri], None);
    let report = ok(&lakehealth(&["report", uri, "--json"]), "report");
    check_hive_report(&report, &listing, 3);
    assert!(report["folder"]["listing"]["list_requests"].is_null());

    // Found beside a Delta table under a root, labelled with its format.
    let delta = crate::support::common::fixture("delta-0.8.0-partitioned");
    crate::support::common::copy_dir(&delta, &d.path().join("sales"));
    let root_report = ok(
        &lakehealth(&["report", d.path().to_str().unwrap(), "--json"]),
        "root report",
    );
    let mut formats: Vec<(String, String)> = root_report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["format"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    formats.sort();
    assert_eq!(
        formats,
        vec![
            ("events".to_string(), "parquet_folder".to_string()),
            ("sales".to_string(), "delta".to_string())
        ]
    );
    let text = lakehealth(&["report", d.path().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("parquet"), "{text}");
}

/// A Hive folder written by pyarrow (`folders.py hive`, with `flags`) to a fresh moto bucket:
/// the server, the folder's URI, what was written, and pyarrow's own listing of it.
fn hive_on_moto(flags: &[&str]) -> (Moto, String, serde_json::Value, serde_json::Value) {
    let moto = Moto::start();
    moto.create_bucket("lake");
    let opts = moto.options_json();
    let uri = "s3://lake/raw/events";
    let mut args = vec!["hive", uri];
    args.extend(flags);
    let made = py(&args, Some(&opts));
    let listing = py(&["list", uri], Some(&opts));
    (moto, uri.to_string(), made, listing)
}

#[test]
fn a_hive_folder_on_s3_reports_what_an_independent_listing_finds() {
    let (moto, uri, _, listing) = hive_on_moto(&[]);
    let uri = uri.as_str();
    let mut args = vec!["report", uri, "--json"];
    let cli = moto.cli_args();
    args.extend(cli.iter().map(String::as_str));
    let report = ok(&lakehealth(&args), "report on s3");
    // pyarrow also writes folder markers for _temporary/ and _temporary/0/.
    check_hive_report(&report, &listing, 5);
    let objects = report["folder"]["listing"]["objects_listed"]
        .as_u64()
        .unwrap();
    assert_eq!(
        report["folder"]["listing"]["list_requests"].as_u64(),
        Some(objects.div_ceil(1000))
    );
}

#[test]
fn a_hive_folder_on_s3_converts_in_place_then_compacts_with_every_row_kept() {
    let (moto, uri, made, listing) = hive_on_moto(&["--plain"]);
    let uri = uri.as_str();
    let opts = moto.options_json();
    let cli = moto.cli_args();
    let with_store = |args: &[&str]| {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(cli.iter().map(String::as_str));
        lakehealth(&a)
    };
    let dry = ok(
        &with_store(&[
            "convert",
            uri,
            "--partition-by",
            "day:date",
            "--dry-run",
            "--json",
        ]),
        "convert --dry-run on s3",
    );
    assert_eq!(dry["files"], 12);
    let done = ok(
        &with_store(&[
            "convert",
            uri,
            "--partition-by",
            "day:date",
            "--yes",
            "--json",
        ]),
        "convert on s3",
    );
    assert_eq!(done["files"], 12);
    // An independent reader (Python deltalake on the same bucket) sees exactly the rows.
    let read = py(&["delta-rows", uri], Some(&opts));
    assert_eq!(read["files"], 12);
    assert_eq!(read["rows"], made["rows"]);
    let report = ok(&with_store(&["report", uri, "--json"]), "report on s3");
    assert_eq!(report["format"], "delta");
    assert_eq!(report_partitions(&report), listed_partitions(&listing));
    // The converted table compacts like any other: fewer files, the same rows.
    compacts_keeping_rows(uri, Some(&opts), &cli, &made["rows"], 12);
}

#[test]
fn a_spark_sink_folder_counts_exactly_the_logs_files_and_shows_orphans_apart() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap().join("sink");
    std::fs::create_dir(&root).unwrap();
    let uri = root.to_str().unwrap();
    let made = py(&["sink", uri], None);
    let active: BTreeMap<String, u64> = serde_json::from_value(made["active"].clone()).unwrap();
    let orphans: BTreeMap<String, u64> = serde_json::from_value(made["orphans"].clone()).unwrap();
    let report = ok(&lakehealth(&["report", uri, "--json"]), "report");
    assert_eq!(report["format"], "spark_file_sink");
    assert_eq!(report["files"], active.len() as u64);
    assert_eq!(report["bytes"], active.values().sum::<u64>());
    // Per partition, the log's files and sizes.
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (rel, size) in &active {
        let day = rel.split('/').next().unwrap().trim_start_matches("day=");
        let e = want
            .entry(canonical(&serde_json::json!({ "day": day })))
            .or_default();
        e.0 += 1;
        e.1 += size;
    }
    assert_eq!(report_partitions(&report), want);
    let o = &report["folder"]["orphans"];
    assert_eq!(o["files"], orphans.len() as u64, "{o}");
    assert_eq!(o["bytes"], orphans.values().sum::<u64>());
    assert_eq!(report["folder"]["missing"]["files"], 0);
    // Batches as commits: the compacted batch 9 is the checkpoint, 12 the latest, one every 10 s.
    assert_eq!(report["version"], 12);
    assert_eq!(report["log"]["checkpoint_version"], 9);
    assert_eq!(report["log"]["last_commit_ms"], made["last_batch_ms"]);
    let w = &report["streaming_writers"][0];
    assert_eq!(w["last_batch"], 12);
    assert_eq!(w["batches_per_minute"], 6.0);
}

#[test]
fn converting_a_sink_then_compacting_keeps_exactly_the_logged_rows_and_a_dry_run_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap().join("sink");
    std::fs::create_dir(&root).unwrap();
    let uri = root.to_str().unwrap();
    let made = py(&["sink", uri], None);
    let active: BTreeMap<String, u64> = serde_json::from_value(made["active"].clone()).unwrap();

    let before = snapshot(&root);
    let dry = ok(
        &lakehealth(&["convert", uri, "--dry-run", "--json"]),
        "convert --dry-run",
    );
    assert_eq!(dry["files"], active.len() as u64);
    assert_eq!(dry["orphans"]["files"], 2);
    let steps = dry["steps"].to_string();
    assert!(steps.contains("stop the streaming query"), "{steps}");
    assert!(steps.contains("format(\\\"delta\\\")"), "{steps}");
    assert_eq!(snapshot(&root), before, "a dry run changed the folder");
    assert!(!root.join("_delta_log").exists());

    // Without --yes and without a terminal it refuses, and changes nothing.
    let refused = lakehealth(&["convert", uri]);
    assert!(!refused.status.success());
    assert_eq!(snapshot(&root), before);

    let done = ok(&lakehealth(&["convert", uri, "--yes", "--json"]), "convert");
    assert_eq!(done["files"], active.len() as u64);
    assert_eq!(done["bytes"], active.values().sum::<u64>());
    // No data file was touched: every file that was there is there, unchanged.
    let after = snapshot(&root);
    for (p, v) in &before {
        assert_eq!(after.get(p), Some(v), "{p} changed");
    }
    let converted = py(&["delta-rows", uri], None);
    assert_eq!(converted["rows"], made["rows"]);
    assert_eq!(converted["files"], active.len() as u64);

    compacts_keeping_rows(uri, None, &[], &made["rows"], active.len() as u64);
    let report = ok(&lakehealth(&["report", uri, "--json"]), "report");
    assert_eq!(report["format"], "delta");
}

#[test]
fn a_sink_whose_log_sizes_differ_from_its_files_is_refused_before_anything_is_committed() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap().join("sink");
    std::fs::create_dir(&root).unwrap();
    let uri = root.to_str().unwrap();
    let made = py(&["sink", uri], None);
    let active: BTreeMap<String, u64> = serde_json::from_value(made["active"].clone()).unwrap();
    let (resized, _) = active.iter().next().unwrap();
    // The file no longer has the size the sink log recorded for it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(resized))
        .unwrap();
    std::io::Write::write_all(&mut f, b"appended").unwrap();
    drop(f);
    let before = snapshot(&root);
    let o = lakehealth(&["convert", uri, "--yes"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("another size") && err.contains(resized.as_str()),
        "{err}"
    );
    assert!(
        !root.join("_delta_log").exists(),
        "nothing may be committed"
    );
    assert_eq!(snapshot(&root), before);
}

#[test]
fn converting_a_hive_folder_checks_partition_types_and_refuses_escaped_names() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("events");
    let uri = root.to_str().unwrap();
    let made = py(&["hive", uri], None);
    let before = snapshot(&root);
    // `city=a%20b%2Fc`: delta-rs 1.1's converter would log the decoded name, a missing file.
    let escaped = lakehealth(&["convert", uri, "--yes"]);
    assert!(!escaped.status.success());
    let err = String::from_utf8_lossy(&escaped.stderr);
    assert!(err.contains("percent-escaped"), "{err}");
    assert_eq!(snapshot(&root), before);

    // Without the escaped city: typed partitions, checked against every value.
    std::fs::remove_dir_all(root.join("day=2026-11-28").join("city=a%20b%2Fc")).unwrap();
    std::fs::remove_dir_all(root.join("day=2026-11-29").join("city=a%20b%2Fc")).unwrap();
    std::fs::remove_dir_all(
        root.join("day=__HIVE_DEFAULT_PARTITION__")
            .join("city=a%20b%2Fc"),
    )
    .unwrap();
    let unknown = lakehealth(&["convert", uri, "--partition-by", "nope", "--dry-run"]);
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("day, city"), "{err}");
    let bad = lakehealth(&["convert", uri, "--partition-by", "city:int", "--dry-run"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("city=\"x\""), "{err}");
    let listing = py(&["list", uri], None);
    let done = ok(
        &lakehealth(&[
            "convert",
            uri,
            "--partition-by",
            "day:date",
            "--yes",
            "--json",
        ]),
        "convert",
    );
    assert_eq!(done["files"], 12);
    let read = py(&["delta-rows", uri], None);
    assert_eq!(read["files"], 12);
    let kept: Vec<&serde_json::Value> = made["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r.as_str().unwrap().contains("a b/c"))
        .collect();
    assert_eq!(
        read["rows"].as_array().unwrap().iter().collect::<Vec<_>>(),
        kept
    );
    let report = ok(&lakehealth(&["report", uri, "--json"]), "report");
    assert_eq!(report["format"], "delta");
    assert_eq!(report_partitions(&report), listed_partitions(&listing));
}

/// A Hive folder without percent-escaped names (delta-rs's converter refuses those).
fn plain_hive_folder(root: &Path) {
    py(&["hive", root.to_str().unwrap()], None);
    for day in ["2026-11-28", "2026-11-29", "__HIVE_DEFAULT_PARTITION__"] {
        std::fs::remove_dir_all(root.join(format!("day={day}")).join("city=a%20b%2Fc")).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_tui_c_says_why_not_and_shift_c_previews_then_converts_to_delta() {
    use crossterm::event::KeyCode;
    use lakehealth::engine::model::format::TableFormat;
    use lakehealth::tui::app::Modal;

    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("events");
    plain_hive_folder(&root);
    let uri = crate::support::common::loc(&root).display();
    let mut t = crate::support::tui_driver::Driven::new(uri, (150, 50))
        .open()
        .await;
    assert_eq!(
        t.app.table.as_ref().unwrap().format,
        TableFormat::ParquetFolder
    );
    // Compaction is not offered, and the error says why and what to do.
    t.keys(&[KeyCode::Char('c')]).await;
    let e = t.app.error().unwrap_or_default().to_string();
    assert!(e.contains("convert the folder to Delta first"), "{e}");
    assert!(t.app.plan().is_none());
    t.keys(&[KeyCode::Esc]).await;

    let before = snapshot(&root);
    t.keys(&[KeyCode::Char('C')]).await;
    t.until(
        "the conversion preview",
        |a| matches!(a.modals.modal(), Some(Modal::Convert(d)) if d.result.is_some()),
    )
    .await;
    let screen = t.screen();
    assert!(screen.contains("Convert to Delta"), "{screen}");
    assert!(screen.contains("stop every job"), "{screen}");
    // Esc closes it without a change.
    t.keys(&[KeyCode::Esc]).await;
    assert!(t.app.modals.modal().is_none());
    assert_eq!(snapshot(&root), before);

    t.keys(&[KeyCode::Char('C')]).await;
    t.until(
        "the conversion preview",
        |a| matches!(a.modals.modal(), Some(Modal::Convert(d)) if d.result.is_some()),
    )
    .await;
    t.key(KeyCode::Enter);
    t.until("the converted table", |a| {
        a.modals.modal().is_none()
            && a.loading.is_none()
            && a.table
                .as_ref()
                .is_some_and(|t| t.format == TableFormat::Delta)
    })
    .await;
    assert!(t.app.error().is_none(), "{:?}", t.app.error());
    assert_eq!(t.app.table.as_ref().unwrap().stats.files, 12);
}

/// A writer still adding files after the preview (a streaming query left running): the
/// conversion is refused and the folder is left exactly as it was; previewed again, it converts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_changed_since_the_preview_is_not_converted() {
    use lakehealth::engine::parquet_folder::convert::{convert, plan_convert};
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("events");
    plain_hive_folder(&root);
    let loc = lakehealth::engine::location::Location::parse(root.to_str().unwrap()).unwrap();
    let opts = lakehealth::engine::options::OpenOptions::default();
    let plan = plan_convert(&loc, &opts, &[], &|_| {}).await.unwrap();
    // The next batch lands: one more file in a partition the preview saw.
    let first = snapshot(&root)
        .into_keys()
        .find(|k| k.starts_with("day=") && k.ends_with(".parquet"))
        .unwrap();
    let src = root.join(&first);
    std::fs::copy(&src, src.with_file_name("part-99999-late.parquet")).unwrap();
    let before = snapshot(&root);
    let err = convert(&loc, &plan, &opts).await.unwrap_err().to_string();
    assert!(
        err.contains("changed since the preview (1 file(s) added, 0 gone)"),
        "{err}"
    );
    assert_eq!(snapshot(&root), before, "nothing was written");
    let again = plan_convert(&loc, &opts, &[], &|_| {}).await.unwrap();
    assert_eq!(again.files, plan.files + 1);
    let done = convert(&loc, &again, &opts).await.unwrap();
    assert_eq!(done.files, again.files);
}
