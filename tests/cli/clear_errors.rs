//! Each bad input of issue 26 gets a message that names what is wrong and where, and exits
//! non-zero with nothing changed.

use crate::support::common::*;

#[test]
fn a_target_above_the_largest_healthy_size_blames_target_and_says_what_to_add() {
    let t = fixture("delta-0.8.0-null-partition");
    let t = t.to_str().unwrap();
    let o = lakehealth(&["report", t, "--target", "2GiB"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--target 2 GiB is above the largest healthy file size, 1 GiB"),
        "{err}"
    );
    assert!(err.contains("--max-file-size 2 GiB"), "{err}");
    let o = lakehealth(&["report", t, "--target", "2GiB", "--max-file-size", "4GiB"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = lakehealth(&["report", t, "--small-below", "2GiB"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(from --small-below)"),
        "{}",
        stderr(&o)
    );
}

/// A Parquet folder (Hive partitions) of `files` files: a sensor table without its log.
fn parquet_folder(dir: &std::path::Path, files: u32) {
    sensor_table_with(dir, &[("2026-11-30", files)]);
    std::fs::remove_dir_all(dir.join("_delta_log")).unwrap();
}

#[test]
fn convert_names_the_file_whose_parquet_footer_is_corrupt_and_writes_no_log() {
    let d = tempfile::tempdir().unwrap();
    parquet_folder(d.path(), 4);
    let mut data: Vec<_> = files_under(d.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    data.sort();
    let bad = data.last().unwrap();
    let bytes = std::fs::read(bad).unwrap();
    // The footer's length and magic overwritten: no reader can find the metadata.
    let mut broken = bytes[..bytes.len() - 8].to_vec();
    broken.extend_from_slice(b"XXXXXXXX");
    std::fs::write(bad, broken).unwrap();
    let name = bad.file_name().unwrap().to_str().unwrap();

    let o = lakehealth(&["convert", d.path().to_str().unwrap(), "--yes"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(name), "names the file: {err}");
    assert!(err.contains("Parquet"), "{err}");
    assert!(
        !d.path().join("_delta_log").exists(),
        "no log may be written"
    );
}

#[test]
fn compacting_a_table_whose_named_checkpoint_is_missing_says_so_not_the_kernels_words() {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixture("simple_table_with_checkpoint"), d.path());
    std::fs::remove_file(
        d.path()
            .join("_delta_log/00000000000000000010.checkpoint.parquet"),
    )
    .unwrap();
    let before = files_under(d.path()).len();
    let o = lakehealth(&["compact", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("_last_checkpoint names version 10, but that checkpoint is missing"),
        "{err}"
    );
    assert!(err.contains("lakehealth changed nothing"), "{err}");
    assert!(err.contains("delete _delta_log/_last_checkpoint"), "{err}");
    assert_eq!(
        files_under(d.path()).len(),
        before,
        "nothing may be written"
    );
    // Without the commits before it the log cannot be replayed at all: lakehealth's reader
    // names the gap.
    for v in 0..6 {
        std::fs::remove_file(d.path().join(format!("_delta_log/{v:020}.json"))).unwrap();
    }
    let o = lakehealth(&["compact", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the log is incomplete: commit 0 is gone"),
        "{}",
        stderr(&o)
    );
}
