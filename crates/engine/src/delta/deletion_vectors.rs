//! Deletion vectors of a bin's inputs: read by delta-kernel's reader (inline, relative and
//! absolute storage, with its size, magic and CRC checks) from bytes fetched through the table's
//! object store, then applied to a file's batches by row index, so a rewrite keeps exactly the
//! rows a reader of the table sees.

use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::error::ArrowError;
use bytes::Bytes;
use delta_kernel::actions::deletion_vector::DeletionVectorDescriptor as KernelDv;
use delta_kernel::{DeltaResult, FileMeta, FileSlice, StorageHandler};
use deltalake::kernel::{DeletionVectorDescriptor, StorageType};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use roaring::RoaringTreemap;
use url::Url;

/// Why a deletion vector could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DeletionVectorError {
    #[error("invalid deletion vector descriptor: {0}")]
    Descriptor(#[source] delta_kernel::Error),
    #[error("the deletion vector {url} is outside the table's root {root}")]
    OutsideTable { url: String, root: String },
    #[error("reading the deletion vector {key}: {source}")]
    Fetch {
        key: String,
        #[source]
        source: object_store::Error,
    },
    #[error("decoding the deletion vector: {0}")]
    Decode(#[source] delta_kernel::Error),
    #[error(
        "the deletion vector marks {read} rows deleted, its descriptor says {logged}: the log and the file disagree"
    )]
    Cardinality { read: u64, logged: i64 },
    /// An inline vector holds at least its 4-byte magic (5 characters of z85); delta-kernel's
    /// reader panics on less.
    #[error(
        "the inline deletion vector {inline:?} is too short to hold a bitmap (at least 5 characters)"
    )]
    InlineTooShort { inline: String },
}

/// The fewest z85 characters an inline deletion vector can have: its magic number's 4 bytes.
const MIN_INLINE_CHARS: usize = 5;

/// The one file the kernel's reader asks for, fetched beforehand (the kernel's storage API is
/// blocking; the rewrite runs on an async runtime).
struct Fetched {
    url: Url,
    bytes: Bytes,
}

fn unsupported(what: &str) -> delta_kernel::Error {
    delta_kernel::Error::generic(format!(
        "{what} is not available while reading a deletion vector"
    ))
}

impl StorageHandler for Fetched {
    fn list_from(
        &self,
        _path: &Url,
    ) -> DeltaResult<Box<dyn Iterator<Item = DeltaResult<FileMeta>>>> {
        Err(unsupported("listing"))
    }

    fn read_files(
        &self,
        files: Vec<FileSlice>,
    ) -> DeltaResult<Box<dyn Iterator<Item = DeltaResult<Bytes>>>> {
        let out: Vec<DeltaResult<Bytes>> = files
            .into_iter()
            .map(|(url, range)| {
                if url != self.url {
                    return Err(delta_kernel::Error::generic(format!(
                        "unexpected read of {url}"
                    )));
                }
                match range {
                    Some(r) => slice(&self.bytes, r.start, r.end),
                    None => Ok(self.bytes.clone()),
                }
            })
            .collect();
        Ok(Box::new(out.into_iter()))
    }

    fn copy_atomic(&self, _src: &Url, _dest: &Url) -> DeltaResult<()> {
        Err(unsupported("copying"))
    }

    fn put(&self, _path: &Url, _data: Bytes, _overwrite: bool) -> DeltaResult<()> {
        Err(unsupported("writing"))
    }

    fn head(&self, _path: &Url) -> DeltaResult<FileMeta> {
        Err(unsupported("head"))
    }

    fn delete(&self, _path: &Url) -> DeltaResult<()> {
        Err(unsupported("deleting"))
    }
}

/// `bytes[start..end]`, or an error when the range is not inside them (a range comes from a
/// descriptor's offset and size, which the log may get wrong).
fn slice(bytes: &Bytes, start: u64, end: u64) -> DeltaResult<Bytes> {
    let len = bytes.len() as u64;
    if start > end || end > len {
        return Err(delta_kernel::Error::generic(format!(
            "the range {start}..{end} is outside the deletion vector file of {len} bytes"
        )));
    }
    Ok(bytes.slice(start as usize..end as usize))
}

/// The object key of `url` under the table's root, when it is under it.
fn key_under(root: &Url, url: &Url) -> Option<Path> {
    let root = root.as_str().trim_end_matches('/');
    let rest = url.as_str().strip_prefix(root)?.strip_prefix('/')?;
    Path::from_url_path(rest).ok()
}

