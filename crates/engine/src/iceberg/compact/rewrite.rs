//! Rewriting one Iceberg bin: its input Parquet files are streamed, in order (or through a
//! sort: `sorted_bin`), into outputs of the inputs' own Arrow schema (so the Parquet field ids
//! the table's readers resolve columns by are kept), rolled at the target size, beside the
//! first input. Before anything may commit, the outputs are read back and their content
//! fingerprint must equal the inputs' (every column of every row: in order, by
//! `compact::fingerprint`, for rows copied as read; as a multiset, by `row_set_digest`, for
//! sorted rows), and their field ids the inputs'.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use futures::StreamExt;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::AsyncArrowWriter;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::Type;

use arrow::record_batch::RecordBatch;

use super::IcebergCompactError as E;
use super::data_file_stats::{Metrics, metrics};
use super::ledger::Record;
use super::order::IceOrder;
use super::plan::{BinFile, IceBin};
use crate::compact::fingerprint::{ContentHasher, Fingerprint};
use crate::compact::row_set_digest::RowSetHasher;
use crate::iceberg::Stores;
use crate::parquet_reader::{FooterError, StoreReader, load_metadata};

/// A written output, with what its manifest entry says about it.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub path: String,
    pub size: u64,
    pub records: u64,
    pub metrics: Metrics,
    /// The table sort order its rows are in (`order`), if any.
    pub sort_order_id: Option<i32>,
}

/// A bin's proven outputs.
#[derive(Debug, Clone)]
pub struct Rewritten {
    pub outputs: Vec<OutputFile>,
    pub fingerprint: Fingerprint,
}

impl Rewritten {
    pub fn bytes(&self) -> u64 {
        self.outputs.iter().map(|o| o.size).sum()
    }
}

/// Every field of a Parquet schema (its path) with its field id.
type FieldIds = Vec<(String, Option<i32>)>;

/// Every field id of a Parquet schema with the path of its field.
fn field_ids(t: &Type, prefix: &str, out: &mut FieldIds) {
    for f in t.get_fields() {
        let path = format!("{prefix}/{}", f.name());
        let info = f.get_basic_info();
        out.push((path.clone(), info.has_id().then(|| info.id())));
        if f.is_group() {
            field_ids(f, &path, out);
        }
    }
}

pub(super) struct Opened {
    stream: parquet::arrow::async_reader::ParquetRecordBatchStream<StoreReader>,
    schema: SchemaRef,
    ids: FieldIds,
}

async fn open(stores: &mut Stores<'_>, uri: &str, size: Option<u64>) -> Result<Opened, E> {
    let (store, path) = stores.resolve(uri)?;
    let parquet = |source| E::Parquet {
        path: uri.to_string(),
        source,
    };
    let mut reader = StoreReader::new(store, path, size);
    let meta = load_metadata(&mut reader, ArrowReaderOptions::new())
        .await
        .map_err(|e| match e {
            FooterError::NotParquet(source) => E::NotParquet {
                path: uri.to_string(),
                source,
            },
            FooterError::Parquet(e) => parquet(e),
        })?;
    let mut ids = Vec::new();
    field_ids(
        meta.metadata().file_metadata().schema_descr().root_schema(),
        "",
        &mut ids,
    );
    let schema = meta.schema().clone();
    let stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, meta)
        .with_batch_size(32 * 1024)
        .build()
        .map_err(parquet)?;
    Ok(Opened {
        stream,
        schema,
        ids,
    })
}

