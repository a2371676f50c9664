//! Each file's range of each column, from delta-rs's flattened add actions (`min.<col>`,
//! `max.<col>`, `null_count.<col>`, `num_records`, `partition.<col>`: the columns Python's
//! `get_add_actions(flatten=True)` shows). Values become arrow's row format, whose byte order
//! is the column's order for every type (numbers, dates, timestamps, decimals, strings), so
//! the depth needs no per-type code.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow::compute::concat;
use arrow::row::{Row, RowConverter, Rows, SortField};
use arrow::util::display::array_value_to_string;

use super::depth::Span;
use crate::model::partition::PartitionValues;

/// The add actions of a table as one set of columns (delta-rs hands them over in batches).
pub struct AddColumns {
    batches: Vec<RecordBatch>,
    /// Each file's `num_records` (None when the statistics lack it).
    records: Option<Int64Array>,
}

/// What a file's statistics say of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Range,
    AllNull,
    Unknown,
}

/// One column's ranges, a file at each index, in the files' order (encoded once; the spans
/// borrow them).
pub struct ColumnSpans {
    /// Dotted path of the column as its statistics name it (`a.b` for a nested field).
    pub column: String,
    lo: Rows,
    hi: Rows,
    known: Vec<Known>,
}

impl ColumnSpans {
    /// The span of each file among `files` (indices into the table's files).
    pub fn spans(&self, files: impl Iterator<Item = usize>) -> Vec<Span<Row<'_>>> {
        files
            .map(|i| match self.known[i] {
                Known::Range => Span::Range {
                    lo: self.lo.row(i),
                    hi: self.hi.row(i),
                },
                Known::AllNull => Span::AllNull,
                Known::Unknown => Span::Unknown,
            })
            .collect()
    }

    pub fn files(&self) -> usize {
        self.known.len()
    }
}

impl AddColumns {
    pub fn new(batches: Vec<RecordBatch>) -> Self {
        let mut c = Self {
            batches,
            records: None,
        };
        // Read by every column's spans: concatenated once.
        c.records = c
            .column("num_records")
            .and_then(|a| a.as_any().downcast_ref::<Int64Array>().cloned());
        c
    }

    pub fn files(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// The column named `name` across every batch (None if absent from any).
    fn column(&self, name: &str) -> Option<ArrayRef> {
        let parts: Vec<ArrayRef> = self
            .batches
            .iter()
            .map(|b| b.column_by_name(name).cloned())
            .collect::<Option<_>>()?;
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        match refs.as_slice() {
            [] => None,
            [_] => Some(Arc::clone(&parts[0])),
            _ => concat(&refs).ok(),
        }
    }

    /// Each file's size in bytes (`size_bytes`), when delta-rs gave it.
    pub fn sizes(&self) -> Option<Vec<i64>> {
        let a = self.column("size_bytes")?;
        let sizes = a.as_any().downcast_ref::<Int64Array>()?;
        Some((0..sizes.len()).map(|i| sizes.value(i)).collect())
    }

    /// Columns that have both a minimum and a maximum, in the statistics' order.
    pub fn stat_columns(&self) -> Vec<String> {
        let Some(first) = self.batches.first() else {
            return Vec::new();
        };
        let schema = first.schema();
        schema
            .fields()
            .iter()
            .filter_map(|f| f.name().strip_prefix("min.").map(str::to_string))
            .filter(|c| schema.field_with_name(&format!("max.{c}")).is_ok())
            .collect()
    }

    /// Each file's partition (in partition-column order), or None for an unpartitioned table.
    pub fn partitions(&self) -> Option<Vec<PartitionValues>> {
        let first = self.batches.first()?;
        let names: Vec<String> = first
            .schema()
            .fields()
            .iter()
            .filter_map(|f| f.name().strip_prefix("partition.").map(str::to_string))
            .collect();
        if names.is_empty() {
            return None;
        }
        let cols: Vec<(String, ArrayRef)> = names
            .into_iter()
            .filter_map(|n| self.column(&format!("partition.{n}")).map(|a| (n, a)))
            .collect();
        Some(
            (0..self.files())
                .map(|i| {
                    PartitionValues(
                        cols.iter()
                            .map(|(n, a)| {
                                let v = (!a.is_null(i))
                                    .then(|| array_value_to_string(a, i).ok())
                                    .flatten();
                                (n.clone(), v)
                            })
                            .collect(),
                    )
                })
                .collect(),
        )
    }

    /// `column`'s span in every file. None when its type has no order arrow can encode.
    pub fn spans(&self, column: &str) -> Option<ColumnSpans> {
        let min = self.column(&format!("min.{column}"))?;
        let max = self.column(&format!("max.{column}"))?;
        let converter = RowConverter::new(vec![SortField::new(min.data_type().clone())]).ok()?;
        let lo = converter.convert_columns(std::slice::from_ref(&min)).ok()?;
        let hi = converter.convert_columns(std::slice::from_ref(&max)).ok()?;
        let nulls = self
            .column(&format!("null_count.{column}"))
            .and_then(|a| a.as_any().downcast_ref::<Int64Array>().cloned());
        let all_null = |i: usize| match (&nulls, &self.records) {
            (Some(n), Some(r)) if n.is_valid(i) && r.is_valid(i) => n.value(i) == r.value(i),
            _ => false,
        };
        let known = (0..min.len())
            .map(|i| {
                if min.is_valid(i) && max.is_valid(i) {
                    Known::Range
                } else if all_null(i) {
                    Known::AllNull
                } else {
                    Known::Unknown
                }
            })
            .collect();
        Some(ColumnSpans {
            column: column.to_string(),
            lo,
            hi,
            known,
        })
    }
}