/// The row indexes `dv` marks deleted, as the bitmap it is (never a list: a few bytes of
/// run-length containers can mark billions of rows). `root` is the table's root URL (relative
/// and absolute vectors are read through `store`, which is rooted there).
pub async fn deleted_rows(
    store: &Arc<dyn ObjectStore>,
    root: &Url,
    dv: &DeletionVectorDescriptor,
) -> Result<RoaringTreemap, DeletionVectorError> {
    check_inline(dv)?;
    let kernel = KernelDv::try_from(dv.clone()).map_err(DeletionVectorError::Descriptor)?;
    // Kernel joins relative paths onto the parent: it must end with '/'.
    let mut parent = root.clone();
    if !parent.path().ends_with('/') {
        parent.set_path(&format!("{}/", parent.path()));
    }
    let url = kernel
        .absolute_path(&parent)
        .map_err(DeletionVectorError::Descriptor)?;
    let storage: Arc<dyn StorageHandler> = match url {
        None => Arc::new(Fetched {
            url: parent.clone(),
            bytes: Bytes::new(),
        }),
        Some(url) => Arc::new(fetch(store, &parent, url).await?),
    };
    let rows = kernel
        .read(storage, &parent)
        .map_err(DeletionVectorError::Decode)?;
    if i64::try_from(rows.len()).ok() != Some(dv.cardinality) {
        return Err(DeletionVectorError::Cardinality {
            read: rows.len(),
            logged: dv.cardinality,
        });
    }
    Ok(rows)
}

/// Refuses an inline vector too short for its magic number before delta-kernel indexes it.
fn check_inline(dv: &DeletionVectorDescriptor) -> Result<(), DeletionVectorError> {
    if dv.storage_type == StorageType::Inline && dv.path_or_inline_dv.len() < MIN_INLINE_CHARS {
        return Err(DeletionVectorError::InlineTooShort {
            inline: dv.path_or_inline_dv.clone(),
        });
    }
    Ok(())
}

/// The file of a stored vector at `url`, which must be under the table's root `parent`.
async fn fetch(
    store: &Arc<dyn ObjectStore>,
    parent: &Url,
    url: Url,
) -> Result<Fetched, DeletionVectorError> {
    let key = key_under(parent, &url).ok_or_else(|| DeletionVectorError::OutsideTable {
        url: url.to_string(),
        root: parent.to_string(),
    })?;
    let fetch_err = |source| DeletionVectorError::Fetch {
        key: key.to_string(),
        source,
    };
    let bytes = store
        .get(&key)
        .await
        .map_err(fetch_err)?
        .bytes()
        .await
        .map_err(fetch_err)?;
    Ok(Fetched { url, bytes })
}

/// Applies a file's deleted row indexes to its batches, read in file order.
#[derive(Debug, Default)]
pub struct RowFilter {
    deleted: RoaringTreemap,
    /// File row index of the next batch's first row.
    offset: u64,
    /// Rows left out so far.
    pub removed: u64,
}

impl RowFilter {
    pub fn new(deleted: RoaringTreemap) -> Self {
        Self {
            deleted,
            ..Default::default()
        }
    }

