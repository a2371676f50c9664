//! An order-independent fingerprint of a multiset of rows: the proof a bin gives, before it may
//! commit, that its output files hold exactly the rows (every column, every value) its input
//! files held. Rows are encoded with Arrow's row format (a byte string that is equal exactly
//! when every value is equal, nested types, NaN payloads and -0.0 included), hashed with XXH3-128
//! (seeded), and summed modulo 2^128: the sum does not depend on
//! row order or on how rows are split into batches or files, and a lost, duplicated or changed
//! row changes it (short of a 128-bit collision).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Field, Fields};
use arrow::error::ArrowError;
use arrow::row::{RowConverter, Rows, SortField};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128_with_seed;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub rows: u64,
    /// Sum of 128-bit row hashes, modulo 2^128, as hex (JSON has no 128-bit integers).
    #[serde(serialize_with = "hex", deserialize_with = "unhex")]
    pub sum: u128,
}

fn hex<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:032x}"))
}

/// Read back from a worker's result file.
fn unhex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
    let s = String::deserialize(d)?;
    u128::from_str_radix(&s, 16).map_err(serde::de::Error::custom)
}

const SEED: u64 = 0x6c61_6b65_6865_616c; // "lakeheal"

impl Fingerprint {
    pub fn add(&mut self, other: Fingerprint) {
        self.rows += other.rows;
        self.sum = self.sum.wrapping_add(other.sum);
    }

    /// Fingerprint of one batch (all columns, in schema order).
    pub fn of_batch(batch: &RecordBatch) -> Result<Fingerprint, ArrowError> {
        BatchHasher::default().fingerprint(batch)
    }
}

/// Fingerprints a stream of batches, keeping the row converter and its row buffer from one
/// batch to the next: a fresh buffer per batch is a fresh zeroed allocation, page faults
/// included, on the hot path of every rewrite and every proof.
#[derive(Default)]
pub struct BatchHasher {
    /// The column types the converter was made for, the converter, and its buffer.
    state: Option<(Vec<DataType>, RowConverter, Rows)>,
}

impl BatchHasher {
    pub fn fingerprint(&mut self, batch: &RecordBatch) -> Result<Fingerprint, ArrowError> {
        if batch.num_columns() == 0 {
            return Ok(Fingerprint {
                rows: batch.num_rows() as u64,
                sum: 0,
            });
        }
        let columns: Vec<ArrayRef> = batch.columns().iter().map(maps_as_lists).collect();
        let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
        let (converter, rows) = match &mut self.state {
            Some((t, converter, rows)) if *t == types => (converter, rows),
            state => {
                let fields = types.iter().cloned().map(SortField::new).collect();
                let converter = RowConverter::new(fields)?;
                let rows = converter.empty_rows(0, 0);
                let (_, converter, rows) = state.insert((types, converter, rows));
                (converter, rows)
            }
        };
        rows.clear();
        converter.append(rows, &columns)?;
        let mut sum = 0u128;
        for row in rows.iter() {
            sum = sum.wrapping_add(xxh3_128_with_seed(row.as_ref(), SEED));
        }
        Ok(Fingerprint {
            rows: batch.num_rows() as u64,
            sum,
        })
    }
}

/// A map is a list of key/value structs; encoding it as one keeps every entry (and its order)
/// while using the row format's list codec, which handles every nesting depth.
fn maps_as_lists(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Map(_, _) => {
            let Some(m) = a.as_any().downcast_ref::<MapArray>() else {
                return a.clone();
            };
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let entries = maps_as_lists(&entries);
            let field = Arc::new(Field::new("entries", entries.data_type().clone(), true));
            Arc::new(ListArray::new(
                field,
                m.offsets().clone(),
                entries,
                m.nulls().cloned(),
            ))
        }
        DataType::Struct(fields) => {
            let Some(s) = a.as_any().downcast_ref::<StructArray>() else {
                return a.clone();
            };
            if !fields.iter().any(|f| has_map(f.data_type())) {
                return a.clone();
            }
            let cols: Vec<ArrayRef> = s.columns().iter().map(maps_as_lists).collect();
            let fields: Fields = fields
                .iter()
                .zip(&cols)
                .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
                .collect();
            Arc::new(StructArray::new(fields, cols, s.nulls().cloned()))
        }
        DataType::List(f) if has_map(f.data_type()) => {
            let Some(l) = a.as_any().downcast_ref::<ListArray>() else {
                return a.clone();
            };
            let values = maps_as_lists(l.values());
            let field = Arc::new(Field::new(f.name(), values.data_type().clone(), true));
            Arc::new(ListArray::new(
                field,
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            ))
        }
        _ => a.clone(),
    }
}

