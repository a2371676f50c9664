//! The schema a compaction writes: the table's file schema (physical names when column-mapped,
//! row tracking's hidden columns when enabled), read by the coordinator and every worker.

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use deltalake::{DeltaTable, DeltaTableError};

use crate::delta::column_mapping::{LayoutError, physical_layout};
use crate::delta::features;
use crate::delta::row_tracking::with_hidden_columns;

/// Why the table's file schema cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(transparent)]
    Table(#[from] DeltaTableError),
    /// The table's schema has a type Arrow cannot hold.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    /// A column-mapped table's physical schema.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// The table's file schema (partition columns are not in data files), with row tracking's
/// hidden columns when it is enabled (`row_tracking`: the outputs hold every row's ids).
pub(crate) fn file_schema(table: &DeltaTable) -> Result<SchemaRef, SchemaError> {
    let data = match physical_layout(table)? {
        // Column-mapped: physical names and field ids.
        Some(layout) => layout.file_schema.as_ref().clone(),
        None => logical_file_schema(table)?,
    };
    Ok(Arc::new(match features::hidden_columns(table)? {
        Some(hidden) => with_hidden_columns(&data, &hidden),
        None => data,
    }))
}

/// The table's schema without its partition columns.
fn logical_file_schema(table: &DeltaTable) -> Result<Schema, SchemaError> {
    let s = table.snapshot()?;
    let cols = s.metadata().partition_columns().to_vec();
    let full: Schema = deltalake::kernel::engine::arrow_conversion::TryIntoArrow::try_into_arrow(
        s.schema().as_ref(),
    )
    .map_err(SchemaError::Arrow)?;
    Ok(Schema::new(
        full.fields()
            .iter()
            .filter(|f| !cols.contains(f.name()))
            .cloned()
            .collect::<Vec<_>>(),
    ))
}
