//! Column-mapped tables (`delta.columnMapping.mode` `name` or `id`) are rewritten as physical
//! files, as `PROTOCOL.md` asks of a writer: data files name their columns by the physical names
//! (`delta.columnMapping.physicalName`) and carry each column's id as its Parquet field id,
//! statistics and partition values are keyed by physical names. A compaction reads, proves and
//! writes physical columns only, so renamed or dropped logical columns never enter it. The
//! physical schema, the statistics columns (`delta.dataSkippingNumIndexedCols` /
//! `delta.dataSkippingStatsColumns`, resolved to physical names) come from delta-kernel's
//! table configuration, the same one delta-rs loaded.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use delta_kernel::expressions::ColumnName;
use delta_kernel::schema::{DataType as KernelType, StructField, StructType};
use delta_kernel::table_features::ColumnMappingMode;
use deltalake::DeltaTable;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

/// The metadata key of a field's physical name (`PROTOCOL.md`, Column Mapping).
pub const PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";

/// How a column-mapped table's data files are laid out.
#[derive(Debug, Clone)]
pub struct PhysicalLayout {
    /// The data files' schema: physical names, Parquet field ids (the only field metadata
    /// kept), no partition columns.
    pub file_schema: SchemaRef,
    /// The same schema as delta-kernel's, which its statistics collector types columns by.
    pub kernel_schema: StructType,
    /// The physical columns whose statistics every output carries.
    pub stats_columns: Vec<ColumnName>,
    /// Partition columns' physical names by logical name: partition values are keyed by them.
    pub partition_names: HashMap<String, String>,
}

/// Why a column-mapped table's physical layout cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(transparent)]
    Table(#[from] deltalake::DeltaTableError),
    #[error("the table's physical schema: {0}")]
    Kernel(#[from] delta_kernel::Error),
    #[error("the table's physical schema has a type Arrow cannot hold: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("partition column {0:?} is not in the table's schema")]
    MissingPartitionColumn(String),
}

/// The physical name of a logical field: its own name when the table is not column-mapped
/// (a stale annotation is ignored, as delta-kernel does).
pub fn physical_name(field: &StructField, mode: ColumnMappingMode) -> &str {
    match (mode, field.metadata().get(PHYSICAL_NAME_KEY)) {
        (ColumnMappingMode::None, _) => field.name(),
        (_, Some(delta_kernel::schema::MetadataValue::String(p))) => p,
        _ => field.name(),
    }
}

/// The layout of `table`'s loaded snapshot when it is column-mapped; None when it is not.
pub fn physical_layout(table: &DeltaTable) -> Result<Option<PhysicalLayout>, LayoutError> {
    let mode = table
        .snapshot()?
        .snapshot()
        .table_configuration()
        .column_mapping_mode();
    if mode == ColumnMappingMode::None {
        return Ok(None);
    }
    layout(table).map(Some)
}

/// The layout of `table`'s loaded snapshot, column-mapped or not (then physical names are the
/// logical ones and files carry no field ids).
pub fn layout(table: &DeltaTable) -> Result<PhysicalLayout, LayoutError> {
    let config = table.snapshot()?.snapshot().table_configuration();
    let mode = config.column_mapping_mode();
    let partition_names = partition_physical_names(
        &config.logical_schema(),
        config.logical_partition_columns(),
        mode,
    )?;
    let partitions: Vec<&String> = partition_names.values().collect();
    let kernel_schema = StructType::try_new(
        config
            .physical_schema()
            .fields()
            .filter(|f| !partitions.contains(&&f.name().to_string()))
            .cloned(),
    )?;
    let arrow: Schema = (&kernel_schema).try_into_arrow()?;
    let stats = config.build_expected_stats_schemas(None, None)?;
    Ok(PhysicalLayout {
        file_schema: Arc::new(only_field_ids(&arrow)),
        kernel_schema,
        stats_columns: stats_columns(&stats.physical),
        partition_names,
    })
}

/// Partition columns' physical names by logical name.
pub fn partition_physical_names(
    logical: &StructType,
    partition_columns: &[String],
    mode: ColumnMappingMode,
) -> Result<HashMap<String, String>, LayoutError> {
    partition_columns
        .iter()
        .map(|c| {
            let f = logical
                .field(c)
                .ok_or_else(|| LayoutError::MissingPartitionColumn(c.clone()))?;
            Ok((c.clone(), physical_name(f, mode).to_string()))
        })
        .collect()
}

/// The schema with every field's metadata dropped but its Parquet field id, at every depth:
/// the column-mapping keys are the log's business, and input files read back carry only ids.
pub fn only_field_ids(schema: &Schema) -> Schema {
    Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Arc::new(field_with_id_only(f)))
            .collect::<Vec<_>>(),
    )
}

