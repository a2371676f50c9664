//! One read of a Delta log for everything that opens a table at once: our replay (the report,
//! the plan's partition columns and writers) and delta-rs's snapshot (the plan's files) go
//! through this store, which lists `_delta_log/` once and fetches each commit file and
//! `_last_checkpoint` once while it is *frozen*.
//!
//! Commit files never change once written, but the listing and `_last_checkpoint` do: the cache
//! is frozen only while the table is first opened (both readers then see the same version), and
//! `thaw` sends every later request to the store, so the checks made before each commit always
//! read the log as it is.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, GetOptions, GetResult, GetResultPayload, ListResult, ObjectMeta, ObjectStore,
    Result,
};

/// What the cache spared the store (tests and the debug log read it).
#[derive(Debug, Default)]
pub struct CacheHits {
    pub lists: AtomicU64,
    pub gets: AtomicU64,
}

/// A cached whole-object GET: the object, or that it was not there.
#[derive(Debug, Clone)]
enum Cached {
    Found(ObjectMeta, Bytes),
    Missing,
}

#[derive(Debug)]
pub struct LogCache {
    inner: Arc<dyn ObjectStore>,
    /// `<table>/_delta_log` in the inner store's paths.
    log: Path,
    frozen: AtomicBool,
    listing: Arc<Mutex<Option<Vec<ObjectMeta>>>>,
    objects: Mutex<HashMap<Path, Cached>>,
    pub hits: CacheHits,
}

impl LogCache {
    /// A frozen cache of the log of the table at `table` (a path of `inner`).
    pub fn new(inner: Arc<dyn ObjectStore>, table: &Path) -> Self {
        Self {
            inner,
            log: table.clone().join("_delta_log"),
            frozen: AtomicBool::new(true),
            listing: Arc::default(),
            objects: Mutex::default(),
            hits: CacheHits::default(),
        }
    }

    /// From now on every request reaches the store; what was cached is dropped.
    pub fn thaw(&self) {
        self.frozen.store(false, Ordering::SeqCst);
        if let Ok(mut l) = self.listing.lock() {
            *l = None;
        }
        if let Ok(mut o) = self.objects.lock() {
            o.clear();
        }
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    /// Commit files and `_last_checkpoint`: read whole by both readers. Checkpoints are read
    /// by byte ranges (footers, columns) and pass through.
    fn cacheable(&self, location: &Path, o: &GetOptions) -> bool {
        let plain = o.range.is_none()
            && !o.head
            && o.if_match.is_none()
            && o.if_none_match.is_none()
            && o.if_modified_since.is_none()
            && o.if_unmodified_since.is_none()
            && o.version.is_none();
        let in_log = location.prefix_match(&self.log).is_some_and(|mut rest| {
            rest.next().is_some_and(|name| {
                let name = name.as_ref();
                name == "_last_checkpoint"
                    || (name.ends_with(".json")
                        && name[..name.len() - 5].bytes().all(|b| b.is_ascii_digit()))
            }) && rest.next().is_none()
        });
        plain && in_log && self.is_frozen()
    }

    fn cached(&self, location: &Path) -> Option<Cached> {
        self.objects.lock().ok()?.get(location).cloned()
    }

    fn remember(&self, location: &Path, c: Cached) {
        if let Ok(mut o) = self.objects.lock() {
            o.insert(location.clone(), c);
        }
    }

    fn answer(location: &Path, c: Cached) -> Result<GetResult> {
        match c {
            Cached::Found(meta, bytes) => {
                let len = bytes.len() as u64;
                let once = futures::stream::once(async move { Ok(bytes) }).boxed();
                Ok(GetResult {
                    payload: GetResultPayload::Stream(once),
                    meta,
                    range: 0..len,
                    attributes: Attributes::default(),
                })
            }
            Cached::Missing => Err(object_store::Error::NotFound {
                path: location.to_string(),
                source: "not found (when the table was opened)".into(),
            }),
        }
    }

    /// The log's listing, listed once while frozen.
    fn log_listing(&self) -> BoxStream<'static, Result<ObjectMeta>> {
        if let Some(l) = self.listing.lock().ok().and_then(|l| l.clone()) {
            self.hits.lists.fetch_add(1, Ordering::Relaxed);
            return futures::stream::iter(l.into_iter().map(Ok)).boxed();
        }
        let listed = self.inner.list(Some(&self.log));
        let slot = self.listing.clone();
        // Collected whole before anything is answered, so a failed listing caches nothing.
        futures::stream::once(async move {
            let all: Vec<ObjectMeta> = listed.try_collect().await?;
            if let Ok(mut l) = slot.lock() {
                *l = Some(all.clone());
            }
            Ok::<_, object_store::Error>(futures::stream::iter(all.into_iter().map(Ok)))
        })
        .try_flatten()
        .boxed()
    }
}

