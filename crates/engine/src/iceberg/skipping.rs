//! An Iceberg table's skipping health, from the bounds its manifests already hold (no data
//! read): each data file's `lower_bounds` and `upper_bounds` for the current schema's top-level
//! columns, decoded from Iceberg's single-value serialisation into the columns delta-rs gives
//! for a Delta table (`min.<col>`, `max.<col>`, `null_count.<col>`, `num_records`,
//! `partition.<col>`), so `stats::skipping` measures both formats alike. The default sort
//! order's columns are the declared ones (as Delta's clustering columns).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow::datatypes::{DataType, Field, Schema};

use super::manifests::FileStats;
use super::metadata::TableMetadata;
use super::{
    ManifestScan, SnapshotReader, Stores, partition_columns, read_metadata, snapshot_versions,
};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::options::OpenOptions;
use crate::stats::skipping::columns::AddColumns;
use crate::stats::skipping::{SkippingHealth, StatsSource};

/// A data file of the current snapshot with its column statistics.
#[derive(Debug, Clone)]
pub struct StatsFile {
    /// Displayed partition values, in the table's partition-column order.
    pub partition: Vec<Option<String>>,
    pub size: u64,
    pub records: u64,
    pub stats: FileStats,
}

/// Reads the current snapshot's manifests with their bounds and measures how its files skip.
pub async fn skipping_health(loc: &Location, opts: &OpenOptions) -> Result<SkippingHealth> {
    let uri = loc.display();
    let mut stores = Stores::new(opts);
    let (_, _, meta) = read_metadata(loc, &mut stores, &uri).await?;
    let columns = partition_columns(&meta);
    let mut scan = ManifestScan::default();
    let mut version = 0;
    if let Some(snap) = meta.current_snapshot() {
        version = snapshot_versions(&meta.snapshots)
            .get(&snap.snapshot_id)
            .copied()
            .unwrap_or(0);
        let reader = SnapshotReader {
            loc,
            opts,
            uri: &uri,
            meta: &meta,
            columns: &columns,
            progress: &|_| {},
            stats: true,
        };
        reader.read(snap, &mut stores, &mut scan).await?;
    }
    let batch =
        add_columns(&meta, &columns, &scan.stats).map_err(|e| EngineError::Unsupported {
            uri: uri.clone(),
            detail: format!("its bounds do not make columns: {e}"),
        })?;
    Ok(
        SkippingHealth::from_adds(version, &AddColumns::new(vec![batch]), meta.sort_columns())
            .with_source(StatsSource::IcebergManifests),
    )
}

/// How a type's bounds decode (the types `data_file_stats` writes bounds for); None: not
/// measured (decimal, uuid, binary, fixed, nested: their order is not a plain byte order).
fn arrow_type(iceberg: &str) -> Option<DataType> {
    Some(match iceberg {
        "boolean" => DataType::Boolean,
        "int" | "date" => DataType::Int32,
        "long" | "time" | "timestamp" | "timestamptz" | "timestamp_ns" | "timestamptz_ns" => {
            DataType::Int64
        }
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        _ => return None,
    })
}

