//! The object store of a local table, whose deletes go through `beneath`: every delete any part
//! of lakehealth (or delta-rs, working through this store) makes on a local table resolves the
//! path beneath the table's folder with no symbolic link in any component, at the moment of the
//! delete. Sweeps, pickup, orphan removal, VACUUM, failed outputs and commit temporaries all
//! delete through it, since `Location` opens every local store wrapped so. Its reads open the
//! file themselves and refuse anything but a regular file (a planted FIFO would block a read
//! forever).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, Result};

use super::beneath::{BeneathError, Resolve, unlink_beneath};

/// A local store whose deletes stay beneath `root`, through real folders only.
#[derive(Debug)]
pub struct ConfinedDeletes {
    inner: Arc<dyn ObjectStore>,
    place: Arc<Place>,
}

/// Where the store's keys are on disk, and the folder deletes must stay beneath.
#[derive(Debug)]
struct Place {
    /// The key the store's own root stands for, under the file system's root (empty for a
    /// store rooted at `/`).
    prefix: Path,
    /// Only used to turn a key into a file path exactly as object_store's local store does.
    paths: LocalFileSystem,
    root: PathBuf,
}

impl ConfinedDeletes {
    /// `inner` (a local store whose key `k` is the file `/prefix/k`), its deletes confined to
    /// beneath `root`.
    pub fn wrap(inner: Arc<dyn ObjectStore>, prefix: Path, root: PathBuf) -> Arc<dyn ObjectStore> {
        Arc::new(Self {
            inner,
            place: Arc::new(Place {
                prefix,
                paths: LocalFileSystem::new(),
                root,
            }),
        })
    }
}

impl Place {
    /// The file at `key`, opened for reading if it is a regular file. On Linux it is opened
    /// without blocking (a FIFO's open would wait for a writer, forever) and checked on the
    /// open file itself, so nothing swapped in after the check is read; elsewhere it is
    /// checked by name first. Anyone who can write the table can plant a FIFO, a socket or a
    /// device; none is a table's file. A folder is absent, as object_store's local store says.
    fn open_regular(&self, key: &Path) -> Result<(std::fs::File, PathBuf, std::fs::Metadata)> {
        let full: Path = self.prefix.parts().chain(key.parts()).collect();
        let file = self.paths.path_to_filesystem(&full)?;
        let opened = open_nonblocking(&file).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => object_store::Error::NotFound {
                path: file.display().to_string(),
                source: Box::new(e),
            },
            _ => generic(format!("cannot open {}: {e}", file.display())),
        })?;
        let meta = opened
            .metadata()
            .map_err(|e| generic(format!("cannot stat {}: {e}", file.display())))?;
        if meta.is_dir() {
            return Err(object_store::Error::NotFound {
                path: file.display().to_string(),
                source: "is a folder".into(),
            });
        }
        if !meta.is_file() {
            return Err(generic(format!(
                "{} is not a regular file (a FIFO, socket or device): not read",
                file.display()
            )));
        }
        Ok((opened, file, meta))
    }

    fn delete(&self, key: &Path) -> Result<()> {
        let full: Path = self.prefix.parts().chain(key.parts()).collect();
        let file = self.paths.path_to_filesystem(&full)?;
        let refused = |e: BeneathError| match e {
            BeneathError::NotFound { path } => object_store::Error::NotFound {
                path: path.display().to_string(),
                source: "no such file".into(),
            },
            e => object_store::Error::Generic {
                store: "LocalFileSystem",
                source: Box::new(e),
            },
        };
        let Ok(rel) = file.strip_prefix(&self.root) else {
            return Err(refused(BeneathError::Outside {
                path: file.clone(),
                root: self.root.clone(),
            }));
        };
        unlink_beneath(&self.root, rel, Resolve::Kernel).map_err(refused)
    }
}

fn generic(msg: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: msg.into(),
    }
}

