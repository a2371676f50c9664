//! A remote worker's output ledger, written *before* each output exists: the worker's object
//! store is wrapped so that creating any data file first adds its key to the ledger object and
//! waits for that write to land. Whatever kills the worker (a stopped Ray job's SIGKILL, a lost
//! node), every file it can have left on storage is listed, and the coordinator or `pickup`
//! deletes exactly those. A ledger entry whose file never came to exist costs one NotFound.
//!
//! Every data file it creates is named as its job's output (`model::output_name`: delta-rs's
//! writer names a file, this store writes it under that name with the job's id in it, and the
//! rewrite names the file's `add` the same way), and the ledger is sealed (`sealed`): a sweep
//! acts only on a ledger this installation wrote, and deletes only names that carry its job.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::model::output_name::named_for_job;
use crate::sealed::{self, RecordKind, Refusal};

/// The folder (relative to the table root) lakehealth owns; never part of the table.
pub const STATE_DIR: &str = "_lakehealth";

/// A ledger's content, sealed as an `OutputLedger` record at its place in the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputLedger {
    /// The job whose outputs these are: each name carries it.
    pub job: String,
    /// Table-relative paths, each listed before its file was created.
    pub outputs: Vec<String>,
}

/// Why a stored ledger is not read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerReadError {
    #[error("reading it: {0}")]
    Store(#[from] object_store::Error),
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
}

