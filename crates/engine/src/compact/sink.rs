//! Where a bin's rows are written: delta-rs's `RecordBatchWriter` for a table without column
//! mapping, the physical writer (`physical_writer`) for a column-mapped one. Both roll files
//! when told to and give each closed file's `add`.

use arrow::array::RecordBatch;
use delta_kernel::expressions::Scalar;
use deltalake::kernel::Add;
use deltalake::writer::{DeltaWriter, RecordBatchWriter, WriteMode};
use indexmap::IndexMap;

use super::physical_writer::PhysicalWriter;

pub enum Sink {
    Delta {
        writer: RecordBatchWriter,
        /// Typed partition values every output is written under.
        partition: IndexMap<String, Scalar>,
    },
    Physical(PhysicalWriter),
}

impl Sink {
    /// Writes a batch of the bin's file schema; `widen`: it carries row tracking's hidden
    /// columns, which delta-rs's writer adds to its schema (the physical writer's schema
    /// already holds them).
    pub async fn write(&mut self, batch: RecordBatch, widen: bool) -> Result<(), String> {
        match self {
            Sink::Delta { writer, partition } => {
                let mode = if widen {
                    WriteMode::MergeSchema
                } else {
                    WriteMode::Default
                };
                writer
                    .write_partition(batch, partition, mode)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            Sink::Physical(w) => w.write(&batch).await.map_err(|e| e.to_string()),
        }
    }

    /// The encoded size written since the last flush (the open row group estimated).
    pub fn buffer_len(&self) -> usize {
        match self {
            Sink::Delta { writer, .. } => writer.buffer_len(),
            Sink::Physical(w) => w.buffer_len(),
        }
    }

    /// Closes the open file(s); their `add`s.
    pub async fn flush(&mut self) -> Result<Vec<Add>, String> {
        match self {
            Sink::Delta { writer, .. } => writer.flush().await.map_err(|e| e.to_string()),
            Sink::Physical(w) => w.flush().await.map_err(|e| e.to_string()),
        }
    }

    /// Abandons what was written since the last flush.
    pub async fn reset(&mut self) {
        match self {
            Sink::Delta { writer, .. } => writer.reset(),
            Sink::Physical(w) => w.reset().await,
        }
    }
}