#[cfg(target_os = "linux")]
fn open_nonblocking(file: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file)
}

/// Without a non-blocking open, a FIFO is refused by name before it is opened.
#[cfg(not(target_os = "linux"))]
fn open_nonblocking(file: &std::path::Path) -> std::io::Result<std::fs::File> {
    match std::fs::metadata(file) {
        Ok(m) if !m.is_file() && !m.is_dir() => Err(std::io::Error::other("not a regular file")),
        _ => std::fs::File::open(file),
    }
}

/// What object_store's local store says of a file (its e-tag: inode, mtime, size).
fn object_meta(m: &std::fs::Metadata, location: Path) -> ObjectMeta {
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
        .unwrap_or_default();
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(m);
    #[cfg(not(unix))]
    let inode = 0u64;
    ObjectMeta {
        location,
        last_modified: chrono::DateTime::<chrono::Utc>::from(
            std::time::SystemTime::UNIX_EPOCH + mtime,
        ),
        size: m.len(),
        e_tag: Some(format!("{inode:x}-{:x}-{:x}", mtime.as_micros(), m.len())),
        version: None,
    }
}

/// Reads `range` of `file` at its offset, all of it or an error.
fn read_range(
    file: &std::fs::File,
    path: &std::path::Path,
    range: std::ops::Range<u64>,
) -> Result<Bytes> {
    let mut buf = vec![0u8; range.end.saturating_sub(range.start) as usize];
    #[cfg(unix)]
    let read = std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, range.start);
    #[cfg(not(unix))]
    let read = {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(range.start))
            .and_then(|_| f.read_exact(&mut buf))
    };
    read.map_err(|e| generic(format!("reading {:?} of {}: {e}", range, path.display())))?;
    Ok(Bytes::from(buf))
}

/// Runs `f` off the async threads when there is a runtime (as object_store's local store does).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => rt
            .spawn_blocking(f)
            .await
            .map_err(|e| generic(format!("the read's task stopped: {e}")))?,
        Err(_) => f(),
    }
}

impl fmt::Display for ConfinedDeletes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ConfinedDeletes({}, {})",
            self.place.root.display(),
            self.inner
        )
    }
}

#[async_trait]
impl ObjectStore for ConfinedDeletes {
    crate::forward_to_inner!(
        put_opts,
        put_multipart_opts,
        list,
        list_with_delimiter,
        copy_opts
    );

