//! Iceberg tables written by pyiceberg (tests/py/make_iceberg.py: many small appends, partitions
//! `category` (identity, with NULLs) and `ts_day` (day(ts)), a delete that drops files and one
//! that rewrites files): lakehealth's report of the current snapshot has exactly the data files,
//! bytes and partitions pyiceberg lists for it, and as many commits as the table has snapshots;
//! locally, through the metadata file's URI, on S3 (moto), in `lakehealth report` and in the TUI,
//! where compaction without a catalog says how to name one.

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::KeyCode;
use lakehealth::engine::iceberg::{DEFAULT_TARGET_FILE_SIZE, load_iceberg};
use lakehealth::engine::location::Location;
use lakehealth::engine::model::format::TableFormat;
use lakehealth::engine::options::OpenOptions;
use lakehealth::engine::stats::table_report::TableReport;
use lakehealth::tui::app::Screen;
use serde::Deserialize;
use tempfile::TempDir;

use crate::support::common::*;
use crate::support::tui_driver::Driven;

#[derive(Debug, Deserialize)]
struct DataFile {
    size: u64,
    partition: BTreeMap<String, Option<String>>,
}

/// What pyiceberg reports for the table it wrote.
#[derive(Debug, Deserialize)]
struct Made {
    metadata_location: String,
    snapshots: usize,
    current_snapshot_id: i64,
    operations: Vec<String>,
    data_files: Vec<DataFile>,
    delete_files: u64,
    planned_files: usize,
}

type ByPartition = BTreeMap<Vec<(String, Option<String>)>, (u64, u64)>;

