//! Skipping health (`report --skipping`): each column's overlap depth agrees with a brute-force
//! count over Python deltalake's own reading of the statistics, per table and per partition;
//! clustering columns come first and past their bound are a finding.

use std::collections::HashMap;

use crate::support::common::{lakehealth, loc, runtime, stderr, text};
use crate::support::harness::py_script;
use lakehealth::engine::delta::skipping::skipping_health;

/// Runs `tests/py/skipping_depth.py` with `args`; its stdout.
pub(crate) fn py(args: &[&str]) -> String {
    let out = py_script("skipping_depth.py").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "skipping_depth.py {args:?}: {}",
        stderr(&out)
    );
    text(&out.stdout)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn each_columns_depth_agrees_with_a_brute_force_count_over_python_deltalakes_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let uri = dir.to_str().unwrap();
    py(&["make", uri]);
    let expected: serde_json::Value =
        serde_json::from_str(&py(&["measure", uri, "seq", "sensor", "note"])).unwrap();
    let h = runtime()
        .block_on(skipping_health(&loc(&dir), &HashMap::new()))
        .unwrap();
    assert_eq!(h.files, 30);
    assert!(h.clustering_columns.is_empty());
    for c in ["seq", "sensor", "note"] {
        let ours = &h.columns.iter().find(|x| x.column == c).unwrap().depth;
        let theirs = &expected["table"][c];
        assert_eq!(ours.files as u64, theirs["files"].as_u64().unwrap(), "{c}");
        assert_eq!(ours.worst as u64, theirs["worst"].as_u64().unwrap(), "{c}");
        assert!(
            close(ours.mean, theirs["mean"].as_f64().unwrap()),
            "{c}: {ours:?} vs {theirs}"
        );
        assert!(
            close(ours.point_files, theirs["point_files"].as_f64().unwrap()),
            "{c}: {ours:?} vs {theirs}"
        );
        assert_eq!(
            ours.all_null as u64,
            theirs["all_null"].as_u64().unwrap(),
            "{c}"
        );
        assert_eq!(
            ours.without_stats as u64,
            theirs["without_stats"].as_u64().unwrap(),
            "{c}"
        );
    }
    // The layout as made: `seq` tiles (every lookup opens one file), `sensor` spans nearly
    // every file, `note` is in one file only.
    let seq = &h.columns.iter().find(|x| x.column == "seq").unwrap().depth;
    assert_eq!((seq.worst, seq.point_files), (1, 1.0));
    let sensor = &h
        .columns
        .iter()
        .find(|x| x.column == "sensor")
        .unwrap()
        .depth;
    assert!(sensor.worst >= 25, "{sensor:?}");
    assert_eq!(
        h.columns.last().unwrap().column,
        "seq",
        "the best-skipping column last"
    );
    // Per partition: 15 files each, against the same count within the partition.
    assert_eq!(h.partitions_total, 2);
    for p in &h.partitions {
        let day = p.partition.0[0].1.clone().unwrap();
        for c in &p.columns {
            let theirs = &expected["partitions"][&day][&c.column];
            assert_eq!(p.files as u64, theirs["files"].as_u64().unwrap());
            assert_eq!(
                c.worst_depth as u64,
                theirs["worst"].as_u64().unwrap(),
                "{day} {c:?}"
            );
            assert!(
                close(c.mean_depth, theirs["mean"].as_f64().unwrap()),
                "{day} {c:?}"
            );
        }
    }
    assert!(
        h.findings.is_empty(),
        "no clustering columns: {:?}",
        h.findings
    );
}

#[test]
fn report_skipping_lists_a_liquid_tables_clustering_column_first_marked() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/delta/table_with_liquid_clustering");
    let out = lakehealth(&["report", dir.to_str().unwrap(), "--skipping", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["skipping"];
    assert_eq!(s["clustering_columns"], serde_json::json!(["id"]));
    assert_eq!(s["columns"][0]["column"], "id");
    assert_eq!(s["columns"][0]["clustering"], true);
    assert_eq!(s["files"], 10);
    let out = lakehealth(&["report", dir.to_str().unwrap(), "--skipping"]);
    let t = text(&out.stdout);
    assert!(t.contains("skipping (version 0, 10 files"), "{t}");
    assert!(t.contains("id *"), "the clustering column is marked: {t}");
    assert!(t.contains("* clustering column (id)"), "{t}");
    // Without the flag the report reads no statistics and has no section.
    let plain = lakehealth(&["report", dir.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(v.get("skipping").is_none());
}

/// An Iceberg table's skipping health comes from its manifests' bounds: the same 30 appends
/// written by pyiceberg, measured by `report --skipping --json`, agree with a brute-force count
/// over pyiceberg's own decoding of those bounds (`inspect.files()`), per table and partition;
/// the default sort order's column comes first, marked.
#[test]
fn an_iceberg_tables_depth_from_its_manifest_bounds_agrees_with_pyicebergs_reading_of_them() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    py(&["make-iceberg", d]);
    let expected: serde_json::Value =
        serde_json::from_str(&py(&["measure-iceberg", d, "seq", "sensor", "note"])).unwrap();
    let table = tmp.path().join("t");
    let out = lakehealth(&["report", table.to_str().unwrap(), "--skipping", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "iceberg");
    let s = &v["skipping"];
    assert_eq!(s["source"], "iceberg_manifests");
    assert_eq!(s["files"], 30);
    assert_eq!(s["clustering_columns"], serde_json::json!(["seq"]));
    assert_eq!(s["columns"][0]["column"], "seq");
    assert_eq!(s["columns"][0]["clustering"], true);
    let cols = s["columns"].as_array().unwrap();
    for c in ["seq", "sensor", "note"] {
        let ours = cols.iter().find(|x| x["column"] == c).unwrap();
        let theirs = &expected["table"][c];
        for k in ["files", "worst", "all_null", "without_stats"] {
            assert_eq!(ours[k], theirs[k], "{c} {k}: {ours} vs {theirs}");
        }
        for k in ["mean", "point_files"] {
            assert!(
                close(ours[k].as_f64().unwrap(), theirs[k].as_f64().unwrap()),
                "{c} {k}: {ours} vs {theirs}"
            );
        }
    }
    let sensor = cols.iter().find(|x| x["column"] == "sensor").unwrap();
    assert!(sensor["worst"].as_u64().unwrap() >= 25, "{sensor}");
    assert_eq!(s["partitions_total"], 2);
    for p in s["partitions"].as_array().unwrap() {
        let day = p["partition"]["day"].as_str().unwrap();
        for c in p["columns"].as_array().unwrap() {
            let name = c["column"].as_str().unwrap();
            // `day` (the partition's own column) has bounds too; it is one value per partition.
            if name == "day" {
                assert_eq!(c["worst_depth"], p["files"], "{day} {c}");
                continue;
            }
            let theirs = &expected["partitions"][day][name];
            assert_eq!(p["files"], theirs["files"], "{day}");
            assert_eq!(c["worst_depth"], theirs["worst"], "{day} {c}");
            assert!(
                close(
                    c["mean_depth"].as_f64().unwrap(),
                    theirs["mean"].as_f64().unwrap()
                ),
                "{day} {c}"
            );
        }
    }
    let t = text(&lakehealth(&["report", table.to_str().unwrap(), "--skipping"]).stdout);
    assert!(t.contains("from the manifests' lower/upper bounds"), "{t}");
    assert!(t.contains("* sort-order column (seq)"), "{t}");
}