fn field_with_id_only(f: &FieldRef) -> Field {
    let metadata = f
        .metadata()
        .get(PARQUET_FIELD_ID_META_KEY)
        .map(|id| HashMap::from([(PARQUET_FIELD_ID_META_KEY.to_string(), id.clone())]))
        .unwrap_or_default();
    f.as_ref()
        .clone()
        .with_data_type(type_with_ids_only(f.data_type()))
        .with_metadata(metadata)
}

fn type_with_ids_only(t: &DataType) -> DataType {
    match t {
        DataType::Struct(fs) => DataType::Struct(Fields::from(
            fs.iter().map(field_with_id_only).collect::<Vec<_>>(),
        )),
        DataType::List(f) => DataType::List(Arc::new(field_with_id_only(f))),
        DataType::LargeList(f) => DataType::LargeList(Arc::new(field_with_id_only(f))),
        DataType::Map(f, sorted) => DataType::Map(Arc::new(field_with_id_only(f)), *sorted),
        other => other.clone(),
    }
}

/// The leaf columns of a statistics schema (`nullCount` lists every column with statistics).
fn stats_columns(stats: &StructType) -> Vec<ColumnName> {
    let mut out = Vec::new();
    if let Some(KernelType::Struct(counts)) = stats.field("nullCount").map(|f| f.data_type()) {
        leaves(counts, &mut Vec::new(), &mut out);
    }
    out
}

fn leaves(s: &StructType, prefix: &mut Vec<String>, out: &mut Vec<ColumnName>) {
    for f in s.fields() {
        prefix.push(f.name().to_string());
        match f.data_type() {
            KernelType::Struct(inner) => leaves(inner, prefix, out),
            _ => out.push(ColumnName::new(prefix.iter().cloned())),
        }
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_kernel::schema::{DataType as K, MetadataValue};

    fn mapped(name: &str, physical: &str, id: i64, t: K) -> StructField {
        StructField::nullable(name, t).with_metadata([
            (
                "delta.columnMapping.id".to_string(),
                MetadataValue::Number(id),
            ),
            (
                PHYSICAL_NAME_KEY.to_string(),
                MetadataValue::String(physical.into()),
            ),
        ])
    }

    #[test]
    fn partition_columns_resolve_to_their_physical_names() {
        let logical = StructType::try_new([
            mapped("Company", "col-a", 1, K::STRING),
            mapped("Name", "col-b", 2, K::STRING),
        ])
        .unwrap();
        let company = ["Company".to_string()];
        let names = partition_physical_names(&logical, &company, ColumnMappingMode::Name).unwrap();
        assert_eq!(names, HashMap::from([("Company".into(), "col-a".into())]));
        // Without column mapping a stale annotation is ignored.
        let names = partition_physical_names(&logical, &company, ColumnMappingMode::None).unwrap();
        assert_eq!(names, HashMap::from([("Company".into(), "Company".into())]));
        assert!(matches!(
            partition_physical_names(&logical, &["Gone".to_string()], ColumnMappingMode::Id),
            Err(LayoutError::MissingPartitionColumn(c)) if c == "Gone"
        ));
    }

    #[test]
    fn only_parquet_field_ids_survive_at_every_depth() {
        let id = |n: &str| HashMap::from([(PARQUET_FIELD_ID_META_KEY.to_string(), n.to_string())]);
        let noisy = |n: &str| {
            let mut m = id(n);
            m.insert(PHYSICAL_NAME_KEY.into(), "col-x".into());
            m
        };
        let inner = Field::new("col-i", DataType::Int64, true).with_metadata(noisy("3"));
        let s = Schema::new(vec![
            Field::new("col-s", DataType::Struct(vec![inner].into()), true)
                .with_metadata(noisy("2")),
            Field::new("plain", DataType::Utf8, true)
                .with_metadata(HashMap::from([("comment".into(), "x".into())])),
        ]);
        let out = only_field_ids(&s);
        assert_eq!(out.field(0).metadata(), &id("2"));
        let DataType::Struct(children) = out.field(0).data_type() else {
            panic!("struct kept")
        };
        assert_eq!(children[0].metadata(), &id("3"));
        assert!(out.field(1).metadata().is_empty());
    }

    #[test]
    fn statistics_columns_are_the_leaves_of_null_count() {
        let counts = StructType::try_new([
            StructField::nullable("col-a", K::LONG),
            StructField::nullable(
                "col-s",
                StructType::try_new([StructField::nullable("col-i", K::LONG)]).unwrap(),
            ),
        ])
        .unwrap();
        let stats = StructType::try_new([
            StructField::nullable("numRecords", K::LONG),
            StructField::nullable("nullCount", counts),
        ])
        .unwrap();
        assert_eq!(
            stats_columns(&stats),
            vec![
                ColumnName::new(["col-a"]),
                ColumnName::new(["col-s", "col-i"])
            ]
        );
    }
}