    /// The batch without its deleted rows (unchanged when none of them is deleted).
    pub fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let n = batch.num_rows() as u64;
        let start = self.offset;
        let end = start.saturating_add(n);
        self.offset = end;
        let hits = self.deleted.range_cardinality(start..end);
        if hits == 0 {
            return Ok(batch);
        }
        // Only this batch's indexes are visited: the bitmap is never expanded whole.
        let mut keep = vec![true; batch.num_rows()];
        let mut it = self.deleted.iter();
        it.advance_to(start);
        for i in it.take_while(|&i| i < end) {
            if let Some(k) = keep.get_mut((i - start) as usize) {
                *k = false;
            }
        }
        self.removed += hits;
        filter_record_batch(&batch, &BooleanArray::from(keep))
    }

    /// Deleted indexes beyond the file's last row (a vector that does not belong to the file).
    pub fn unmatched(&self) -> u64 {
        self.deleted.range_cardinality(self.offset..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    fn filter(rows: &[u64]) -> RowFilter {
        RowFilter::new(rows.iter().copied().collect())
    }

    fn batch(from: i64, n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from_iter_values(from..from + n))],
        )
        .unwrap()
    }

    fn values(b: &RecordBatch) -> Vec<i64> {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        (0..a.len()).map(|i| a.value(i)).collect()
    }

    #[test]
    fn deleted_rows_are_left_out_across_batches() {
        let mut f = filter(&[0, 4, 5, 9]);
        assert_eq!(values(&f.apply(batch(0, 5)).unwrap()), vec![1, 2, 3]);
        assert_eq!(values(&f.apply(batch(5, 3)).unwrap()), vec![6, 7]);
        assert_eq!(values(&f.apply(batch(8, 2)).unwrap()), vec![8]);
        assert_eq!(f.removed, 4);
        assert_eq!(f.unmatched(), 0);
    }

    #[test]
    fn indexes_past_the_last_row_are_unmatched() {
        let mut f = filter(&[1, 12]);
        assert_eq!(values(&f.apply(batch(0, 3)).unwrap()), vec![0, 2]);
        assert_eq!(f.unmatched(), 1);
    }

    fn inline(path_or_inline_dv: String, cardinality: i64) -> DeletionVectorDescriptor {
        DeletionVectorDescriptor {
            storage_type: StorageType::Inline,
            path_or_inline_dv,
            offset: None,
            size_in_bytes: 0,
            cardinality,
        }
    }

    async fn read_inline(
        dv: &DeletionVectorDescriptor,
    ) -> Result<RoaringTreemap, DeletionVectorError> {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        deleted_rows(&store, &Url::parse("memory:///t/").unwrap(), dv).await
    }

    /// Found by fuzzing (tests/cli/fuzz.rs): delta-kernel indexes the first 4 bytes of an inline
    /// vector without checking its length, so `""` panicked.
    #[tokio::test]
    async fn fuzz_regression_an_empty_inline_vector_is_an_error_not_a_panic() {
        let e = read_inline(&inline(String::new(), 0)).await.unwrap_err();
        assert!(
            matches!(e, DeletionVectorError::InlineTooShort { .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("too short"), "{e}");
        // Five characters decode to 4 bytes: not the magic number, a typed error.
        let e = read_inline(&inline("00000".into(), 0)).await.unwrap_err();
        assert!(matches!(e, DeletionVectorError::Decode(_)), "{e:?}");
    }

    /// Found by fuzzing: a few bytes of run containers mark billions of rows, and the rows were
    /// expanded into a list (8 bytes each) before their count was checked. The bitmap is now
    /// kept and applied batch by batch.
    #[tokio::test]
    async fn fuzz_regression_a_vector_of_billions_of_rows_is_never_expanded() {
        let rows: u64 = 1 << 34;
        let mut bitmap = RoaringTreemap::new();
        bitmap.insert_range(0..rows);
        let mut raw = 1681511377u32.to_le_bytes().to_vec();
        bitmap.serialize_into(&mut raw).unwrap();
        raw.resize(raw.len().div_ceil(4) * 4, 0);
        let encoded = z85::encode(&raw);
        // The log says two rows: refused by the count, before anything is expanded.
        let e = read_inline(&inline(encoded.clone(), 2)).await.unwrap_err();
        assert!(
            matches!(e, DeletionVectorError::Cardinality { read, logged: 2 } if read == rows),
            "{e:?}"
        );
        // The log agrees: the bitmap is applied to a batch without a list of its rows.
        let read = read_inline(&inline(encoded, rows as i64)).await.unwrap();
        let mut f = RowFilter::new(read);
        assert!(values(&f.apply(batch(0, 5)).unwrap()).is_empty());
        assert_eq!(f.unmatched(), rows - 5);
    }

    #[test]
    fn a_range_outside_the_file_is_an_error() {
        let b = Bytes::from_static(b"0123456789");
        assert_eq!(slice(&b, 2, 4).unwrap(), Bytes::from_static(b"23"));
        assert!(slice(&b, 4, 2).is_err());
        assert!(slice(&b, 8, 11).is_err());
    }

    #[test]
    fn a_key_is_found_only_under_the_root() {
        let root = Url::parse("file:///t/my%20table/").unwrap();
        let u = Url::parse("file:///t/my%20table/ab/deletion_vector_x.bin").unwrap();
        assert_eq!(
            key_under(&root, &u).unwrap().as_ref(),
            "ab/deletion_vector_x.bin"
        );
        let out = Url::parse("file:///t/other/deletion_vector_x.bin").unwrap();
        assert!(key_under(&root, &out).is_none());
        let sibling = Url::parse("file:///t/my%20table2/x.bin").unwrap();
        assert!(key_under(&root, &sibling).is_none());
    }
}
