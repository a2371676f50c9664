//! The content of a stream of rows as a multiset: the proof a sorted or z-ordered bin gives
//! (its outputs hold its inputs' rows in another order, so `fingerprint`'s in-order digest
//! cannot compare them). Each row is encoded whole with Arrow's row format (every column, a
//! null distinct from every value, floats bitwise) and hashed (XXH3-128, seeded); the digest
//! is the sum of the row hashes modulo 2^128, with the row count beside it. Addition
//! commutes, so the order rows arrive in does not matter, and a lost, duplicated or changed
//! row changes the sum (short of a 128-bit collision): the multiset hash of Clarke et al.
//! (MSet-Add-Hash). Slower than the column digests (one hash per row), which is why bins
//! written in the order they were read keep those.

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use arrow::row::{RowConverter, SortField};
use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::column_digest::maps_as_lists;
use super::fingerprint::Fingerprint;

const SEED: u64 = 0x6c68_726f_7773_6574; // "lhrowset"

#[derive(Default)]
pub struct RowSetHasher {
    rows: u64,
    sum: u128,
    /// The column types (from the first batch) and the row converter made for them.
    columns: Option<(Vec<DataType>, RowConverter)>,
}

impl RowSetHasher {
    /// Feeds rows; a batch whose column types differ from the first batch's is an error.
    pub fn update(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = batch.columns().iter().map(maps_as_lists).collect();
        let types: Vec<DataType> = batch
            .columns()
            .iter()
            .map(|c| c.data_type().clone())
            .collect();
        let (expected, converter) = match &mut self.columns {
            Some(c) => c,
            slot => {
                let fields = cols
                    .iter()
                    .map(|c| SortField::new(c.data_type().clone()))
                    .collect();
                slot.insert((types.clone(), RowConverter::new(fields)?))
            }
        };
        if *expected != types {
            return Err(ArrowError::SchemaError(format!(
                "a batch of columns {types:?} in a stream of {expected:?}"
            )));
        }
        let rows = converter.convert_columns(&cols)?;
        for row in rows.iter() {
            self.sum = self
                .sum
                .wrapping_add(xxh3_128_with_seed(row.as_ref(), SEED));
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    pub fn finish(&self) -> Fingerprint {
        let mut bytes = Vec::with_capacity(24);
        bytes.extend_from_slice(&self.rows.to_le_bytes());
        bytes.extend_from_slice(&self.sum.to_le_bytes());
        if let Some((types, _)) = &self.columns {
            for t in types {
                bytes.extend_from_slice(t.to_string().as_bytes());
                bytes.push(0);
            }
        }
        Fingerprint {
            rows: self.rows,
            digest: xxh3_128_with_seed(&bytes, SEED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    fn batch(ids: Vec<i64>, names: Vec<Option<&str>>, x: Vec<f64>) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("name", Arc::new(StringArray::from(names)) as ArrayRef),
            ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ])
        .unwrap()
    }

    fn digest(batches: &[RecordBatch]) -> Fingerprint {
        let mut h = RowSetHasher::default();
        for b in batches {
            h.update(b).unwrap();
        }
        h.finish()
    }

    #[test]
    fn the_same_rows_in_another_order_and_split_give_the_same_digest() {
        let a = batch(
            vec![1, 2, 3],
            vec![Some("a"), None, Some("c")],
            vec![0.5, -0.0, 2.0],
        );
        let reordered = [
            batch(vec![3], vec![Some("c")], vec![2.0]),
            batch(vec![1, 2], vec![Some("a"), None], vec![0.5, -0.0]),
        ];
        assert_eq!(digest(&[a]), digest(&reordered));
    }

    #[test]
    fn a_lost_duplicated_or_changed_row_or_values_moved_between_rows_change_the_digest() {
        let base = digest(&[batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, 2.0],
        )]);
        let lost = digest(&[batch(vec![1], vec![Some("a")], vec![1.0])]);
        let duplicated = digest(&[batch(
            vec![1, 2, 2],
            vec![Some("a"), Some("b"), Some("b")],
            vec![1.0, 2.0, 2.0],
        )]);
        let changed = digest(&[batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, 2.5],
        )]);
        // Every column holds the same values, but paired differently: other rows.
        let swapped = digest(&[batch(
            vec![1, 2],
            vec![Some("b"), Some("a")],
            vec![1.0, 2.0],
        )]);
        for other in [lost, duplicated, changed, swapped] {
            assert_ne!(base, other);
        }
        // A null is not an empty string, and floats compare bitwise: -0.0 is not 0.0.
        let empty = digest(&[batch(vec![1], vec![Some("")], vec![0.0])]);
        let null = digest(&[batch(vec![1], vec![None], vec![0.0])]);
        let negative_zero = digest(&[batch(vec![1], vec![Some("")], vec![-0.0])]);
        assert_ne!(empty, null);
        assert_ne!(empty, negative_zero);
        // A row lost and another duplicated keep the count but not the digest.
        let lost_and_dup = digest(&[batch(
            vec![1, 1],
            vec![Some("a"), Some("a")],
            vec![1.0, 1.0],
        )]);
        assert_eq!(lost_and_dup.rows, base.rows);
        assert_ne!(lost_and_dup, base);
    }

    #[test]
    fn a_batch_of_other_column_types_is_refused() {
        let mut h = RowSetHasher::default();
        h.update(&batch(vec![1], vec![Some("a")], vec![1.0]))
            .unwrap();
        let other = RecordBatch::try_from_iter([(
            "id",
            Arc::new(StringArray::from(vec!["1"])) as ArrayRef,
        )])
        .unwrap();
        assert!(h.update(&other).is_err());
    }
}
