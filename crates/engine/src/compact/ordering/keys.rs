//! The z-order key of each row of a batch: each ordering column's value encoded with Arrow's
//! row format (order-preserving bytes, nulls first), placed among that column's quantile
//! boundaries, and the buckets interleaved (`zorder`). The key is a 16-byte big-endian
//! column, so sorting it as bytes sorts the keys as numbers.

use std::sync::Arc;

use arrow::array::{ArrayRef, FixedSizeBinaryArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::row::{RowConverter, SortField};

use super::zorder::{boundaries, bucket, interleave};

/// The key column's name: never a Delta column's (they cannot start with two underscores and
/// a tool's name, by our convention), and dropped before a row is written.
pub const KEY_COLUMN: &str = "__lakehealth_zorder_key";
const KEY_BYTES: i32 = 16;

/// One ordering column: where it is in the batch, its encoder and its boundaries.
struct KeyColumn {
    index: usize,
    converter: RowConverter,
    boundaries: Vec<Vec<u8>>,
}

pub struct ZKeys {
    columns: Vec<KeyColumn>,
}

fn converter(t: &DataType) -> Result<RowConverter, ArrowError> {
    RowConverter::new(vec![SortField::new(t.clone())])
}

impl ZKeys {
    /// Keys over `columns` (names in `schema`), with boundaries cut from each column's sample
    /// into `buckets` equal shares.
    pub fn new(
        schema: &Schema,
        columns: &[String],
        samples: &[Vec<ArrayRef>],
        buckets: usize,
    ) -> Result<Self, ArrowError> {
        let mut out = Vec::new();
        for (i, c) in columns.iter().enumerate() {
            let index = schema.index_of(c)?;
            let converter = converter(schema.field(index).data_type())?;
            let mut values = Vec::new();
            for a in samples.get(i).into_iter().flatten() {
                let rows = converter.convert_columns(std::slice::from_ref(a))?;
                values.extend(rows.iter().map(|r| r.as_ref().to_vec()));
            }
            out.push(KeyColumn {
                index,
                converter,
                boundaries: boundaries(values, buckets),
            });
        }
        Ok(Self { columns: out })
    }

    /// `schema` with the key column after its own.
    pub fn keyed_schema(schema: &Schema) -> SchemaRef {
        let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(
            KEY_COLUMN,
            DataType::FixedSizeBinary(KEY_BYTES),
            false,
        )));
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// Each row's key.
    pub fn keys(&self, batch: &RecordBatch) -> Result<FixedSizeBinaryArray, ArrowError> {
        let n = batch.num_rows();
        let mut buckets = vec![0u32; n * self.columns.len()];
        let d = self.columns.len();
        for (ci, c) in self.columns.iter().enumerate() {
            let rows = c
                .converter
                .convert_columns(&[batch.column(c.index).clone()])?;
            for (r, row) in rows.iter().enumerate() {
                buckets[r * d + ci] = bucket(&c.boundaries, row.as_ref());
            }
        }
        let keys = (0..n).map(|r| interleave(&buckets[r * d..(r + 1) * d]).to_be_bytes());
        FixedSizeBinaryArray::try_from_iter(keys)
    }

    /// `batch` with its keys appended (the schema `keyed_schema` gives).
    pub fn with_keys(
        &self,
        batch: RecordBatch,
        keyed: &SchemaRef,
    ) -> Result<RecordBatch, ArrowError> {
        let keys = self.keys(&batch)?;
        let mut columns = batch.columns().to_vec();
        columns.push(Arc::new(keys) as ArrayRef);
        RecordBatch::try_new(keyed.clone(), columns)
    }
}

/// `batch` without the key column (the last), as written.
pub fn without_keys(batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
    let n = batch.num_columns();
    if n == 0 || batch.schema().field(n - 1).name() != KEY_COLUMN {
        return Ok(batch);
    }
    batch.project(&(0..n - 1).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::ordering::zorder::BUCKET_BITS;
    use arrow::array::{Int64Array, StringArray};

    fn batch() -> RecordBatch {
        RecordBatch::try_from_iter([
            (
                "sensor",
                Arc::new(StringArray::from(vec![
                    Some("s-1"),
                    Some("s-2"),
                    None,
                    Some("s-2"),
                ])) as ArrayRef,
            ),
            (
                "ts",
                Arc::new(Int64Array::from(vec![10, 1, 5, 20])) as ArrayRef,
            ),
        ])
        .unwrap()
    }

    #[test]
    fn keys_of_known_values_interleave_their_buckets_and_the_key_column_comes_off() {
        let b = batch();
        let cols = vec!["sensor".to_string(), "ts".to_string()];
        // Samples cut each column in two: sensor at s-2, ts at 10.
        let samples = vec![
            vec![Arc::new(StringArray::from(vec!["s-1", "s-2"])) as ArrayRef],
            vec![Arc::new(Int64Array::from(vec![1, 10])) as ArrayRef],
        ];
        let z = ZKeys::new(&b.schema(), &cols, &samples, 2).unwrap();
        let keys = z.keys(&b).unwrap();
        let key = |i: usize| u128::from_be_bytes(keys.value(i).try_into().unwrap());
        // Buckets (sensor, ts): (low, high), (high, low), (low for null, low), (high, high);
        // two buckets spread over the range: 0 and 512.
        let high = 1 << (BUCKET_BITS - 1);
        assert_eq!(key(0), interleave(&[0, high]));
        assert_eq!(key(1), interleave(&[high, 0]));
        assert_eq!(key(2), 0, "a null is below every value");
        assert_eq!(key(3), interleave(&[high, high]));
        assert!(key(3) > key(1) && key(1) > key(0));
        let keyed = ZKeys::keyed_schema(&b.schema());
        let with = z.with_keys(b.clone(), &keyed).unwrap();
        assert_eq!(with.num_columns(), 3);
        assert_eq!(without_keys(with).unwrap(), b);
        assert_eq!(without_keys(b.clone()).unwrap(), b, "nothing to take off");
    }
}
