//! The files of the checkpoint a replay starts from, each opened once (`OpenedFile`): the
//! first ones' footers are fetched while the JSON commits are read, and every pass over a file
//! (sizes, then the keys of a few rows, or every path) starts from the same footer. On object
//! storage each pass saved is a round trip and a request.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::ObjectStore;

use super::checkpoint::{CheckpointReadError, OpenedFile};
use super::listing::Checkpoint;

/// Files opened ahead, concurrently with the commits: a multi-part checkpoint's other parts are
/// opened when a pass reaches them, so at most this many small files are held at once.
const OPENED_AHEAD: usize = 4;

/// Small files' bytes kept between passes, in all; past it only their footers are kept.
const KEPT_BYTES: u64 = 64 * 1024 * 1024;

pub struct CheckpointFiles {
    store: Arc<dyn ObjectStore>,
    /// A file that failed to open keeps its error until a pass asks for it, so the error is
    /// reported where it was before (after the commits' own errors).
    opened: HashMap<String, Result<OpenedFile, CheckpointReadError>>,
    kept: u64,
}

impl CheckpointFiles {
    pub fn new(store: &Arc<dyn ObjectStore>) -> Self {
        Self {
            store: store.clone(),
            opened: HashMap::new(),
            kept: 0,
        }
    }

    /// Opens the checkpoint's first files (its sidecars are named only inside them).
    pub async fn open_ahead(store: &Arc<dyn ObjectStore>, cp: &Checkpoint) -> Self {
        let mut files = Self::new(store);
        let ahead = cp.files.iter().take(OPENED_AHEAD);
        let opened = futures::future::join_all(ahead.map(|path| {
            let (store, path, size) = (store.clone(), path.clone(), cp.size_of(path));
            async move {
                let file = OpenedFile::open(&store, &path, size).await;
                (path, file)
            }
        }))
        .await;
        for (path, file) in opened {
            match file {
                Ok(f) => {
                    files.keep(&path, f);
                }
                Err(e) => {
                    files.opened.insert(path, Err(e));
                }
            }
        }
        files
    }

    /// The file at `path`, opened now unless it already was.
    pub async fn get(
        &mut self,
        path: &str,
        size: Option<u64>,
    ) -> Result<OpenedFile, CheckpointReadError> {
        match self.opened.remove(path) {
            Some(Ok(f)) => {
                self.opened.insert(path.to_string(), Ok(f.clone()));
                Ok(f)
            }
            Some(Err(e)) => Err(e),
            None => {
                let f = OpenedFile::open(&self.store, path, size).await?;
                Ok(self.keep(path, f))
            }
        }
    }

    /// Stores `f` for later passes (without its bytes past the budget); returns it whole.
    fn keep(&mut self, path: &str, f: OpenedFile) -> OpenedFile {
        let bytes = f.kept_bytes();
        let stored = if self.kept + bytes > KEPT_BYTES {
            f.clone().without_bytes()
        } else {
            self.kept += bytes;
            f.clone()
        };
        self.opened.insert(path.to_string(), Ok(stored));
        f
    }
}
