//! Tables written by Spark and other engines open, and their numbers equal what the log says.

use lakehealth::engine::open::{Opened, load_table, open};
use lakehealth::engine::stats::histogram::Band;

use crate::support::common::*;

#[tokio::test]
async fn every_fixture_table_opens_with_the_logs_counts() {
    let tables = fixture_tables();
    assert!(tables.len() >= 10, "fixtures missing: {tables:?}");
    for name in tables {
        let path = fixture(&name);
        let report = load_table(&loc(&path), &opts(), &|_| {})
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (files, bytes, parts) = naive_replay(&path);
        assert_eq!(report.stats.files, files, "{name}: files");
        assert_eq!(report.stats.bytes, bytes, "{name}: bytes");
        let part_files: u64 = report.partitions.iter().map(|p| p.stats.files).sum();
        assert_eq!(part_files, files, "{name}: partition files add up");
        if files > 0 {
            assert_eq!(report.partitions.len(), parts.len(), "{name}: partitions");
        }
        // Histogram buckets account for every file and byte.
        assert_eq!(
            report.stats.histogram.files(),
            files,
            "{name}: histogram files"
        );
        assert_eq!(
            report.stats.histogram.bytes(),
            bytes,
            "{name}: histogram bytes"
        );
    }
}

#[tokio::test]
async fn delta_rs_agrees_on_tables_it_can_open() {
    // A second, independent reader: delta-rs's own snapshot.
    let mut compared = 0;
    for name in fixture_tables() {
        let path = fixture(&name);
        let Ok(table) = deltalake::open_table(loc(&path).url.clone()).await else {
            continue;
        };
        let Ok(snap) = table.snapshot() else { continue };
        let (mut files, mut bytes) = (0u64, 0u64);
        for f in snap.log_data() {
            files += 1;
            bytes += f.size() as u64;
        }
        let r = load_table(&loc(&path), &opts(), &|_| {}).await.unwrap();
        assert_eq!((r.stats.files, r.stats.bytes), (files, bytes), "{name}");
        assert_eq!(r.version, snap.version(), "{name}: version");
        compared += 1;
    }
    assert!(compared >= 6, "delta-rs opened only {compared} fixtures");
}

