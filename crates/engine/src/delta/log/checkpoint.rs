//! Reading a Parquet checkpoint with a column projection: only the leaves the statistics need
//! are fetched (no `stats` JSON, no `tags`), which is what makes a 1M-file table open fast.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, MapArray, RecordBatch, StringArray, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::errors::ParquetError;
use parquet::file::metadata::PageIndexPolicy;

use crate::parquet_reader::StoreReader;

use super::actions::{Format, MetaData, Protocol};
use super::partition_key::encode_into;
use super::state::TxnState;

/// What a checkpoint holds besides its file actions. Values already decided by newer JSON
/// commits win: the reader only fills what is still unset.
#[derive(Debug, Default)]
pub struct CheckpointMeta {
    pub txns: HashMap<String, TxnState>,
    pub metadata: Option<MetaData>,
    pub protocol: Option<Protocol>,
    /// v2 checkpoints point at sidecar files holding the add/remove actions.
    pub sidecars: Vec<String>,
    pub rows: u64,
}

/// Receives the file actions of a checkpoint file, with their row number in that file.
pub trait CheckpointVisitor: Send {
    /// `key` (path + deletion vector) only when paths are read; `part` is the canonical
    /// partition key (see `partition_key::encode_into`).
    fn add(&mut self, row: u64, key: Option<&str>, part: &str, size: u64);
    fn remove(&mut self, row: u64, key: Option<&str>, deletion_ts: Option<i64>, size: Option<i64>);
    fn meta(&mut self) -> &mut CheckpointMeta;
}

/// Why a checkpoint file could not be read: its storage failed, or it is not a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointReadError {
    #[error(transparent)]
    Store(object_store::Error),
    #[error(transparent)]
    Parquet(ParquetError),
    /// A column the checkpoint schema fixes has a type that cannot be read as that type.
    #[error("unexpected column type {found}: {source}")]
    ColumnType {
        found: DataType,
        #[source]
        source: ArrowError,
    },
    /// Selected rows are read by position, so one more than selected means the file (or the
    /// reader) is not what its index said.
    #[error("the reader returned more rows than were selected")]
    ExtraRows,
    /// The Parquet reader panicked on the file (found by fuzzing: a corrupt page's bit width
    /// trips an assertion in the `parquet` crate); the file is corrupt, the process goes on.
    #[error("the Parquet reader failed on a malformed page: {0}")]
    Malformed(String),
}

type Checked<T> = Result<T, CheckpointReadError>;

impl From<ParquetError> for CheckpointReadError {
    /// A storage error reaches us wrapped by the Parquet reader: unwrap it, so it is classified
    /// as a storage failure (permissions, a vanished file) and not as a corrupt file.
    fn from(e: ParquetError) -> Self {
        match e {
            ParquetError::External(inner) => match inner.downcast::<object_store::Error>() {
                Ok(store) => CheckpointReadError::Store(*store),
                Err(other) => CheckpointReadError::Parquet(ParquetError::External(other)),
            },
            e => CheckpointReadError::Parquet(e),
        }
    }
}

/// The leaves of `schema` under any of `wanted` (a column or a struct prefix).
fn projection(
    schema: &parquet::schema::types::SchemaDescriptor,
    wanted: &[&str],
) -> ProjectionMask {
    let leaves: Vec<usize> = schema
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let p = c.path().string();
            wanted
                .iter()
                .any(|w| p == *w || (p.starts_with(w) && p.as_bytes().get(w.len()) == Some(&b'.')))
        })
        .map(|(i, _)| i)
        .collect();
    ProjectionMask::leaves(schema, leaves)
}

/// Runs a read of a checkpoint file, its panics (the `parquet` crate's, on a malformed file)
/// turned into `Malformed`.
async fn guarded<T>(read: impl std::future::Future<Output = Checked<T>> + Send) -> Checked<T> {
    crate::panic_guard::guarded(read)
        .await
        .map_err(|p| CheckpointReadError::Malformed(p.0))?
}

/// How much of a large checkpoint's end is fetched with its footer: the columns after the adds
/// (removes, metadata, protocol, transactions, sidecars) are small unless the table keeps many
/// tombstones, and then need no request of their own.
const TAIL_BYTES: u64 = 1024 * 1024;

