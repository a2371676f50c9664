//! The independent reader for tables Python deltalake refuses (deletion vectors, column
//! mapping): delta-kernel-rs's default engine scans the table, applying deletion vectors and
//! column mapping itself, with none of lakehealth's code. Rows come back as text, sorted, so
//! two snapshots compare as multisets of rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use delta_kernel::Snapshot;
use delta_kernel::engine::arrow_data::ArrowEngineData;
use delta_kernel::schema::MetadataColumnSpec;
use delta_kernel_engine::DefaultEngine;
use object_store::local::LocalFileSystem;

#[derive(Debug, Clone, PartialEq)]
pub struct KernelRead {
    pub version: u64,
    /// Logical column names, in schema order.
    pub columns: Vec<String>,
    /// One line per row (`a=1|b=x`), sorted.
    pub rows: Vec<String>,
}

fn lines(batch: &RecordBatch, out: &mut Vec<String>) {
    let opts = FormatOptions::default().with_null("NULL");
    let schema = batch.schema();
    let formatters: Vec<ArrayFormatter> = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
        .collect();
    for i in 0..batch.num_rows() {
        out.push(
            formatters
                .iter()
                .zip(schema.fields())
                .map(|(f, field)| format!("{}={}", field.name(), f.value(i)))
                .collect::<Vec<_>>()
                .join("|"),
        );
    }
}

fn read(table: &Path) -> KernelRead {
    read_with(table, false)
}

/// `with_row_ids`: each row also carries its stable row id (`row_id`), which the kernel
/// reconstructs itself from the materialized column or the file's `baseRowId` and the row's
/// index (Delta's row tracking).
fn read_with(table: &Path, with_row_ids: bool) -> KernelRead {
    let engine = Arc::new(DefaultEngine::builder(Arc::new(LocalFileSystem::new())).build());
    let url = url::Url::from_directory_path(std::fs::canonicalize(table).unwrap()).unwrap();
    let snapshot = Snapshot::builder_for(url.as_str())
        .build(engine.as_ref())
        .unwrap_or_else(|e| panic!("kernel opens {}: {e}", table.display()));
    let version = snapshot.version();
    let columns = snapshot
        .schema()
        .fields()
        .map(|f| f.name().to_string())
        .collect();
    let mut builder = snapshot.clone().scan_builder();
    if with_row_ids {
        let schema = snapshot
            .schema()
            .add_metadata_column("row_id", MetadataColumnSpec::RowId)
            .unwrap();
        builder = builder.with_schema(Arc::new(schema));
    }
    let scan = builder.build().unwrap();
    let mut rows = Vec::new();
    for data in scan.execute(engine.clone()).unwrap() {
        let data = ArrowEngineData::try_from_engine_data(data.unwrap()).unwrap();
        lines(data.record_batch(), &mut rows);
    }
    rows.sort();
    KernelRead {
        version,
        columns,
        rows,
    }
}

/// The table's latest snapshot as delta-kernel reads it (on a thread of its own: the kernel's
/// default engine blocks on its own runtime).
pub fn kernel_read(table: &Path) -> KernelRead {
    let path: PathBuf = table.to_path_buf();
    std::thread::spawn(move || read(&path))
        .join()
        .expect("the kernel reader thread")
}

/// As `kernel_read`, each row with its stable row id (`…|row_id=N`).
pub fn kernel_read_with_row_ids(table: &Path) -> KernelRead {
    let path: PathBuf = table.to_path_buf();
    std::thread::spawn(move || read_with(&path, true))
        .join()
        .expect("the kernel reader thread")
}
