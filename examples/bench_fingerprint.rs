//! The content fingerprint's cost per row, beside the per-row hashing it replaced:
//!
//!   bench_fingerprint DIR     every .parquet file in DIR (e.g. one partition of the compaction
//!                             benchmark's table, bench/compact.sh), read into memory, then
//!                             fingerprinted three times each way. Prints ns per row.
//!
//! "columns" is `ContentHasher` (each column's buffers streamed through XXH3-128); "rows" is
//! each row encoded with Arrow's row format and hashed on its own (the design before).

// A benchmark or render tool: its output is its result (the no-print rule is for the program).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::row::{RowConverter, SortField};
use lakehealth::engine::compact::fingerprint::ContentHasher;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use xxhash_rust::xxh3::xxh3_128;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn read(dir: &str) -> Res<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_none_or(|x| x != "parquet") {
            continue;
        }
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(p)?)?
            .with_batch_size(32 * 1024)
            .build()?;
        for b in r {
            batches.push(b?);
        }
    }
    Ok(batches)
}

fn columns(batches: &[RecordBatch]) -> Res<Duration> {
    let t = Instant::now();
    let mut h = ContentHasher::default();
    for b in batches {
        h.update(b)?;
    }
    std::hint::black_box(h.finish());
    Ok(t.elapsed())
}

fn rows(batches: &[RecordBatch]) -> Res<Duration> {
    let t = Instant::now();
    let Some(first) = batches.first() else {
        return Ok(t.elapsed());
    };
    let fields = first
        .columns()
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let mut buf = converter.empty_rows(0, 0);
    let mut sum = 0u128;
    for b in batches {
        buf.clear();
        converter.append(&mut buf, b.columns())?;
        for r in buf.iter() {
            sum = sum.wrapping_add(xxh3_128(r.as_ref()));
        }
    }
    std::hint::black_box(sum);
    Ok(t.elapsed())
}

fn main() -> Res<()> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: bench_fingerprint DIR")?;
    let batches = read(&dir)?;
    let n = batches.iter().map(|b| b.num_rows()).sum::<usize>().max(1) as f64;
    for _ in 0..3 {
        let (c, r) = (columns(&batches)?, rows(&batches)?);
        println!(
            "{{\"rows\":{n},\"columns_ns_per_row\":{:.1},\"rows_ns_per_row\":{:.1}}}",
            c.as_nanos() as f64 / n,
            r.as_nanos() as f64 / n
        );
    }
    Ok(())
}
