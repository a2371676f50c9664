//! One column's content, digested as a stream: the same sequence of values gives the same
//! digest however it is split into batches, sliced or buffered, and any other sequence (a value
//! changed, lost, added or moved, a null where a value was) gives another, short of a 128-bit
//! collision.
//!
//! A column is three byte streams, each fed to an XXH3-128 state as it arrives:
//! - validity: one byte per row, 1 valid or 0 null;
//! - values: the valid values' bytes, in order: a fixed-width value's bytes (floats bitwise, so
//!   -0.0 and NaN payloads count), a boolean's byte, a string's or binary's bytes;
//! - lengths: for strings and binaries, each valid value's length (where one value ends).
//!
//! A nested column (list, struct, map, dictionary …) is encoded row by row with Arrow's row
//! format, and each row's bytes and length are fed the same way.
//!
//! Streams, not per-row hashes: contiguous buffers hash at memory speed, where hashing 16 M
//! short rows one by one cost a fifth of a compaction's CPU.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, GenericByteArray, ListArray, MapArray, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{ArrowNativeType, ByteArrayType, DataType, Field, Fields};
use arrow::error::ArrowError;
use arrow::row::{RowConverter, SortField};
use xxhash_rust::xxh3::Xxh3Default;

pub struct ColumnDigest {
    validity: Xxh3Default,
    values: Xxh3Default,
    lengths: Xxh3Default,
    /// For a nested column: Arrow's row converter, made from its first batch.
    converter: Option<RowConverter>,
    /// Bytes gathered before one update (validity flags, lengths, booleans).
    scratch: Vec<u8>,
}

impl Default for ColumnDigest {
    fn default() -> Self {
        Self {
            validity: Xxh3Default::new(),
            values: Xxh3Default::new(),
            lengths: Xxh3Default::new(),
            converter: None,
            scratch: Vec::new(),
        }
    }
}

impl ColumnDigest {
    /// Feeds the column's next rows.
    pub fn update(&mut self, a: &ArrayRef) -> Result<(), ArrowError> {
        let nulls = a.logical_nulls();
        let nulls = nulls.as_ref();
        self.scratch.clear();
        match nulls {
            None => self.scratch.resize(a.len(), 1),
            Some(n) => self.scratch.extend(n.iter().map(u8::from)),
        }
        self.validity.update(&self.scratch);
        let t = a.data_type();
        match t {
            // Every value is null: the validity stream says all there is.
            DataType::Null => {}
            DataType::Boolean => {
                let b = a.as_boolean().values();
                self.scratch.clear();
                self.scratch.extend(
                    (0..a.len())
                        .filter(|&r| valid(nulls, r))
                        .map(|r| u8::from(b.value(r))),
                );
                self.values.update(&self.scratch);
            }
            DataType::Utf8 => self.bytes(a.as_string::<i32>(), nulls),
            DataType::LargeUtf8 => self.bytes(a.as_string::<i64>(), nulls),
            DataType::Binary => self.bytes(a.as_binary::<i32>(), nulls),
            DataType::LargeBinary => self.bytes(a.as_binary::<i64>(), nulls),
            DataType::Utf8View => {
                let v = a.as_string_view();
                self.each_value(nulls, a.len(), |r| v.value(r).as_bytes());
            }
            DataType::BinaryView => {
                let v = a.as_binary_view();
                self.each_value(nulls, a.len(), |r| v.value(r));
            }
            DataType::FixedSizeBinary(w) => self.fixed(a, (*w).max(0) as usize, nulls),
            t => match t.primitive_width() {
                Some(w) => self.fixed(a, w, nulls),
                None => self.nested(a)?,
            },
        }
        Ok(())
    }

    /// The three streams' digests.
    pub fn finish(&self) -> [u128; 3] {
        [
            self.validity.digest128(),
            self.values.digest128(),
            self.lengths.digest128(),
        ]
    }

    /// Fixed-width values: the valid rows' bytes, a run of valid rows at a time.
    fn fixed(&mut self, a: &ArrayRef, w: usize, nulls: Option<&NullBuffer>) {
        let data = a.to_data();
        let Some(buf) = data.buffers().first() else {
            return;
        };
        let values = &buf.as_slice()[data.offset() * w..(data.offset() + data.len()) * w];
        match nulls {
            None => self.values.update(values),
            Some(n) => {
                for (start, end) in n.valid_slices() {
                    self.values.update(&values[start * w..end * w]);
                }
            }
        }
    }

    /// Strings and binaries: each run of valid rows' bytes in one update, their lengths in
    /// another.
    fn bytes<T: ByteArrayType>(&mut self, a: &GenericByteArray<T>, nulls: Option<&NullBuffer>) {
        let offsets = a.value_offsets();
        let data = a.value_data();
        let runs: Vec<(usize, usize)> = match nulls {
            None => vec![(0, a.len())],
            Some(n) => n.valid_slices().collect(),
        };
        self.scratch.clear();
        for (start, end) in runs {
            let (from, to) = (offsets[start].as_usize(), offsets[end].as_usize());
            self.values.update(&data[from..to]);
            for w in offsets[start..=end].windows(2) {
                let len = (w[1].as_usize() - w[0].as_usize()) as u64;
                self.scratch.extend_from_slice(&len.to_le_bytes());
            }
        }
        self.lengths.update(&self.scratch);
    }

    /// Values that are not in one contiguous buffer, one at a time.
    fn each_value<'a>(
        &mut self,
        nulls: Option<&NullBuffer>,
        rows: usize,
        value: impl Fn(usize) -> &'a [u8],
    ) {
        self.scratch.clear();
        for r in (0..rows).filter(|&r| valid(nulls, r)) {
            let v = value(r);
            self.values.update(v);
            self.scratch
                .extend_from_slice(&(v.len() as u64).to_le_bytes());
        }
        self.lengths.update(&self.scratch);
    }

    /// A nested column: each row's bytes in Arrow's row format (nulls included: that format
    /// encodes them), maps as lists of entries.
    fn nested(&mut self, a: &ArrayRef) -> Result<(), ArrowError> {
        let a = maps_as_lists(a);
        let converter = match &mut self.converter {
            Some(c) => c,
            slot => slot.insert(RowConverter::new(vec![SortField::new(
                a.data_type().clone(),
            )])?),
        };
        let rows = converter.convert_columns(&[a])?;
        self.scratch.clear();
        for row in rows.iter() {
            let v = row.as_ref();
            self.values.update(v);
            self.scratch
                .extend_from_slice(&(v.len() as u64).to_le_bytes());
        }
        self.lengths.update(&self.scratch);
        Ok(())
    }
}

fn valid(nulls: Option<&NullBuffer>, r: usize) -> bool {
    nulls.is_none_or(|n| n.is_valid(r))
}

/// A map is a list of key/value structs; encoding it as one keeps every entry (and its order)
/// while using the row format's list codec, which handles every nesting depth.
pub(super) fn maps_as_lists(a: &ArrayRef) -> ArrayRef {
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