fn make_iceberg(uri: &str, catalog: &Path, storage_options_json: Option<&str>) -> Made {
    let mut c = py_script("make_iceberg.py");
    c.arg(uri).arg("--catalog-dir").arg(catalog);
    if let Some(o) = storage_options_json {
        c.args(["--storage-options", o]);
    }
    let o = c.output().expect("the venv's python runs");
    assert!(
        o.status.success(),
        "make_iceberg.py {uri}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let made: Made = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "make_iceberg.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    // The two ways pyiceberg has of listing the snapshot's data files agree.
    assert_eq!(made.planned_files, made.data_files.len());
    made
}

/// A local table under a new temporary folder: (folder, table path, pyiceberg's report).
fn local_table() -> (TempDir, std::path::PathBuf, Made) {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("events");
    let made = make_iceberg(table.to_str().unwrap(), &d.path().join("catalog"), None);
    (d, table, made)
}

fn expected(made: &Made) -> ByPartition {
    let mut m = ByPartition::new();
    for f in &made.data_files {
        // Spec order: category, then ts_day (BTreeMap order happens to be the same).
        let key: Vec<(String, Option<String>)> = ["category", "ts_day"]
            .iter()
            .map(|k| (k.to_string(), f.partition.get(*k).cloned().flatten()))
            .collect();
        let e = m.entry(key).or_default();
        e.0 += 1;
        e.1 += f.size;
    }
    m
}

fn reported(t: &TableReport) -> ByPartition {
    t.partitions
        .iter()
        .map(|p| (p.values.0.clone(), (p.stats.files, p.stats.bytes)))
        .collect()
}

/// Everything the report must agree with pyiceberg on.
fn assert_matches(t: &TableReport, made: &Made) {
    assert_eq!(t.format, TableFormat::Iceberg);
    assert_eq!(t.partition_columns, vec!["category", "ts_day"]);
    assert_eq!(t.stats.files, made.data_files.len() as u64);
    assert_eq!(
        t.stats.bytes,
        made.data_files.iter().map(|f| f.size).sum::<u64>()
    );
    assert_eq!(reported(t), expected(made));
    assert_eq!(t.commits.len(), made.snapshots);
    let ice = t.iceberg.as_ref().expect("Iceberg details");
    assert_eq!(ice.snapshot_id, Some(made.current_snapshot_id));
    assert_eq!(ice.snapshots as usize, made.snapshots);
    assert_eq!(ice.delete_files.files(), made.delete_files);
    // Newest first, as pyiceberg lists them oldest first.
    let ops: Vec<&str> = t.commits.iter().map(|c| c.operation.as_str()).collect();
    let mut want: Vec<&str> = made.operations.iter().map(String::as_str).collect();
    want.reverse();
    assert_eq!(ops, want);
    assert_eq!(t.thresholds.target_file_size, DEFAULT_TARGET_FILE_SIZE);
}

#[tokio::test]
async fn iceberg_report_equals_pyiceberg_files_bytes_partitions_and_snapshots() {
    let (_d, table, made) = local_table();
    let t = load_iceberg(&loc(&table), &opts(), &|_| {}).await.unwrap();
    assert_matches(&t, &made);
    // The table was built to have these: a NULL partition, and day(ts) rendered as a date.
    let parts = reported(&t);
    assert!(
        parts
            .keys()
            .any(|k| k[0].1.is_none() && k[1].1.as_deref() == Some("2026-11-30")),
        "{parts:?}"
    );
    // One delete dropped every file of category b on 2026-11-29: that partition is gone.
    assert!(
        !parts
            .keys()
            .any(|k| k[0].1.as_deref() == Some("b") && k[1].1.as_deref() == Some("2026-11-29")),
        "{parts:?}"
    );
    assert_eq!(
        made.operations.last().map(String::as_str),
        Some("overwrite")
    );
    // Every file is tiny: rewrite_data_files would take every partition of 5+ files.
    let p = &t.iceberg.as_ref().unwrap().rewrite_preview;
    let five_or_more = t.partitions.iter().filter(|p| p.stats.files >= 5).count() as u64;
    assert!(five_or_more > 0);
    assert_eq!(p.partitions, five_or_more);
    assert_eq!(
        p.files_in,
        t.partitions
            .iter()
            .filter(|p| p.stats.files >= 5)
            .map(|p| p.stats.files)
            .sum::<u64>()
    );
    assert_eq!(p.files_out, five_or_more);
}

#[tokio::test]
async fn an_iceberg_metadata_file_uri_opens_the_same_snapshot() {
    let (_d, table, made) = local_table();
    let by_folder = load_iceberg(&loc(&table), &opts(), &|_| {}).await.unwrap();
    // Through the metadata file (a file:// URI, as pyiceberg reports it) and the generic loader.
    let meta = Location::parse(&made.metadata_location).unwrap();
    let by_file = lakehealth::engine::open::load_table(&meta, &opts(), &|_| {})
        .await
        .unwrap();
    assert_matches(&by_file, &made);
    assert_eq!(by_file.name, "events");
    assert_eq!(by_file.stats, by_folder.stats);
}

#[test]
fn iceberg_on_s3_equals_pyiceberg() {
    let moto = Moto::start();
    moto.create_bucket("lake");
    let catalog = tempfile::tempdir().unwrap();
    let uri = "s3://lake/warehouse/events";
    let made = make_iceberg(uri, catalog.path(), Some(&moto.options_json()));
    assert!(
        made.metadata_location
            .starts_with("s3://lake/warehouse/events/metadata/")
    );
    let opts = OpenOptions {
        storage_options: moto.storage_options(),
        ..OpenOptions::default()
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt
        .block_on(load_iceberg(&Location::parse(uri).unwrap(), &opts, &|_| {}))
        .unwrap();
    assert_matches(&t, &made);
}

#[test]
fn report_cli_shows_an_iceberg_table_and_compact_asks_for_its_catalog() {
    let (_d, table, made) = local_table();
    let path = table.to_str().unwrap();
    let o = lakehealth(&["report", path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains(&format!(
            "iceberg v2  snapshot {}  {} snapshots",
            made.current_snapshot_id, made.snapshots
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("files {}", made.data_files.len())),
        "{out}"
    );
    assert!(out.contains("delete files: 0 (0 B)"), "{out}");
    assert!(
        out.contains("rewrite_data_files (defaults) would rewrite"),
        "{out}"
    );
    assert!(
        out.contains("compaction: through the table's catalog"),
        "{out}"
    );
    assert!(out.contains("category=null/ts_day=2026-11-30"), "{out}");

    let o = lakehealth(&["report", path, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "iceberg");
    assert_eq!(v["files"], made.data_files.len());
    assert_eq!(v["commits"].as_array().unwrap().len(), made.snapshots);
    assert_eq!(v["iceberg"]["snapshot_id"], made.current_snapshot_id);
    assert_eq!(v["iceberg"]["delete_files"]["position_files"], 0);

    // Without its catalog, compact says where an Iceberg commit goes.
    let o = lakehealth(&["compact", path, "--dry-run"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("an Iceberg table is committed through its catalog"),
        "{err}"
    );
}

#[tokio::test]
async fn snapshot_iceberg_table_view_without_a_catalog_says_how_to_name_it() {
    let (d, table, made) = local_table();
    let mut t = Driven::new(loc(&table).display(), (140, 40))
        .frozen()
        .open()
        .await;
    assert_eq!(t.app.screen, Screen::Table);
    t.keys(&[KeyCode::Char('c')]).await;
    match t.app.error() {
        Some(e) => assert!(
            e.starts_with(
                "Iceberg tables are compacted through their catalog: name it with --catalog URI"
            ),
            "{e}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let s = t
        .screen()
        .replace(d.path().to_str().unwrap(), "<tmp>")
        .replace(&made.current_snapshot_id.to_string(), "<snapshot-id>")
        .lines()
        // The id's digit count varies: the border after it moves, so that line ends at its text.
        .map(|l| {
            if l.contains("<snapshot-id>") {
                l.trim_end_matches('│').trim_end()
            } else {
                l.trim_end()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(s.contains("iceberg v2  snapshot <snapshot-id>"), "{s}");
    assert!(
        s.contains("Iceberg tables are compacted through their catalog"),
        "{s}"
    );
    insta::assert_snapshot!("iceberg_table_view_names_the_catalog", s);
}

/// A row of db.events as pyiceberg reads it: id, category, ts.
type Row = (i64, Option<String>, Option<String>);

/// pyiceberg's reading of db.events on S3: its rows (sorted) and live data files.
fn read_on_s3(catalog: &Path, options_json: &str) -> (Vec<Row>, usize) {
    let o = std::process::Command::new(crate::support::harness::python())
        .arg("-c")
        .arg(
            "import sys, json\n\
             from pyiceberg.catalog.sql import SqlCatalog\n\
             o = {k.lower(): v for k, v in json.loads(sys.argv[2]).items()}\n\
             cat = SqlCatalog('lh', uri='sqlite:///' + sys.argv[1],\n\
                 **{'s3.endpoint': o.get('aws_endpoint_url') or o.get('aws_endpoint'),\n\
                    's3.access-key-id': o['aws_access_key_id'],\n\
                    's3.secret-access-key': o['aws_secret_access_key'],\n\
                    's3.region': o.get('aws_region', 'us-east-1')})\n\
             t = cat.load_table('db.events')\n\
             rows = sorted([r['id'], r['category'], r['ts'].isoformat() if r['ts'] else None]\n\
                           for r in t.scan().to_arrow().to_pylist())\n\
             files = [f for f in t.inspect.files().to_pylist() if f['content'] == 0]\n\
             print(json.dumps({'rows': rows, 'files': len(files)}))",
        )
        .arg(catalog.join("catalog.db"))
        .arg(options_json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (
        serde_json::from_value(v["rows"].clone()).unwrap(),
        v["files"].as_u64().unwrap() as usize,
    )
}

/// On S3 (moto): an Iceberg compaction through the SQL catalog commits, pyiceberg reads every
/// row back from fewer files, the job's counted requests stay within a tenth of its estimate,
/// and a no-retention vacuum then leaves the rows exact.
#[test]
fn on_s3_an_iceberg_compaction_and_vacuum_keep_every_row_pyiceberg_reads() {
    use lakehealth::engine::iceberg::compact::job::{IceRequest, compact_iceberg};
    use lakehealth::engine::iceberg::vacuum::{
        IceVacuumRequest, plan_iceberg_vacuum, run_iceberg_vacuum,
    };
    let moto = Moto::start();
    moto.create_bucket("lake");
    let catalog = tempfile::tempdir().unwrap();
    let uri = "s3://lake/warehouse/events";
    make_iceberg(uri, catalog.path(), Some(&moto.options_json()));
    let (rows, files) = read_on_s3(catalog.path(), &moto.options_json());
    let opts = OpenOptions {
        storage_options: moto.storage_options(),
        ..OpenOptions::default()
    };
    let loc = Location::parse(uri).unwrap();
    let catalog_uri = format!("sqlite:///{}", catalog.path().join("catalog.db").display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let req = IceRequest {
        catalog: catalog_uri.clone(),
        max_retries: 3,
        ..Default::default()
    };
    let s = rt
        .block_on(compact_iceberg(&loc, &req, &opts, &|_| {}))
        .unwrap();
    assert!(!s.commits.is_empty() && s.failures.is_empty(), "{s:#?}");
    let (after, files_after) = read_on_s3(catalog.path(), &moto.options_json());
    assert_eq!(after, rows, "every row, value for value");
    assert!(files_after < files, "{files} -> {files_after}");
    let (e, a) = (s.plan.estimate.requests, s.actual.unwrap().requests);
    for (k, e, a) in [
        ("get", e.get, a.get),
        ("put", e.put, a.put),
        ("list", e.list, a.list),
    ] {
        let allowed = (a as f64 * 0.1).max(3.0);
        assert!(
            e.abs_diff(a) as f64 <= allowed,
            "{k}: estimated {e}, made {a}"
        );
    }
    let vreq = IceVacuumRequest {
        catalog: catalog_uri,
        retention: Some(std::time::Duration::ZERO),
        allow_short_retention: true,
        ..Default::default()
    };
    let plan = rt
        .block_on(plan_iceberg_vacuum(&loc, &vreq, &opts))
        .unwrap();
    assert!(!plan.snapshots_to_expire.is_empty(), "{plan:#?}");
    let done = rt
        .block_on(run_iceberg_vacuum(&loc, &vreq, &opts, &plan))
        .unwrap();
    assert!(
        done.files_deleted > 0 && done.failed.is_empty(),
        "{done:#?}"
    );
    assert_eq!(read_on_s3(catalog.path(), &moto.options_json()).0, rows);
}