#[tokio::test]
async fn checkpoint_table_starts_from_the_checkpoint() {
    let r = load_table(
        &loc(&fixture("simple_table_with_checkpoint")),
        &opts(),
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(r.version, 10);
    assert_eq!(r.log.checkpoint_version, Some(10));
    assert_eq!(r.log.commits_since_checkpoint, 0);
    let (files, _, _) = naive_replay(&fixture("simple_table_with_checkpoint"));
    assert_eq!(r.stats.files, files);
}

#[tokio::test]
async fn partitions_nulls_and_column_mapping_resolve_to_logical_names() {
    let r = load_table(
        &loc(&fixture("delta-0.8.0-null-partition")),
        &opts(),
        &|_| {},
    )
    .await
    .unwrap();
    let labels: Vec<String> = r.partitions.iter().map(|p| p.values.label()).collect();
    assert_eq!(labels, vec!["k=A".to_string(), "k=null".to_string()]);

    let r = load_table(
        &loc(&fixture("table_with_column_mapping")),
        &opts(),
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(r.partition_columns, vec!["Company Very Short".to_string()]);
    for p in &r.partitions {
        assert_eq!(p.values.0[0].0, "Company Very Short");
        assert!(p.values.0[0].1.is_some());
    }
    // delta.targetFileSize of this table (32 MiB) is the target.
    assert_eq!(r.table_target_file_size, Some(33_554_432));
    assert_eq!(r.thresholds.target_file_size, 33_554_432);
}

#[tokio::test]
async fn deletion_vector_table_counts_the_file_once() {
    let r = load_table(&loc(&fixture("table-with-dv-small")), &opts(), &|_| {})
        .await
        .unwrap();
    assert_eq!(r.stats.files, 1);
    assert_eq!(r.stats.bytes, 635);
    assert_eq!(r.log.operations.get("DELETE"), Some(&1));
}

#[tokio::test]
async fn tiny_files_are_all_small_and_outside_the_band() {
    let r = load_table(&loc(&fixture("delta-0.8.0-partitioned")), &opts(), &|_| {})
        .await
        .unwrap();
    assert_eq!(r.stats.small_files, r.stats.files);
    let band: u64 = r
        .stats
        .histogram
        .buckets
        .iter()
        .filter(|b| b.band == Band::Target)
        .map(|b| b.files)
        .sum();
    assert_eq!(band, 0);
    assert_eq!(r.partition_columns, vec!["year", "month", "day"]);
}

#[tokio::test]
async fn the_fixtures_folder_opens_as_a_root_of_tables() {
    let Opened::Root(root) = open(&loc(&fixtures_dir()), &opts(), &|_| {}).await.unwrap() else {
        panic!("the fixtures folder is a root, not a table");
    };
    assert_eq!(
        root.tables.len() + root.errors.len(),
        fixture_tables().len()
    );
    assert!(root.errors.is_empty(), "{:?}", root.errors);
    // Worst health first.
    let scores: Vec<u8> = root.tables.iter().map(|t| t.stats.health_score).collect();
    let mut sorted = scores.clone();
    sorted.sort();
    assert_eq!(scores, sorted);
}

#[tokio::test]
async fn deletion_vector_table_reports_its_deleted_rows_and_names_the_file_over_the_ratio() {
    let r = load_table(&loc(&fixture("table-with-dv-small")), &opts(), &|_| {})
        .await
        .unwrap();
    let d = r.deleted_rows.as_ref().expect("a deleted-rows section");
    assert_eq!((d.deleted_rows, d.rows), (2, 10));
    assert_eq!(d.partitions.len(), 1);
    assert_eq!(d.partitions[0].deleted_share, 0.2);
    assert_eq!(d.files_over_ratio.len(), 1);
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == lakehealth::engine::stats::findings::FindingKind::DeletedRowsOverRatio)
        .expect("a finding");
    assert!(
        f.message
            .contains("part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet (20.0 % of 10 rows)"),
        "{}",
        f.message
    );
    // A table without deletion vectors has no such section.
    let plain = load_table(&loc(&fixture("delta-0.8.0-partitioned")), &opts(), &|_| {})
        .await
        .unwrap();
    assert!(plain.deleted_rows.is_none());
}

fn lenient_fixture() -> std::path::PathBuf {
    fixtures_dir()
        .parent()
        .unwrap()
        .join("delta_lenient/metadata-without-schema-string")
}

#[tokio::test]
async fn metadata_without_schema_string_is_reported_with_a_warning_not_called_corrupt() {
    let path = lenient_fixture();
    let r = load_table(&loc(&path), &opts(), &|_| {})
        .await
        .unwrap_or_else(|e| panic!("reported, not refused: {e}"));
    let (files, bytes, parts) = naive_replay(&path);
    assert_eq!((r.stats.files, r.stats.bytes), (files, bytes));
    assert_eq!(r.partitions.len(), parts.len());
    assert_eq!(r.partition_columns, vec!["year", "month", "day"]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("no schemaString and no format") && w.contains("cannot compact")),
        "{:?}",
        r.warnings
    );
}

#[tokio::test]
async fn compaction_of_a_table_without_schema_string_says_why_and_changes_nothing() {
    use lakehealth::engine::compact::job::prepare;
    let d = tempfile::tempdir().unwrap();
    copy_dir(&lenient_fixture(), d.path());
    let req = crate::support::request();
    let e = match prepare(&loc(d.path()), &req, kib64_thresholds(), 1.0).await {
        Ok(_) => panic!("a table without a schema cannot be compacted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("metaData has no schemaString") && e.contains("lakehealth changed nothing"),
        "{e}"
    );
    assert_eq!(commits_from(d.path(), 0).len(), 1, "no commit was written");
}
