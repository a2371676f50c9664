//! The outputs delta-rs 1.1's writer cannot write: a column-mapped table's (`column_mapping`;
//! its writer refuses them) and a partitioned table's with row tracking's hidden columns (it
//! cannot widen partitioned files). Parquet files of physical columns with their field ids,
//! streamed to the table's object store, each with the statistics delta-kernel's collector
//! gives for the table's statistics columns and its `add` keyed by physical names. Files go
//! under a random two-character folder, as Spark names a column-mapped table's files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, AsArray, RecordBatch};
use delta_kernel::engine::arrow_expression::evaluate_expression::to_json;
use delta_kernel_engine::stats::FileStatsAccumulator;
use deltalake::kernel::Add;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::AsyncArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::delta::column_mapping::PhysicalLayout;

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PhysicalWriteError {
    #[error("writing {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("statistics of {path}: {source}")]
    Stats {
        path: String,
        #[source]
        source: delta_kernel::Error,
    },
    #[error("reading back the size of {path}: {source}")]
    Head {
        path: String,
        #[source]
        source: object_store::Error,
    },
    #[error("statistics of {path} as JSON: {source}")]
    Json {
        path: String,
        #[source]
        source: arrow::error::ArrowError,
    },
}

struct OpenFile {
    path: String,
    writer: AsyncArrowWriter<BufWriter>,
    stats: FileStatsAccumulator,
}

/// Writes a bin's outputs for one partition, one open file at a time.
pub struct PhysicalWriter {
    store: Arc<dyn ObjectStore>,
    layout: Arc<PhysicalLayout>,
    /// The layout's file schema, with row tracking's hidden columns when it is enabled.
    schema: arrow::datatypes::SchemaRef,
    props: WriterProperties,
    /// The partition's values keyed by physical names, as every `add` carries them.
    partition_values: HashMap<String, Option<String>>,
    /// Every file is listed here before a byte of it is written, so a failure or a panic at
    /// any point (a close that landed the object, say) leaves no output unknown.
    ledger: Arc<Mutex<Vec<String>>>,
    /// The job every output's name carries (`output_name`).
    job: String,
    open: Option<OpenFile>,
}

impl PhysicalWriter {
    pub fn new(
        store: Arc<dyn ObjectStore>,
        layout: Arc<PhysicalLayout>,
        schema: arrow::datatypes::SchemaRef,
        props: WriterProperties,
        partition_values: HashMap<String, Option<String>>,
        ledger: Arc<Mutex<Vec<String>>>,
        job: String,
    ) -> Self {
        Self {
            store,
            layout,
            schema,
            props,
            partition_values,
            ledger,
            job,
            open: None,
        }
    }

    fn open_file(&self) -> Result<OpenFile, PhysicalWriteError> {
        // One codec for every column (`RewriteOptions::compression`).
        let codec = self.props.compression(&ColumnPath::from("any"));
        let path = crate::model::output_name::named_for_job(&output_path(codec), &self.job);
        if let Ok(mut l) = self.ledger.lock() {
            l.push(path.clone());
        }
        let sink = BufWriter::new(self.store.clone(), Path::from(path.as_str()));
        let options = ArrowWriterOptions::new()
            .with_properties(self.props.clone())
            // Files of a Delta table hold no Arrow schema: readers take the log's.
            .with_skip_arrow_metadata(true);
        let writer = AsyncArrowWriter::try_new_with_options(sink, self.schema.clone(), options)
            .map_err(|source| PhysicalWriteError::Parquet {
                path: path.clone(),
                source,
            })?;
        let stats =
            FileStatsAccumulator::new(&self.layout.stats_columns, &self.layout.kernel_schema);
        Ok(OpenFile {
            path,
            writer,
            stats,
        })
    }

    /// Writes a batch of the layout's file schema into the open file (opening one first).
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<(), PhysicalWriteError> {
        // A batch whose rows a deletion vector all removed opens no file: no empty outputs.
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.open.is_none() {
            self.open = Some(self.open_file()?);
        }
        let Some(f) = self.open.as_mut() else {
            return Ok(());
        };
        f.stats
            .merge(batch)
            .map_err(|source| PhysicalWriteError::Stats {
                path: f.path.clone(),
                source,
            })?;
        f.writer
            .write(batch)
            .await
            .map_err(|source| PhysicalWriteError::Parquet {
                path: f.path.clone(),
                source,
            })
    }

