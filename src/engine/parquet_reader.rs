//! Parquet over an object store: an `AsyncFileReader` that fetches only the byte ranges the
//! reader asks for (footer, then the projected column chunks).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

pub struct StoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// Known size saves a HEAD request; None asks the store.
    size: Option<u64>,
    /// Small files are fetched whole in one request and served from memory: streaming tables
    /// are made of them, and footer + column-chunk requests would read them twice.
    whole: Option<Bytes>,
}

/// Files up to this size are read with a single request.
pub const WHOLE_FILE_LIMIT: u64 = 8 * 1024 * 1024;

impl StoreReader {
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, size: Option<u64>) -> Self {
        Self {
            store,
            path,
            size,
            whole: None,
        }
    }

    fn slice(&self, range: &Range<u64>) -> Option<Bytes> {
        let w = self.whole.as_ref()?;
        let (a, b) = (range.start as usize, range.end as usize);
        (b <= w.len() && a <= b).then(|| w.slice(a..b))
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
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            if self.whole.is_some() {
                return ranges
                    .iter()
                    .map(|r| {
                        self.slice(r).ok_or_else(|| {
                            ParquetError::General(format!("range {r:?} is outside the file"))
                        })
                    })
                    .collect();
            }
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(external)
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
            if size <= WHOLE_FILE_LIMIT && self.whole.is_none() {
                let all = self
                    .store
                    .get_range(&self.path, 0..size)
                    .await
                    .map_err(external)?;
                self.whole = Some(all);
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
