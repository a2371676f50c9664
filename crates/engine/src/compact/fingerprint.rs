//! The content fingerprint of a stream of rows: the proof a bin gives, before it may commit,
//! that its output files hold exactly the rows (every column, every value) its input files
//! held, in the same order. The rewrite writes rows in the order it reads them, and reads the
//! outputs back in the order it wrote them, so the two sequences must be equal: a stricter
//! test than equal multisets, and one that can be computed column by column at memory speed
//! (`column_digest`) instead of row by row.
//!
//! The fingerprint is the row count and XXH3-128 (seeded) over the column types and every
//! column's digests: it does not depend on how rows are split into batches or files, and a
//! lost, duplicated, changed or reordered row changes it (short of a 128-bit collision).

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::column_digest::ColumnDigest;
use super::row_set_digest::RowSetHasher;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub rows: u64,
    /// The content digest, as hex (JSON has no 128-bit integers). A worker result written by
    /// an older version calls it `sum` (a row-hash sum): it is only reported, never compared
    /// with this version's digest, so such a result can still be picked up.
    #[serde(serialize_with = "hex", deserialize_with = "unhex", alias = "sum")]
    pub digest: u128,
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
    /// Fingerprint of the rows of `batches`, in order.
    pub fn of_batches<'a>(
        batches: impl IntoIterator<Item = &'a RecordBatch>,
    ) -> Result<Fingerprint, ArrowError> {
        let mut h = ContentHasher::default();
        for b in batches {
            h.update(b)?;
        }
        Ok(h.finish())
    }
}

/// Fingerprints a stream of batches of one schema, as they pass.
#[derive(Default)]
pub struct ContentHasher {
    rows: u64,
    /// The column types (from the first batch) and each column's digest.
    columns: Option<(Vec<DataType>, Vec<ColumnDigest>)>,
}

