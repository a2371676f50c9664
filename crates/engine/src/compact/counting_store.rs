//! An object store wrapper that counts the bytes read and written through it: compaction
//! progress is measured where the bytes flow, not estimated. It also counts requests (GETs and
//! LISTs), so a reader's claim to read only what it needs can be checked.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};

#[derive(Debug, Default)]
pub struct ByteCounters {
    pub read: AtomicU64,
    pub written: AtomicU64,
    /// GET requests (found or not), and LIST requests.
    pub gets: AtomicU64,
    pub lists: AtomicU64,
}

impl ByteCounters {
    pub fn read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::Relaxed)
    }
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<ByteCounters>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ObjectStore>, counters: Arc<ByteCounters>) -> Self {
        Self { inner, counters }
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    counters: Arc<ByteCounters>,
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.counters
            .written
            .fetch_add(data.content_length() as u64, Ordering::Relaxed);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let n = payload.content_length() as u64;
        let r = self.inner.put_opts(location, payload, opts).await?;
        self.counters.written.fetch_add(n, Ordering::Relaxed);
        Ok(r)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountingUpload {
            inner,
            counters: self.counters.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        let r = self.inner.get_opts(location, options).await?;
        if !head {
            // The range is what the caller will consume from this response.
            self.counters
                .read
                .fetch_add(r.range.end - r.range.start, Ordering::Relaxed);
        }
        Ok(r)
    }

    crate::forward_to_inner!(delete_stream, copy_opts);

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_delimiter(prefix).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    #[tokio::test]
    async fn counts_puts_multipart_parts_and_gets() {
        let c = Arc::new(ByteCounters::default());
        let s = CountingStore::new(Arc::new(InMemory::new()), c.clone());
        s.put(&Path::from("a"), PutPayload::from_static(b"hello"))
            .await
            .unwrap();
        let mut up = s.put_multipart(&Path::from("b")).await.unwrap();
        up.put_part(PutPayload::from_static(b"12345678"))
            .await
            .unwrap();
        up.complete().await.unwrap();
        assert_eq!(c.written(), 13);
        let got = s
            .get(&Path::from("b"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(got.len(), 8);
        s.get_range(&Path::from("a"), 1..3).await.unwrap();
        assert_eq!(c.read(), 10);
        assert!(s.get(&Path::from("missing")).await.is_err());
        assert_eq!(c.gets(), 3);
        let _ = s.list(None);
        s.list_with_delimiter(None).await.unwrap();
        assert_eq!(c.lists(), 2);
    }
}