/// The folder a bin's outputs go to: its first input's.
pub fn output_folder(first_input: &str) -> &str {
    first_input.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The output's absolute URI: beside `first_input`, a new name that marks job `job`'s (see
/// `ledger`: what a killed job leaves is found by it).
fn output_uri(first_input: &str, n: usize, job: &str) -> String {
    format!(
        "{}/{:05}-lakehealth-{job}-{}.parquet",
        output_folder(first_input),
        n,
        uuid::Uuid::new_v4().simple()
    )
}

/// Field names, types and ids: what must agree for rows to be copied unchanged.
pub(super) fn same_columns(a: &SchemaRef, b: &SchemaRef) -> bool {
    a.fields().len() == b.fields().len() && a.fields().iter().zip(b.fields()).all(|(x, y)| x == y)
}

/// How a bin is rewritten: the target, the table's Iceberg types by field id (for bounds),
/// and the order its rows are written in (None: as read).
pub struct RewriteSpec<'a> {
    pub target: u64,
    pub types: &'a HashMap<i32, String>,
    pub order: Option<&'a IceOrder>,
    /// Bytes a sort holds before it spills.
    pub sort_memory: usize,
}

/// Rewrites `bin`. Each output is listed in the job's `record` before it is created. On
/// error the outputs written so far are in `written` for the caller to delete.
pub async fn rewrite_bin(
    stores: &mut Stores<'_>,
    bin: &IceBin,
    spec: &RewriteSpec<'_>,
    record: &mut Record,
    written: &mut Vec<String>,
) -> Result<Rewritten, E> {
    let mut out = Rolling {
        first_path: bin
            .files
            .first()
            .map_or("", |f| f.path.as_str())
            .to_string(),
        job: record.job().to_string(),
        target: spec.target,
        props: WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build(),
        sort_order_id: spec.order.and_then(|o| o.sort_order_id),
        writer: None,
        closed: Vec::new(),
    };
    let mut inputs = Inputs::open(stores, bin).await?;
    let mut digest = Digest::new(spec.order.is_some());
    match spec.order {
        None => {
            while let Some(batch) = inputs.next_batch(stores).await? {
                digest.update(&batch)?;
                let schema = inputs.schema.clone();
                out.write(stores, record, &schema, &batch, written).await?;
            }
        }
        Some(order) => {
            let mut w = Sorted {
                out: &mut out,
                record,
                written,
            };
            super::sorted_bin::copy(stores, bin, &mut inputs, &mut digest, order, spec, &mut w)
                .await?;
        }
    }
    if out.writer.is_some() {
        out.closed
            .push(close(out.writer.take(), out.sort_order_id).await?);
    }
    let want = digest.finish();
    let mut back = Digest::new(spec.order.is_some());
    let outputs = read_back(stores, out.closed, &inputs.ids, spec.types, &mut back).await?;
    let got = back.finish();
    if got != want {
        return Err(E::Proof(format!(
            "the outputs do not hold the inputs' rows ({} rows, digest {:032x}; inputs {} rows, digest {:032x})",
            got.rows, got.digest, want.rows, want.digest
        )));
    }
    Ok(Rewritten {
        outputs,
        fingerprint: want,
    })
}

/// The proof of a bin: the in-order content digest when rows are copied as read, the
/// order-insensitive row-set digest when they are sorted.
pub(super) enum Digest {
    InOrder(ContentHasher),
    RowSet(RowSetHasher),
}

impl Digest {
    fn new(ordered: bool) -> Self {
        if ordered {
            Digest::RowSet(RowSetHasher::default())
        } else {
            Digest::InOrder(ContentHasher::default())
        }
    }

    pub(super) fn update(&mut self, batch: &RecordBatch) -> Result<(), E> {
        match self {
            Digest::InOrder(h) => h.update(batch),
            Digest::RowSet(h) => h.update(batch),
        }
        .map_err(|e| E::Proof(e.to_string()))
    }

    fn finish(&self) -> Fingerprint {
        match self {
            Digest::InOrder(h) => h.finish(),
            Digest::RowSet(h) => h.finish(),
        }
    }
}

/// A bin's input files read one after another, each checked to have the first one's columns
/// and field ids and, once read, its manifest entry's row count.
pub(super) struct Inputs<'b> {
    files: &'b [BinFile],
    /// The file being read (its index in `files`) and the rows read from it so far.
    current: Option<(usize, Opened, u64)>,
    next: usize,
    /// The first input's Arrow schema and field ids: every input must have them.
    pub(super) schema: SchemaRef,
    ids: FieldIds,
}

impl<'b> Inputs<'b> {
    /// Opens the bin's first file.
    async fn open(stores: &mut Stores<'_>, bin: &'b IceBin) -> Result<Self, E> {
        let Some(first) = bin.files.first() else {
            return Err(E::Proof("the bin has no input files".into()));
        };
        let opened = open(stores, &first.path, Some(first.size)).await?;
        Ok(Inputs {
            files: &bin.files,
            schema: opened.schema.clone(),
            ids: opened.ids.clone(),
            current: Some((0, opened, 0)),
            next: 1,
        })
    }

    /// The next batch of the bin's rows, None after the last file's last.
    pub(super) async fn next_batch(
        &mut self,
        stores: &mut Stores<'_>,
    ) -> Result<Option<RecordBatch>, E> {
        loop {
            if let Some((i, input, rows)) = self.current.as_mut() {
                let f = &self.files[*i];
                match input.stream.next().await {
                    Some(batch) => {
                        let batch = batch.map_err(|source| E::Parquet {
                            path: f.path.clone(),
                            source,
                        })?;
                        *rows += batch.num_rows() as u64;
                        return Ok(Some(batch));
                    }
                    None if *rows != f.records => {
                        return Err(E::Proof(format!(
                            "{} holds {rows} rows, its manifest entry says {}",
                            f.path, f.records
                        )));
                    }
                    None => self.current = None,
                }
            }
            let Some(f) = self.files.get(self.next) else {
                return Ok(None);
            };
            let input = open(stores, &f.path, Some(f.size)).await?;
            if !same_columns(&self.schema, &input.schema) || self.ids != input.ids {
                return Err(E::Unsupported(format!(
                    "{} has other columns or field ids than {} (the table's schema changed between them); the bin is left alone",
                    f.path, self.files[0].path
                )));
            }
            self.current = Some((self.next, input, 0));
            self.next += 1;
        }
    }
}

