//! Rewriting one Iceberg bin: its input Parquet files are streamed, in order, into outputs of
//! the inputs' own Arrow schema (so the Parquet field ids the table's readers resolve columns
//! by are kept), rolled at the target size, beside the first input. Before anything may
//! commit, the outputs are read back and their content fingerprint (every column of every row,
//! in order: `compact::fingerprint`) must equal the inputs', and their field ids the inputs'.

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

use super::IcebergCompactError as E;
use super::data_file_stats::{Metrics, metrics};
use super::ledger::Record;
use super::plan::IceBin;
use crate::compact::fingerprint::{ContentHasher, Fingerprint};
use crate::iceberg::Stores;
use crate::parquet_reader::{FooterError, StoreReader, load_metadata};

/// A written output, with what its manifest entry says about it.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub path: String,
    pub size: u64,
    pub records: u64,
    pub metrics: Metrics,
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

struct Opened {
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
fn same_columns(a: &SchemaRef, b: &SchemaRef) -> bool {
    a.fields().len() == b.fields().len() && a.fields().iter().zip(b.fields()).all(|(x, y)| x == y)
}

/// Rewrites `bin`. `types`: the table's Iceberg types by field id (for bounds). Each output is
/// listed in the job's `record` before it is created. On error the outputs written so far are
/// in `written` for the caller to delete.
pub async fn rewrite_bin(
    stores: &mut Stores<'_>,
    bin: &IceBin,
    target: u64,
    types: &HashMap<i32, String>,
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
        target,
        props: WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build(),
        writer: None,
        closed: Vec::new(),
    };
    let mut hasher = ContentHasher::default();
    let mut first: Option<(SchemaRef, FieldIds)> = None;
    for f in &bin.files {
        let mut input = open(stores, &f.path, Some(f.size)).await?;
        let (schema, ids) = first.get_or_insert_with(|| (input.schema.clone(), input.ids.clone()));
        if !same_columns(schema, &input.schema) || *ids != input.ids {
            return Err(E::Unsupported(format!(
                "{} has other columns or field ids than {} (the table's schema changed between them); the bin is left alone",
                f.path, out.first_path
            )));
        }
        let mut rows = 0u64;
        while let Some(batch) = input.stream.next().await {
            let batch = batch.map_err(|source| E::Parquet {
                path: f.path.clone(),
                source,
            })?;
            rows += batch.num_rows() as u64;
            hasher.update(&batch).map_err(|e| E::Proof(e.to_string()))?;
            out.write(stores, record, schema, &batch, written).await?;
        }
        if rows != f.records {
            return Err(E::Proof(format!(
                "{} holds {rows} rows, its manifest entry says {}",
                f.path, f.records
            )));
        }
    }
    if out.writer.is_some() {
        out.closed.push(close(out.writer.take()).await?);
    }
    let want = hasher.finish();
    let Some((_, input_ids)) = first else {
        return Err(E::Proof("the bin has no input files".into()));
    };
    let (outputs, got) = read_back(stores, out.closed, &input_ids, types).await?;
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

/// The bin's outputs as they are written: one open, rolled at the target, and those closed.
struct Rolling {
    first_path: String,
    job: String,
    target: u64,
    props: WriterProperties,
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
        batch: &arrow::record_batch::RecordBatch,
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
                self.closed.push(close(self.writer.take()).await?);
            }
        }
        Ok(())
    }
}

/// Reads the closed outputs back: their entries (size, records, metrics) and the fingerprint
/// of what they hold, which must equal the inputs'. Field ids must be the inputs'.
async fn read_back(
    stores: &mut Stores<'_>,
    closed: Vec<ClosedOutput>,
    input_ids: &FieldIds,
    types: &HashMap<i32, String>,
) -> Result<(Vec<OutputFile>, Fingerprint), E> {
    let mut outputs = Vec::new();
    let mut back = ContentHasher::default();
    for ClosedOutput {
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
            back.update(&batch).map_err(|e| E::Proof(e.to_string()))?;
        }
        outputs.push(OutputFile {
            metrics: metrics(&meta, types),
            path: uri,
            size,
            records,
        });
    }
    Ok((outputs, back.finish()))
}

struct OutputWriter {
    uri: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    w: AsyncArrowWriter<BufWriter>,
}

struct ClosedOutput {
    uri: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// The footer: the output's statistics.
    meta: ParquetMetaData,
}

async fn close(w: Option<OutputWriter>) -> Result<ClosedOutput, E> {
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