/// A checkpoint (or sidecar) file with its footer read: every pass over the file starts from
/// it, so the footer is fetched once per replay, and a small file's bytes once while they fit
/// `opened_checkpoint`'s budget. Cloning is cheap (shared buffers).
#[derive(Clone)]
pub struct OpenedFile {
    reader: StoreReader,
    meta: ArrowReaderMetadata,
}

impl OpenedFile {
    /// Reads the footer. `size`, when the listing gave it, spares a HEAD request.
    pub async fn open(
        store: &Arc<dyn ObjectStore>,
        path: &str,
        size: Option<u64>,
    ) -> Result<Self, CheckpointReadError> {
        guarded(async {
            let mut reader =
                StoreReader::new(store.clone(), Path::from(path), size).with_tail(TAIL_BYTES);
            let meta = ArrowReaderMetadata::load_async(&mut reader, Default::default()).await?;
            Ok(Self { reader, meta })
        })
        .await
    }

    /// The same file with its offset index, which lets a pass over a few rows fetch only their
    /// pages. The index usually lies in the fetched tail (no request). A file whose index is
    /// malformed is read without it (whole column chunks, the same rows); a storage failure is
    /// the pass's error.
    async fn with_offset_index(&self) -> Checked<Self> {
        let mut reader = self.reader.clone();
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        match ArrowReaderMetadata::load_async(&mut reader, options).await {
            Ok(meta) => Ok(Self { reader, meta }),
            Err(e) => match CheckpointReadError::from(e) {
                CheckpointReadError::Store(e) => Err(CheckpointReadError::Store(e)),
                _ => Ok(self.clone()),
            },
        }
    }

    /// The bytes this handle keeps (a small file whole, a large one's tail).
    pub fn kept_bytes(&self) -> u64 {
        self.reader.held_len()
    }

    /// The handle without a small file's bytes (its footer kept).
    pub fn without_bytes(self) -> Self {
        Self {
            reader: self.reader.without_held(),
            meta: self.meta,
        }
    }

    fn builder(&self) -> ParquetRecordBatchStreamBuilder<StoreReader> {
        ParquetRecordBatchStreamBuilder::new_with_metadata(self.reader.clone(), self.meta.clone())
    }

    fn schema(&self) -> &parquet::schema::types::SchemaDescriptor {
        self.meta.metadata().file_metadata().schema_descr()
    }
}

/// Reads one checkpoint (or sidecar) file into `visitor`. Paths (the bulk of a checkpoint's
/// bytes) are read only `with_paths`.
pub async fn read_checkpoint_file(
    file: &OpenedFile,
    with_paths: bool,
    visitor: &mut dyn CheckpointVisitor,
    on_rows: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), CheckpointReadError> {
    guarded(read_file(file, with_paths, visitor, on_rows)).await
}

async fn read_file(
    file: &OpenedFile,
    with_paths: bool,
    visitor: &mut dyn CheckpointVisitor,
    on_rows: &(dyn Fn(u64) + Send + Sync),
) -> Checked<()> {
    let mut wanted: Vec<&str> = vec![
        "add.size",
        "add.partitionValues",
        "remove.size",
        "remove.deletionTimestamp",
        "txn",
        "metaData",
        "protocol",
        "sidecar.path",
    ];
    if with_paths {
        wanted.extend([
            "add.path",
            "add.deletionVector",
            "remove.path",
            "remove.deletionVector",
        ]);
    }
    let mask = projection(file.schema(), &wanted);
    let mut stream = file
        .builder()
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(CheckpointReadError::from)?;
    let mut buf = String::new();
    let mut first_row = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        visit_batch(&batch, first_row, with_paths, visitor, &mut buf)?;
        first_row += batch.num_rows() as u64;
        on_rows(visitor.meta().rows);
    }
    Ok(())
}