/// Where sorted rows are written.
pub(super) struct Sorted<'o, 'r, 'w> {
    out: &'o mut Rolling,
    record: &'r mut Record,
    written: &'w mut Vec<String>,
}

impl Sorted<'_, '_, '_> {
    pub(super) async fn write(
        &mut self,
        stores: &mut Stores<'_>,
        schema: &SchemaRef,
        batch: &RecordBatch,
    ) -> Result<(), E> {
        self.out
            .write(stores, self.record, schema, batch, self.written)
            .await
    }
}

/// The bin's outputs as they are written: one open, rolled at the target, and those closed.
struct Rolling {
    first_path: String,
    job: String,
    target: u64,
    props: WriterProperties,
    /// The table sort order the outputs are written in, if they claim one.
    sort_order_id: Option<i32>,
    writer: Option<OutputWriter>,
    closed: Vec<ClosedOutput>,
}

impl Rolling {
    /// Appends `batch` to the open output (opening one first), closing it at the target.
    async fn write(
        &mut self,
        stores: &mut Stores<'_>,
        record: &mut Record,
        schema: &SchemaRef,
        batch: &RecordBatch,
        written: &mut Vec<String>,
    ) -> Result<(), E> {
        if self.writer.is_none() {
            let uri = output_uri(&self.first_path, self.closed.len(), &self.job);
            let (store, path) = stores.resolve(&uri)?;
            record.list(stores, &uri).await?;
            written.push(uri.clone());
            let w = AsyncArrowWriter::try_new(
                BufWriter::new(store.clone(), path.clone()),
                schema.clone(),
                Some(self.props.clone()),
            )
            .map_err(|source| E::Parquet {
                path: uri.clone(),
                source,
            })?;
            self.writer = Some(OutputWriter {
                uri,
                store,
                path,
                w,
            });
        }
        if let Some(o) = self.writer.as_mut() {
            o.w.write(batch).await.map_err(|source| E::Parquet {
                path: o.uri.clone(),
                source,
            })?;
            if (o.w.bytes_written() + o.w.in_progress_size()) as u64 >= self.target {
                self.closed
                    .push(close(self.writer.take(), self.sort_order_id).await?);
            }
        }
        Ok(())
    }
}

/// Reads the closed outputs back: their entries (size, records, metrics), what they hold fed
/// to `back` (whose digest must equal the inputs'). Field ids must be the inputs'.
async fn read_back(
    stores: &mut Stores<'_>,
    closed: Vec<ClosedOutput>,
    input_ids: &FieldIds,
    types: &HashMap<i32, String>,
    back: &mut Digest,
) -> Result<Vec<OutputFile>, E> {
    let mut outputs = Vec::new();
    for ClosedOutput {
        sort_order_id,
        uri,
        store,
        path,
        meta,
    } in closed
    {
        let size = store
            .head(&path)
            .await
            .map_err(|source| E::Store {
                path: uri.clone(),
                source,
            })?
            .size;
        let mut o = open(stores, &uri, Some(size)).await?;
        if o.ids != *input_ids {
            return Err(E::Proof(format!(
                "{uri} lost the inputs' Parquet field ids"
            )));
        }
        let mut records = 0;
        while let Some(batch) = o.stream.next().await {
            let batch = batch.map_err(|source| E::Parquet {
                path: uri.clone(),
                source,
            })?;
            records += batch.num_rows() as u64;
            back.update(&batch)?;
        }
        outputs.push(OutputFile {
            metrics: metrics(&meta, types),
            path: uri,
            size,
            records,
            sort_order_id,
        });
    }
    Ok(outputs)
}

struct OutputWriter {
    uri: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    w: AsyncArrowWriter<BufWriter>,
}

struct ClosedOutput {
    sort_order_id: Option<i32>,
    uri: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// The footer: the output's statistics.
    meta: ParquetMetaData,
}

async fn close(w: Option<OutputWriter>, sort_order_id: Option<i32>) -> Result<ClosedOutput, E> {
    let Some(OutputWriter {
        uri,
        store,
        path,
        w,
    }) = w
    else {
        return Err(E::Proof("no output open".into()));
    };
    let meta = w.close().await.map_err(|source| E::Parquet {
        path: uri.clone(),
        source,
    })?;
    Ok(ClosedOutput {
        sort_order_id,
        uri,
        store,
        path,
        meta,
    })
}

/// Deletes outputs (absolute URIs); returns those that could not be deleted.
pub async fn delete_outputs(stores: &mut Stores<'_>, uris: &[String]) -> Vec<String> {
    let mut left = Vec::new();
    for u in uris {
        let Ok((store, path)) = stores.resolve(u) else {
            left.push(u.clone());
            continue;
        };
        match store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(_) => left.push(u.clone()),
        }
    }
    left
}
