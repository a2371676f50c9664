//! A remote worker's output ledger, written *before* each output exists: the worker's object
//! store is wrapped so that creating any data file first adds its key to the ledger object and
//! waits for that write to land. Whatever kills the worker (a stopped Ray job's SIGKILL, a lost
//! node), every file it can have left on storage is listed, and the coordinator or `pickup`
//! deletes exactly those. A ledger entry whose file never came to exist costs one NotFound.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};
use tokio::sync::Mutex;

/// The folder (relative to the table root) lakehealth owns; never part of the table.
pub const STATE_DIR: &str = "_lakehealth";

/// Wraps the store delta-rs is given for a table: the root of its bucket or filesystem, not
/// the table's folder, so keys are seen with the table's prefix (`root`).
#[derive(Debug)]
pub struct LedgerStore {
    inner: Arc<dyn ObjectStore>,
    /// The table's folder within `inner`.
    root: Path,
    /// The ledger object, within `inner`.
    key: Path,
    /// Every key listed so far; the lock is held across the ledger's write, so the stored
    /// ledger only grows and no data write starts before its entry is durable.
    entries: Mutex<Vec<String>>,
}

impl LedgerStore {
    /// `key`: the ledger, relative to the table's folder `root`.
    pub fn new(inner: Arc<dyn ObjectStore>, root: Path, key: &Path) -> Self {
        let key = Path::from_iter(root.parts().chain(key.parts()));
        Self {
            inner,
            root,
            key,
            entries: Mutex::default(),
        }
    }

    /// Keeps `left` (outputs of an earlier attempt that could not be deleted) listed.
    pub async fn keep(&self, left: Vec<String>) {
        self.entries.lock().await.extend(left);
    }

    /// Every key listed so far.
    pub async fn entries(&self) -> Vec<String> {
        self.entries.lock().await.clone()
    }

    /// Deletes the ledger object (its job settled every output); one never written is gone.
    pub async fn remove(&self) -> Result<()> {
        let _listed = self.entries.lock().await;
        match self.inner.delete(&self.key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Lists `location` (as a table-relative path) unless it is lakehealth's own state or the
    /// log.
    async fn record(&self, location: &Path) -> Result<()> {
        let Some(rel) = location.prefix_match(&self.root) else {
            return Ok(());
        };
        let rel = Path::from_iter(rel);
        let first = rel.parts().next();
        let own = first.is_some_and(|p| p.as_ref() == STATE_DIR || p.as_ref() == "_delta_log");
        if own {
            return Ok(());
        }
        let mut entries = self.entries.lock().await;
        entries.push(rel.to_string());
        let bytes =
            serde_json::to_vec_pretty(&*entries).map_err(|e| object_store::Error::Generic {
                store: "ledger",
                source: Box::new(e),
            })?;
        if let Err(e) = self.inner.put(&self.key, PutPayload::from(bytes)).await {
            // Not listed durably: the file must not be created.
            entries.pop();
            return Err(e);
        }
        crate::failpoint::hit(crate::failpoint::Failpoint::LedgerWritten);
        Ok(())
    }
}

impl fmt::Display for LedgerStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ledger({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for LedgerStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.record(location).await?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.record(location).await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    crate::forward_to_inner!(get_opts, delete_stream, list, list_with_delimiter);

    /// Forwarded: the store lists from `offset` itself (the default lists all and filters).
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.record(to).await?;
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    async fn ledger(s: &InMemory) -> Vec<String> {
        let b = s.get(&Path::from("t/l.json")).await.unwrap().bytes().await;
        serde_json::from_slice(&b.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn every_data_file_is_listed_durably_before_it_is_created() {
        let mem = Arc::new(InMemory::new());
        let s = LedgerStore::new(mem.clone(), Path::from("t"), &Path::from("l.json"));
        s.keep(vec!["old".into()]).await;
        let a = Path::from("t/d=1/part-0.parquet");
        s.put(&a, PutPayload::from_static(b"x")).await.unwrap();
        assert_eq!(ledger(&mem).await, vec!["old", "d=1/part-0.parquet"]);
        let b = Path::from("t/d=1/part-1.parquet");
        let up = s.put_multipart(&b).await.unwrap();
        // Listed while the upload has not written a byte.
        assert_eq!(
            ledger(&mem).await.last().map(String::as_str),
            Some("d=1/part-1.parquet")
        );
        assert!(mem.head(&b).await.is_err());
        drop(up);
        // lakehealth's own state and the log are not outputs.
        s.put(
            &Path::from("t/_lakehealth/jobs/j/bin-1.result.json"),
            PutPayload::from_static(b"{}"),
        )
        .await
        .unwrap();
        s.put(
            &Path::from("t/_delta_log/00000000000000000001.json"),
            PutPayload::from_static(b"{}"),
        )
        .await
        .unwrap();
        assert_eq!(ledger(&mem).await.len(), 3);
    }

    #[tokio::test]
    async fn a_file_whose_ledger_entry_cannot_be_written_is_never_created() {
        let dir = tempfile::tempdir().unwrap();
        // The ledger's folder cannot be made: a file stands where it would be.
        std::fs::create_dir_all(dir.path().join("t")).unwrap();
        std::fs::write(dir.path().join("t/_lakehealth"), b"").unwrap();
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let s = LedgerStore::new(
            Arc::new(fs),
            Path::from("t"),
            &Path::from("_lakehealth/l.json"),
        );
        let a = Path::from("t/d=1/part-0.parquet");
        assert!(s.put(&a, PutPayload::from_static(b"x")).await.is_err());
        assert!(s.put_multipart(&a).await.is_err());
        assert!(!dir.path().join("t/d=1/part-0.parquet").exists());
        assert!(
            s.entries().await.is_empty(),
            "nothing listed that was not written"
        );
    }
}
