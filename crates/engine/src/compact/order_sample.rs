//! A sample of a bin's values in the columns it is z-ordered by, for their quantile
//! boundaries: up to `SAMPLED_FILES` of its files, spread over the bin, each read for those
//! columns only and thinned to its share of `SAMPLE_ROWS`. The sample only shapes the
//! buckets (a poor one makes a coarser z-order, never a wrong bin): every row is still
//! written and proven.

use std::sync::Arc;

use arrow::array::{ArrayRef, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::SchemaRef;
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;

use crate::compact::conform::int96_safe_metadata;
use crate::compact::plan::FileRef;
use crate::compact::rewrite::ReadError;
use crate::parquet_reader::StoreReader;

/// Files read for the sample at most.
pub const SAMPLED_FILES: usize = 64;
/// Values kept per column at most (for 1,024 buckets, 64 per bucket).
pub const SAMPLE_ROWS: usize = 65_536;

/// `count` indexes spread evenly over `0..n`.
fn spread(n: usize, count: usize) -> Vec<usize> {
    if n <= count {
        return (0..n).collect();
    }
    (0..count).map(|i| i * n / count).collect()
}

/// A file to sample: where it is, its size when known, and its name in errors.
pub struct SampleSource {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    pub size: Option<u64>,
    pub name: String,
}

/// Each of `columns`' (names in the files) sampled values, cast to its type in
/// `file_schema`; a file without a column adds none of it.
pub async fn sample(
    store: &Arc<dyn ObjectStore>,
    files: &[FileRef],
    file_schema: &SchemaRef,
    columns: &[String],
) -> Result<Vec<Vec<ArrayRef>>, (String, ReadError)> {
    let mut sources = Vec::new();
    for i in spread(files.len(), SAMPLED_FILES) {
        let f = &files[i];
        let path = Path::parse(&f.store_path).map_err(|e| (f.path.clone(), e.into()))?;
        sources.push(SampleSource {
            store: store.clone(),
            path,
            size: Some(f.size),
            name: f.path.clone(),
        });
    }
    sample_sources(sources, file_schema, columns).await
}

/// As `sample`, over files of any table format (up to `SAMPLED_FILES` of them, spread).
pub async fn sample_sources(
    sources: Vec<SampleSource>,
    file_schema: &SchemaRef,
    columns: &[String],
) -> Result<Vec<Vec<ArrayRef>>, (String, ReadError)> {
    let chosen = spread(sources.len(), SAMPLED_FILES);
    let per_file = (SAMPLE_ROWS / chosen.len().max(1)).max(1);
    let mut out: Vec<Vec<ArrayRef>> = vec![Vec::new(); columns.len()];
    let mut sources: Vec<Option<SampleSource>> = sources.into_iter().map(Some).collect();
    for i in chosen {
        let Some(f) = sources.get_mut(i).and_then(Option::take) else {
            continue;
        };
        let name = f.name.clone();
        sample_file(f, file_schema, columns, per_file, &mut out)
            .await
            .map_err(|e| (name, e))?;
    }
    Ok(out)
}

async fn sample_file(
    f: SampleSource,
    file_schema: &SchemaRef,
    columns: &[String],
    keep: usize,
    out: &mut [Vec<ArrayRef>],
) -> Result<(), ReadError> {
    let mut reader = StoreReader::new(f.store, f.path, f.size);
    let meta = crate::parquet_reader::load_metadata(&mut reader, ArrowReaderOptions::new()).await?;
    let meta = int96_safe_metadata(meta, file_schema)?;
    let rows = meta.metadata().file_metadata().num_rows().max(0) as usize;
    let stride = rows.div_ceil(keep).max(1);
    // Each wanted column's root index in the file, in the order asked.
    let mut roots: Vec<usize> = columns
        .iter()
        .filter_map(|c| meta.schema().index_of(c).ok())
        .collect();
    roots.sort_unstable();
    if roots.is_empty() {
        return Ok(());
    }
    let mask = ProjectionMask::roots(meta.parquet_schema(), roots.iter().copied());
    let mut stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, meta)
        .with_projection(mask)
        .with_batch_size(32 * 1024)
        .build()?;
    let mut offset = 0usize;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let n = batch.num_rows();
        let first = (stride - offset % stride) % stride;
        let picks = UInt32Array::from_iter_values((first..n).step_by(stride).map(|i| i as u32));
        offset += n;
        if picks.is_empty() {
            continue;
        }
        for (slot, c) in out.iter_mut().zip(columns) {
            let Some(col) = batch.column_by_name(c) else {
                continue;
            };
            let Ok(field) = file_schema.field_with_name(c) else {
                continue;
            };
            let values = take(col.as_ref(), &picks, None)?;
            slot.push(cast(&values, field.data_type())?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_chosen_evenly_over_the_bin() {
        assert_eq!(spread(3, 64), vec![0, 1, 2]);
        assert_eq!(spread(10, 5), vec![0, 2, 4, 6, 8]);
        assert_eq!(spread(1000, 64).len(), 64);
    }
}
