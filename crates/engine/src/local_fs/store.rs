//! The object store of a local table, whose deletes go through `beneath`: every delete any part
//! of lakehealth (or delta-rs, working through this store) makes on a local table resolves the
//! path beneath the table's folder with no symbolic link in any component, at the moment of the
//! delete. Sweeps, pickup, orphan removal, VACUUM, failed outputs and commit temporaries all
//! delete through it, since `Location` opens every local store wrapped so.

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
    /// Refuses to read `key` unless it is a regular file (or absent: the read then says so).
    /// A FIFO would block the read until someone writes it, forever; a device or socket
    /// is no table's file. Anyone who can write the table can plant one.
    fn readable(&self, key: &Path) -> Result<()> {
        let full: Path = self.prefix.parts().chain(key.parts()).collect();
        let file = self.paths.path_to_filesystem(&full)?;
        match std::fs::metadata(&file) {
            Ok(m) if !m.is_file() => Err(object_store::Error::Generic {
                store: "LocalFileSystem",
                source: format!(
                    "{} is not a regular file (a folder, FIFO, socket or device): not read",
                    file.display()
                )
                .into(),
            }),
            _ => Ok(()),
        }
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

    async fn get_opts(
        &self,
        location: &Path,
        options: object_store::GetOptions,
    ) -> Result<object_store::GetResult> {
        self.place.readable(location)?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<Bytes>> {
        self.place.readable(location)?;
        self.inner.get_ranges(location, ranges).await
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