fn has_map(t: &DataType) -> bool {
    match t {
        DataType::Map(_, _) => true,
        DataType::Struct(fs) => fs.iter().any(|f| has_map(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            has_map(f.data_type())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use arrow::datatypes::Schema;

    fn batch(ids: Vec<i64>, names: Vec<Option<&str>>, x: Vec<f64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("x", DataType::Float64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
                Arc::new(Float64Array::from(x)),
            ],
        )
        .unwrap()
    }

    fn fp(b: &RecordBatch) -> Fingerprint {
        Fingerprint::of_batch(b).unwrap()
    }

    #[test]
    fn row_order_and_batch_split_do_not_matter() {
        let whole = fp(&batch(
            vec![1, 2, 3],
            vec![Some("a"), None, Some("c")],
            vec![1.0, 2.0, 3.0],
        ));
        let mut split = fp(&batch(vec![3], vec![Some("c")], vec![3.0]));
        split.add(fp(&batch(
            vec![2, 1],
            vec![None, Some("a")],
            vec![2.0, 1.0],
        )));
        assert_eq!(whole, split);
    }

    #[test]
    fn a_changed_duplicated_or_lost_row_changes_it() {
        let base = fp(&batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, 2.0],
        ));
        let changed = fp(&batch(vec![1, 2], vec![Some("a"), None], vec![1.0, 2.0]));
        let zero_sign = fp(&batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, -0.0],
        ));
        let base0 = fp(&batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, 0.0],
        ));
        let dup = fp(&batch(
            vec![1, 1],
            vec![Some("a"), Some("a")],
            vec![1.0, 1.0],
        ));
        assert_ne!(base, changed);
        assert_ne!(zero_sign, base0, "-0.0 and 0.0 are different values");
        assert_eq!(dup.rows, base.rows);
        assert_ne!(
            dup, base,
            "a duplicate replacing a row is caught with equal counts"
        );
    }

    #[test]
    fn a_reused_hasher_gives_each_batch_the_fingerprint_a_fresh_one_does() {
        let a = batch(vec![1, 2], vec![Some("a"), None], vec![1.0, 2.0]);
        let b = batch(vec![3], vec![Some("a much longer name")], vec![-0.0]);
        let mut h = BatchHasher::default();
        for x in [&a, &b, &a] {
            assert_eq!(h.fingerprint(x).unwrap(), fp(x));
        }
        // Another schema in between: a converter of its own.
        let other = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap();
        assert_eq!(h.fingerprint(&other).unwrap(), fp(&other));
        assert_eq!(h.fingerprint(&b).unwrap(), fp(&b));
    }

    #[test]
    fn maps_nested_in_structs_are_fingerprinted() {
        use arrow::array::{Int32Builder, MapBuilder, StringBuilder};
        let mut mb = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        mb.keys().append_value("k");
        mb.values().append_value(1);
        mb.append(true).unwrap();
        mb.append(false).unwrap();
        let m: ArrayRef = Arc::new(mb.finish());
        let s: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("m", m.data_type().clone(), true)),
            m.clone(),
        )]));
        let schema = Arc::new(Schema::new(vec![
            Field::new("m", m.data_type().clone(), true),
            Field::new("s", s.data_type().clone(), true),
        ]));
        let b = RecordBatch::try_new(schema, vec![m, s]).unwrap();
        let f = fp(&b);
        assert_eq!(f.rows, 2);
        assert_ne!(fp(&b.slice(0, 1)), fp(&b.slice(1, 1)));
    }
}
