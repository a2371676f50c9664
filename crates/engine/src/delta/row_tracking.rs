//! Row tracking in a rewrite: when a table has row tracking enabled, every row keeps its stable
//! row id and row commit version through the compaction. A row's stable id is its materialized
//! id (the hidden column `delta.rowTracking.materializedRowIdColumnName`) when the file holds a
//! non-null one, else its file's `baseRowId` plus its index in the file; its commit version
//! likewise from `defaultRowCommitVersion` (Delta's `PROTOCOL.md`, Row Tracking). The outputs get
//! new `baseRowId`s, so the rewrite writes both values, for every row, into the hidden columns
//! before the file's deletion vector drops any row (the index counts every row of the file).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};

use super::features::MaterializedColumns;

/// Why a file's rows cannot be given their ids.
#[derive(Debug, thiserror::Error)]
pub enum RowTrackingError {
    #[error(
        "row tracking is enabled but the file's add action has no {field}, so its rows' ids are unknown"
    )]
    MissingField { field: &'static str },
    #[error("its column {column} does not hold 64-bit integers: {source}")]
    Column {
        column: String,
        #[source]
        source: arrow::error::ArrowError,
    },
    #[error(transparent)]
    Batch(#[from] arrow::error::ArrowError),
}

/// `schema` with the two hidden columns appended (nullable longs, as Spark writes them), unless
/// it has them.
pub fn with_hidden_columns(schema: &Schema, cols: &MaterializedColumns) -> Schema {
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    for name in [&cols.row_id, &cols.row_commit_version] {
        if schema.field_with_name(name).is_err() {
            fields.push(Arc::new(Field::new(name.as_str(), DataType::Int64, true)));
        }
    }
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// A file's `baseRowId` and `defaultRowCommitVersion`: its remove carries them, and rows without
/// a materialized id or commit version take theirs from them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowIds {
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
}

/// One input file's rows as they stream by: the ids and versions they take when the file has
/// none materialized.
pub struct FileRows {
    cols: MaterializedColumns,
    base_row_id: i64,
    default_version: i64,
    /// The index in the file of the next batch's first row.
    next: i64,
}

impl FileRows {
    pub fn new(cols: MaterializedColumns, ids: RowIds) -> Result<Self, RowTrackingError> {
        Ok(FileRows {
            cols,
            base_row_id: ids
                .base_row_id
                .ok_or(RowTrackingError::MissingField { field: "baseRowId" })?,
            default_version: ids.default_row_commit_version.ok_or(
                RowTrackingError::MissingField {
                    field: "defaultRowCommitVersion",
                },
            )?,
            next: 0,
        })
    }

    /// The batch (the file's next rows, none dropped yet) with both hidden columns holding every
    /// row's stable value.
    pub fn fill(&mut self, batch: RecordBatch) -> Result<RecordBatch, RowTrackingError> {
        let n = batch.num_rows();
        let first = self.next;
        self.next += n as i64;
        let ids = stable(&batch, &self.cols.row_id, |i| {
            self.base_row_id + first + i as i64
        })?;
        let versions = stable(&batch, &self.cols.row_commit_version, |_| {
            self.default_version
        })?;
        let batch = put(batch, &self.cols.row_id, ids)?;
        Ok(put(batch, &self.cols.row_commit_version, versions)?)
    }
}

/// Column `name`'s non-null values, and `default(i)` where it is null or absent.
fn stable(
    batch: &RecordBatch,
    name: &str,
    default: impl Fn(usize) -> i64,
) -> Result<ArrayRef, RowTrackingError> {
    let existing = match batch.column_by_name(name) {
        Some(c) => Some(
            cast(c, &DataType::Int64).map_err(|source| RowTrackingError::Column {
                column: name.to_string(),
                source,
            })?,
        ),
        None => None,
    };
    let existing = existing
        .as_ref()
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>());
    let values: Int64Array = (0..batch.num_rows())
        .map(|i| match existing {
            Some(c) if c.is_valid(i) => Some(c.value(i)),
            _ => Some(default(i)),
        })
        .collect();
    Ok(Arc::new(values))
}

/// `batch` with column `name` replaced by `values`, or appended.
fn put(
    batch: RecordBatch,
    name: &str,
    values: ArrayRef,
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let schema = batch.schema();
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let field = Arc::new(Field::new(name, DataType::Int64, true));
    match schema.index_of(name) {
        Ok(i) => {
            fields[i] = field;
            columns[i] = values;
        }
        Err(_) => {
            fields.push(field);
            columns.push(values);
        }
    }
    RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        columns,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> MaterializedColumns {
        MaterializedColumns {
            row_id: "_rid".into(),
            row_commit_version: "_rcv".into(),
        }
    }

    fn file(base: Option<i64>, version: Option<i64>) -> RowIds {
        RowIds {
            base_row_id: base,
            default_row_commit_version: version,
        }
    }

    fn longs(batch: &RecordBatch, name: &str) -> Vec<i64> {
        let c = batch.column_by_name(name).unwrap();
        let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
        c.iter().map(|v| v.unwrap()).collect()
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    #[test]
    fn rows_without_materialized_ids_take_base_plus_their_index_across_batches() {
        let c = cols();
        let f = file(Some(100), Some(7));
        let mut rows = FileRows::new(c.clone(), f).unwrap();
        let b1 = rows
            .fill(batch(vec![("x", Arc::new(Int64Array::from(vec![1, 2])))]))
            .unwrap();
        let b2 = rows
            .fill(batch(vec![("x", Arc::new(Int64Array::from(vec![3])))]))
            .unwrap();
        assert_eq!(longs(&b1, "_rid"), [100, 101]);
        assert_eq!(longs(&b2, "_rid"), [102]);
        assert_eq!(longs(&b1, "_rcv"), [7, 7]);
        assert_eq!(longs(&b1, "x"), [1, 2]);
    }

    #[test]
    fn materialized_values_are_kept_and_only_nulls_are_filled() {
        let c = cols();
        let f = file(Some(10), Some(3));
        let mut rows = FileRows::new(c.clone(), f).unwrap();
        let b = rows
            .fill(batch(vec![
                ("x", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
                (
                    "_rid",
                    Arc::new(Int64Array::from(vec![Some(5), None, Some(0)])),
                ),
                (
                    "_rcv",
                    Arc::new(Int64Array::from(vec![None, Some(1), None])),
                ),
            ]))
            .unwrap();
        assert_eq!(longs(&b, "_rid"), [5, 11, 0]);
        assert_eq!(longs(&b, "_rcv"), [3, 1, 3]);
        assert_eq!(b.num_columns(), 3);
    }

    #[test]
    fn a_file_without_a_base_row_id_is_refused() {
        let c = cols();
        let e = FileRows::new(c, file(None, Some(1))).err().unwrap();
        assert!(e.to_string().contains("baseRowId"));
    }

    #[test]
    fn hidden_columns_are_appended_once() {
        let s = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
        let s = with_hidden_columns(&s, &cols());
        assert_eq!(s.fields().len(), 3);
        assert_eq!(with_hidden_columns(&s, &cols()).fields().len(), 3);
    }
}
