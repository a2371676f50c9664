//! Parquet over an object store: an `AsyncFileReader` that fetches only the byte ranges the
//! reader asks for (footer, then the projected column chunks). A file that cannot be Parquet
//! (empty, or without the `PAR1` magic) is named as such (`load_metadata`), not with the
//! parquet crate's "EOF" or "corrupt footer".

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

/// Cloning shares the store and the bytes already held: a second pass over the file with the
/// footer already read makes no request the first did not.
#[derive(Clone)]
pub struct StoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// Known size saves a HEAD request; None asks the store.
    size: Option<u64>,
    /// Bytes held in memory, from this offset: a small file whole (streaming tables are made
    /// of them, and footer + column-chunk requests would read them twice), or a large file's
    /// tail (`with_tail`).
    held: Option<(u64, Bytes)>,
    /// How much of a large file's end `get_metadata` fetches with its footer.
    tail: u64,
}

/// Why a data file cannot be Parquet, from its size and its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotParquet {
    #[error("empty file (0 bytes), not Parquet")]
    Empty,
    #[error("not a Parquet file (no PAR1 magic)")]
    NoMagic,
}

/// Why a file's footer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FooterError {
    #[error(transparent)]
    NotParquet(#[from] NotParquet),
    #[error(transparent)]
    Parquet(#[from] ParquetError),
}

/// A Parquet file begins and ends with these bytes.
const MAGIC: &[u8] = b"PAR1";

/// Loads a file's Arrow metadata; when that fails on a file that cannot be Parquet, the error
/// says what the file is (`NotParquet`) rather than how the footer failed.
pub async fn load_metadata(
    reader: &mut StoreReader,
    options: ArrowReaderOptions,
) -> std::result::Result<ArrowReaderMetadata, FooterError> {
    let loaded = ArrowReaderMetadata::load_async(reader, options).await;
    match loaded {
        Ok(meta) => Ok(meta),
        Err(e) => Err(match reader.not_parquet().await {
            Some(why) => FooterError::NotParquet(why),
            None => FooterError::Parquet(e),
        }),
    }
}

/// Files up to this size are read with a single request.
pub const WHOLE_FILE_LIMIT: u64 = 8 * 1024 * 1024;

impl StoreReader {
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, size: Option<u64>) -> Self {
        Self {
            store,
            path,
            size,
            held: None,
            tail: 0,
        }
    }

    /// Fetches the last `bytes` of a large file with its footer, in the same request, and serves
    /// what falls inside them from memory. A Delta checkpoint holds its small columns (removes,
    /// metadata, protocol, transactions, sidecars) there, after the adds.
    pub fn with_tail(mut self, bytes: u64) -> Self {
        self.tail = bytes;
        self
    }

    /// The bytes held in memory (a small file whole, or a large file's tail).
    pub fn held_len(&self) -> u64 {
        self.held.as_ref().map_or(0, |(_, b)| b.len() as u64)
    }

    /// The same reader without the bytes it holds: later reads fetch ranges again.
    pub fn without_held(mut self) -> Self {
        self.held = None;
        self
    }

    /// Why this file cannot be Parquet, when its size or magic bytes tell; None when it may
    /// be (or they could not be read: no verdict).
    pub async fn not_parquet(&mut self) -> Option<NotParquet> {
        let size = match self.size {
            Some(s) => s,
            None => self.store.head(&self.path).await.ok()?.size,
        };
        if size == 0 {
            return Some(NotParquet::Empty);
        }
        if size < 2 * MAGIC.len() as u64 {
            return Some(NotParquet::NoMagic);
        }
        let ends = vec![0..MAGIC.len() as u64, size - MAGIC.len() as u64..size];
        let got = self.get_byte_ranges(ends).await.ok()?;
        got.iter()
            .any(|b| b.as_ref() != MAGIC)
            .then_some(NotParquet::NoMagic)
    }

    fn is_whole(&self) -> bool {
        matches!(&self.held, Some((0, b)) if Some(b.len() as u64) == self.size)
    }

    fn slice(&self, range: &Range<u64>) -> Option<Bytes> {
        let (from, b) = self.held.as_ref()?;
        let start = range.start.checked_sub(*from)? as usize;
        let end = range.end.checked_sub(*from)? as usize;
        (end <= b.len() && start <= end).then(|| b.slice(start..end))
    }
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for StoreReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            if let Some(b) = self.slice(&range) {
                return Ok(b);
            }
            if self.is_whole() {
                return Err(ParquetError::General(format!(
                    "range {range:?} is outside the file"
                )));
            }
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            let mut out: Vec<Option<Bytes>> = ranges.iter().map(|r| self.slice(r)).collect();
            let missing: Vec<Range<u64>> = ranges
                .iter()
                .zip(&out)
                .filter(|(_, b)| b.is_none())
                .map(|(r, _)| r.clone())
                .collect();
            if missing.is_empty() {
                return Ok(out.into_iter().flatten().collect());
            }
            if self.is_whole() {
                return Err(ParquetError::General(format!(
                    "range {:?} is outside the file",
                    missing[0]
                )));
            }
            let mut fetched = self
                .store
                .get_ranges(&self.path, &missing)
                .await
                .map_err(external)?
                .into_iter();
            for slot in out.iter_mut().filter(|b| b.is_none()) {
                *slot = fetched.next();
            }
            out.into_iter()
                .map(|b| b.ok_or_else(|| ParquetError::General("a range was not fetched".into())))
                .collect()
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            let size = match self.size {
                Some(s) => s,
                None => self.store.head(&self.path).await.map_err(external)?.size,
            };
            if self.size.is_none() {
                self.size = Some(size);
            }
            let from = match size <= WHOLE_FILE_LIMIT {
                true => Some(0),
                false => (self.tail > 0).then(|| size.saturating_sub(self.tail)),
            };
            if let Some(from) = from
                && self.held.is_none()
            {
                let bytes = self
                    .store
                    .get_range(&self.path, from..size)
                    .await
                    .map_err(external)?;
                self.held = Some((from, bytes));
            }
            // The offset index only when asked for: it lets a row selection fetch single pages.
            let reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()))
                .with_offset_index_policy(
                    options.map_or(PageIndexPolicy::Skip, |o| o.offset_index_policy()),
                )
                .with_prefetch_hint(Some(64 * 1024));
            let meta = reader.load_and_finish(self, size).await?;
            Ok(Arc::new(meta))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::counting_store::{ByteCounters, CountingStore};
    use arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
    use futures::StreamExt;
    use object_store::PutPayload;
    use object_store::memory::InMemory;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;

    /// A file over `WHOLE_FILE_LIMIT`: a big incompressible column, then a small one (as a
    /// checkpoint's adds come before its small columns).
    async fn big_file() -> (Arc<dyn ObjectStore>, Arc<ByteCounters>, u64) {
        let rows = 1200;
        let blobs: Vec<Vec<u8>> = (0..rows)
            .map(|i: u64| {
                (0..8192u64)
                    .map(|j| ((i * 8192 + j).wrapping_mul(2654435761) >> 13) as u8)
                    .collect()
            })
            .collect();
        let big = BinaryArray::from_iter_values(blobs.iter().map(|b| b.as_slice()));
        let small = Int64Array::from_iter_values(0..rows as i64);
        let batch = RecordBatch::try_from_iter([
            ("big", Arc::new(big) as ArrayRef),
            ("small", Arc::new(small) as ArrayRef),
        ])
        .unwrap();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let size = buf.len() as u64;
        assert!(size > WHOLE_FILE_LIMIT, "{size}");
        let mem = InMemory::new();
        mem.put(&Path::from("f.parquet"), PutPayload::from(buf))
            .await
            .unwrap();
        let counters = Arc::new(ByteCounters::default());
        let store: Arc<dyn ObjectStore> =
            Arc::new(CountingStore::new(Arc::new(mem), counters.clone()));
        (store, counters, size)
    }

    async fn read_small(reader: StoreReader) -> i64 {
        let builder = ParquetRecordBatchStreamBuilder::new(reader).await.unwrap();
        let mask = ProjectionMask::leaves(builder.parquet_schema(), [1]);
        let mut stream = builder.with_projection(mask).build().unwrap();
        let mut sum = 0;
        while let Some(b) = stream.next().await {
            let b = b.unwrap();
            sum += b
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .iter()
                .flatten()
                .sum::<i64>();
        }
        sum
    }

    #[tokio::test]
    async fn a_column_inside_the_fetched_tail_costs_no_request_of_its_own() {
        let (store, counters, size) = big_file().await;
        let path = Path::from("f.parquet");
        let plain = StoreReader::new(store.clone(), path.clone(), Some(size));
        assert_eq!(read_small(plain).await, 1199 * 1200 / 2);
        assert_eq!(counters.gets(), 2, "footer, then the column");
        let tailed = StoreReader::new(store, path, Some(size)).with_tail(1024 * 1024);
        assert_eq!(read_small(tailed).await, 1199 * 1200 / 2);
        assert_eq!(
            counters.gets(),
            3,
            "the tail holds footer and column: one request"
        );
    }

    #[tokio::test]
    async fn ranges_beyond_the_tail_are_fetched_and_returned_in_order() {
        let (store, counters, size) = big_file().await;
        let mut r = StoreReader::new(store, Path::from("f.parquet"), Some(size)).with_tail(4096);
        r.get_metadata(None).await.unwrap();
        let gets = counters.gets();
        let ranges = vec![size - 10..size, 0..4, size - 20..size - 10, 4..8];
        let got = r.get_byte_ranges(ranges.clone()).await.unwrap();
        assert_eq!(got[0].len(), 10);
        assert_eq!(&got[1][..], b"PAR1");
        assert_eq!(
            &got[0][6..],
            b"PAR1",
            "the file's last bytes, from the tail"
        );
        assert_eq!(got[2].len(), 10);
        assert_eq!(got[3].len(), 4);
        assert!(counters.gets() > gets, "the head was fetched");
        // A range that starts before the tail and ends inside it is fetched whole, as it is.
        let straddling = size - 4100..size - 4090;
        let got = r.get_byte_ranges(vec![straddling.clone()]).await.unwrap();
        let direct = StoreReader::new(r.store.clone(), Path::from("f.parquet"), Some(size))
            .get_bytes(straddling)
            .await
            .unwrap();
        assert_eq!(got[0], direct);
    }

    #[tokio::test]
    async fn an_empty_or_non_parquet_file_is_named_as_such_and_parquet_is_not() {
        let mem = InMemory::new();
        let text = b"this is a CSV file, not Parquet\n1,2,3\n".to_vec();
        let batch =
            RecordBatch::try_from_iter([("n", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
                .unwrap();
        let mut parquet = Vec::new();
        let mut w = ArrowWriter::try_new(&mut parquet, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        for (name, bytes) in [("empty", vec![]), ("text", text), ("ok", parquet)] {
            mem.put(&Path::from(name), PutPayload::from(bytes))
                .await
                .unwrap();
        }
        let store: Arc<dyn ObjectStore> = Arc::new(mem);
        let load = |name: &str, size: Option<u64>| {
            let mut r = StoreReader::new(store.clone(), Path::from(name), size);
            async move { load_metadata(&mut r, ArrowReaderOptions::new()).await }
        };
        for size in [Some(0), None] {
            let e = load("empty", size).await.unwrap_err();
            assert!(
                matches!(e, FooterError::NotParquet(NotParquet::Empty)),
                "{e}"
            );
            assert_eq!(e.to_string(), "empty file (0 bytes), not Parquet");
        }
        let e = load("text", None).await.unwrap_err();
        assert!(
            matches!(e, FooterError::NotParquet(NotParquet::NoMagic)),
            "{e}"
        );
        assert_eq!(e.to_string(), "not a Parquet file (no PAR1 magic)");
        assert!(load("ok", None).await.is_ok());
    }
}