impl ContentHasher {
    /// Feeds the next rows. A batch whose column types differ from the first batch's is an
    /// error: the two sides of a proof are conformed to one schema.
    pub fn update(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        // Content is rows: a batch of none (every row of it deleted) adds nothing, so inputs
        // read as empty batches equal outputs never written.
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let types = || -> Vec<DataType> {
            batch
                .columns()
                .iter()
                .map(|c| c.data_type().clone())
                .collect()
        };
        let (expected, digests) = self.columns.get_or_insert_with(|| {
            let t = types();
            let d = t.iter().map(|_| ColumnDigest::default()).collect();
            (t, d)
        });
        if batch.num_columns() != expected.len()
            || batch
                .columns()
                .iter()
                .zip(expected.iter())
                .any(|(c, t)| c.data_type() != t)
        {
            return Err(ArrowError::SchemaError(format!(
                "a batch of columns {:?} in a stream of {expected:?}",
                types()
            )));
        }
        for (c, d) in batch.columns().iter().zip(digests.iter_mut()) {
            d.update(c)?;
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    pub fn finish(&self) -> Fingerprint {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&self.rows.to_le_bytes());
        if let Some((types, digests)) = &self.columns {
            for (t, d) in types.iter().zip(digests) {
                bytes.extend_from_slice(t.to_string().as_bytes());
                bytes.push(0);
                for x in d.finish() {
                    bytes.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        Fingerprint {
            rows: self.rows,
            digest: xxh3_128_with_seed(&bytes, SEED),
        }
    }
}

/// Which proof a bin gives: its outputs hold its inputs' rows in the order read (bin-packing),
/// or in any order (a sorted or z-ordered bin: `row_set_digest`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowsProof {
    #[default]
    InOrder,
    AnyOrder,
}

/// A content hasher of either proof.
pub enum ProofHasher {
    InOrder(ContentHasher),
    AnyOrder(RowSetHasher),
}

impl ProofHasher {
    pub fn new(proof: RowsProof) -> Self {
        match proof {
            RowsProof::InOrder => Self::InOrder(ContentHasher::default()),
            RowsProof::AnyOrder => Self::AnyOrder(RowSetHasher::default()),
        }
    }

    pub fn update(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        match self {
            Self::InOrder(h) => h.update(batch),
            Self::AnyOrder(h) => h.update(batch),
        }
    }

    pub fn finish(&self) -> Fingerprint {
        match self {
            Self::InOrder(h) => h.finish(),
            Self::AnyOrder(h) => h.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        ArrayRef, BooleanArray, Decimal128Array, FixedSizeBinaryArray, Float64Array, Int32Array,
        Int64Array, ListArray, StringArray, StringViewArray, StructArray, UInt32Array,
    };
    use arrow::datatypes::{Field, Int32Type};
    use std::sync::Arc;

    fn batch(ids: Vec<i64>, names: Vec<Option<&str>>, x: Vec<f64>) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("name", Arc::new(StringArray::from(names)) as ArrayRef),
            ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ])
        .unwrap()
    }

    fn fp(b: &RecordBatch) -> Fingerprint {
        Fingerprint::of_batches([b]).unwrap()
    }

    #[test]
    fn empty_batches_add_nothing_to_the_content() {
        let rows = batch(vec![1], vec![Some("a")], vec![0.5]);
        let empty = batch(vec![], vec![], vec![]);
        assert_eq!(
            Fingerprint::of_batches([&empty, &rows, &empty]).unwrap(),
            fp(&rows)
        );
        let none: [&RecordBatch; 0] = [];
        assert_eq!(
            Fingerprint::of_batches([&empty]).unwrap(),
            Fingerprint::of_batches(none).unwrap()
        );
    }

    /// One column of every kind the digest reads differently, with nulls.
    fn every_kind() -> RecordBatch {
        RecordBatch::try_from_iter([
            (
                "i64",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4)])) as ArrayRef,
            ),
            (
                "utf8",
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some(""),
                    None,
                    Some("dd"),
                ])),
            ),
            (
                "bool",
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                ])),
            ),
            (
                "fsb",
                Arc::new(
                    FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                        vec![Some(b"ab"), None, Some(b"cd"), Some(b"ef")].into_iter(),
                        2,
                    )
                    .unwrap(),
                ),
            ),
            (
                "f64",
                Arc::new(Float64Array::from(vec![0.0, -0.0, f64::NAN, 1.5])),
            ),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from(vec![Some(10), Some(-10), None, Some(0)])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
            ),
            (
                "view",
                Arc::new(StringViewArray::from(vec![
                    Some("a string longer than twelve bytes"),
                    Some("short"),
                    None,
                    Some(""),
                ])),
            ),
            (
                "list",
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1), None]),
                    None,
                    Some(vec![]),
                    Some(vec![Some(2)]),
                ])),
            ),
        ])
        .unwrap()
    }

    #[test]
    fn batch_splits_slices_and_copies_of_the_same_rows_agree() {
        let b = every_kind();
        let whole = fp(&b);
        // Readers hand out sliced arrays (offsets into shared buffers), and the two sides of
        // a proof split rows into batches differently.
        assert_eq!(
            Fingerprint::of_batches(&[b.slice(0, 1), b.slice(1, 2), b.slice(3, 1)]).unwrap(),
            whole
        );
        let idx = UInt32Array::from(vec![1, 2, 3]);
        let copied = RecordBatch::try_new(
            b.schema(),
            b.columns()
                .iter()
                .map(|c| arrow::compute::take(c.as_ref(), &idx, None).unwrap())
                .collect(),
        )
        .unwrap();
        assert_eq!(fp(&b.slice(1, 3)), fp(&copied));
    }

    #[test]
    fn a_changed_value_in_any_kind_of_column_changes_it() {
        let b = every_kind();
        let whole = fp(&b);
        // Each column in turn, its rows 1 and 2 swapped (every column differs there).
        for i in 0..b.num_columns() {
            let idx = UInt32Array::from(vec![0, 2, 1, 3]);
            let mut cols = b.columns().to_vec();
            cols[i] = arrow::compute::take(cols[i].as_ref(), &idx, None).unwrap();
            let changed = RecordBatch::try_new(b.schema(), cols).unwrap();
            assert_ne!(fp(&changed), whole, "column {}", b.schema().field(i).name());
        }
    }

    #[test]
    fn a_changed_duplicated_lost_or_moved_row_changes_it() {
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
        let zero = fp(&batch(
            vec![1, 2],
            vec![Some("a"), Some("b")],
            vec![1.0, 0.0],
        ));
        let dup = fp(&batch(
            vec![1, 1],
            vec![Some("a"), Some("a")],
            vec![1.0, 1.0],
        ));
        let lost = fp(&batch(vec![1], vec![Some("a")], vec![1.0]));
        let moved = fp(&batch(
            vec![2, 1],
            vec![Some("b"), Some("a")],
            vec![2.0, 1.0],
        ));
        assert_ne!(base, changed);
        assert_ne!(zero_sign, zero, "-0.0 and 0.0 are different values");
        assert_eq!(dup.rows, base.rows);
        assert_ne!(
            dup, base,
            "a duplicate replacing a row is caught with equal counts"
        );
        assert_ne!(lost, base);
        assert_ne!(
            moved, base,
            "the outputs must hold the rows in the order written"
        );
        // Where one string ends and the next begins, and which row a null is in, count.
        let ab_c = fp(&batch(
            vec![1, 2],
            vec![Some("ab"), Some("c")],
            vec![1.0, 2.0],
        ));
        let a_bc = fp(&batch(
            vec![1, 2],
            vec![Some("a"), Some("bc")],
            vec![1.0, 2.0],
        ));
        assert_ne!(ab_c, a_bc);
        let a_null = fp(&batch(vec![1, 2], vec![Some("a"), None], vec![1.0, 2.0]));
        let null_a = fp(&batch(vec![1, 2], vec![None, Some("a")], vec![1.0, 2.0]));
        assert_ne!(a_null, null_a);
        // Null, empty and zero are three values.
        let int = |v: Option<i32>| {
            fp(&RecordBatch::try_from_iter([(
                "v",
                Arc::new(Int32Array::from(vec![v])) as ArrayRef,
            )])
            .unwrap())
        };
        assert_ne!(int(None), int(Some(0)));
        let s = |v: Option<&str>| {
            fp(&RecordBatch::try_from_iter([(
                "v",
                Arc::new(StringArray::from(vec![v])) as ArrayRef,
            )])
            .unwrap())
        };
        assert_ne!(s(None), s(Some("")));
    }

    #[test]
    fn a_worker_result_of_an_older_version_still_reads() {
        let old: Fingerprint =
            serde_json::from_str(r#"{"rows":2,"sum":"000000000000000000000000000000ff"}"#).unwrap();
        assert_eq!((old.rows, old.digest), (2, 255));
        let new = serde_json::to_string(&old).unwrap();
        assert_eq!(
            new,
            r#"{"rows":2,"digest":"000000000000000000000000000000ff"}"#
        );
    }

    #[test]
    fn a_batch_of_other_column_types_is_refused() {
        let mut h = ContentHasher::default();
        h.update(&batch(vec![1], vec![Some("a")], vec![1.0]))
            .unwrap();
        let other =
            RecordBatch::try_from_iter([("id", Arc::new(Int32Array::from(vec![1])) as ArrayRef)])
                .unwrap();
        assert!(h.update(&other).is_err());
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
        let b = RecordBatch::try_from_iter([("m", m), ("s", s)]).unwrap();
        let f = fp(&b);
        assert_eq!(f.rows, 2);
        assert_ne!(fp(&b.slice(0, 1)), fp(&b.slice(1, 1)));
        assert_eq!(
            Fingerprint::of_batches(&[b.slice(0, 1), b.slice(1, 1)]).unwrap(),
            f
        );
    }
}