/// One bound as an arrow array of the type; a value of the wrong length (or not UTF-8) is
/// unknown, as a missing one is. A long or double column promoted from int or float keeps its
/// older files' 4-byte bounds: read as what they were written as.
fn bound_array(ty: &DataType, values: Vec<Option<&[u8]>>) -> ArrayRef {
    fn le<const N: usize>(b: &[u8]) -> Option<[u8; N]> {
        b.try_into().ok()
    }
    match ty {
        DataType::Boolean => Arc::new(BooleanArray::from(
            values
                .iter()
                .map(|v| v.and_then(|b| (b.len() == 1).then(|| b[0] != 0)))
                .collect::<Vec<_>>(),
        )),
        DataType::Int32 => Arc::new(Int32Array::from(
            values
                .iter()
                .map(|v| v.and_then(le::<4>).map(i32::from_le_bytes))
                .collect::<Vec<_>>(),
        )),
        DataType::Int64 => Arc::new(Int64Array::from(
            values
                .iter()
                .map(|v| {
                    v.and_then(|b| {
                        le::<8>(b)
                            .map(i64::from_le_bytes)
                            .or_else(|| le::<4>(b).map(|x| i64::from(i32::from_le_bytes(x))))
                    })
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Float32 => Arc::new(Float32Array::from(
            values
                .iter()
                .map(|v| v.and_then(le::<4>).map(f32::from_le_bytes))
                .collect::<Vec<_>>(),
        )),
        DataType::Float64 => Arc::new(Float64Array::from(
            values
                .iter()
                .map(|v| {
                    v.and_then(|b| {
                        le::<8>(b)
                            .map(f64::from_le_bytes)
                            .or_else(|| le::<4>(b).map(|x| f64::from(f32::from_le_bytes(x))))
                    })
                })
                .collect::<Vec<_>>(),
        )),
        _ => Arc::new(StringArray::from(
            values
                .iter()
                .map(|v| v.and_then(|b| std::str::from_utf8(b).ok()))
                .collect::<Vec<_>>(),
        )),
    }
}

/// The files' statistics as delta-rs's flattened add actions name them.
fn add_columns(
    meta: &TableMetadata,
    partition_columns: &[String],
    files: &[StatsFile],
) -> std::result::Result<RecordBatch, arrow::error::ArrowError> {
    let mut fields = vec![
        Field::new("num_records", DataType::Int64, true),
        Field::new("size_bytes", DataType::Int64, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| f.records as i64),
        )),
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| f.size as i64),
        )),
    ];
    for (i, c) in partition_columns.iter().enumerate() {
        fields.push(Field::new(format!("partition.{c}"), DataType::Utf8, true));
        arrays.push(Arc::new(StringArray::from(
            files
                .iter()
                .map(|f| f.partition.get(i).cloned().flatten())
                .collect::<Vec<_>>(),
        )));
    }
    for (id, name, ty) in meta.top_level_columns() {
        let Some(ty) = arrow_type(&ty) else { continue };
        let lower = files
            .iter()
            .map(|f| f.stats.lower.get(&id).map(Vec::as_slice))
            .collect();
        let upper = files
            .iter()
            .map(|f| f.stats.upper.get(&id).map(Vec::as_slice))
            .collect();
        fields.push(Field::new(format!("min.{name}"), ty.clone(), true));
        arrays.push(bound_array(&ty, lower));
        fields.push(Field::new(format!("max.{name}"), ty.clone(), true));
        arrays.push(bound_array(&ty, upper));
        fields.push(Field::new(
            format!("null_count.{name}"),
            DataType::Int64,
            true,
        ));
        arrays.push(Arc::new(Int64Array::from(
            files
                .iter()
                .map(|f| f.stats.nulls.get(&id).copied())
                .collect::<Vec<_>>(),
        )));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> TableMetadata {
        TableMetadata::parse(
            br#"{"format-version": 2, "location": "s3://b/t", "current-schema-id": 0,
              "schemas": [{"schema-id": 0, "fields": [
                {"id": 1, "name": "sensor", "type": "long"},
                {"id": 2, "name": "name", "type": "string"},
                {"id": 3, "name": "price", "type": "decimal(9,2)"}]}],
              "default-sort-order-id": 1,
              "sort-orders": [{"order-id": 1, "fields": [
                {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}]}"#,
        )
        .unwrap()
    }

    fn file(part: &str, lo: i64, hi: i64) -> StatsFile {
        let mut s = FileStats::default();
        s.lower.insert(1, lo.to_le_bytes().to_vec());
        s.upper.insert(1, hi.to_le_bytes().to_vec());
        s.lower.insert(2, b"a".to_vec());
        s.upper.insert(2, b"zz".to_vec());
        StatsFile {
            partition: vec![Some(part.into())],
            size: 100,
            records: 10,
            stats: s,
        }
    }

    #[test]
    fn manifest_bounds_measure_depth_as_delta_statistics_do_sort_columns_first() {
        // Partition a: sensor tiles over three files; partition b: two files over everything.
        let files = vec![
            file("a", 0, 9),
            file("a", 10, 19),
            file("a", 20, 29),
            file("b", 0, 100),
            file("b", 0, 100),
        ];
        let m = meta();
        let batch = add_columns(&m, &["day".into()], &files).unwrap();
        let h = SkippingHealth::from_adds(3, &AddColumns::new(vec![batch]), m.sort_columns());
        assert_eq!(h.clustering_columns, ["sensor"]);
        assert_eq!(h.columns[0].column, "sensor");
        assert!(h.columns[0].clustering);
        assert!(
            h.columns.iter().all(|c| c.column != "price"),
            "a decimal's bounds are not measured"
        );
        let name = h.columns.iter().find(|c| c.column == "name").unwrap();
        assert_eq!(name.depth.worst, 5, "every file spans a..zz");
        let by = |p: &str| {
            h.partitions
                .iter()
                .find(|x| x.partition.0[0].1.as_deref() == Some(p))
                .unwrap()
                .columns[0]
                .worst_depth
        };
        assert_eq!((by("a"), by("b")), (1, 2));
    }

    #[test]
    fn a_bound_of_the_wrong_length_is_unknown_not_a_wrong_value() {
        let a = bound_array(&DataType::Int64, vec![Some(&[1, 0, 0][..]), None]);
        assert_eq!(a.null_count(), 2);
        // A long promoted from int: its older files' bounds are 4 bytes.
        let promoted = bound_array(&DataType::Int64, vec![Some(&(-7i32).to_le_bytes()[..])]);
        let promoted = promoted.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(promoted.value(0), -7);
        let d = bound_array(&DataType::Float64, vec![Some(&1.5f32.to_le_bytes()[..])]);
        let d = d.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(d.value(0), 1.5);
        let s = bound_array(&DataType::Utf8, vec![Some(&[0xff][..]), Some(b"ok")]);
        assert_eq!(s.null_count(), 1);
    }
}