/// Hands one batch of checkpoint rows (numbered from `first_row`) to `visitor`.
fn visit_batch(
    batch: &RecordBatch,
    first_row: u64,
    with_paths: bool,
    visitor: &mut dyn CheckpointVisitor,
    buf: &mut String,
) -> Checked<()> {
    if let Some(add) = batch.column_by_name("add").and_then(|c| c.as_struct_opt()) {
        read_adds(add, first_row, with_paths, visitor, buf)?;
    }
    if let Some(rm) = batch
        .column_by_name("remove")
        .and_then(|c| c.as_struct_opt())
    {
        read_removes(rm, first_row, with_paths, visitor)?;
    }
    let meta = visitor.meta();
    meta.rows += batch.num_rows() as u64;
    if let Some(txn) = batch.column_by_name("txn").and_then(|c| c.as_struct_opt()) {
        read_txns(txn, meta)?;
    }
    if meta.metadata.is_none()
        && let Some(md) = batch
            .column_by_name("metaData")
            .and_then(|c| c.as_struct_opt())
    {
        meta.metadata = read_metadata(md)?;
    }
    if meta.protocol.is_none()
        && let Some(p) = batch
            .column_by_name("protocol")
            .and_then(|c| c.as_struct_opt())
    {
        meta.protocol = read_protocol(p)?;
    }
    if let Some(sc) = batch
        .column_by_name("sidecar")
        .and_then(|c| c.as_struct_opt())
        && let Some(p) = child_str(sc, "path")?
    {
        for i in 0..sc.len() {
            if sc.is_valid(i) && p.is_valid(i) {
                meta.sidecars.push(p.value(i).to_string());
            }
        }
    }
    Ok(())
}

/// The file keys (path + deletion vector) of the given rows of one checkpoint file, add or
/// remove, by row. Reads only the path columns of those rows: with the file's offset index,
/// only the pages holding them are fetched.
pub async fn read_checkpoint_keys(
    file: &OpenedFile,
    rows: &[u64],
) -> Result<HashMap<u64, String>, CheckpointReadError> {
    guarded(read_keys(file, rows)).await
}

async fn read_keys(file: &OpenedFile, rows: &[u64]) -> Checked<HashMap<u64, String>> {
    let mut rows: Vec<u64> = rows.to_vec();
    rows.sort_unstable();
    rows.dedup();
    let mut out = HashMap::with_capacity(rows.len());
    if rows.is_empty() {
        return Ok(out);
    }
    let file = file.with_offset_index().await?;
    let builder = file.builder();
    let total = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let selected: Vec<u64> = rows.into_iter().filter(|&r| r < total).collect();
    // Runs of consecutive rows, so a dense selection stays a few selectors.
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for &r in &selected {
        let r = r as usize;
        match ranges.last_mut() {
            Some(last) if last.end == r => last.end = r + 1,
            _ => ranges.push(r..r + 1),
        }
    }
    let selection = RowSelection::from_consecutive_ranges(ranges.into_iter(), total as usize);
    let mask = projection(
        file.schema(),
        &[
            "add.path",
            "add.deletionVector",
            "remove.path",
            "remove.deletionVector",
        ],
    );
    let mut stream = builder
        .with_projection(mask)
        .with_row_selection(selection)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(CheckpointReadError::from)?;
    // Selected rows come back in order, so the n-th output row is the n-th selected row.
    let mut next = selected.iter();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let add = batch.column_by_name("add").and_then(|c| c.as_struct_opt());
        let rm = batch
            .column_by_name("remove")
            .and_then(|c| c.as_struct_opt());
        let add_keys = add.map(struct_keys).transpose()?;
        let rm_keys = rm.map(struct_keys).transpose()?;
        for i in 0..batch.num_rows() {
            let Some(&row) = next.next() else {
                return Err(CheckpointReadError::ExtraRows);
            };
            let key = add_keys
                .as_ref()
                .and_then(|k| k[i].clone())
                .or_else(|| rm_keys.as_ref().and_then(|k| k[i].clone()));
            if let Some(key) = key {
                out.insert(row, key);
            }
        }
    }
    Ok(out)
}

/// A live file of a checkpoint as the deleted-rows figures see it (`file_rows`).
#[derive(Debug, Clone, PartialEq)]
pub struct FileRowsRow {
    /// The file key (path + deletion vector).
    pub key: String,
    pub path: String,
    /// As logged (physical names in a column-mapped table).
    pub partition_values: Vec<(String, Option<String>)>,
    /// The vector's cardinality (0 without a vector).
    pub deleted: u64,
    /// `numRecords` of the file's statistics.
    pub records: Option<u64>,
}

