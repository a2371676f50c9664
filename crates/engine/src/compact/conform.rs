//! Reading an input file as the table's schema without changing a value. Files written by other
//! engines differ from the table schema in three ways that used to change data silently:
//! Spark's INT96 timestamps (read as nanoseconds, they overflow outside 1677–2262, e.g. SCD2's
//! `9999-12-31`), column names in another case (Spark resolves names case-insensitively; an
//! exact-name lookup made the column all NULL), and casts that do not fit (a lenient cast turns
//! them into NULL). Here INT96 is read at the table's resolution, names match exactly or else by
//! a unique case-insensitive match, at every depth (struct children by name and, in a
//! column-mapped table, by field id: never by position), and every cast must cast back to the
//! very same values.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, LargeListArray, ListArray, MapArray, RecordBatch, StructArray,
    new_null_array,
};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};
use arrow::row::{RowConverter, SortField};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::Type as PhysicalType;
use parquet::schema::types::Type;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConformError {
    #[error("column {column}: INT96 timestamps nested in a {kind} cannot be read without overflow")]
    NestedInt96 { column: String, kind: String },
    #[error("columns {a:?} and {b:?} both match the table column {column:?} when case is ignored")]
    AmbiguousColumn {
        column: String,
        a: String,
        b: String,
    },
    #[error("the file lacks the non-nullable column {column:?}")]
    MissingColumn { column: String },
    #[error("column {column:?}: cannot convert {from} to the table's {to}: {detail}")]
    Cast {
        column: String,
        from: String,
        to: String,
        detail: String,
    },
    #[error(
        "column {column:?}: converting {from} to the table's {to} would change values (row {row}); the bin is refused"
    )]
    Lossy {
        column: String,
        from: String,
        to: String,
        row: usize,
    },
    /// A column-mapped file whose column ids disagree with the table's: readers resolve
    /// columns by id there, a name match would read another column.
    #[error(
        "column {column:?}: the file's field id {file_id:?} is not the table's {table_id:?}; the bin is refused"
    )]
    FieldId {
        column: String,
        file_id: Option<String>,
        table_id: Option<String>,
    },
    #[error("{0}")]
    Arrow(String),
}

fn table_field<'a>(table: &'a Schema, name: &str) -> Option<&'a Field> {
    table
        .fields()
        .iter()
        .find(|f| f.name() == name)
        .or_else(|| {
            table
                .fields()
                .iter()
                .find(|f| f.name().eq_ignore_ascii_case(name))
        })
        .map(|f| f.as_ref())
}

fn has_int96(t: &Type) -> bool {
    match t {
        Type::PrimitiveType { physical_type, .. } => *physical_type == PhysicalType::INT96,
        Type::GroupType { fields, .. } => fields.iter().any(|f| has_int96(f)),
    }
}

/// Reader metadata for one input file whose footer was read with default options: top-level
/// INT96 columns are read at the table column's timestamp unit (microseconds for Delta), which
/// covers years 0001–9999 exactly.
pub fn int96_safe_metadata(
    meta: ArrowReaderMetadata,
    table: &Schema,
) -> Result<ArrowReaderMetadata, ConformError> {
    let roots = meta
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .get_fields()
        .to_vec();
    if !roots.iter().any(|t| has_int96(t)) {
        return Ok(meta);
    }
    let arrow = meta.schema().clone();
    if roots.len() != arrow.fields().len() {
        return Err(ConformError::Arrow(
            "the file's Parquet and Arrow schemas disagree on the number of columns".into(),
        ));
    }
    let mut fields = Vec::with_capacity(roots.len());
    for (t, f) in roots.iter().zip(arrow.fields()) {
        let is_int96_leaf = matches!(
            t.as_ref(),
            Type::PrimitiveType { physical_type, .. } if *physical_type == PhysicalType::INT96
        );
        if is_int96_leaf {
            let unit_tz = match table_field(table, f.name()).map(|tf| tf.data_type()) {
                Some(DataType::Timestamp(unit, tz)) => (*unit, tz.clone()),
                _ => (TimeUnit::Microsecond, None),
            };
            fields.push(Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(DataType::Timestamp(unit_tz.0, unit_tz.1)),
            ));
        } else if has_int96(t) {
            return Err(ConformError::NestedInt96 {
                column: f.name().clone(),
                kind: format!("{}", f.data_type()),
            });
        } else {
            fields.push(f.clone());
        }
    }
    let hint = Arc::new(Schema::new_with_metadata(fields, arrow.metadata().clone()));
    ArrowReaderMetadata::try_new(
        meta.metadata().clone(),
        ArrowReaderOptions::new().with_schema(hint),
    )
    .map_err(|e| ConformError::Arrow(e.to_string()))
}