/// The ledger at `key` (relative to the table root of `store`); None when there is none.
pub async fn read_ledger(
    store: &Arc<dyn ObjectStore>,
    key: &Path,
) -> std::result::Result<Option<OutputLedger>, LedgerReadError> {
    let bytes = match store.get(key).await {
        Ok(r) => r.bytes().await?,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let keyring = sealed::keyring().map_err(|e| Refusal::NoKey(e.to_string()))?;
    Ok(Some(sealed::open(
        &keyring,
        RecordKind::OutputLedger,
        key.as_ref(),
        &bytes,
    )?))
}

/// Wraps the store delta-rs is given for a table: the root of its bucket or filesystem, not
/// the table's folder, so keys are seen with the table's prefix (`root`).
#[derive(Debug)]
pub struct LedgerStore {
    inner: Arc<dyn ObjectStore>,
    /// The table's folder within `inner`.
    root: Path,
    /// The ledger object, within `inner`.
    key: Path,
    /// The ledger's place in the table (its key relative to `root`): what its seal binds.
    place: String,
    /// The job whose outputs it lists; every data file it creates carries it in its name.
    job: String,
    /// Every key listed so far; the lock is held across the ledger's write, so the stored
    /// ledger only grows and no data write starts before its entry is durable.
    entries: Mutex<Vec<String>>,
}

impl LedgerStore {
    /// `key`: the ledger, relative to the table's folder `root`; `job`: whose outputs.
    pub fn new(inner: Arc<dyn ObjectStore>, root: Path, key: &Path, job: &str) -> Self {
        let place = key.to_string();
        let key = Path::from_iter(root.parts().chain(key.parts()));
        Self {
            inner,
            root,
            key,
            place,
            job: job.to_string(),
            entries: Mutex::default(),
        }
    }

    /// The job whose outputs it lists.
    pub fn job(&self) -> &str {
        &self.job
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
    /// log, and returns where it is created: a Parquet data file under its job's name.
    async fn record(&self, location: &Path) -> Result<Path> {
        let Some(rel) = location.prefix_match(&self.root) else {
            return Ok(location.clone());
        };
        let rel = Path::from_iter(rel);
        let first = rel.parts().next();
        let own = first.is_some_and(|p| p.as_ref() == STATE_DIR || p.as_ref() == "_delta_log");
        if own {
            return Ok(location.clone());
        }
        let rel = if rel.as_ref().ends_with(".parquet") {
            // `rel` is already encoded: parsed, not encoded again (a partition value with a
            // space or `%` would name another folder).
            Path::parse(named_for_job(rel.as_ref(), &self.job))?
        } else {
            rel
        };
        let mut entries = self.entries.lock().await;
        entries.push(rel.to_string());
        let sealed = self.sealed(&entries);
        let written = match sealed {
            Ok(bytes) => self.inner.put(&self.key, PutPayload::from(bytes)).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            // Not listed durably: the file must not be created.
            entries.pop();
            return Err(e);
        }
        crate::failpoint::hit(crate::failpoint::Failpoint::LedgerWritten);
        Ok(Path::from_iter(self.root.parts().chain(rel.parts())))
    }

    /// The ledger's bytes: `entries` sealed under the installation key.
    fn sealed(&self, entries: &[String]) -> Result<Vec<u8>> {
        let seal_error =
            |e: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
                store: "ledger",
                source: e,
            };
        let keyring = sealed::keyring().map_err(|e| seal_error(Box::new(e)))?;
        let ledger = OutputLedger {
            job: self.job.clone(),
            outputs: entries.to_vec(),
        };
        sealed::seal(&keyring, RecordKind::OutputLedger, &self.place, &ledger)
            .map_err(|e| seal_error(Box::new(e)))
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
        let at = self.record(location).await?;
        self.inner.put_opts(&at, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let at = self.record(location).await?;
        self.inner.put_multipart_opts(&at, opts).await
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
        let at = self.record(to).await?;
        self.inner.copy_opts(from, &at, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    const JOB: &str = "0123456789abcdef0123456789abcdef";

    async fn ledger(s: &Arc<InMemory>) -> Vec<String> {
        let table: Arc<dyn ObjectStore> =
            Arc::new(object_store::prefix::PrefixStore::new(s.clone(), "t"));
        let l = read_ledger(&table, &Path::from("l.json"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(l.job, JOB);
        l.outputs
    }

    fn named(p: &str) -> String {
        named_for_job(p, JOB)
    }

    #[tokio::test]
    async fn every_data_file_is_listed_durably_before_it_is_created() {
        let mem = Arc::new(InMemory::new());
        let s = LedgerStore::new(mem.clone(), Path::from("t"), &Path::from("l.json"), JOB);
        s.keep(vec!["old".into()]).await;
        let a = Path::from("t/d=1/part-00000-ab-c000.parquet");
        s.put(&a, PutPayload::from_static(b"x")).await.unwrap();
        let a_named = named("d=1/part-00000-ab-c000.parquet");
        assert_eq!(ledger(&mem).await, vec!["old".to_string(), a_named.clone()]);
        // Created under its job's name, never under the name the writer asked for.
        assert!(mem.head(&Path::from(format!("t/{a_named}"))).await.is_ok());
        assert!(mem.head(&a).await.is_err());
        let b = Path::from("t/d=1/part-1.parquet");
        let up = s.put_multipart(&b).await.unwrap();
        // Listed while the upload has not written a byte.
        assert_eq!(
            ledger(&mem).await.last().cloned(),
            Some(named("d=1/part-1.parquet"))
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
    async fn a_tampered_ledger_is_refused_not_read() {
        let mem = Arc::new(InMemory::new());
        let s = LedgerStore::new(mem.clone(), Path::from("t"), &Path::from("l.json"), JOB);
        s.put(
            &Path::from("t/d=1/a.parquet"),
            PutPayload::from_static(b"x"),
        )
        .await
        .unwrap();
        let key = Path::from("t/l.json");
        let text = String::from_utf8(mem.get(&key).await.unwrap().bytes().await.unwrap().to_vec())
            .unwrap();
        let planted = text.replace("d=1/", "d=2/");
        mem.put(&key, PutPayload::from(planted.into_bytes()))
            .await
            .unwrap();
        let table: Arc<dyn ObjectStore> =
            Arc::new(object_store::prefix::PrefixStore::new(mem.clone(), "t"));
        assert!(matches!(
            read_ledger(&table, &Path::from("l.json")).await,
            Err(LedgerReadError::Refused(Refusal::BadMac))
        ));
        // An unsigned list, as earlier versions wrote: refused as unsigned.
        mem.put(&key, PutPayload::from_static(b"[\"d=1/a.parquet\"]"))
            .await
            .unwrap();
        assert!(matches!(
            read_ledger(&table, &Path::from("l.json")).await,
            Err(LedgerReadError::Refused(Refusal::Unsigned))
        ));
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
            JOB,
        );
        let a = Path::from("t/d=1/part-0.parquet");
        assert!(s.put(&a, PutPayload::from_static(b"x")).await.is_err());
        assert!(s.put_multipart(&a).await.is_err());
        assert!(!dir.path().join("t/d=1/part-0.parquet").exists());
        assert!(
            !dir.path()
                .join("t")
                .join(named("d=1/part-0.parquet"))
                .exists()
        );
        assert!(
            s.entries().await.is_empty(),
            "nothing listed that was not written"
        );
    }
}