/// The add rows of one checkpoint file with their vectors' cardinalities and row counts, for a
/// table with deletion vectors; `sidecars` receives the sidecar files it names. Reads the
/// paths, vectors, partition values and statistics of the adds (nothing of the removes).
pub async fn read_checkpoint_file_rows(
    file: &OpenedFile,
    out: &mut Vec<FileRowsRow>,
    sidecars: &mut Vec<String>,
) -> Result<(), CheckpointReadError> {
    guarded(read_file_rows(file, out, sidecars)).await
}

async fn read_file_rows(
    file: &OpenedFile,
    out: &mut Vec<FileRowsRow>,
    sidecars: &mut Vec<String>,
) -> Checked<()> {
    let mask = projection(
        file.schema(),
        &[
            "add.path",
            "add.partitionValues",
            "add.deletionVector",
            "add.stats",
            "sidecar.path",
        ],
    );
    let mut stream = file
        .builder()
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(CheckpointReadError::from)?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if let Some(add) = batch.column_by_name("add").and_then(|c| c.as_struct_opt()) {
            file_rows(add, out)?;
        }
        if let Some(sc) = batch
            .column_by_name("sidecar")
            .and_then(|c| c.as_struct_opt())
            && let Some(p) = child_str(sc, "path")?
        {
            sidecars.extend(
                (0..sc.len())
                    .filter(|&i| sc.is_valid(i) && p.is_valid(i))
                    .map(|i| p.value(i).to_string()),
            );
        }
    }
    Ok(())
}

fn file_rows(add: &StructArray, out: &mut Vec<FileRowsRow>) -> Checked<()> {
    let Some(paths) = child_str(add, "path")? else {
        return Ok(());
    };
    let pv = child(add, "partitionValues").and_then(|c| c.as_map_opt());
    let entries = pv.map(map_entries).transpose()?;
    let dvs = child(add, "deletionVector").and_then(|c| c.as_struct_opt());
    let cardinality = dvs
        .map(|dv| child_i64(dv, "cardinality"))
        .transpose()?
        .flatten();
    let stats = child_str(add, "stats")?;
    let storage = dvs
        .map(|dv| child_str(dv, "storageType"))
        .transpose()?
        .flatten();
    for i in (0..add.len()).filter(|&i| add.is_valid(i) && paths.is_valid(i)) {
        let path = paths.value(i);
        let partition_values = match (pv, &entries) {
            (Some(map), Some((keys, values))) if map.is_valid(i) => {
                let offs = map.value_offsets();
                (offs[i] as usize..offs[i + 1] as usize)
                    .map(|j| {
                        let v = values.is_valid(j).then(|| values.value(j).to_string());
                        (keys.value(j).to_string(), v)
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        let has_dv = dvs.is_some_and(|dv| dv.is_valid(i));
        if has_dv
            && let Some(t) = &storage
            && t.is_valid(i)
            && !super::file_rows::KNOWN_STORAGE_TYPES.contains(&t.value(i))
        {
            return Err(CheckpointReadError::Malformed(
                super::file_rows::unknown_storage_type("the checkpoint", path, t.value(i)),
            ));
        }
        let deleted = match &cardinality {
            Some(c) if has_dv && c.is_valid(i) => c.value(i).max(0) as u64,
            _ => 0,
        };
        let records = stats
            .as_ref()
            .filter(|s| s.is_valid(i))
            .and_then(|s| super::actions::num_records(s.value(i)));
        out.push(FileRowsRow {
            key: row_key(path, dvs, i)?,
            path: path.to_string(),
            partition_values,
            deleted,
            records,
        });
    }
    Ok(())
}

/// The file key of each row of an add or remove struct column (None where the row is not that
/// action).
fn struct_keys(s: &StructArray) -> Checked<Vec<Option<String>>> {
    let paths = child_str(s, "path")?;
    let dvs = child(s, "deletionVector").and_then(|c| c.as_struct_opt());
    (0..s.len())
        .map(|i| match &paths {
            Some(p) if s.is_valid(i) && p.is_valid(i) => row_key(p.value(i), dvs, i).map(Some),
            _ => Ok(None),
        })
        .collect()
}

fn row_key(path: &str, dvs: Option<&StructArray>, i: usize) -> Checked<String> {
    match dvs {
        Some(dv) => dv_key(dv, i, path),
        None => Ok(path.to_string()),
    }
}

fn child<'a>(s: &'a StructArray, name: &str) -> Option<&'a ArrayRef> {
    s.column_by_name(name)
}

fn column_type(a: &ArrayRef, source: ArrowError) -> CheckpointReadError {
    CheckpointReadError::ColumnType {
        found: a.data_type().clone(),
        source,
    }
}

fn to_str(a: &ArrayRef) -> Checked<StringArray> {
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>().clone()),
        _ => cast(a, &DataType::Utf8)
            .map(|c| c.as_string::<i32>().clone())
            .map_err(|source| column_type(a, source)),
    }
}

