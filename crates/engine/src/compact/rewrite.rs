//! Rewriting one bin: stream its input files through a writer (`sink`: delta-rs's
//! `RecordBatchWriter`, or for a column-mapped table the physical writer; bounded memory,
//! statistics for every output), conform each batch to the table schema without
//! changing a value, roll outputs by measured encoded size so they land in the target band, and
//! prove before anything may commit that the outputs hold exactly the rows the inputs held: the
//! outputs are read back and their content fingerprint (every column of every row, in the
//! order written) must equal the inputs'. Inputs with a deletion vector are read without the
//! rows it marks deleted (`deletion_vectors`), so the proof compares the rows the table reads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use delta_kernel::expressions::Scalar;
use deltalake::DeltaTable;
use deltalake::kernel::{Add, Remove};
use deltalake::writer::RecordBatchWriter;
use futures::StreamExt;
use indexmap::IndexMap;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use tokio_util::sync::CancellationToken;

use super::conform::{ConformError, conform, int96_safe_metadata};
use super::events::{Failure, FailureKind};
use super::fingerprint::{Fingerprint, ProofHasher, RowsProof};
use super::ordered_bin::{Feed, SortSpec};
use super::ordering::RowOrder;
use super::pace::Pacer;
use super::physical_writer::PhysicalWriter;
use super::plan::{Bin, FileRef};
use super::read_ahead::ReadAhead;
use super::sink::Sink;
use super::tiers::{TIER_TAG, output_tier};
use crate::delta::column_mapping::{LayoutError, PhysicalLayout, layout, physical_layout};
use crate::delta::deletion_vectors::{DeletionVectorError, RowFilter, deleted_rows};
use crate::delta::features::{MaterializedColumns, hidden_columns};
use crate::delta::row_tracking::{FileRows, RowTrackingError};
use crate::model::output_name::named_for_job;
use crate::model::partition::PartitionValues;
use crate::parquet_reader::{StoreReader, load_metadata};

#[derive(Debug, Clone)]
pub struct RewriteOptions {
    /// Output files are rolled when their encoded size reaches this.
    pub target_file_size: u64,
    pub compression: Compression,
    /// Output/input bytes of past compactions (predictions only: outputs are rolled by the
    /// size the writer measures).
    pub compression_ratio: f64,
    /// The job's read budget while a writer is active (`janitor::throttle`); None: unbounded.
    pub pace: Option<Arc<Pacer>>,
    /// The order rows are written in; None: as read (bin-packing).
    pub order: Option<RowOrder>,
    /// Written on every output's `add` (`liquid` when the table is clustered by `order`).
    pub clustering_provider: Option<String>,
    /// Bytes a bin's sort holds before it spills to disk.
    pub sort_memory: usize,
    /// The job whose outputs these are: every output's name carries it (`output_name`), as
    /// the job's ledger store creates them.
    pub output_job: String,
}

impl RewriteOptions {
    /// The proof a bin gives: its rows in the order read, or in any order when sorted.
    pub fn proof(&self) -> RowsProof {
        match self.order {
            None => RowsProof::InOrder,
            Some(_) => RowsProof::AnyOrder,
        }
    }
}

#[derive(Debug, Default)]
pub struct Counters {
    pub files_read: AtomicU64,
    pub rows: AtomicU64,
    pub bins_done: AtomicU64,
}

/// A rewritten bin whose outputs were proven to hold exactly its inputs' rows.
#[derive(Debug, Clone)]
pub struct BinOutput {
    pub partition: PartitionValues,
    pub adds: Vec<Add>,
    pub removes: Vec<Remove>,
    pub rows: u64,
    /// Rows the inputs' deletion vectors marked deleted, left out of the outputs.
    pub deleted_rows: u64,
    pub bytes_in: u64,
    pub fingerprint: Fingerprint,
    /// Time spent reading the outputs back and fingerprinting them.
    pub verify_seconds: f64,
    /// Bytes its sort spilled to disk (0: not sorted, or it fit in memory).
    pub spilled_bytes: u64,
}

impl BinOutput {
    pub fn bytes_out(&self) -> u64 {
        self.adds.iter().map(|a| a.size.max(0) as u64).sum()
    }

    pub fn output_paths(&self) -> Vec<String> {
        self.adds.iter().map(|a| a.path.clone()).collect()
    }
}

