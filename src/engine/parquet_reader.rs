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
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

pub struct StoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// Known size saves a HEAD request; None asks the store.
    size: Option<u64>,
}

impl StoreReader {
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, size: Option<u64>) -> Self {
        Self { store, path, size }
    }
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for StoreReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
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
            let reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()))
                .with_prefetch_hint(Some(64 * 1024));
            let meta = reader.load_and_finish(self, size).await?;
            Ok(Arc::new(meta))
        }
        .boxed()
    }
}