    /// Reads the file this store's key names itself, opened once and checked on the open
    /// file (`Place::open_regular`), as object_store's local store would read it.
    async fn get_opts(
        &self,
        location: &Path,
        options: object_store::GetOptions,
    ) -> Result<object_store::GetResult> {
        let (place, location) = (self.place.clone(), location.clone());
        blocking(move || {
            let (file, path, m) = place.open_regular(&location)?;
            let meta = object_meta(&m, location);
            options.check_preconditions(&meta)?;
            let range = match options.range {
                Some(r) => r
                    .as_range(meta.size)
                    .map_err(|e| generic(format!("{}: {e}", path.display())))?,
                None => 0..meta.size,
            };
            Ok(object_store::GetResult {
                payload: object_store::GetResultPayload::File(file, path),
                attributes: Default::default(),
                range,
                meta,
            })
        })
        .await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let (place, location, ranges) = (self.place.clone(), location.clone(), ranges.to_vec());
        blocking(move || {
            let (file, path, _) = place.open_regular(&location)?;
            ranges
                .into_iter()
                .map(|r| read_range(&file, &path, r))
                .collect()
        })
        .await
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    /// Every delete, one system call chain each, off the async threads (as the local store
    /// does). `rename_opts` keeps the trait's default (copy, then this delete), so a rename's
    /// delete is confined too.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let place = self.place.clone();
        locations
            .map(move |location| {
                let place = place.clone();
                async move {
                    let location = location?;
                    let at = location.clone();
                    match tokio::runtime::Handle::try_current() {
                        Ok(rt) => rt
                            .spawn_blocking(move || place.delete(&at))
                            .await
                            .map_err(|e| object_store::Error::Generic {
                                store: "LocalFileSystem",
                                source: Box::new(e),
                            })??,
                        Err(_) => place.delete(&at)?,
                    }
                    Ok::<_, object_store::Error>(location)
                }
            })
            .buffered(10)
            .boxed()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use std::os::unix::fs::symlink;

    fn store_at_fs_root(root: &std::path::Path) -> Arc<dyn ObjectStore> {
        ConfinedDeletes::wrap(
            Arc::new(LocalFileSystem::new()),
            Path::default(),
            root.to_path_buf(),
        )
    }

    #[tokio::test]
    async fn deletes_beneath_the_root_land_and_deletes_through_a_link_or_outside_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("t");
        let sibling = d.path().join("s");
        std::fs::create_dir_all(table.join("p=1")).unwrap();
        std::fs::create_dir_all(sibling.join("p=1")).unwrap();
        std::fs::write(table.join("p=1/own.parquet"), b"x").unwrap();
        std::fs::write(sibling.join("p=1/live.parquet"), b"y").unwrap();
        symlink(sibling.join("p=1"), table.join("p=2")).unwrap();
        let prefix = Path::from_absolute_path(&table).unwrap();
        let store = store_at_fs_root(&table);

        store
            .delete(&prefix.clone().join("p=1").join("own.parquet"))
            .await
            .unwrap();
        assert!(!table.join("p=1/own.parquet").exists());

        let through = prefix.clone().join("p=2").join("live.parquet");
        let e = store.delete(&through).await.unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let outside = Path::from_absolute_path(sibling.join("p=1/live.parquet")).unwrap();
        let e = store.delete(&outside).await.unwrap_err();
        assert!(e.to_string().contains("not beneath"), "{e}");
        assert!(sibling.join("p=1/live.parquet").exists());

        let gone = store
            .delete(&prefix.clone().join("p=1").join("own.parquet"))
            .await;
        assert!(
            matches!(gone, Err(object_store::Error::NotFound { .. })),
            "{gone:?}"
        );
    }

    #[tokio::test]
    async fn a_fifo_in_the_table_is_refused_not_read_and_a_regular_file_is_read() {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("t");
        std::fs::create_dir_all(&table).unwrap();
        std::fs::write(table.join("ok.json"), b"{}").unwrap();
        let fifo = table.join("snap-fifo.avro");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let store = store_at_fs_root(&table);
        let prefix = Path::from_absolute_path(&table).unwrap();
        let got = store.get(&prefix.clone().join("ok.json")).await.unwrap();
        assert_eq!(got.bytes().await.unwrap().as_ref(), b"{}");
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo on this system: nothing to plant
        }
        // Without the check this read blocks forever (no writer ever opens the FIFO).
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            store.get(&prefix.clone().join("snap-fifo.avro")),
        )
        .await
        .expect("the read of a FIFO returned");
        let e = read.unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = store
            .get_ranges(&prefix.join("snap-fifo.avro"), &[0..4, 8..12])
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[tokio::test]
    async fn a_store_rooted_at_the_table_maps_its_keys_as_the_local_store_does() {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("my table");
        std::fs::create_dir_all(table.join("p=a b")).unwrap();
        let inner: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(&table).unwrap());
        let prefix = Path::from_absolute_path(&table).unwrap();
        let store = ConfinedDeletes::wrap(inner.clone(), prefix, table.clone());
        let key = Path::from_iter(["p=a b", "f%1.parquet"]);
        inner.put(&key, b"x".to_vec().into()).await.unwrap();
        store.delete(&key).await.unwrap();
        assert!(matches!(
            inner.head(&key).await,
            Err(object_store::Error::NotFound { .. })
        ));
    }
}