/// Why a bin did not produce outputs that may commit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BinFailure {
    #[error("cancelled")]
    Cancelled,
    #[error("reading {path}: {detail}")]
    Read { path: String, detail: String },
    #[error("{path}: {source}")]
    Conform {
        path: String,
        source: Box<ConformError>,
    },
    #[error("writing: {0}")]
    Write(String),
    #[error("the outputs do not hold the inputs' rows: {0}; bin not committed")]
    Verify(String),
    #[error("{0}")]
    Setup(String),
    #[error("the bin's task stopped unexpectedly: {0}")]
    Panicked(String),
}

impl BinFailure {
    pub fn kind(&self) -> FailureKind {
        match self {
            BinFailure::Cancelled => FailureKind::Cancelled,
            BinFailure::Read { .. } => FailureKind::Read,
            BinFailure::Conform { .. } => FailureKind::Conform,
            BinFailure::Write(_) => FailureKind::Write,
            BinFailure::Verify(_) => FailureKind::Verify,
            BinFailure::Setup(_) => FailureKind::Setup,
            BinFailure::Panicked(_) => FailureKind::Panicked,
        }
    }

    /// The failure as events and summaries report it.
    pub fn report(&self) -> Failure {
        Failure {
            kind: self.kind(),
            message: self.to_string(),
        }
    }
}

/// A failed bin, with the outputs it had written (never referenced by the log).
#[derive(Debug, Clone)]
pub struct BinError {
    pub partition: PartitionValues,
    pub failure: BinFailure,
    pub outputs: Vec<String>,
}

/// Outputs aim 10% above the target so that compression variance does not leave them below it.
const ROLL_MARGIN: f64 = 1.1;

/// The object key of a path as delta-rs's writer made it (`Path::parse` of the hive path):
/// never percent-decoded a second time.
pub fn object_key(path: &str) -> Path {
    Path::parse(path).unwrap_or_else(|_| Path::from(path))
}

/// Deletes outputs (table-relative paths); returns those that could not be deleted (one never
/// created counts as deleted).
pub async fn delete_outputs(store: &Arc<dyn ObjectStore>, paths: &[String]) -> Vec<String> {
    let mut left = Vec::new();
    for p in paths {
        match store.delete(&object_key(p)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(_) => left.push(p.clone()),
        }
    }
    left
}

