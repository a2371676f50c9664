//! Reading an input file as the table's schema without changing a value. Files written by other
//! engines differ from the table schema in three ways that used to change data silently:
//! Spark's INT96 timestamps (read as nanoseconds, they overflow outside 1677–2262, e.g. SCD2's
//! `9999-12-31`), column names in another case (Spark resolves names case-insensitively; an
//! exact-name lookup made the column all NULL), and casts that do not fit (a lenient cast turns
//! them into NULL). Here INT96 is read at the table's resolution, names match exactly or else by
//! a unique case-insensitive match, and every cast must cast back to the very same values.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
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

/// The batch's column for table column `name`: the exact name, else the one column equal to it
/// ignoring case.
fn find_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<Option<&'a ArrayRef>, ConformError> {
    if let Some(c) = batch.column_by_name(name) {
        return Ok(Some(c));
    }
    let schema = batch.schema();
    let mut found: Option<(usize, &str)> = None;
    for (i, f) in schema.fields().iter().enumerate() {
        if f.name().eq_ignore_ascii_case(name) {
            if let Some((_, a)) = found {
                return Err(ConformError::AmbiguousColumn {
                    column: name.into(),
                    a: a.to_string(),
                    b: f.name().clone(),
                });
            }
            found = Some((i, schema.fields()[i].name()));
        }
    }
    Ok(found.map(|(i, _)| batch.column(i)))
}

fn field_id(f: &Field) -> Option<&String> {
    f.metadata().get(parquet::arrow::PARQUET_FIELD_ID_META_KEY)
}

/// A table column with a Parquet field id (a column-mapped table) takes the file's column of
/// that name only if it has the same id, and a column of that id under another name is
/// refused: either way a name lookup would read another column than readers resolving ids.
fn check_field_id(batch: &RecordBatch, table: &Field) -> Result<(), ConformError> {
    let Some(want) = field_id(table) else {
        return Ok(());
    };
    let schema = batch.schema();
    let by_name = schema.fields().iter().find(|f| f.name() == table.name());
    let by_id = schema.fields().iter().find(|f| field_id(f) == Some(want));
    let mismatch = match (by_name, by_id) {
        (Some(n), _) => field_id(n).is_some_and(|id| id != want),
        (None, Some(_)) => true,
        (None, None) => false,
    };
    if !mismatch {
        return Ok(());
    }
    Err(ConformError::FieldId {
        column: table.name().clone(),
        file_id: by_name.and_then(|f| field_id(f).cloned()),
        table_id: Some(want.clone()),
    })
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
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(
            |f| match check_field_id(&batch, f).and_then(|()| find_column(&batch, f.name()))? {
                Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
                Some(c) => cast_exact(f.name(), c, f.data_type()),
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
