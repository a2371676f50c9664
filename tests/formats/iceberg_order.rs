//! `compact --zorder` and `--sort-by` on an Iceberg table (SQL catalog): 40 pyiceberg appends
//! of random rows, each file spanning every column's whole range
//! (`skipping_depth.py make-iceberg-random`), rewritten in order; overlap depth measured by
//! brute force over pyiceberg's own decoding of the new manifests' bounds, rows read back by
//! pyiceberg (count and digest of every value), and the new files' `sort_order_id` as pyiceberg
//! reads it.

use std::path::PathBuf;

use tempfile::TempDir;

use crate::skipping::py;
use crate::support::common::*;

struct Random {
    dir: TempDir,
}

impl Random {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        py(&["make-iceberg-random", dir.path().to_str().unwrap()]);
        Random { dir }
    }

    fn d(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn table(&self) -> PathBuf {
        self.dir.path().join("t")
    }

    fn catalog(&self) -> String {
        format!("sqlite:///{}", self.dir.path().join("catalog.db").display())
    }

    fn compact(&self, extra: &[&str]) -> std::process::Output {
        lakehealth_cmd()
            .arg("compact")
            .arg(self.table())
            .args(["--catalog", &self.catalog(), "--target", "1MiB"])
            .args(extra)
            .output()
            .unwrap()
    }

    /// (files, worst depth, mean depth) of each column, by pyiceberg's reading of the bounds.
    fn depth(&self, col: &str) -> (u64, u64, f64) {
        let v: serde_json::Value =
            serde_json::from_str(&py(&["measure-iceberg", self.d(), col])).unwrap();
        let c = &v["table"][col];
        (
            c["files"].as_u64().unwrap(),
            c["worst"].as_u64().unwrap(),
            c["mean"].as_f64().unwrap(),
        )
    }

    fn rows(&self) -> serde_json::Value {
        serde_json::from_str(&py(&["rows-iceberg", self.d()])).unwrap()
    }
}

#[test]
fn compact_zorder_on_an_iceberg_table_lowers_both_columns_overlap_depth_and_keeps_every_row() {
    let t = Random::new();
    let rows = t.rows();
    let (files, _, ts_before) = t.depth("ts");
    let (_, _, id_before) = t.depth("id");
    assert_eq!(files, 40);
    assert!(
        ts_before >= 39.0 && id_before >= 39.0,
        "every file spans both"
    );
    // The dry run plans the order and changes nothing.
    let before = contents(&t.table());
    let dry = t.compact(&["--zorder", "id,ts", "--dry-run", "--json"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let plan: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(
        plan["plan"]["order"]["order"]["kind"], "z_order",
        "{plan:#}"
    );
    assert_eq!(
        plan["plan"]["order"]["order"]["columns"],
        serde_json::json!(["id", "ts"])
    );
    assert_eq!(
        plan["plan"]["bins"][0]["files"].as_array().unwrap().len(),
        40
    );
    assert!(
        stderr(&dry).contains("z-order by id, ts"),
        "{}",
        stderr(&dry)
    );
    assert_eq!(contents(&t.table()), before, "a dry run changes nothing");

    let o = t.compact(&["--zorder", "id,ts", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (files, _, ts_after) = t.depth("ts");
    let (_, _, id_after) = t.depth("id");
    assert!(
        files >= 6,
        "several outputs, else depth says nothing: {files}"
    );
    // A z-order over two columns puts about sqrt(k) files on a point of each; bin-packing
    // would leave every file spanning both (depth k).
    for (col, after) in [("ts", ts_after), ("id", id_after)] {
        assert!(
            after <= 0.75 * files as f64,
            "{col}: mean depth {after} among {files} files"
        );
    }
    let after = t.rows();
    assert_eq!(after["rows"], rows["rows"]);
    assert_eq!(after["sha256"], rows["sha256"], "every value of every row");
    // A z-order is no Iceberg sort order: the files claim none.
    assert!(
        after["sort_order_ids"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.is_null()),
        "{after}"
    );
}

#[test]
fn compact_sort_by_on_an_iceberg_table_tiles_its_column_and_claims_the_tables_sort_order() {
    let t = Random::new();
    let rows = t.rows();
    let o = t.compact(&["--sort-by", "ts"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("new files claim the table's sort order 1"),
        "{}",
        stderr(&o)
    );
    let (files, worst, _) = t.depth("ts");
    assert!(files >= 6, "{files}");
    assert_eq!(worst, 1, "sorted files tile ts");
    let after = t.rows();
    assert_eq!(after["sha256"], rows["sha256"]);
    let ids = after["sort_order_ids"].as_array().unwrap();
    assert_eq!(ids.len() as u64, files);
    assert!(ids.iter().all(|v| v == 1), "{after}");
}

#[test]
fn an_order_on_a_column_the_iceberg_table_lacks_is_refused_naming_its_columns() {
    let t = Random::new();
    let before = contents(&t.table());
    let o = t.compact(&["--zorder", "sensor,ts"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("no top-level column \"sensor\"") && err.contains("id, ts, payload"),
        "{err}"
    );
    assert_eq!(contents(&t.table()), before, "nothing was changed");
}

/// `estimate` is within a tenth of `actual` (or 3 requests).
fn close(what: &str, estimate: &serde_json::Value, actual: &serde_json::Value) {
    eprintln!("{what}: estimate {estimate} actual {actual}");
    for k in ["get", "put", "list", "delete"] {
        let (e, a) = (estimate[k].as_u64().unwrap(), actual[k].as_u64().unwrap());
        let allowed = (a as f64 * 0.1).max(3.0);
        assert!(
            e.abs_diff(a) as f64 <= allowed,
            "{what} {k}: estimated {e}, made {a}: {estimate} vs {actual}"
        );
    }
}

/// The plan's estimate, in the dry run's JSON, against every request the job made to the
/// table's store (reading the table, the sweep, record, inputs, the z-order's sample, outputs
/// and their read-back, each commit's files and the reload after it): bin-packing and z-order
/// on one partition, and bin-packing over the 6 partitions of a partitioned table.
#[test]
fn an_iceberg_compactions_estimate_is_within_a_tenth_of_the_requests_it_made() {
    for flags in [&[][..], &["--zorder", "id,ts"][..]] {
        let t = Random::new();
        let mut dry_flags = flags.to_vec();
        dry_flags.extend(["--dry-run", "--json"]);
        let dry = t.compact(&dry_flags);
        assert!(dry.status.success(), "{}", stderr(&dry));
        let dry: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
        assert!(dry["actual"].is_null(), "a dry run runs no job");
        let estimate = dry["plan"]["estimate"].clone();
        assert!(estimate["get"].as_u64().unwrap() > 40, "{estimate}");
        let mut run = flags.to_vec();
        run.push("--json");
        let o = t.compact(&run);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        close(&format!("{flags:?}"), &estimate, &s["actual"]);
        assert!(stderr(&o).contains("cost: "), "{}", stderr(&o));
    }
    let t = crate::iceberg_compact::Table::new(12);
    let o = lakehealth_cmd()
        .arg("compact")
        .arg(&t.table)
        .args(["--catalog", &t.catalog_uri(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(s["commits"].as_array().unwrap().len() >= 4, "{s:#}");
    close("partitioned", &s["plan"]["estimate"], &s["actual"]);
}
