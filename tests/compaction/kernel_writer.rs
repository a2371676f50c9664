//! The independent writer of column-mapped tables (Python deltalake refuses them): delta-kernel-
//! rs's default engine creates the table (`delta.columnMapping.mode`, deletion vectors enabled)
//! and appends files through its own transactions, physical names, field ids and statistics
//! chosen by the kernel, none by lakehealth. Each call runs on a thread of its own (the default
//! engine blocks on its own runtime).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray, StructArray};
use arrow::datatypes::{DataType as ArrowType, Field, Fields, Schema};
use delta_kernel::Snapshot;
use delta_kernel::committer::FileSystemCommitter;
use delta_kernel::engine::arrow_data::ArrowEngineData;
use delta_kernel::expressions::{ColumnName, Scalar};
use delta_kernel::schema::{DataType, StructField, StructType};
use delta_kernel::transaction::CommitResult;
use delta_kernel::transaction::create_table::create_table;
use delta_kernel::transaction::data_layout::DataLayout;
use delta_kernel_engine::DefaultEngine;
use object_store::local::LocalFileSystem;

fn url(table: &Path) -> url::Url {
    url::Url::from_directory_path(std::fs::canonicalize(table).unwrap()).unwrap()
}

/// The logical schema of the test tables: a nested column, so physical names apply at depth.
fn schema() -> Arc<StructType> {
    let nested = StructType::try_new([
        StructField::nullable("x", DataType::INTEGER),
        StructField::nullable("y", DataType::STRING),
    ])
    .unwrap();
    Arc::new(
        StructType::try_new([
            StructField::nullable("id", DataType::LONG),
            StructField::nullable("name", DataType::STRING),
            StructField::nullable("nested", nested),
            StructField::nullable("day", DataType::STRING),
        ])
        .unwrap(),
    )
}

/// Creates a column-mapped table (`mode` `name` or `id`) partitioned by `day`, deletion
/// vectors enabled.
pub fn create_mapped_table(table: &Path, mode: &str) {
    create_partitioned_table(
        table,
        &[
            ("delta.columnMapping.mode", mode),
            ("delta.enableDeletionVectors", "true"),
        ],
    );
}

/// Creates a table partitioned by `day` with these table properties (the kernel adds the
/// features they need to the protocol, e.g. `rowTracking` and its materialized columns' names
/// for `delta.enableRowTracking`).
pub fn create_partitioned_table(table: &Path, properties: &[(&str, &str)]) {
    let table = table.to_path_buf();
    let properties: Vec<(String, String)> = properties
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    std::thread::spawn(move || {
        let engine = Arc::new(DefaultEngine::builder(Arc::new(LocalFileSystem::new())).build());
        let created = create_table(url(&table).as_str(), schema(), "lakehealth-tests")
            .with_table_properties(properties)
            .with_data_layout(DataLayout::Partitioned {
                columns: vec![ColumnName::new(["day"])],
            })
            .build(engine.as_ref(), Box::new(FileSystemCommitter::new()))
            .unwrap()
            .commit(engine.as_ref())
            .unwrap();
        assert!(created.is_committed());
    })
    .join()
    .expect("the kernel writer thread");
}

/// The rows `ids` of partition `day` as the table's logical columns (without `day`).
fn batch(ids: &[i64]) -> RecordBatch {
    let nested_fields = Fields::from(vec![
        Field::new("x", ArrowType::Int32, true),
        Field::new("y", ArrowType::Utf8, true),
    ]);
    let nested = StructArray::new(
        nested_fields.clone(),
        vec![
            Arc::new(Int32Array::from_iter(
                ids.iter().map(|i| Some(*i as i32 * 7)),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter().map(|i| (i % 5 != 0).then(|| format!("y{i}"))),
            )),
        ],
        None,
    );
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", ArrowType::Int64, true),
            Field::new("name", ArrowType::Utf8, true),
            Field::new("nested", ArrowType::Struct(nested_fields), true),
        ])),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("name-{i}")),
            )),
            Arc::new(nested),
        ],
    )
    .unwrap()
}

/// One append of the rows `ids` into partition `day` of a `create_mapped_table` table.
pub fn kernel_append(table: &Path, ids: &[i64], day: &str) -> u64 {
    kernel_append_batch(table, batch(ids), ("day", day))
}

/// One append of `rows` (the table's columns but the partition column) into the partition
/// `(column, value)`, as one new file, committed by the kernel (retried on a newer snapshot
/// when another writer took the version). Returns the version.
fn kernel_append_batch(table: &Path, rows: RecordBatch, partition: (&str, &str)) -> u64 {
    let table = table.to_path_buf();
    let (col, value) = (partition.0.to_string(), partition.1.to_string());
    std::thread::spawn(move || append_on_this_thread(&table, &rows, (&col, &value)))
        .join()
        .expect("the kernel writer thread")
}

fn append_on_this_thread(table: &Path, rows: &RecordBatch, partition: (&str, &str)) -> u64 {
    let engine = Arc::new(DefaultEngine::builder(Arc::new(LocalFileSystem::new())).build());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    loop {
        let snapshot = Snapshot::builder_for(url(table))
            .build(engine.as_ref())
            .unwrap();
        let mut txn = snapshot
            .transaction(Box::new(FileSystemCommitter::new()), engine.as_ref())
            .unwrap()
            .with_operation("WRITE".to_string())
            .with_data_change(true);
        let context = txn
            .write_state()
            .unwrap()
            .partitioned_write_context(HashMap::from([(
                partition.0.to_string(),
                Scalar::String(partition.1.to_string()),
            )]))
            .unwrap();
        let adds = rt
            .block_on(engine.write_parquet(&ArrowEngineData::new(rows.clone()), &context))
            .unwrap();
        txn.add_files(adds);
        match txn.commit(engine.as_ref()).unwrap() {
            CommitResult::CommittedTransaction(c) => return c.commit_version(),
            // Another writer took the version: write again on the newer snapshot (the
            // unreferenced file stays an orphan, as a retrying Spark job leaves one).
            CommitResult::ConflictedTransaction(_) | CommitResult::RetryableTransaction(_) => {}
        }
    }
}
