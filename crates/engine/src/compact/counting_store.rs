//! An object store wrapper that counts the bytes read and written through it: compaction
//! progress is measured where the bytes flow, not estimated. It also counts requests by kind, so
//! a reader's claim to read only what it needs can be checked and a job's price is measured
//! (`model::cost`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::cost::Requests;
use async_trait::async_trait;
use futures::StreamExt;
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
    /// PUTs (a multipart upload's create, each part and its completion count one each).
    pub puts: AtomicU64,
    /// Objects asked to be deleted.
    pub deletes: AtomicU64,
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
    /// Every count so far, as the requests a price is computed from.
    pub fn requests(&self) -> Requests {
        Requests {
            get: self.gets(),
            put: self.puts.load(Ordering::Relaxed),
            list: self.lists(),
            delete: self.deletes.load(Ordering::Relaxed),
            bytes_read: self.read(),
            bytes_written: self.written(),
        }
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
        self.counters.puts.fetch_add(1, Ordering::Relaxed);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.counters.puts.fetch_add(1, Ordering::Relaxed);
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
        self.counters.puts.fetch_add(1, Ordering::Relaxed);
        let r = self.inner.put_opts(location, payload, opts).await?;
        self.counters.written.fetch_add(n, Ordering::Relaxed);
        Ok(r)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.counters.puts.fetch_add(1, Ordering::Relaxed);
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

    crate::forward_to_inner!(copy_opts);

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let counters = self.counters.clone();
        let counted = locations
            .inspect(move |_| {
                counters.deletes.fetch_add(1, Ordering::Relaxed);
            })
            .boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }

    /// Forwarded, not left to the default (which lists everything under `prefix` and filters
    /// here): S3 and GCS list from `offset` themselves, so following a log of thousands of
    /// commits lists only the new ones.
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_offset(prefix, offset)
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
        // One PUT, then a multipart upload: create, one part, complete.
        assert_eq!(c.requests().put, 4);
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
        s.delete(&Path::from("a")).await.unwrap();
        assert_eq!(c.requests().delete, 1);
    }

    /// Which listing the inner store was asked for.
    #[derive(Debug)]
    struct Probe {
        inner: Arc<dyn ObjectStore>,
        asked: std::sync::Mutex<Vec<&'static str>>,
    }

    impl fmt::Display for Probe {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Probe")
        }
    }

    #[async_trait]
    impl ObjectStore for Probe {
        crate::forward_to_inner!(
            put_opts,
            put_multipart_opts,
            get_opts,
            delete_stream,
            copy_opts,
            list_with_delimiter
        );

        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.asked.lock().unwrap().push("list");
            self.inner.list(prefix)
        }

        fn list_with_offset(
            &self,
            prefix: Option<&Path>,
            offset: &Path,
        ) -> BoxStream<'static, Result<ObjectMeta>> {
            self.asked.lock().unwrap().push("list_with_offset");
            self.inner.list_with_offset(prefix, offset)
        }
    }

    #[tokio::test]
    async fn a_listing_from_an_offset_reaches_the_store_as_one_and_counts_once() {
        use futures::TryStreamExt;
        let mem = Arc::new(InMemory::new());
        for p in ["log/1.json", "log/2.json", "log/3.json"] {
            mem.put(&Path::from(p), PutPayload::from_static(b"x"))
                .await
                .unwrap();
        }
        let probe = Arc::new(Probe {
            inner: mem,
            asked: Default::default(),
        });
        let c = Arc::new(ByteCounters::default());
        let s = CountingStore::new(probe.clone(), c.clone());
        let after: Vec<ObjectMeta> = s
            .list_with_offset(Some(&Path::from("log")), &Path::from("log/1.json"))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(after.len(), 2);
        assert_eq!(*probe.asked.lock().unwrap(), ["list_with_offset"]);
        assert_eq!(c.lists(), 1);
    }
}
