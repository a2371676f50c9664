//! An output file's Iceberg metrics (`column_sizes`, `value_counts`, `null_value_counts`,
//! `lower_bounds`, `upper_bounds`), from the Parquet footer the writer returns, keyed by the
//! Parquet field ids (the table schema's ids, kept from the inputs).
//!
//! Bounds are what readers prune files with, so a wrong bound loses rows on read: they are
//! written only for top-level columns whose Parquet statistics are exact and encode the same way
//! as Iceberg's single-value serialisation (little-endian int/long/float/double/date/time/
//! timestamp, UTF-8 bytes for strings, one byte for booleans). Bounds are optional in the spec.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub column_sizes: BTreeMap<i32, i64>,
    pub value_counts: BTreeMap<i32, i64>,
    pub null_value_counts: BTreeMap<i32, i64>,
    pub lower_bounds: BTreeMap<i32, Vec<u8>>,
    pub upper_bounds: BTreeMap<i32, Vec<u8>>,
}

/// A bound value as the Parquet statistics hold it, ordered as Iceberg orders the type.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Bytes(Vec<u8>),
}

impl Bound {
    fn cmp(&self, other: &Bound) -> Option<Ordering> {
        match (self, other) {
            (Bound::Bool(a), Bound::Bool(b)) => Some(a.cmp(b)),
            (Bound::I32(a), Bound::I32(b)) => Some(a.cmp(b)),
            (Bound::I64(a), Bound::I64(b)) => Some(a.cmp(b)),
            (Bound::F32(a), Bound::F32(b)) => Some(a.total_cmp(b)),
            (Bound::F64(a), Bound::F64(b)) => Some(a.total_cmp(b)),
            // UTF-8 strings order by their unsigned bytes.
            (Bound::Bytes(a), Bound::Bytes(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            Bound::Bool(b) => vec![u8::from(*b)],
            Bound::I32(v) => v.to_le_bytes().to_vec(),
            Bound::I64(v) => v.to_le_bytes().to_vec(),
            Bound::F32(v) => v.to_le_bytes().to_vec(),
            Bound::F64(v) => v.to_le_bytes().to_vec(),
            Bound::Bytes(b) => b.clone(),
        }
    }
}

/// The Iceberg types whose Parquet statistics are written as bounds, and the Parquet physical
/// kind they must have.
fn bounds_kind(iceberg_type: &str) -> Option<&'static str> {
    Some(match iceberg_type {
        "boolean" => "bool",
        "int" | "date" => "i32",
        "long" | "time" | "timestamp" | "timestamptz" => "i64",
        "float" => "f32",
        "double" => "f64",
        "string" => "bytes",
        _ => return None,
    })
}

/// Iceberg v2 times and timestamps are microseconds: a column in another unit gets no bounds.
fn micros_if_temporal(t: Option<&LogicalType>) -> bool {
    match t {
        Some(LogicalType::Timestamp(t)) => t.unit == TimeUnit::MICROS,
        Some(LogicalType::Time(t)) => t.unit == TimeUnit::MICROS,
        _ => true,
    }
}

/// (min, max) of one column chunk, when exact and of the expected kind.
fn chunk_bounds(s: &Statistics, kind: &str) -> Option<(Bound, Bound)> {
    if !s.min_is_exact() || !s.max_is_exact() {
        return None;
    }
    Some(match (s, kind) {
        (Statistics::Boolean(v), "bool") => {
            (Bound::Bool(*v.min_opt()?), Bound::Bool(*v.max_opt()?))
        }
        (Statistics::Int32(v), "i32") => (Bound::I32(*v.min_opt()?), Bound::I32(*v.max_opt()?)),
        (Statistics::Int64(v), "i64") => (Bound::I64(*v.min_opt()?), Bound::I64(*v.max_opt()?)),
        (Statistics::Float(v), "f32") => {
            let (a, b) = (*v.min_opt()?, *v.max_opt()?);
            if a.is_nan() || b.is_nan() {
                return None;
            }
            (Bound::F32(a), Bound::F32(b))
        }
        (Statistics::Double(v), "f64") => {
            let (a, b) = (*v.min_opt()?, *v.max_opt()?);
            if a.is_nan() || b.is_nan() {
                return None;
            }
            (Bound::F64(a), Bound::F64(b))
        }
        (Statistics::ByteArray(v), "bytes") => (
            Bound::Bytes(v.min_opt()?.data().to_vec()),
            Bound::Bytes(v.max_opt()?.data().to_vec()),
        ),
        _ => return None,
    })
}

/// A column's bounds over the chunks seen so far.
#[derive(Debug, Default)]
enum Bounds {
    /// No chunk with a value yet.
    #[default]
    Empty,
    Known(Bound, Bound),
    /// A chunk without exact bounds (or a nested column): the file gets none.
    Unknown,
}

impl Bounds {
    fn add(self, chunk: Option<(Bound, Bound)>) -> Bounds {
        let Some((lo, hi)) = chunk else {
            return Bounds::Unknown;
        };
        match self {
            Bounds::Empty => Bounds::Known(lo, hi),
            Bounds::Known(alo, ahi) => match (lo.cmp(&alo), hi.cmp(&ahi)) {
                (Some(l), Some(h)) => Bounds::Known(
                    if l == Ordering::Less { lo } else { alo },
                    if h == Ordering::Greater { hi } else { ahi },
                ),
                _ => Bounds::Unknown,
            },
            Bounds::Unknown => Bounds::Unknown,
        }
    }
}

#[derive(Default)]
struct Column {
    size: i64,
    values: i64,
    nulls: Option<i64>,
    bounds: Bounds,
}

/// The metrics of a written file. `types`: the table's Iceberg type names by field id.
pub fn metrics(meta: &ParquetMetaData, types: &HashMap<i32, String>) -> Metrics {
    let mut cols: BTreeMap<i32, Column> = BTreeMap::new();
    for rg in meta.row_groups() {
        for c in rg.columns() {
            let info = c.column_descr().self_type().get_basic_info();
            if !info.has_id() {
                continue;
            }
            let id = info.id();
            let top_level = c.column_path().parts().len() == 1;
            let col = cols.entry(id).or_insert_with(|| Column {
                nulls: Some(0),
                bounds: if top_level {
                    Bounds::Empty
                } else {
                    Bounds::Unknown
                },
                ..Default::default()
            });
            col.size += c.compressed_size();
            col.values += c.num_values();
            let stats = c.statistics();
            let nulls = stats.and_then(Statistics::null_count_opt);
            col.nulls = match (col.nulls, nulls) {
                (Some(n), Some(m)) => Some(n + m as i64),
                _ => None,
            };
            // A chunk of nulls only has no min/max: it does not widen the bounds.
            if nulls.is_some_and(|n| n as i64 == c.num_values()) {
                continue;
            }
            let kind = types
                .get(&id)
                .and_then(|ty| bounds_kind(ty))
                .filter(|_| micros_if_temporal(c.column_descr().logical_type_ref()));
            let chunk = match (stats, kind) {
                (Some(s), Some(k)) => chunk_bounds(s, k),
                _ => None,
            };
            col.bounds = std::mem::take(&mut col.bounds).add(chunk);
        }
    }
    let mut m = Metrics::default();
    for (id, c) in cols {
        m.column_sizes.insert(id, c.size);
        m.value_counts.insert(id, c.values);
        if let Some(n) = c.nulls {
            m.null_value_counts.insert(id, n);
        }
        if let Bounds::Known(lo, hi) = c.bounds {
            m.lower_bounds.insert(id, lo.encode());
            m.upper_bounds.insert(id, hi.encode());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::{ArrowWriter, PARQUET_FIELD_ID_META_KEY};
    use parquet::file::properties::WriterProperties;

    use super::*;

    fn field(name: &str, ty: DataType, id: i32) -> Field {
        Field::new(name, ty, true)
            .with_metadata([(PARQUET_FIELD_ID_META_KEY.to_string(), id.to_string())].into())
    }

    #[test]
    fn bounds_span_every_row_group_in_icebergs_encoding_and_null_only_columns_have_none() {
        let schema = Arc::new(Schema::new(vec![
            field("id", DataType::Int64, 1),
            field("s", DataType::Utf8, 2),
            field("n", DataType::Utf8, 3),
            field("x", DataType::Int64, 4),
        ]));
        let batch = |ids: Vec<i64>, s: Vec<Option<&str>>| {
            let n = ids.len();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids.clone())) as ArrayRef,
                    Arc::new(StringArray::from(s)),
                    Arc::new(StringArray::from(vec![None::<&str>; n])),
                    Arc::new(Int64Array::from(ids)),
                ],
            )
            .unwrap()
        };
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(2))
            .build();
        let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
        w.write(&batch(vec![5, -3], vec![Some("m"), None])).unwrap();
        w.write(&batch(vec![40, 7], vec![Some("b"), Some("zz")]))
            .unwrap();
        let meta = w.close().unwrap();
        assert_eq!(meta.num_row_groups(), 2);
        // Column 4 is a type lakehealth writes no bounds for (here: unknown to the table).
        let types: HashMap<i32, String> = [
            (1, "long"),
            (2, "string"),
            (3, "string"),
            (4, "decimal(9,2)"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
        let m = metrics(&meta, &types);
        assert_eq!(m.value_counts.get(&1), Some(&4));
        assert_eq!(m.null_value_counts.get(&2), Some(&1));
        assert_eq!(m.null_value_counts.get(&3), Some(&4));
        assert_eq!(
            m.lower_bounds.get(&1),
            Some(&(-3i64).to_le_bytes().to_vec())
        );
        assert_eq!(m.upper_bounds.get(&1), Some(&40i64.to_le_bytes().to_vec()));
        assert_eq!(m.lower_bounds.get(&2), Some(&b"b".to_vec()));
        assert_eq!(m.upper_bounds.get(&2), Some(&b"zz".to_vec()));
        assert!(!m.lower_bounds.contains_key(&3) && !m.upper_bounds.contains_key(&3));
        assert!(!m.lower_bounds.contains_key(&4));
        assert!(m.column_sizes.values().all(|&s| s > 0));
    }
}