impl fmt::Display for LogCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogCache({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for LogCache {
    crate::forward_to_inner!(put_opts, put_multipart_opts, delete_stream, copy_opts);

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if !self.cacheable(location, &options) {
            return self.inner.get_opts(location, options).await;
        }
        if let Some(c) = self.cached(location) {
            self.hits.gets.fetch_add(1, Ordering::Relaxed);
            return Self::answer(location, c);
        }
        let c = match self.inner.get_opts(location, options).await {
            Ok(r) => {
                let meta = r.meta.clone();
                Cached::Found(meta, r.bytes().await?)
            }
            Err(object_store::Error::NotFound { .. }) => Cached::Missing,
            Err(e) => return Err(e),
        };
        self.remember(location, c.clone());
        Self::answer(location, c)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        if self.is_frozen() && prefix == Some(&self.log) {
            return self.log_listing();
        }
        self.inner.list(prefix)
    }

    /// While frozen, the log's listing is the one listed when the table was opened (filtered
    /// here); otherwise the store lists from `offset` itself.
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        if self.is_frozen() && prefix == Some(&self.log) {
            let offset = offset.clone();
            return self
                .log_listing()
                .try_filter(move |m| futures::future::ready(m.location > offset))
                .boxed();
        }
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::counting_store::{ByteCounters, CountingStore};
    use object_store::memory::InMemory;
    use object_store::{GetRange, ObjectStoreExt};

    async fn table() -> (Arc<ByteCounters>, LogCache) {
        let mem = Arc::new(InMemory::new());
        for (p, b) in [
            ("t/_delta_log/00000000000000000000.json", "c0"),
            ("t/_delta_log/00000000000000000001.json", "c1"),
            ("t/part-0.parquet", "data"),
        ] {
            mem.put(&Path::from(p), Bytes::from(b).into())
                .await
                .unwrap();
        }
        let counters = Arc::new(ByteCounters::default());
        let counted = Arc::new(CountingStore::new(mem, counters.clone()));
        (counters, LogCache::new(counted, &Path::from("t")))
    }

    async fn listed(c: &LogCache) -> Vec<String> {
        c.list(Some(&Path::from("t/_delta_log")))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn while_frozen_the_log_is_listed_once_and_each_commit_fetched_once() {
        let (counters, c) = table().await;
        let commit = Path::from("t/_delta_log/00000000000000000001.json");
        assert_eq!(listed(&c).await.len(), 2);
        assert_eq!(listed(&c).await.len(), 2);
        let offset = Path::from("t/_delta_log/00000000000000000000.json");
        let after: Vec<_> = c
            .list_with_offset(Some(&Path::from("t/_delta_log")), &offset)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(after.len(), 1, "the offset applies to the cached listing");
        assert_eq!(c.get(&commit).await.unwrap().bytes().await.unwrap(), "c1");
        assert_eq!(c.get(&commit).await.unwrap().bytes().await.unwrap(), "c1");
        let missing = Path::from("t/_delta_log/_last_checkpoint");
        assert!(c.get(&missing).await.is_err());
        assert!(matches!(
            c.get(&missing).await,
            Err(object_store::Error::NotFound { .. })
        ));
        assert_eq!(counters.lists(), 1, "one listing reached the store");
        assert_eq!(
            counters.gets(),
            2,
            "the commit and _last_checkpoint, once each"
        );
        // Byte ranges (checkpoints, footers) and data files pass through every time.
        let range = GetOptions {
            range: Some(GetRange::Bounded(0..1)),
            ..Default::default()
        };
        c.get_opts(&commit, range.clone()).await.unwrap();
        c.get_opts(&commit, range).await.unwrap();
        c.get(&Path::from("t/part-0.parquet")).await.unwrap();
        assert_eq!(counters.gets(), 5);
    }

    #[tokio::test]
    async fn after_thaw_every_request_reaches_the_store() {
        let (counters, c) = table().await;
        let commit = Path::from("t/_delta_log/00000000000000000000.json");
        listed(&c).await;
        c.get(&commit).await.unwrap();
        c.thaw();
        listed(&c).await;
        c.get(&commit).await.unwrap();
        assert_eq!(counters.lists(), 2, "the log is listed again once thawed");
        assert_eq!(
            counters.gets(),
            2,
            "the commit is fetched again once thawed"
        );
    }
}
