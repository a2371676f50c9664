//! Compaction benchmark helpers (driven by bench/compact.sh):
//!
//!   bench_compact gen DIR [FILES_PER_PARTITION] [ROWS] [PARTITIONS]   sensor table of small files
//!       (4 partitions unless given)
//!   bench_compact floor DIR OUT [TARGET_BYTES]           the floor: read every data file of each
//!       partition and write the same rows with the parquet crate alone (snappy, rolled at the
//!       target), no table format, no commits. Prints one JSON line.

// A benchmark or render tool: its output is its result (the no-print rule is for the program).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow::array::RecordBatch;
use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
use lakehealth::engine::location::Location;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn parquet_files(dir: &Path) -> Res<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    v.sort();
    Ok(v)
}

fn floor(dir: &Path, out: &Path, target: u64) -> Res<()> {
    std::fs::create_dir_all(out)?;
    let t0 = Instant::now();
    let (mut rows, mut outputs, mut bytes_in, mut bytes_out) = (0u64, 0u64, 0u64, 0u64);
    for part in std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
    {
        if !part.is_dir() || part.ends_with("_delta_log") {
            continue;
        }
        let files = parquet_files(&part)?;
        let mut writer: Option<ArrowWriter<std::fs::File>> = None;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        for f in files {
            bytes_in += std::fs::metadata(&f)?.len();
            let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f)?)?
                .with_batch_size(32 * 1024)
                .build()?;
            for batch in reader {
                let batch: RecordBatch = batch?;
                rows += batch.num_rows() as u64;
                if writer.is_none() {
                    let name = out.join(format!("out-{outputs:05}.parquet"));
                    outputs += 1;
                    writer = Some(ArrowWriter::try_new(
                        std::fs::File::create(name)?,
                        batch.schema(),
                        Some(props.clone()),
                    )?);
                }
                if let Some(w) = writer.as_mut() {
                    w.write(&batch)?;
                    if w.bytes_written() as u64 + w.in_progress_size() as u64 >= target
                        && let Some(w) = writer.take()
                    {
                        w.close()?;
                    }
                }
            }
        }
        if let Some(w) = writer.take() {
            w.close()?;
        }
    }
    for f in parquet_files(out)? {
        bytes_out += std::fs::metadata(&f)?.len();
    }
    println!(
        "{}",
        serde_json::json!({"tool": "parquet-floor", "seconds": t0.elapsed().as_secs_f64(), "rows": rows,
            "outputs": outputs, "bytes_in": bytes_in, "bytes_out": bytes_out})
    );
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match args.get(1).map(String::as_str) {
        Some("gen") if args.len() >= 3 => {
            let per: u32 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(500);
            let rows: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(8_000);
            let partitions: u32 = args.get(5).map(|s| s.parse()).transpose()?.unwrap_or(4);
            let dir = Path::new(&args[2]);
            std::fs::create_dir_all(dir)?;
            rt.block_on(async {
                let loc = Location::parse(&dir.to_string_lossy())?;
                create_sensor_table(&loc).await?;
                let parts: Vec<String> = (1..=partitions)
                    .map(|d| format!("2026-11-{d:02}"))
                    .collect();
                seed_small_files(&loc, &parts, per, rows).await?;
                Ok::<_, Box<dyn std::error::Error>>(())
            })
        }
        Some("floor") if args.len() >= 4 => {
            let target = args
                .get(4)
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(128 * 1024 * 1024);
            floor(Path::new(&args[2]), Path::new(&args[3]), target)
        }
        _ => Err(
            "usage: bench_compact gen DIR [FILES_PER_PARTITION] [ROWS] [PARTITIONS] | floor DIR OUT [TARGET]"
                .into(),
        ),
    }
}