/// Why a bin's writer cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Table(#[from] deltalake::DeltaTableError),
    #[error("partition column {0} is not in the schema")]
    MissingColumn(String),
    #[error("partition column {0} is not a primitive type")]
    NotPrimitive(String),
    /// A partition value that does not parse as its column's type.
    #[error(transparent)]
    Value(delta_kernel::Error),
    /// A column-mapped table's physical layout.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// Why a file (a bin's input, or an output read back) cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Its INT96 columns cannot be read as the table's timestamps.
    #[error(transparent)]
    Conform(#[from] ConformError),
    #[error(transparent)]
    DeletionVector(#[from] DeletionVectorError),
    /// Its deletion vector could not be applied to a batch.
    #[error(transparent)]
    Filter(#[from] arrow::error::ArrowError),
    /// Deleted row indexes past the end of the file: its deletion vector is not its own.
    #[error("its deletion vector marks {0} rows beyond the file's last row deleted")]
    BeyondLastRow(u64),
    /// Empty, or no Parquet file at all (`parquet_reader::NotParquet`).
    #[error(transparent)]
    NotParquet(#[from] crate::parquet_reader::NotParquet),
    /// Its path in the log is not a valid object key.
    #[error(transparent)]
    Path(#[from] object_store::path::Error),
    /// The task reading ahead stopped (it panicked or was aborted).
    #[error("opening the file failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<crate::parquet_reader::FooterError> for ReadError {
    fn from(e: crate::parquet_reader::FooterError) -> Self {
        use crate::parquet_reader::FooterError;
        match e {
            FooterError::NotParquet(why) => ReadError::NotParquet(why),
            FooterError::Parquet(e) => ReadError::Parquet(e),
        }
    }
}

/// Why files could not be fingerprinted.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("reading {name}: {source}")]
    Read {
        name: String,
        #[source]
        source: ReadError,
    },
    /// A batch that does not fit the table's file schema.
    #[error("{name}: {source}")]
    Conform {
        name: String,
        #[source]
        source: ConformError,
    },
    #[error(transparent)]
    Hash(arrow::error::ArrowError),
    #[error(transparent)]
    Root(#[from] url::ParseError),
}

fn scalars(
    table: &DeltaTable,
    values: &PartitionValues,
) -> Result<IndexMap<String, Scalar>, SetupError> {
    let snapshot = table.snapshot()?;
    let schema = snapshot.schema();
    let mut out = IndexMap::new();
    for (col, v) in &values.0 {
        let field = schema
            .field(col)
            .ok_or_else(|| SetupError::MissingColumn(col.clone()))?;
        let prim = field
            .data_type()
            .as_primitive_opt()
            .ok_or_else(|| SetupError::NotPrimitive(col.clone()))?;
        let s = match v {
            Some(v) => prim.parse_scalar(v).map_err(SetupError::Value)?,
            None => Scalar::Null(field.data_type().clone()),
        };
        out.insert(col.clone(), s);
    }
    Ok(out)
}

/// An opened Parquet file: its batches, and its row count.
pub type Input = (
    parquet::arrow::async_reader::ParquetRecordBatchStream<StoreReader>,
    u64,
);

/// Streams one Parquet file as batches of the table's file schema, INT96 read without overflow.
pub async fn open_input(
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: Option<u64>,
    table_schema: &SchemaRef,
) -> Result<Input, ReadError> {
    let mut reader = StoreReader::new(store, path, size);
    let meta = load_metadata(&mut reader, ArrowReaderOptions::new()).await?;
    let meta = int96_safe_metadata(meta, table_schema)?;
    let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
    let stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, meta)
        .with_batch_size(32 * 1024)
        .build()?;
    Ok((stream, rows))
}

/// One file to fingerprint: its object key, its size when known, its name for errors, and its
/// deletion vector (its rows are fingerprinted without those it marks deleted).
pub struct FileToProve {
    pub key: Path,
    pub size: Option<u64>,
    pub name: String,
    pub deletion_vector: Option<deltalake::kernel::DeletionVectorDescriptor>,
}

/// The row filter of a file with deletion vector `dv` (none: every row kept).
pub async fn row_filter(
    store: &Arc<dyn ObjectStore>,
    root: &url::Url,
    dv: Option<&deltalake::kernel::DeletionVectorDescriptor>,
) -> Result<RowFilter, ReadError> {
    match dv {
        None => Ok(RowFilter::default()),
        Some(dv) => Ok(RowFilter::new(deleted_rows(store, root, dv).await?)),
    }
}

/// Deleted row indexes past the end of a file: its deletion vector is not its own.
fn unmatched_error(filter: &RowFilter) -> Option<ReadError> {
    let n = filter.unmatched();
    (n > 0).then_some(ReadError::BeyondLastRow(n))
}

/// Reads the outputs back and fingerprints them.
async fn fingerprint_outputs(
    store: &Arc<dyn ObjectStore>,
    adds: &[Add],
    schema: &SchemaRef,
    pace: Option<&Pacer>,
    proof: RowsProof,
) -> Result<Fingerprint, ProveError> {
    let files: Vec<FileToProve> = adds
        .iter()
        .map(|a| FileToProve {
            key: object_key(&a.path),
            size: Some(a.size.max(0) as u64),
            name: format!("back the output {}", a.path),
            deletion_vector: None,
        })
        .collect();
    // Outputs have no deletion vector: the root is never used.
    let root = url::Url::parse("file:///")?;
    fingerprint_files(store, &root, &files, schema, pace, proof).await
}

/// The fingerprint of `files`' rows (in order, or as a multiset: `proof`), each conformed to
/// the table's file schema as a rewrite reads them (so inputs and outputs of one bin compare).
pub async fn fingerprint_files(
    store: &Arc<dyn ObjectStore>,
    root: &url::Url,
    files: &[FileToProve],
    schema: &SchemaRef,
    pace: Option<&Pacer>,
    proof: RowsProof,
) -> Result<Fingerprint, ProveError> {
    let mut hasher = ProofHasher::new(proof);
    for f in files {
        let read = |e: ReadError| ProveError::Read {
            name: f.name.clone(),
            source: e,
        };
        let mut filter = row_filter(store, root, f.deletion_vector.as_ref())
            .await
            .map_err(read)?;
        let (mut stream, file_rows) = open_input(store.clone(), f.key.clone(), f.size, schema)
            .await
            .map_err(read)?;
        let size = f.size.unwrap_or(0) as f64;
        let file_rows = file_rows.max(1) as f64;
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(|e| read(e.into()))?;
            let n = batch.num_rows();
            let batch = filter.apply(batch).map_err(|e| read(e.into()))?;
            let batch = conform(batch, schema).map_err(|source| ProveError::Conform {
                name: f.name.clone(),
                source,
            })?;
            hasher.update(&batch).map_err(ProveError::Hash)?;
            if let Some(p) = pace {
                p.consume((size * n as f64 / file_rows) as u64).await;
            }
        }
        if let Some(e) = unmatched_error(&filter) {
            return Err(read(e));
        }
    }
    Ok(hasher.finish())
}

/// The largest row group an output gets, as a share of the target: closed row groups are
/// counted at their exact compressed size, so the writer's encoded-size figure overstates a
/// file by at most the open row group.
const ROW_GROUPS_PER_TARGET: u64 = 4;

/// A tail must be predicted at least this much above the goal before a file rolls: the
/// prediction before a bin's first file is measured uses the writer's figure, which overstates.
const TAIL_MARGIN: f64 = 1.25;

fn row_group_bytes(target: u64) -> u64 {
    (target / ROW_GROUPS_PER_TARGET).max(1)
}

pub(crate) struct Roller {
    total_in: f64,
    consumed_done: f64,
    consumed_at_flush: f64,
    /// Output/input bytes measured on this bin's finished files; None until one is.
    ratio: Option<f64>,
    /// Row group bytes the writer closes groups at (the open one is the measure's error).
    row_group: f64,
    pub(crate) goal: f64,
}

impl Roller {
    /// Roll when the file being written is, measured, at least the goal, and what remains
    /// would still make a file of at least the goal (otherwise the remainder joins this file:
    /// no small tail file, and a bin of less than two files' worth of output is one file).
    /// The file's size is the writer's encoded size (`buffer_len`: closed row groups exactly,
    /// the open one estimated) minus one row group, a lower bound of what the file will be.
    /// The remainder is predicted from the output/input ratio of this bin's finished files,
    /// or before one is finished from the encoded size of the open one (an overstatement,
    /// hence `TAIL_MARGIN`).
    pub(crate) fn should_roll(&self, consumed: f64, encoded: u64) -> bool {
        let cur_in = consumed - self.consumed_at_flush;
        if cur_in <= 0.0 || encoded == 0 {
            return false;
        }
        let cur_out = (encoded as f64 - self.row_group).max(0.0);
        let ratio = self.ratio.unwrap_or(encoded as f64 / cur_in);
        let remaining_out = (self.total_in - consumed).max(0.0) * ratio;
        cur_out >= self.goal && remaining_out >= self.goal * TAIL_MARGIN
    }

    pub(crate) fn rolled(&mut self, consumed: f64, out_bytes: u64) {
        let inp = consumed - self.consumed_at_flush;
        if out_bytes > 0 && inp > 0.0 {
            self.ratio = Some(out_bytes as f64 / inp);
        }
        self.consumed_at_flush = consumed;
    }
}

/// The partition's values as `add` and `remove` actions key them: by physical name in a
/// column-mapped table.
fn partition_map(
    values: &PartitionValues,
    layout: Option<&PhysicalLayout>,
) -> HashMap<String, Option<String>> {
    values
        .0
        .iter()
        .map(|(col, v)| {
            let key = layout
                .and_then(|l| l.partition_names.get(col))
                .unwrap_or(col);
            (key.clone(), v.clone())
        })
        .collect()
}

/// The `remove` actions of a bin's input files, as the log knows them (path, size, deletion
/// vector, row ids): what its commit removes.
pub fn removes_for(
    files: &[FileRef],
    values: &PartitionValues,
    layout: Option<&PhysicalLayout>,
) -> Vec<Remove> {
    let partition_map = partition_map(values, layout);
    let now = chrono::Utc::now().timestamp_millis();
    files
        .iter()
        .map(|f| Remove {
            path: f.path.clone(),
            data_change: false,
            deletion_timestamp: Some(now),
            extended_file_metadata: Some(true),
            partition_values: Some(partition_map.clone()),
            size: Some(f.size as i64),
            tags: None,
            // The file as the log knows it: path and deletion vector.
            deletion_vector: f.deletion_vector.clone(),
            // Row tracking: a remove carries the ids of the add it removes.
            base_row_id: f.row_ids.base_row_id,
            default_row_commit_version: f.row_ids.default_row_commit_version,
        })
        .collect()
}

/// One bin being rewritten: its writer, the outputs flushed so far, and the fingerprint of
/// the input rows conformed so far.
pub(crate) struct Writing {
    pub(crate) writer: Sink,
    /// The table's physical layout when the physical writer writes the outputs.
    layout: Option<Arc<PhysicalLayout>>,
    adds: Vec<Add>,
    /// Shared with the caller, so outputs are known even if this task panics.
    ledger: Arc<Mutex<Vec<String>>>,
    pub(crate) roll: Roller,
    /// The rows conformed so far (in the order read, or as a multiset when sorted).
    pub(crate) input: ProofHasher,
    /// When the bin is sorted: where rows go instead of the writer.
    pub(crate) feed: Option<Feed>,
    pace: Option<Arc<Pacer>>,
    /// The job every output's name carries.
    output_job: String,
    /// Row tracking is enabled: every row's stable id and commit version go into these hidden
    /// columns (`row_tracking`).
    pub(crate) materialize: Option<MaterializedColumns>,
}

impl Writing {
    /// Every output written so far: the flushed ones and any file the writer opened (one
    /// whose close failed may have landed), each once.
    fn outputs(&self) -> Vec<String> {
        let mut out: Vec<String> = match self.ledger.lock() {
            Ok(l) => l.clone(),
            Err(_) => Vec::new(),
        };
        out.extend(self.adds.iter().map(|a| a.path.clone()));
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    /// Abandons the bin: what is being written is aborted (no upload left open on the
    /// store); returns every output to delete.
    async fn abandon(&mut self) -> Vec<String> {
        self.writer.reset().await;
        self.outputs()
    }

    fn record(&mut self, mut flushed: Vec<Add>) {
        // delta-rs's writer named the file; the ledger store created it under the job's name.
        for a in &mut flushed {
            a.path = named_for_job(&a.path, &self.output_job);
        }
        if let Ok(mut l) = self.ledger.lock() {
            l.extend(flushed.iter().map(|a| a.path.clone()));
        }
        self.adds.extend(flushed);
    }

    pub(crate) async fn flush(&mut self) -> Result<u64, BinFailure> {
        let flushed = self.writer.flush().await.map_err(BinFailure::Write)?;
        let bytes = flushed.iter().map(|a| a.size.max(0) as u64).sum();
        self.record(flushed);
        Ok(bytes)
    }

    /// Streams one input file into the writer, rolling outputs as they reach the goal.
    async fn copy_file(
        &mut self,
        f: &FileRef,
        opened: Result<Input, ReadError>,
        mut filter: RowFilter,
        file_schema: &SchemaRef,
        counters: &Counters,
    ) -> Result<u64, BinFailure> {
        let read_err = |e: ReadError| BinFailure::Read {
            path: f.path.clone(),
            detail: e.to_string(),
        };
        let (mut stream, file_rows) = opened.map_err(read_err)?;
        let ids_err = |e: RowTrackingError| BinFailure::Read {
            path: f.path.clone(),
            detail: e.to_string(),
        };
        let mut ids = match &self.materialize {
            Some(cols) => Some(FileRows::new(cols.clone(), f.row_ids).map_err(ids_err)?),
            None => None,
        };
        // The hidden columns are not in delta-rs's writer's schema: they join it.
        let widen = ids.is_some();
        let file_rows = file_rows.max(1) as f64;
        let mut rows_file = 0u64;
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(|e| read_err(e.into()))?;
            let n = batch.num_rows() as u64;
            // Ids before the deletion vector drops rows: a row's index counts every row.
            let batch = match &mut ids {
                Some(ids) => ids.fill(batch).map_err(ids_err)?,
                None => batch,
            };
            let batch = filter.apply(batch).map_err(|e| read_err(e.into()))?;
            let batch: RecordBatch =
                conform(batch, file_schema).map_err(|source| BinFailure::Conform {
                    path: f.path.clone(),
                    source: Box::new(source),
                })?;
            self.input
                .update(&batch)
                .map_err(|e| BinFailure::Verify(e.to_string()))?;
            rows_file += n;
            counters.rows.fetch_add(n, Ordering::Relaxed);
            if let Some(p) = &self.pace {
                p.consume((f.size as f64 * n as f64 / file_rows) as u64)
                    .await;
            }
            if let Some(feed) = &self.feed {
                // Sorted: files roll as the sort gives the rows back (`ordered`).
                feed.send(batch).await?;
                continue;
            }
            self.writer
                .write(batch, widen)
                .await
                .map_err(BinFailure::Write)?;
            let consumed = self.roll.consumed_done + f.size as f64 * (rows_file as f64 / file_rows);
            if self
                .roll
                .should_roll(consumed, self.writer.buffer_len() as u64)
            {
                let out_bytes = self.flush().await?;
                self.roll.rolled(consumed, out_bytes);
            }
        }
        if let Some(e) = unmatched_error(&filter) {
            return Err(read_err(e));
        }
        self.roll.consumed_done += f.size as f64;
        counters.files_read.fetch_add(1, Ordering::Relaxed);
        Ok(filter.removed)
    }

    /// Reads the outputs back: their fingerprint must equal the inputs' (which it returns).
    /// (`&mut`: a shared borrow held across an await would need the writer to be `Sync`.)
    async fn prove(
        &mut self,
        store: &Arc<dyn ObjectStore>,
        file_schema: &SchemaRef,
    ) -> Result<Fingerprint, BinFailure> {
        let proof = match self.input {
            ProofHasher::InOrder(_) => RowsProof::InOrder,
            ProofHasher::AnyOrder(_) => RowsProof::AnyOrder,
        };
        let output_fp =
            fingerprint_outputs(store, &self.adds, file_schema, self.pace.as_deref(), proof)
                .await
                .map_err(|e| BinFailure::Verify(e.to_string()))?;
        let input_fp = self.input.finish();
        if output_fp == input_fp {
            return Ok(input_fp);
        }
        Err(BinFailure::Verify(if output_fp.rows == input_fp.rows {
            format!(
                "read {} rows, the outputs hold as many with different content",
                input_fp.rows
            )
        } else {
            format!(
                "read {} rows, the outputs hold {}",
                input_fp.rows, output_fp.rows
            )
        }))
    }
}

/// Rewrites one bin. On failure the error lists every output written so far.
#[allow(clippy::too_many_arguments)]
pub async fn rewrite_bin(
    table: DeltaTable,
    values: PartitionValues,
    bin: Bin,
    file_schema: SchemaRef,
    opts: RewriteOptions,
    cancel: CancellationToken,
    counters: Arc<Counters>,
    ledger: Arc<Mutex<Vec<String>>>,
) -> Result<BinOutput, BinError> {
    let fail = |failure: BinFailure, outputs: Vec<String>| BinError {
        partition: values.clone(),
        failure,
        outputs,
    };
    let mut w = start_writing(&table, &values, &bin, &file_schema, &opts, ledger)
        .map_err(|e| fail(BinFailure::Setup(e.to_string()), vec![]))?;
    let store = table.object_store();
    let inputs = Inputs {
        store: &store,
        root: table.table_url(),
        file_schema: &file_schema,
        cancel: &cancel,
        counters: &counters,
    };
    let copied = match &opts.order {
        None => inputs.copy(&mut w, &bin).await.map(|d| (d, 0)),
        Some(order) => {
            let sort = SortSpec {
                order,
                memory: opts.sort_memory,
            };
            sort.copy(&inputs, &mut w, &bin).await
        }
    };
    let (deleted, spilled_bytes) = match copied {
        Ok(done) => done,
        Err(e) => return Err(fail(e, w.abandon().await)),
    };
    if let Err(e) = w.flush().await {
        return Err(fail(e, w.abandon().await));
    }
    // Outputs carry their tier, so the janitor's next plans merge them only with their peers.
    let tier = output_tier(&bin.files).to_string();
    for a in &mut w.adds {
        a.data_change = false;
        a.clustering_provider = opts.clustering_provider.clone();
        a.tags
            .get_or_insert_with(HashMap::new)
            .insert(TIER_TAG.to_string(), Some(tier.clone()));
    }
    let started = Instant::now();
    let fingerprint = match w.prove(&store, &file_schema).await {
        Ok(f) => f,
        Err(e) => return Err(fail(e, w.outputs())),
    };
    counters.bins_done.fetch_add(1, Ordering::Relaxed);
    Ok(BinOutput {
        partition: values.clone(),
        removes: removes_for(&bin.files, &values, w.layout.as_deref()),
        rows: fingerprint.rows,
        deleted_rows: deleted,
        bytes_in: bin.bytes,
        fingerprint,
        verify_seconds: started.elapsed().as_secs_f64(),
        spilled_bytes,
        adds: w.adds,
    })
}

/// The writer of a bin's outputs, rolling them at the target size. Err: why it cannot be set
/// up.
fn start_writing(
    table: &DeltaTable,
    values: &PartitionValues,
    bin: &Bin,
    file_schema: &SchemaRef,
    opts: &RewriteOptions,
    ledger: Arc<Mutex<Vec<String>>>,
) -> Result<Writing, SetupError> {
    let row_group = row_group_bytes(opts.target_file_size);
    let props = WriterProperties::builder()
        .set_compression(opts.compression)
        .set_max_row_group_bytes(Some(row_group as usize))
        .build();
    let materialize = hidden_columns(table)?;
    let layout = match physical_layout(table)? {
        Some(mapped) => Some(mapped),
        // delta-rs 1.1's writer cannot add the hidden row-tracking columns to a partitioned
        // table's files: the physical writer writes them.
        None if materialize.is_some() && !values.0.is_empty() => Some(layout(table)?),
        None => None,
    }
    .map(Arc::new);
    let writer = match &layout {
        None => Sink::Delta {
            writer: RecordBatchWriter::for_table(table)?.with_writer_properties(props),
            partition: scalars(table, values)?,
        },
        Some(l) => Sink::Physical(PhysicalWriter::new(
            table.object_store(),
            l.clone(),
            file_schema.clone(),
            props,
            partition_map(values, Some(l)),
            ledger.clone(),
            opts.output_job.clone(),
        )),
    };
    Ok(Writing {
        writer,
        layout,
        adds: Vec::new(),
        ledger,
        roll: Roller {
            total_in: bin.bytes as f64,
            consumed_done: 0.0,
            consumed_at_flush: 0.0,
            ratio: None,
            row_group: row_group as f64,
            goal: opts.target_file_size as f64 * ROLL_MARGIN,
        },
        input: ProofHasher::new(opts.proof()),
        feed: None,
        pace: opts.pace.clone(),
        output_job: opts.output_job.clone(),
        materialize,
    })
}

/// Where a bin's input files are read from, and what stops or counts the reading.
pub(crate) struct Inputs<'a> {
    pub(crate) store: &'a Arc<dyn ObjectStore>,
    root: &'a url::Url,
    pub(crate) file_schema: &'a SchemaRef,
    pub(crate) cancel: &'a CancellationToken,
    counters: &'a Arc<Counters>,
}

impl Inputs<'_> {
    /// Copies every input file's live rows (its deletion vector applied) into `w`, read ahead;
    /// returns the rows left out as deleted.
    pub(crate) async fn copy(&self, w: &mut Writing, bin: &Bin) -> Result<u64, BinFailure> {
        let mut inputs = ReadAhead::new(
            self.store.clone(),
            bin.files.clone(),
            self.file_schema.clone(),
        );
        let mut deleted = 0;
        while let Some((f, opened)) = inputs.next().await {
            if self.cancel.is_cancelled() {
                w.writer.reset().await;
                return Err(BinFailure::Cancelled);
            }
            let filter = row_filter(self.store, self.root, f.deletion_vector.as_ref())
                .await
                .map_err(|e| BinFailure::Read {
                    path: f.path.clone(),
                    detail: e.to_string(),
                })?;
            deleted += w
                .copy_file(&f, opened, filter, self.file_schema, self.counters)
                .await?;
        }
        Ok(deleted)
    }
}
