//! A bin's input files opened ahead of the one being rewritten: each open (for a small file,
//! its one whole-file GET; for a large one, its footer) runs as its own task, so storage
//! latency overlaps decoding and encoding instead of adding to it. On an object store, where a
//! GET costs tens of milliseconds and a streaming partition holds thousands of files, this is
//! most of a bin's time; locally it keeps the cores busy while the other waits on a read.
//!
//! Bounded: at most `MAX_FILES` opens in flight, and no new one while the files opened ahead
//! hold `MAX_BYTES` (a file larger than that is still opened when it is next).

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use object_store::ObjectStore;
use object_store::path::Path;
use tokio::task::JoinHandle;

use super::plan::FileRef;
use super::rewrite::{Input, ReadError, open_input};

const MAX_FILES: usize = 8;
const MAX_BYTES: u64 = 32 * 1024 * 1024;

pub struct ReadAhead {
    store: Arc<dyn ObjectStore>,
    schema: SchemaRef,
    rest: std::vec::IntoIter<FileRef>,
    open: VecDeque<(FileRef, JoinHandle<Result<Input, ReadError>>)>,
}

impl ReadAhead {
    pub fn new(store: Arc<dyn ObjectStore>, files: Vec<FileRef>, schema: SchemaRef) -> Self {
        let mut r = Self {
            store,
            schema,
            rest: files.into_iter(),
            open: VecDeque::new(),
        };
        r.fill();
        r
    }

    fn ahead_bytes(&self) -> u64 {
        self.open.iter().map(|(f, _)| f.size).sum()
    }

    fn fill(&mut self) {
        while self.open.len() < MAX_FILES
            && (self.open.is_empty() || self.ahead_bytes() < MAX_BYTES)
        {
            let Some(f) = self.rest.next() else {
                return;
            };
            let (store, schema) = (self.store.clone(), self.schema.clone());
            let store_path = f.store_path.clone();
            let size = f.size;
            let task = tokio::spawn(async move {
                let path = Path::parse(&store_path)?;
                open_input(store, path, Some(size), &schema).await
            });
            self.open.push_back((f, task));
        }
    }

    /// The next file in the bin's order, opened (or why it could not be).
    pub async fn next(&mut self) -> Option<(FileRef, Result<Input, ReadError>)> {
        let (f, task) = self.open.pop_front()?;
        self.fill();
        let opened = task.await.unwrap_or_else(|e| Err(ReadError::Task(e)));
        Some((f, opened))
    }
}

impl Drop for ReadAhead {
    /// A bin that stops early (cancelled, failed) stops its reads too.
    fn drop(&mut self) {
        for (_, task) in &self.open {
            task.abort();
        }
    }
}
