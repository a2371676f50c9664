//! Tables written by Spark and other engines open, and their numbers equal what the log says.

use lakehealth::engine::open::{Opened, load_table, open};
use lakehealth::engine::stats::histogram::Band;

use crate::common::*;

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
