//! Benchmark table: a synthetic log of 1,000,000 active files (no data files) + checkpoint.
//!
//!   bench_open gen DIR [FILES] [PARTITIONS]
//!
//! `bench/open_1m.sh` then times `lakehealth report DIR --json` and Python deltalake on it.

// A benchmark or render tool: its output is its result (the no-print rule is for the program).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::Path;

use lakehealth::engine::location::Location;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn commit_line(w: &mut impl Write, v: serde_json::Value) -> Res<()> {
    serde_json::to_writer(&mut *w, &v)?;
    w.write_all(b"\n")?;
    Ok(())
}

fn add(i: u64, parts: u64) -> serde_json::Value {
    let p = i % parts;
    let size = 2_000 + (i * 7_919) % 4_000_000;
    serde_json::json!({"add": {
        "path": format!("part={p:05}/part-00000-{i:012}-5b1c3a7e-0c2d-4c43-9a55-c000.snappy.parquet"),
        "partitionValues": {"part": format!("{p:05}")},
        "size": size,
        "modificationTime": 1_700_000_000_000u64 + i,
        "dataChange": true,
        "stats": format!("{{\"numRecords\":{},\"minValues\":{{\"id\":{i},\"value\":0.5}},\"maxValues\":{{\"id\":{},\"value\":99.5}},\"nullCount\":{{\"id\":0,\"value\":0}}}}", 1000 + i % 100, i + 1000)
    }})
}

async fn generate(dir: &Path, files: u64, parts: u64) -> Res<()> {
    let log = dir.join("_delta_log");
    std::fs::create_dir_all(&log)?;
    let commits = 10u64;
    let per = files / commits;
    let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"value","type":"double","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}"#;
    for c in 0..commits {
        let f = std::fs::File::create(log.join(format!("{c:020}.json")))?;
        let mut w = std::io::BufWriter::new(f);
        commit_line(
            &mut w,
            serde_json::json!({"commitInfo": {"timestamp": 1_700_000_000_000u64 + c, "operation": "WRITE", "operationParameters": {"mode": "Append"}}}),
        )?;
        if c == 0 {
            commit_line(
                &mut w,
                serde_json::json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            )?;
            commit_line(
                &mut w,
                serde_json::json!({"metaData": {"id": "bench-1m", "format": {"provider": "parquet", "options": {}}, "schemaString": schema, "partitionColumns": ["part"], "configuration": {}, "createdTime": 1_700_000_000_000u64}}),
            )?;
        }
        for i in c * per..(c + 1) * per {
            commit_line(&mut w, add(i, parts))?;
        }
        w.flush()?;
    }
    eprintln!("wrote {commits} commits of {per} adds; checkpointing with delta-rs ...");
    let loc = Location::parse(&dir.to_string_lossy())?;
    let table = deltalake::open_table(loc.url.clone()).await?;
    deltalake::checkpoints::create_checkpoint(&table, None).await?;
    // After the checkpoint: streaming appends and one small compaction (a remove), the common case.
    let mut next = files;
    for c in commits..commits + 5 {
        let f = std::fs::File::create(log.join(format!("{c:020}.json")))?;
        let mut w = std::io::BufWriter::new(f);
        commit_line(
            &mut w,
            serde_json::json!({"commitInfo": {"timestamp": 1_700_000_100_000u64 + c, "operation": "STREAMING UPDATE", "operationParameters": {"queryId": "q", "epochId": c.to_string()}}}),
        )?;
        commit_line(
            &mut w,
            serde_json::json!({"txn": {"appId": "q", "version": c, "lastUpdated": 1_700_000_100_000u64 + c}}),
        )?;
        for _ in 0..20 {
            commit_line(&mut w, add(next, parts))?;
            next += 1;
        }
    }
    let f = std::fs::File::create(log.join(format!("{:020}.json", commits + 5)))?;
    let mut w = std::io::BufWriter::new(f);
    commit_line(
        &mut w,
        serde_json::json!({"commitInfo": {"timestamp": 1_700_000_200_000u64, "operation": "OPTIMIZE"}}),
    )?;
    let mut removed = 0;
    for i in (0..100u64).map(|k| k * parts) {
        let a = add(i, parts);
        removed += a["add"]["size"].as_u64().unwrap_or(0);
        commit_line(
            &mut w,
            // As delta-rs and Spark write a remove: with its partition values and size.
            serde_json::json!({"remove": {"path": a["add"]["path"], "size": a["add"]["size"], "partitionValues": a["add"]["partitionValues"], "extendedFileMetadata": true, "deletionTimestamp": 1_700_000_200_000u64, "dataChange": false}}),
        )?;
    }
    let mut a = add(next, parts);
    a["add"]["path"] = serde_json::json!("part=00000/compacted.parquet");
    a["add"]["size"] = serde_json::json!(removed);
    a["add"]["partitionValues"] = serde_json::json!({"part": "00000"});
    commit_line(&mut w, a)?;
    w.flush()?;
    eprintln!("done: {} active files", files + 100 - 100 + 1);
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match args.get(1).map(String::as_str) {
        Some("gen") if args.len() >= 3 => {
            let files = args
                .get(3)
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(1_000_000);
            let parts = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(1_000);
            rt.block_on(generate(Path::new(&args[2]), files, parts))
        }
        _ => Err("usage: bench_open gen DIR [FILES] [PARTITIONS]".into()),
    }
}
