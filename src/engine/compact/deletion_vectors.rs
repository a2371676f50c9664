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
use deltalake::kernel::DeletionVectorDescriptor;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
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
}

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
                Ok(match range {
                    Some(r) => self.bytes.slice(r.start as usize..r.end as usize),
                    None => self.bytes.clone(),
                })
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

/// The object key of `url` under the table's root, when it is under it.
fn key_under(root: &Url, url: &Url) -> Option<Path> {
    let root = root.as_str().trim_end_matches('/');
    let rest = url.as_str().strip_prefix(root)?.strip_prefix('/')?;
    Path::from_url_path(rest).ok()
}

/// The row indexes `dv` marks deleted, ascending. `root` is the table's root URL (relative and
/// absolute vectors are read through `store`, which is rooted there).
pub async fn deleted_rows(
    store: &Arc<dyn ObjectStore>,
    root: &Url,
    dv: &DeletionVectorDescriptor,
) -> Result<Vec<u64>, DeletionVectorError> {
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
        Some(url) => {
            let key =
                key_under(&parent, &url).ok_or_else(|| DeletionVectorError::OutsideTable {
                    url: url.to_string(),
                    root: parent.to_string(),
                })?;
            let bytes = store
                .get(&key)
                .await
                .map_err(|source| DeletionVectorError::Fetch {
                    key: key.to_string(),
                    source,
                })?
                .bytes()
                .await
                .map_err(|source| DeletionVectorError::Fetch {
                    key: key.to_string(),
                    source,
                })?;
            Arc::new(Fetched { url, bytes })
        }
    };
    let rows: Vec<u64> = kernel
        .read(storage, &parent)
        .map_err(DeletionVectorError::Decode)?
        .into_iter()
        .collect();
    if rows.len() as i64 != dv.cardinality {
        return Err(DeletionVectorError::Cardinality {
            read: rows.len() as u64,
            logged: dv.cardinality,
        });
    }
    Ok(rows)
}

/// Applies a file's deleted row indexes to its batches, read in file order.
#[derive(Debug, Default)]
pub struct RowFilter {
    /// Ascending.
    deleted: Vec<u64>,
    /// Index in `deleted` of the first not yet passed.
    next: usize,
    /// File row index of the next batch's first row.
    offset: u64,
    /// Rows left out so far.
    pub removed: u64,
}

impl RowFilter {
    pub fn new(deleted: Vec<u64>) -> Self {
        Self {
            deleted,
            ..Default::default()
        }
    }

    /// The batch without its deleted rows (unchanged when none of them is deleted).
    pub fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let n = batch.num_rows() as u64;
        let start = self.offset;
        self.offset += n;
        let first = self.next;
        while self.next < self.deleted.len() && self.deleted[self.next] < start + n {
            self.next += 1;
        }
        let hits = &self.deleted[first..self.next];
        if hits.is_empty() {
            return Ok(batch);
        }
        let mut keep = vec![true; n as usize];
        for &i in hits {
            if let Some(k) = i.checked_sub(start).and_then(|i| keep.get_mut(i as usize)) {
                *k = false;
            }
        }
        self.removed += hits.len() as u64;
        filter_record_batch(&batch, &BooleanArray::from(keep))
    }

    /// Deleted indexes beyond the file's last row (a vector that does not belong to the file).
    pub fn unmatched(&self) -> u64 {
        (self.deleted.len() - self.next) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

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
        let mut f = RowFilter::new(vec![0, 4, 5, 9]);
        assert_eq!(values(&f.apply(batch(0, 5)).unwrap()), vec![1, 2, 3]);
        assert_eq!(values(&f.apply(batch(5, 3)).unwrap()), vec![6, 7]);
        assert_eq!(values(&f.apply(batch(8, 2)).unwrap()), vec![8]);
        assert_eq!(f.removed, 4);
        assert_eq!(f.unmatched(), 0);
    }

    #[test]
    fn indexes_past_the_last_row_are_unmatched() {
        let mut f = RowFilter::new(vec![1, 12]);
        assert_eq!(values(&f.apply(batch(0, 3)).unwrap()), vec![0, 2]);
        assert_eq!(f.unmatched(), 1);
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