fn to_i64(a: &ArrayRef) -> Checked<Int64Array> {
    match a.data_type() {
        DataType::Int64 => Ok(a.as_primitive::<arrow::datatypes::Int64Type>().clone()),
        _ => cast(a, &DataType::Int64)
            .map(|c| c.as_primitive::<arrow::datatypes::Int64Type>().clone())
            .map_err(|source| column_type(a, source)),
    }
}

fn child_str(s: &StructArray, name: &str) -> Checked<Option<StringArray>> {
    child(s, name).map(to_str).transpose()
}

fn child_i64(s: &StructArray, name: &str) -> Checked<Option<Int64Array>> {
    child(s, name).map(to_i64).transpose()
}

fn map_entries(map: &MapArray) -> Checked<(StringArray, StringArray)> {
    Ok((to_str(map.keys())?, to_str(map.values())?))
}

/// The same unique id as `DeletionVector::unique_id`, from checkpoint columns.
fn dv_key(dv: &StructArray, i: usize, path: &str) -> Checked<String> {
    if !dv.is_valid(i) {
        return Ok(path.to_string());
    }
    let st = child_str(dv, "storageType")?;
    let p = child_str(dv, "pathOrInlineDv")?;
    let off = child_i64(dv, "offset")?;
    let st = st
        .as_ref()
        .filter(|a| a.is_valid(i))
        .map(|a| a.value(i))
        .unwrap_or("");
    let p = p
        .as_ref()
        .filter(|a| a.is_valid(i))
        .map(|a| a.value(i))
        .unwrap_or("");
    Ok(match off.as_ref().filter(|a| a.is_valid(i)) {
        Some(o) => format!("{path}\u{1f}{st}{p}@{}", o.value(i)),
        None => format!("{path}\u{1f}{st}{p}"),
    })
}

fn read_adds(
    add: &StructArray,
    first_row: u64,
    with_paths: bool,
    visitor: &mut dyn CheckpointVisitor,
    buf: &mut String,
) -> Checked<()> {
    let Some(size) = child_i64(add, "size")? else {
        return Ok(());
    };
    let pv = child(add, "partitionValues").and_then(|c| c.as_map_opt());
    let entries = pv.map(map_entries).transpose()?;
    let paths = if with_paths {
        child_str(add, "path")?
    } else {
        None
    };
    let dvs = child(add, "deletionVector").and_then(|c| c.as_struct_opt());
    for i in 0..add.len() {
        if !add.is_valid(i) || !size.is_valid(i) {
            continue;
        }
        let key = match &paths {
            Some(p) if p.is_valid(i) => Some(row_key(p.value(i), dvs, i)?),
            _ => None,
        };
        match (pv, &entries) {
            (Some(map), Some((keys, values))) if map.is_valid(i) => {
                let offs = map.value_offsets();
                let (lo, hi) = (offs[i] as usize, offs[i + 1] as usize);
                encode_into(
                    buf,
                    (lo..hi).map(|j| (keys.value(j), values.is_valid(j).then(|| values.value(j)))),
                );
            }
            _ => buf.clear(),
        }
        visitor.add(
            first_row + i as u64,
            key.as_deref(),
            buf,
            super::file_size::logged_size(size.value(i)),
        );
    }
    Ok(())
}

fn read_removes(
    rm: &StructArray,
    first_row: u64,
    with_paths: bool,
    visitor: &mut dyn CheckpointVisitor,
) -> Checked<()> {
    let size = child_i64(rm, "size")?;
    let ts = child_i64(rm, "deletionTimestamp")?;
    let paths = if with_paths {
        child_str(rm, "path")?
    } else {
        None
    };
    let dvs = child(rm, "deletionVector").and_then(|c| c.as_struct_opt());
    for i in 0..rm.len() {
        if !rm.is_valid(i) {
            continue;
        }
        let key = match &paths {
            Some(p) if p.is_valid(i) => Some(row_key(p.value(i), dvs, i)?),
            _ => None,
        };
        let s = size.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i));
        let t = ts.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i));
        visitor.remove(first_row + i as u64, key.as_deref(), t, s);
    }
    Ok(())
}

