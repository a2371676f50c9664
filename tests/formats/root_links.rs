//! A local table whose partition folder is a symbolic link to a folder outside the table:
//! nothing lakehealth does may read, write or delete through it (`engine::root_links`).

use std::process::Output;

use crate::support::common::*;

fn refused(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{what} went through a link: {err}");
    assert!(
        err.contains("symbolic link") && err.contains("outside the table's folder"),
        "{what}: {err}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_vacuum_and_convert_refuse_a_partition_folder_linked_out_of_the_table() {
    let (d, _l, rows) = seeded(30).await;
    let table = d.path();
    let outside = tempfile::tempdir().unwrap();
    let part = std::fs::read_dir(table)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| n.starts_with("ingestion_date="))
        .unwrap();
    // The partition's files now live outside; the table reaches them through a link.
    let moved = outside.path().join(&part);
    std::fs::rename(table.join(&part), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, table.join(&part)).unwrap();
    let before = contents(outside.path());
    let t = table.to_str().unwrap();

    refused(&lakehealth(&["compact", t, "--target", "1MiB"]), "compact");
    refused(
        &lakehealth(&["vacuum", t, "--retention", "0h", "--allow-short-retention"]),
        "vacuum",
    );
    assert_eq!(
        contents(outside.path()),
        before,
        "the outside folder changed"
    );
    assert_eq!(read_back(t, None).rows, rows);

    // Without its log the folder is a plain Hive folder: converting it would commit files
    // that live elsewhere.
    std::fs::remove_dir_all(table.join("_delta_log")).unwrap();
    refused(&lakehealth(&["convert", t, "--yes"]), "convert");
    assert!(!table.join("_delta_log").exists());
    assert_eq!(contents(outside.path()), before);
}

/// Remove actions whose paths leave the table (`../`, an absolute path, a `file://` URI) name
/// files outside it, removed long ago: `vacuum` (0h retention allowed) deletes none of them,
/// whatever the log says, and the table still reads every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_never_deletes_a_file_outside_the_table_a_remove_action_names() {
    let (d, _l, rows) = seeded(6).await;
    let table = d.path();
    let outside = tempfile::tempdir().unwrap();
    for f in ["up.parquet", "abs.parquet", "uri.parquet"] {
        std::fs::write(outside.path().join(f), b"not the table's").unwrap();
    }
    let before = contents(outside.path());
    let up = format!(
        "../{}/up.parquet",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    assert_eq!(
        table.parent(),
        outside.path().parent(),
        "both in the temp folder"
    );
    let abs = outside.path().join("abs.parquet").display().to_string();
    let uri = format!("file://{}", outside.path().join("uri.parquet").display());
    let next = commits_from(table, 0).len();
    let remove = |p: &str| {
        serde_json::json!({"remove": {"path": p, "deletionTimestamp": 1000, "dataChange": true,
            "size": 15}})
        .to_string()
    };
    let info = serde_json::json!({"commitInfo": {"timestamp": 2000, "operation": "DELETE"}});
    let commit = [info.to_string(), remove(&up), remove(&abs), remove(&uri)].join("\n");
    std::fs::write(
        table.join(format!("_delta_log/{next:020}.json")),
        commit + "\n",
    )
    .unwrap();
    let t = table.to_str().unwrap();

    let o = lakehealth(&[
        "vacuum",
        t,
        "--retention",
        "0h",
        "--allow-short-retention",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(contents(outside.path()), before, "outside the table: {err}");
    assert_eq!(read_back(t, None).rows, rows);
}
