//! An Iceberg table's metadata file (`metadata/*.metadata.json`): the snapshots, the partition
//! specs, the schemas and the table properties. Only the fields lakehealth reads are modelled;
//! format versions 1 and 2 (and 3's additions, which are ignored) parse alike.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableMetadata {
    pub format_version: u8,
    pub location: String,
    #[serde(default)]
    pub current_snapshot_id: Option<i64>,
    #[serde(default)]
    pub snapshots: Vec<Snapshot>,
    /// v2+ (v1 writers usually write both this and `partition-spec`).
    #[serde(default)]
    pub partition_specs: Vec<PartitionSpec>,
    #[serde(default)]
    pub default_spec_id: Option<i32>,
    /// v1: the only spec's fields.
    #[serde(default)]
    pub partition_spec: Option<Vec<PartitionField>>,
    #[serde(default)]
    pub schemas: Vec<Schema>,
    #[serde(default)]
    pub current_schema_id: Option<i32>,
    /// v1: the only schema.
    #[serde(default)]
    pub schema: Option<Schema>,
    #[serde(default)]
    pub properties: HashMap<String, String>,
    /// v2 (optional in v1): how writers are asked to order rows in files.
    #[serde(default)]
    pub sort_orders: Vec<SortOrder>,
    #[serde(default)]
    pub default_sort_order_id: Option<i32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SortOrder {
    pub order_id: i32,
    #[serde(default)]
    pub fields: Vec<SortField>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SortField {
    pub source_id: i32,
    pub transform: String,
    /// `asc` or `desc`.
    #[serde(default)]
    pub direction: Option<String>,
    /// `nulls-first` or `nulls-last`.
    #[serde(default)]
    pub null_order: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Snapshot {
    pub snapshot_id: i64,
    #[serde(default)]
    pub parent_snapshot_id: Option<i64>,
    /// v2+; 0 (absent) in v1.
    #[serde(default)]
    pub sequence_number: u64,
    pub timestamp_ms: i64,
    /// v2 always; v1 may list `manifests` inline instead (not supported: very old writers).
    #[serde(default)]
    pub manifest_list: Option<String>,
    #[serde(default)]
    pub manifests: Option<Vec<String>>,
    #[serde(default)]
    pub summary: BTreeMap<String, String>,
}

impl Snapshot {
    /// A summary count (`added-data-files`, `removed-files-size` ...), 0 when absent or invalid.
    pub fn count(&self, key: &str) -> u64 {
        self.summary
            .get(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn operation(&self) -> &str {
        self.summary
            .get("operation")
            .map(String::as_str)
            .unwrap_or("unknown")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PartitionSpec {
    pub spec_id: i32,
    #[serde(default)]
    pub fields: Vec<PartitionField>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PartitionField {
    pub source_id: i32,
    #[serde(default)]
    pub field_id: Option<i32>,
    pub transform: String,
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Schema {
    #[serde(default)]
    pub schema_id: Option<i32>,
    #[serde(default)]
    pub fields: Vec<SchemaField>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SchemaField {
    pub id: i32,
    pub name: String,
    /// A primitive type name (`long`, `date`, `timestamp`, `decimal(9,2)` ...) or a nested type.
    #[serde(rename = "type")]
    pub field_type: serde_json::Value,
}

impl TableMetadata {
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        let id = self.current_snapshot_id.filter(|&id| id != -1)?;
        self.snapshots.iter().find(|s| s.snapshot_id == id)
    }

    /// Every partition spec by id (v1's single spec is id 0).
    pub fn specs(&self) -> Vec<PartitionSpec> {
        if !self.partition_specs.is_empty() {
            return self.partition_specs.clone();
        }
        vec![PartitionSpec {
            spec_id: 0,
            fields: self.partition_spec.clone().unwrap_or_default(),
        }]
    }

    pub fn default_spec(&self) -> Option<PartitionSpec> {
        let specs = self.specs();
        let id = self.default_spec_id.unwrap_or(0);
        specs
            .iter()
            .find(|s| s.spec_id == id)
            .or(specs.last())
            .cloned()
    }

    /// The current schema (v1: the only one).
    pub fn current_schema(&self) -> Option<&Schema> {
        self.schemas
            .iter()
            .find(|s| s.schema_id == self.current_schema_id && self.current_schema_id.is_some())
            .or(self.schema.as_ref())
            .or(self.schemas.last())
    }

    /// The current schema's top-level primitive columns: (field id, name, type).
    pub fn top_level_columns(&self) -> Vec<(i32, String, String)> {
        self.current_schema()
            .map(|s| {
                s.fields
                    .iter()
                    .filter_map(|f| match &f.field_type {
                        serde_json::Value::String(t) => Some((f.id, f.name.clone(), t.clone())),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The columns of the default sort order, in its order: its leading fields sorted by their
    /// own value (identity transform), among the current schema's top-level columns; a field
    /// of another transform ends them (what follows it is ordered only within its buckets,
    /// so files need not cluster on it). The order a table declares for its files, as
    /// Delta's clustering columns are.
    pub fn sort_columns(&self) -> Vec<String> {
        let id = self.default_sort_order_id.unwrap_or(0);
        let Some(order) = self.sort_orders.iter().find(|o| o.order_id == id) else {
            return Vec::new();
        };
        let columns = self.top_level_columns();
        order
            .fields
            .iter()
            .take_while(|f| f.transform == "identity")
            .filter_map(|f| {
                columns
                    .iter()
                    .find(|(id, _, _)| *id == f.source_id)
                    .map(|(_, n, _)| n.clone())
            })
            .collect()
    }

    /// The type of every top-level and nested field by id, over all schemas (a partition source
    /// may have been dropped from the current schema), current schema last so it wins.
    pub fn field_types(&self) -> HashMap<i32, String> {
        let mut out = HashMap::new();
        let current = self.current_schema_id;
        let mut schemas: Vec<&Schema> = self.schemas.iter().chain(self.schema.iter()).collect();
        schemas.sort_by_key(|s| s.schema_id == current && current.is_some());
        for s in schemas {
            collect_types(&s.fields, &mut out);
        }
        out
    }
}

fn collect_types(fields: &[SchemaField], out: &mut HashMap<i32, String>) {
    for f in fields {
        match &f.field_type {
            serde_json::Value::String(t) => {
                out.insert(f.id, t.clone());
            }
            serde_json::Value::Object(o) => {
                // Nested struct fields can be partition sources too.
                if let Some(inner) = o.get("fields")
                    && let Ok(nested) = serde_json::from_value::<Vec<SchemaField>>(inner.clone())
                {
                    collect_types(&nested, out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &str = r#"{
      "format-version": 2, "table-uuid": "u", "location": "s3://b/t", "last-sequence-number": 2,
      "last-updated-ms": 1, "last-column-id": 3, "current-schema-id": 0,
      "schemas": [{"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": false, "type": "long"},
        {"id": 2, "name": "ts", "required": false, "type": "timestamp"},
        {"id": 3, "name": "s", "required": false, "type": {"type": "struct", "fields": [
          {"id": 4, "name": "d", "required": false, "type": "date"}]}}]}],
      "default-spec-id": 0,
      "partition-specs": [{"spec-id": 0, "fields": [
        {"source-id": 2, "field-id": 1000, "transform": "day", "name": "ts_day"}]}],
      "properties": {"write.target-file-size-bytes": "1048576"},
      "current-snapshot-id": 22,
      "snapshots": [
        {"snapshot-id": 11, "sequence-number": 1, "timestamp-ms": 1000,
         "manifest-list": "s3://b/t/metadata/snap-11.avro",
         "summary": {"operation": "append", "added-data-files": "3", "added-files-size": "300"}},
        {"snapshot-id": 22, "parent-snapshot-id": 11, "sequence-number": 2, "timestamp-ms": 2000,
         "manifest-list": "s3://b/t/metadata/snap-22.avro",
         "summary": {"operation": "delete", "deleted-data-files": "1", "removed-files-size": "x"}}]
    }"#;

    #[test]
    fn the_default_sort_orders_identity_columns_are_the_tables_declared_order() {
        let m = TableMetadata::parse(
            br#"{"format-version": 2, "location": "s3://b/t", "current-schema-id": 1,
              "schemas": [{"schema-id": 0, "fields": [{"id": 1, "name": "old", "type": "long"}]},
                {"schema-id": 1, "fields": [
                  {"id": 1, "name": "sensor", "type": "long"},
                  {"id": 2, "name": "ts", "type": "timestamp"},
                  {"id": 3, "name": "s", "type": {"type": "struct", "fields": []}}]}],
              "default-sort-order-id": 2,
              "sort-orders": [{"order-id": 0, "fields": []},
                {"order-id": 2, "fields": [
                  {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"},
                  {"source-id": 2, "transform": "day", "direction": "asc", "null-order": "nulls-first"},
                  {"source-id": 3, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            m.sort_columns(),
            ["sensor"],
            "up to the first other transform"
        );
        let cols: Vec<String> = m.top_level_columns().into_iter().map(|c| c.1).collect();
        assert_eq!(cols, ["sensor", "ts"], "the current schema's primitives");
    }

    #[test]
    fn parses_snapshots_specs_types_and_summary_counts() {
        let m = TableMetadata::parse(V2.as_bytes()).unwrap();
        let cur = m.current_snapshot().unwrap();
        assert_eq!((cur.snapshot_id, cur.sequence_number), (22, 2));
        assert_eq!(cur.operation(), "delete");
        assert_eq!(cur.count("deleted-data-files"), 1);
        // An unparsable count reads as 0 rather than failing the whole table.
        assert_eq!(cur.count("removed-files-size"), 0);
        assert_eq!(m.default_spec().unwrap().fields[0].name, "ts_day");
        let types = m.field_types();
        assert_eq!(types.get(&2).map(String::as_str), Some("timestamp"));
        assert_eq!(types.get(&4).map(String::as_str), Some("date"));
    }

    #[test]
    fn a_v1_table_without_snapshots_has_one_spec_and_no_current_snapshot() {
        let v1 = r#"{"format-version": 1, "location": "/t", "last-updated-ms": 1,
          "last-column-id": 1, "current-snapshot-id": -1,
          "schema": {"type": "struct", "fields": [{"id": 1, "name": "c", "required": true, "type": "string"}]},
          "partition-spec": [{"source-id": 1, "field-id": 1000, "transform": "identity", "name": "c"}]}"#;
        let m = TableMetadata::parse(v1.as_bytes()).unwrap();
        assert!(m.current_snapshot().is_none());
        assert_eq!(m.specs().len(), 1);
        assert_eq!(m.default_spec().unwrap().fields[0].transform, "identity");
        assert_eq!(m.field_types().get(&1).map(String::as_str), Some("string"));
    }
}
