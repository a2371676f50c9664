//! VACUUM deletes only this table's files. A tombstone is written by the table's writer, who
//! may name a file of a table nested in this one's folder (its data, even its log): a writer
//! of the outer table, with delete rights nowhere, must not get lakehealth to delete them. Each
//! test plants such a commit in the outer table's log and shows that the vacuum refuses whole,
//! naming the file, and that the nested table reads back the same (Python deltalake); a
//! control shows that the nested table's presence alone does not stop a vacuum.

use std::path::Path;

use serde_json::{Value, json};

use super::maintenance::{action, make_table, on_storage, read_ids, strings, watch_maintenance};
use crate::support::common::*;

/// 2023-11-14: a deletion long past any retention.
const ANCIENT: i64 = 1_700_000_000_000;

/// The outer table (its own tombstones: 3 files past the default retention) with a table of
/// its own in `nested/`. Returns (outer, the nested table's expectations).
fn outer_with_a_nested_table(tmp: &Path) -> (std::path::PathBuf, Value) {
    let outer = tmp.join("t");
    make_table(&outer);
    let nested = make_table(&outer.join("nested"));
    (outer, nested)
}

/// Appends a commit to `table`'s log with `actions`; returns its version.
fn plant_commit(table: &Path, actions: &[Value]) -> u64 {
    let log = table.join("_delta_log");
    let next = (0..)
        .find(|v| !log.join(format!("{v:020}.json")).exists())
        .unwrap();
    let mut lines = vec![json!({"commitInfo": {"timestamp": ANCIENT, "operation": "DELETE"}})];
    lines.extend_from_slice(actions);
    let body: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(log.join(format!("{next:020}.json")), body.join("\n") + "\n").unwrap();
    next
}

fn remove_of(path: &str) -> Value {
    json!({"remove": {"path": path, "deletionTimestamp": ANCIENT, "dataChange": true}})
}

/// Everything of the nested table on disk, its log included.
fn nested_files(outer: &Path) -> Vec<String> {
    fn all(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                all(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let root = outer.join("nested");
    let mut out = Vec::new();
    all(&root, &root, &mut out);
    out.sort();
    assert!(out.iter().any(|f| f.starts_with("_delta_log/")), "{out:?}");
    out
}

fn vacuum(outer: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["vacuum", outer.to_str().unwrap()];
    args.extend_from_slice(extra);
    lakehealth(&args)
}

#[test]
fn a_tombstone_naming_a_nested_tables_data_or_log_refuses_the_whole_vacuum() {
    for planted in [
        "nested/d=a/part-00006.parquet",
        "nested/_delta_log/00000000000000000000.json",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (outer, _) = outer_with_a_nested_table(tmp.path());
        let nested_rows = read_ids(&outer.join("nested"));
        plant_commit(&outer, &[remove_of(planted)]);
        let before = on_storage(&outer);
        let nested_before = nested_files(&outer);

        let o = vacuum(&outer, &["--retention", "0s", "--allow-short-retention"]);
        assert!(!o.status.success(), "{planted}: the vacuum ran");
        let e = stderr(&o);
        assert!(
            e.contains(planted) && e.contains("Nothing was deleted"),
            "{e}"
        );
        assert!(e.contains("not this table's to delete"), "{e}");
        assert_eq!(
            on_storage(&outer),
            before,
            "{planted}: the outer table lost files"
        );
        assert_eq!(nested_files(&outer), nested_before, "{planted}");
        assert_eq!(read_ids(&outer.join("nested"))["ids"], nested_rows["ids"]);
    }
}

#[test]
fn the_janitor_refuses_a_vacuum_whose_tombstones_reach_into_a_nested_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (outer, nested_exp) = outer_with_a_nested_table(tmp.path());
    let nested_rows = read_ids(&outer.join("nested"));
    let victims: Vec<String> = strings(&nested_exp["active"])
        .into_iter()
        .map(|f| format!("nested/{f}"))
        .collect();
    let removes: Vec<Value> = victims.iter().map(|v| remove_of(v)).collect();
    plant_commit(&outer, &removes);
    let nested_before = nested_files(&outer);

    let lines = watch_maintenance(
        &outer,
        &tmp.path().join("h.jsonl"),
        "vacuum_every = \"1s\"\nvacuum_retention = \"7d\"\n",
    );
    let v = action(&lines, "vacuum");
    assert_eq!(v["decision"], "due", "{v}");
    assert_eq!(v["outcome"], "failed", "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("a table of its own"), "{e}");
    assert_eq!(nested_files(&outer), nested_before);
    assert_eq!(read_ids(&outer.join("nested"))["ids"], nested_rows["ids"]);
}

#[test]
fn a_nested_file_planted_as_an_outer_add_survives_compaction_and_vacuum() {
    let tmp = tempfile::tempdir().unwrap();
    let (outer, nested_exp) = outer_with_a_nested_table(tmp.path());
    let nested_rows = read_ids(&outer.join("nested"));
    let sizes = &nested_exp["sizes"];
    // The outer table's writer lists the nested table's live files as its own: a compaction
    // removes them from the outer log (a real tombstone, dated now) once rewritten.
    let adds: Vec<Value> = strings(&nested_exp["active"])
        .into_iter()
        .map(|f| {
            json!({"add": {"path": format!("nested/{f}"), "partitionValues": {"d": "a"},
                "size": sizes[&f], "modificationTime": ANCIENT, "dataChange": true}})
        })
        .collect();
    plant_commit(&outer, &adds);
    let nested_before = nested_files(&outer);
    let o = lakehealth(&["compact", outer.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = vacuum(&outer, &["--retention", "0s", "--allow-short-retention"]);
    assert!(!o.status.success(), "the vacuum ran: {}", text(&o.stdout));
    assert!(stderr(&o).contains("a table of its own"), "{}", stderr(&o));
    assert_eq!(nested_files(&outer), nested_before);
    assert_eq!(read_ids(&outer.join("nested"))["ids"], nested_rows["ids"]);
}

#[test]
fn a_nested_table_alone_does_not_stop_the_outer_vacuum_of_its_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let outer = tmp.path().join("t");
    let exp = make_table(&outer);
    make_table(&outer.join("nested"));
    let nested_before = nested_files(&outer);
    let o = vacuum(&outer, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = on_storage(&outer);
    for p in strings(&exp["deleted_default"]) {
        assert!(!after.contains(&p), "{p} was not vacuumed");
    }
    assert_eq!(nested_files(&outer), nested_before);
}