fn field_id(f: &Field) -> Option<&String> {
    f.metadata().get(parquet::arrow::PARQUET_FIELD_ID_META_KEY)
}

/// The column among a file's `fields` (with their `columns`) that stands for the table's field
/// `want` (at `path`): the exact name, else the one name equal ignoring case. Where the table
/// gives the field a Parquet field id (a column-mapped table), readers resolve columns by id,
/// so the column found must carry that id (a file without ids is matched by name), and a
/// column carrying it under another name is refused: a name lookup would read another column.
fn find_field<'a>(
    fields: &Fields,
    columns: &'a [ArrayRef],
    want: &Field,
    path: &str,
) -> Result<Option<&'a ArrayRef>, ConformError> {
    let name = want.name();
    let mut found = fields.iter().position(|f| f.name() == name);
    if found.is_none() {
        for (i, f) in fields.iter().enumerate() {
            if f.name().eq_ignore_ascii_case(name) {
                if let Some(j) = found {
                    return Err(ConformError::AmbiguousColumn {
                        column: path.into(),
                        a: fields[j].name().clone(),
                        b: f.name().clone(),
                    });
                }
                found = Some(i);
            }
        }
    }
    if let Some(wanted) = field_id(want) {
        let by_id = fields.iter().position(|f| field_id(f) == Some(wanted));
        let agrees = match found {
            Some(i) => match field_id(&fields[i]) {
                Some(id) => id == wanted,
                None => by_id.is_none(),
            },
            None => by_id.is_none(),
        };
        if !agrees {
            return Err(ConformError::FieldId {
                column: path.into(),
                file_id: found.and_then(|i| field_id(&fields[i]).cloned()),
                table_id: Some(wanted.clone()),
            });
        }
    }
    Ok(found.map(|i| &columns[i]))
}

/// `c` as the table's type `to` without changing a value. Struct children are matched by
/// name and field id at every depth, a missing nullable child reads as NULL and a child the
/// table no longer has is left out (Arrow's cast would match children by position when names
/// differ: after a nested column was dropped and another added, old values would land in the
/// new one). List elements and map entries keep their positions; leaves are cast exactly.
fn conform_array(path: &str, c: &ArrayRef, to: &DataType) -> Result<ArrayRef, ConformError> {
    if c.data_type() == to {
        return Ok(c.clone());
    }
    let arrow = |e: arrow::error::ArrowError| ConformError::Arrow(format!("{path}: {e}"));
    let out: ArrayRef = match (c.data_type(), to) {
        (DataType::Struct(_), DataType::Struct(to_fields)) => {
            Arc::new(conform_struct(path, c.as_struct(), to_fields)?)
        }
        (DataType::List(_), DataType::List(to_item)) => {
            let l = c.as_list::<i32>();
            let values = conform_array(&format!("{path}[]"), l.values(), to_item.data_type())?;
            Arc::new(
                ListArray::try_new(
                    to_item.clone(),
                    l.offsets().clone(),
                    values,
                    l.nulls().cloned(),
                )
                .map_err(arrow)?,
            )
        }
        (DataType::LargeList(_), DataType::LargeList(to_item)) => {
            let l = c.as_list::<i64>();
            let values = conform_array(&format!("{path}[]"), l.values(), to_item.data_type())?;
            Arc::new(
                LargeListArray::try_new(
                    to_item.clone(),
                    l.offsets().clone(),
                    values,
                    l.nulls().cloned(),
                )
                .map_err(arrow)?,
            )
        }
        (DataType::Map(_, _), DataType::Map(to_entries, sorted)) => {
            match conform_map(path, c.as_map(), to_entries, *sorted)? {
                Some(m) => Arc::new(m),
                None => return cast_exact(path, c, to),
            }
        }
        _ => return cast_exact(path, c, to),
    };
    Ok(out)
}