fn read_txns(txn: &StructArray, meta: &mut CheckpointMeta) -> Checked<()> {
    let (Some(app), Some(ver)) = (child_str(txn, "appId")?, child_i64(txn, "version")?) else {
        return Ok(());
    };
    let upd = child_i64(txn, "lastUpdated")?;
    for i in 0..txn.len() {
        if txn.is_valid(i) && app.is_valid(i) && ver.is_valid(i) {
            meta.txns
                .entry(app.value(i).to_string())
                .or_insert(TxnState {
                    version: ver.value(i),
                    last_updated: upd.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i)),
                });
        }
    }
    Ok(())
}

fn list_strings(a: Option<&ArrayRef>, i: usize) -> Checked<Option<Vec<String>>> {
    let Some(list) = a.and_then(|a| a.as_list_opt::<i32>()) else {
        return Ok(None);
    };
    if !list.is_valid(i) {
        return Ok(None);
    }
    let v = list.value(i);
    let s = to_str(&v)?;
    Ok(Some(
        (0..s.len())
            .filter(|&j| s.is_valid(j))
            .map(|j| s.value(j).to_string())
            .collect(),
    ))
}

fn read_metadata(md: &StructArray) -> Checked<Option<MetaData>> {
    // schemaString and format are read leniently, as Spark does (`MetaData::missing_required`).
    let schema = child_str(md, "schemaString")?;
    let format_col = child(md, "format").and_then(|f| f.as_struct_opt());
    let provider = match format_col {
        Some(f) => child_str(f, "provider")?,
        None => None,
    };
    let id = child_str(md, "id")?;
    let conf = child(md, "configuration").and_then(|c| c.as_map_opt());
    for i in 0..md.len() {
        if !md.is_valid(i) {
            continue;
        }
        let mut configuration = HashMap::new();
        if let Some(map) = conf.filter(|m| m.is_valid(i)) {
            let (k, v) = map_entries(map)?;
            let offs = map.value_offsets();
            for j in offs[i] as usize..offs[i + 1] as usize {
                configuration.insert(
                    k.value(j).to_string(),
                    v.is_valid(j).then(|| v.value(j).to_string()),
                );
            }
        }
        let format = format_col.filter(|f| f.is_valid(i)).map(|_| Format {
            provider: provider
                .as_ref()
                .filter(|p| p.is_valid(i))
                .map(|p| p.value(i).to_string())
                .unwrap_or_default(),
        });
        return Ok(Some(MetaData {
            id: id
                .as_ref()
                .filter(|a| a.is_valid(i))
                .map(|a| a.value(i).to_string())
                .unwrap_or_default(),
            schema_string: schema
                .as_ref()
                .filter(|a| a.is_valid(i))
                .map(|a| a.value(i).to_string())
                .unwrap_or_default(),
            format,
            partition_columns: list_strings(child(md, "partitionColumns"), i)?.unwrap_or_default(),
            configuration,
        }));
    }
    Ok(None)
}

fn read_protocol(p: &StructArray) -> Checked<Option<Protocol>> {
    let (Some(r), Some(w)) = (
        child_i64(p, "minReaderVersion")?,
        child_i64(p, "minWriterVersion")?,
    ) else {
        return Ok(None);
    };
    for i in 0..p.len() {
        if p.is_valid(i) && r.is_valid(i) {
            return Ok(Some(Protocol {
                min_reader_version: r.value(i) as i32,
                min_writer_version: if w.is_valid(i) { w.value(i) as i32 } else { 0 },
                reader_features: list_strings(child(p, "readerFeatures"), i)?,
                writer_features: list_strings(child(p, "writerFeatures"), i)?,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::ListArray;
    use arrow::datatypes::Int32Type;

    #[test]
    fn a_column_of_the_wrong_type_is_a_typed_error_with_its_cause() {
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
        ]));
        let e = to_i64(&list).unwrap_err();
        assert!(
            matches!(&e, CheckpointReadError::ColumnType { found, .. } if found == list.data_type()),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("unexpected column type List"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