    /// The open file's size so far: its closed row groups exactly, the open one estimated.
    pub fn buffer_len(&self) -> usize {
        self.open
            .as_ref()
            .map(|f| f.writer.bytes_written() + f.writer.in_progress_size())
            .unwrap_or(0)
    }

    /// Closes the open file; its `add` (none when no file is open).
    pub async fn flush(&mut self) -> Result<Vec<Add>, PhysicalWriteError> {
        let Some(f) = self.open.take() else {
            return Ok(Vec::new());
        };
        let parquet = |source| PhysicalWriteError::Parquet {
            path: f.path.clone(),
            source,
        };
        let mut writer = f.writer;
        writer.finish().await.map_err(parquet)?;
        // The size and time the store reports: the `add` describes the object as it landed.
        let meta = self
            .store
            .head(&Path::from(f.path.as_str()))
            .await
            .map_err(|source| PhysicalWriteError::Head {
                path: f.path.clone(),
                source,
            })?;
        let stats = f
            .stats
            .finish()
            .map_err(|source| PhysicalWriteError::Stats {
                path: f.path.clone(),
                source,
            })?;
        let stats = match stats {
            Some(s) => Some(stats_json(&s).map_err(|source| PhysicalWriteError::Json {
                path: f.path.clone(),
                source,
            })?),
            None => None,
        };
        Ok(vec![Add {
            path: f.path,
            partition_values: self.partition_values.clone(),
            size: meta.size as i64,
            modification_time: meta.last_modified.timestamp_millis(),
            data_change: false,
            stats,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        }])
    }

    /// Abandons the open file: its upload is aborted, nothing of it stays visible.
    pub async fn reset(&mut self) {
        if let Some(f) = self.open.take() {
            let mut sink = f.writer.into_inner();
            let _ = sink.abort().await;
        }
    }
}

/// A new output's table-relative path: a random two-character folder and a unique name.
fn output_path(codec: parquet::basic::Compression) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let ext = match codec {
        parquet::basic::Compression::UNCOMPRESSED => String::new(),
        c => format!(".{}", codec_name(c)),
    };
    format!(
        "{}/part-00000-{}-c000{ext}.parquet",
        &id[..2],
        uuid::Uuid::new_v4()
    )
}

fn codec_name(c: parquet::basic::Compression) -> &'static str {
    use parquet::basic::Compression as C;
    match c {
        C::SNAPPY => "snappy",
        C::GZIP(_) => "gz",
        C::LZO => "lzo",
        C::BROTLI(_) => "br",
        C::LZ4 | C::LZ4_RAW => "lz4",
        C::ZSTD(_) => "zstd",
        C::UNCOMPRESSED => "",
    }
}

/// The file's statistics as the `add` carries them: delta-kernel's JSON encoding of its
/// collected statistics (timestamps to the millisecond, as Delta writes them).
pub(crate) fn stats_json(
    stats: &arrow::array::StructArray,
) -> Result<String, arrow::error::ArrowError> {
    let json = to_json(stats as &dyn arrow::array::Datum)?;
    let strings = json.as_string_opt::<i32>().ok_or_else(|| {
        arrow::error::ArrowError::InvalidArgumentError("statistics JSON is not a string".into())
    })?;
    if strings.is_empty() || strings.is_null(0) {
        return Err(arrow::error::ArrowError::InvalidArgumentError(
            "no statistics row".into(),
        ));
    }
    Ok(strings.value(0).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_go_under_a_two_character_folder_with_the_codec_in_their_name() {
        let p = output_path(parquet::basic::Compression::ZSTD(Default::default()));
        let (dir, name) = p.split_once('/').unwrap();
        assert_eq!(dir.len(), 2);
        assert!(dir.chars().all(|c| c.is_ascii_alphanumeric()));
        assert!(name.starts_with("part-00000-") && name.ends_with("-c000.zstd.parquet"));
        assert!(output_path(parquet::basic::Compression::UNCOMPRESSED).ends_with("-c000.parquet"));
    }
}