/// A struct's children by name and field id (`find_field`), each conformed in turn.
fn conform_struct(
    path: &str,
    s: &StructArray,
    to_fields: &Fields,
) -> Result<StructArray, ConformError> {
    let children = to_fields
        .iter()
        .map(|f| {
            let child = format!("{path}.{}", f.name());
            match find_field(s.fields(), s.columns(), f, &child)? {
                Some(a) => conform_array(&child, a, f.data_type()),
                None if f.is_nullable() => Ok(new_null_array(f.data_type(), s.len())),
                None => Err(ConformError::MissingColumn { column: child }),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    StructArray::try_new(to_fields.clone(), children, s.nulls().cloned())
        .map_err(|e| ConformError::Arrow(format!("{path}: {e}")))
}

/// A map's keys and values by position (their names vary between writers); None when either
/// side is not a two-field entry struct (then it is cast as a whole).
fn conform_map(
    path: &str,
    m: &MapArray,
    to_entries: &FieldRef,
    sorted: bool,
) -> Result<Option<MapArray>, ConformError> {
    let DataType::Struct(to_kv) = to_entries.data_type() else {
        return Ok(None);
    };
    if to_kv.len() != 2 || m.entries().num_columns() != 2 {
        return Ok(None);
    }
    let arrow = |e: arrow::error::ArrowError| ConformError::Arrow(format!("{path}: {e}"));
    let keys = conform_array(&format!("{path}.key"), m.keys(), to_kv[0].data_type())?;
    let values = conform_array(&format!("{path}.value"), m.values(), to_kv[1].data_type())?;
    let entries = StructArray::try_new(to_kv.clone(), vec![keys, values], None).map_err(arrow)?;
    MapArray::try_new(
        to_entries.clone(),
        m.offsets().clone(),
        entries,
        m.nulls().cloned(),
        sorted,
    )
    .map(Some)
    .map_err(arrow)
}

/// Casts `c` to `to` and proves it lossless: the result casts back to exactly the input.
fn cast_exact(name: &str, c: &ArrayRef, to: &DataType) -> Result<ArrayRef, ConformError> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let err = |detail: String| ConformError::Cast {
        column: name.into(),
        from: c.data_type().to_string(),
        to: to.to_string(),
        detail,
    };
    let out = cast_with_options(c, to, &strict).map_err(|e| err(e.to_string()))?;
    let back = cast_with_options(&out, c.data_type(), &strict).map_err(|e| {
        err(format!(
            "the conversion cannot be checked ({e}), so it is refused"
        ))
    })?;
    let conv = RowConverter::new(vec![SortField::new(c.data_type().clone())])
        .map_err(|e| err(e.to_string()))?;
    let a = conv
        .convert_columns(std::slice::from_ref(c))
        .map_err(|e| err(e.to_string()))?;
    let b = conv
        .convert_columns(&[back])
        .map_err(|e| err(e.to_string()))?;
    if let Some(row) = (0..a.num_rows()).find(|&i| a.row(i) != b.row(i)) {
        return Err(ConformError::Lossy {
            column: name.into(),
            from: c.data_type().to_string(),
            to: to.to_string(),
            row,
        });
    }
    Ok(out)
}

/// The batch as the table's file schema: same values, table names and types, missing nullable
/// columns as NULL (the file predates the column, so readers see NULL there already).
pub fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ConformError> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let n = batch.num_rows();
    let file = batch.schema();
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(
            |f| match find_field(file.fields(), batch.columns(), f, f.name())? {
                Some(c) => conform_array(f.name(), c, f.data_type()),
                None if f.is_nullable() => Ok(new_null_array(f.data_type(), n)),
                None => Err(ConformError::MissingColumn {
                    column: f.name().clone(),
                }),
            },
        )
        .collect::<Result<_, _>>()?;
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| ConformError::Arrow(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with_id(f: Field, id: &str) -> Field {
        f.with_metadata(HashMap::from([(
            parquet::arrow::PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    }

    fn structs(fields: Vec<Field>, columns: Vec<ArrayRef>) -> ArrayRef {
        Arc::new(StructArray::new(fields.into(), columns, None))
    }

    #[test]
    fn a_struct_child_is_matched_by_name_never_by_position() {
        // The file's s{x, y}; the table dropped s.y and added s.z (same count, other name).
        let file = structs(
            vec![
                Field::new("x", DataType::Int64, true),
                Field::new("y", DataType::Int64, true),
            ],
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Int64Array::from(vec![10, 20])),
            ],
        );
        let to = DataType::Struct(
            vec![
                Field::new("x", DataType::Int64, true),
                Field::new("z", DataType::Int64, true),
            ]
            .into(),
        );
        let out = conform_array("s", &file, &to).unwrap();
        let out = out.as_struct();
        assert_eq!(
            out.column(0).as_ref(),
            &Int64Array::from(vec![1, 2]) as &dyn Array
        );
        assert_eq!(
            out.column(1).null_count(),
            2,
            "s.z reads NULL, not s.y's values"
        );
    }

    #[test]
    fn a_struct_in_a_list_is_matched_by_name_and_field_id() {
        let item = |fields: Vec<Field>, cols: Vec<ArrayRef>| {
            let s = structs(fields.clone(), cols);
            let f = Arc::new(Field::new("element", s.data_type().clone(), true));
            let l: ArrayRef = Arc::new(ListArray::new(
                f,
                arrow::buffer::OffsetBuffer::from_lengths([2]),
                s,
                None,
            ));
            l
        };
        let file = item(
            vec![with_id(Field::new("a", DataType::Int64, true), "7")],
            vec![Arc::new(Int64Array::from(vec![1, 2]))],
        );
        let to_struct = |id: &str| {
            DataType::Struct(vec![with_id(Field::new("a", DataType::Int64, true), id)].into())
        };
        let to = |id: &str| DataType::List(Arc::new(Field::new("element", to_struct(id), true)));
        let out = conform_array("l", &file, &to("7")).unwrap();
        assert_eq!(out.data_type(), &to("7"));
        assert!(matches!(
            conform_array("l", &file, &to("8")),
            Err(ConformError::FieldId { .. })
        ));
    }

    #[test]
    fn a_column_whose_field_id_is_not_the_tables_is_refused() {
        let table = schema(vec![with_id(
            Field::new("col-a", DataType::Int64, true),
            "1",
        )]);
        let batch = |f: Field| {
            RecordBatch::try_new(schema(vec![f]), vec![Arc::new(Int64Array::from(vec![1]))])
                .unwrap()
        };
        // Same name, same id: taken.
        let ok = batch(with_id(Field::new("col-a", DataType::Int64, true), "1"));
        assert_eq!(conform(ok, &table).unwrap().column(0).null_count(), 0);
        // Same name, another id.
        let other = batch(with_id(Field::new("col-a", DataType::Int64, true), "2"));
        assert!(matches!(
            conform(other, &table),
            Err(ConformError::FieldId { .. })
        ));
        // The id under another name: not silently NULL.
        let renamed = batch(with_id(Field::new("old", DataType::Int64, true), "1"));
        assert!(matches!(
            conform(renamed, &table),
            Err(ConformError::FieldId { .. })
        ));
        // A file without ids is matched by name.
        let plain = batch(Field::new("col-a", DataType::Int64, true));
        assert_eq!(conform(plain, &table).unwrap().column(0).null_count(), 0);
        // The name without an id while another column holds the id: refused.
        let two = RecordBatch::try_new(
            schema(vec![
                Field::new("col-a", DataType::Int64, true),
                with_id(Field::new("old", DataType::Int64, true), "1"),
            ]),
            vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![2])),
            ],
        )
        .unwrap();
        assert!(matches!(
            conform(two, &table),
            Err(ConformError::FieldId { .. })
        ));
    }
    use arrow::array::{Array, Int32Array, Int64Array, TimestampNanosecondArray};

    fn schema(fields: Vec<Field>) -> SchemaRef {
        Arc::new(Schema::new(fields))
    }

    #[test]
    fn a_column_named_in_another_case_keeps_its_values() {
        let b = RecordBatch::try_new(
            schema(vec![Field::new("value", DataType::Int64, true)]),
            vec![Arc::new(Int64Array::from(vec![1, 2]))],
        )
        .unwrap();
        let t = schema(vec![Field::new("Value", DataType::Int64, true)]);
        let out = conform(b, &t).unwrap();
        assert_eq!(out.column(0).null_count(), 0);
        assert_eq!(
            out.column(0).as_any().downcast_ref::<Int64Array>().unwrap(),
            &Int64Array::from(vec![1, 2])
        );
    }

    #[test]
    fn a_cast_that_does_not_fit_is_refused_not_nulled() {
        let b = RecordBatch::try_new(
            schema(vec![Field::new("x", DataType::Int64, true)]),
            vec![Arc::new(Int64Array::from(vec![1, i64::MAX]))],
        )
        .unwrap();
        let t = schema(vec![Field::new("x", DataType::Int32, true)]);
        assert!(conform(b, &t).is_err());
    }

    #[test]
    fn a_cast_that_drops_precision_is_refused() {
        let b = RecordBatch::try_new(
            schema(vec![Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            )]),
            vec![Arc::new(TimestampNanosecondArray::from(vec![1_000, 1_001]))],
        )
        .unwrap();
        let t = schema(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        )]);
        let e = conform(b, &t).unwrap_err();
        assert!(matches!(e, ConformError::Lossy { row: 1, .. }), "{e}");
    }

    #[test]
    fn a_widening_cast_is_accepted() {
        let b = RecordBatch::try_new(
            schema(vec![Field::new("x", DataType::Int32, true)]),
            vec![Arc::new(Int32Array::from(vec![Some(1), None]))],
        )
        .unwrap();
        let t = schema(vec![Field::new("x", DataType::Int64, true)]);
        let out = conform(b, &t).unwrap();
        assert_eq!(out.column(0).null_count(), 1);
    }

    #[test]
    fn two_columns_matching_ignoring_case_are_ambiguous() {
        let b = RecordBatch::try_new(
            schema(vec![
                Field::new("ab", DataType::Int64, true),
                Field::new("AB", DataType::Int64, true),
            ]),
            vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![2])),
            ],
        )
        .unwrap();
        let t = schema(vec![Field::new("Ab", DataType::Int64, true)]);
        let e = conform(b.clone(), &t).unwrap_err();
        assert!(matches!(e, ConformError::AmbiguousColumn { .. }), "{e}");
        let t = schema(vec![Field::new("ab", DataType::Int64, true)]);
        let out = conform(b, &t).unwrap();
        let col = out.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(col.value(0), 1, "an exact match wins");
    }
}
