//! A local table whose partition folder is a symbolic link to a folder outside the table:
//! nothing lakehealth does may read, write or delete through it (`engine::root_links`).

use std::path::Path;
use std::process::Output;

use crate::common::*;

/// Every file below `dir` with its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

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
