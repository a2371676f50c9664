//! Reading a Parquet checkpoint with a column projection: only the leaves the statistics need
//! are fetched (no `stats` JSON, no `tags`), which is what makes a 1M-file table open fast.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, MapArray, StringArray, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path;
use parquet::arrow::ProjectionMask;
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;

use crate::engine::parquet_reader::StoreReader;

use super::actions::{MetaData, Protocol};
use super::partition_key::{PartitionSizes, encode_into};
use super::state::{Tombstones, TxnState};

/// Where checkpoint rows go. Entries already decided by newer JSON commits win.
pub struct CheckpointSink<'a> {
    /// File keys removed by commits newer than the checkpoint (only when some remove lacks its
    /// partition or size; then paths are read).
    pub drop_by_path: &'a HashSet<String>,
    /// (canonical partition key, size) of files removed by newer commits, with counts.
    pub drop_by_size: HashMap<(String, u64), u32>,
    /// The sizes in `drop_by_size`: a cheap first check before building the map key.
    pub drop_sizes: HashSet<u64>,
    pub partitions: &'a mut PartitionSizes,
    pub tombstones: &'a mut Tombstones,
    pub txns: &'a mut HashMap<String, TxnState>,
    pub metadata: &'a mut Option<MetaData>,
    pub protocol: &'a mut Option<Protocol>,
    /// v2 checkpoints point at sidecar files holding the add/remove actions.
    pub sidecars: Vec<String>,
    pub rows: u64,
}

/// Reads one checkpoint (or sidecar) file into `sink`.
pub async fn read_checkpoint_file(
    store: &Arc<dyn ObjectStore>,
    path: &str,
    sink: &mut CheckpointSink<'_>,
    on_rows: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), String> {
    let reader = StoreReader::new(store.clone(), Path::from(path), None);
    let builder = ParquetRecordBatchStreamBuilder::new(reader)
        .await
        .map_err(|e| e.to_string())?;
    let need_paths = !sink.drop_by_path.is_empty();
    let mut wanted: Vec<&str> = vec![
        "add.size",
        "add.partitionValues",
        "remove.size",
        "remove.deletionTimestamp",
        "txn",
        "metaData",
        "protocol",
        "sidecar.path",
    ];
    if need_paths {
        // Only needed to drop rows that newer commits removed; skipped otherwise (the paths are
        // the bulk of a checkpoint's bytes).
        wanted.extend(["add.path", "add.deletionVector"]);
    }
    let schema = builder.metadata().file_metadata().schema_descr_ptr();
    let leaves: Vec<usize> = schema
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let p = c.path().string();
            wanted
                .iter()
                .any(|w| p == *w || (p.starts_with(w) && p.as_bytes().get(w.len()) == Some(&b'.')))
        })
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::leaves(&schema, leaves);
    let mut stream = builder
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| e.to_string())?;
    let mut buf = String::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| e.to_string())?;
        sink.rows += batch.num_rows() as u64;
        if let Some(add) = batch.column_by_name("add").and_then(|c| c.as_struct_opt()) {
            read_adds(add, need_paths, sink, &mut buf)?;
        }
        if let Some(rm) = batch
            .column_by_name("remove")
            .and_then(|c| c.as_struct_opt())
        {
            read_removes(rm, sink)?;
        }
        if let Some(txn) = batch.column_by_name("txn").and_then(|c| c.as_struct_opt()) {
            read_txns(txn, sink)?;
        }
        if sink.metadata.is_none()
            && let Some(md) = batch
                .column_by_name("metaData")
                .and_then(|c| c.as_struct_opt())
        {
            *sink.metadata = read_metadata(md)?;
        }
        if sink.protocol.is_none()
            && let Some(p) = batch
                .column_by_name("protocol")
                .and_then(|c| c.as_struct_opt())
        {
            *sink.protocol = read_protocol(p)?;
        }
        if let Some(sc) = batch
            .column_by_name("sidecar")
            .and_then(|c| c.as_struct_opt())
            && let Some(p) = child_str(sc, "path")?
        {
            for i in 0..sc.len() {
                if sc.is_valid(i) && p.is_valid(i) {
                    sink.sidecars.push(p.value(i).to_string());
                }
            }
        }
        on_rows(sink.rows);
    }
    Ok(())
}

fn child<'a>(s: &'a StructArray, name: &str) -> Option<&'a ArrayRef> {
    s.column_by_name(name)
}

fn to_str(a: &ArrayRef) -> Result<StringArray, String> {
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>().clone()),
        _ => cast(a, &DataType::Utf8)
            .map(|c| c.as_string::<i32>().clone())
            .map_err(|e| format!("unexpected column type {}: {e}", a.data_type())),
    }
}

fn to_i64(a: &ArrayRef) -> Result<Int64Array, String> {
    match a.data_type() {
        DataType::Int64 => Ok(a.as_primitive::<arrow::datatypes::Int64Type>().clone()),
        _ => cast(a, &DataType::Int64)
            .map(|c| c.as_primitive::<arrow::datatypes::Int64Type>().clone())
            .map_err(|e| format!("unexpected column type {}: {e}", a.data_type())),
    }
}

fn child_str(s: &StructArray, name: &str) -> Result<Option<StringArray>, String> {
    child(s, name).map(to_str).transpose()
}

fn child_i64(s: &StructArray, name: &str) -> Result<Option<Int64Array>, String> {
    child(s, name).map(to_i64).transpose()
}

fn map_entries(map: &MapArray) -> Result<(StringArray, StringArray), String> {
    Ok((to_str(map.keys())?, to_str(map.values())?))
}

/// The same unique id as `DeletionVector::unique_id`, from checkpoint columns.
fn dv_key(dv: &StructArray, i: usize, path: &str) -> Result<String, String> {
    if !dv.is_valid(i) {
        return Ok(path.to_string());
    }
    let st = child_str(dv, "storageType")?;
    let p = child_str(dv, "pathOrInlineDv")?;
    let off = child_i64(dv, "offset")?;
    let st = st
        .as_ref()
        .filter(|a| a.is_valid(i))
        .map(|a| a.value(i))
        .unwrap_or("");
    let p = p
        .as_ref()
        .filter(|a| a.is_valid(i))
        .map(|a| a.value(i))
        .unwrap_or("");
    Ok(match off.as_ref().filter(|a| a.is_valid(i)) {
        Some(o) => format!("{path}\u{1f}{st}{p}@{}", o.value(i)),
        None => format!("{path}\u{1f}{st}{p}"),
    })
}

fn read_adds(
    add: &StructArray,
    need_paths: bool,
    sink: &mut CheckpointSink<'_>,
    buf: &mut String,
) -> Result<(), String> {
    let Some(size) = child_i64(add, "size")? else {
        return Ok(());
    };
    let pv = child(add, "partitionValues").and_then(|c| c.as_map_opt());
    let entries = pv.map(map_entries).transpose()?;
    let paths = if need_paths {
        child_str(add, "path")?
    } else {
        None
    };
    let dvs = if need_paths {
        child(add, "deletionVector").and_then(|c| c.as_struct_opt())
    } else {
        None
    };
    for i in 0..add.len() {
        if !add.is_valid(i) || !size.is_valid(i) {
            continue;
        }
        if let Some(paths) = &paths {
            let path = paths.value(i);
            let dropped = match dvs {
                Some(dv) if dv.is_valid(i) => sink.drop_by_path.contains(&dv_key(dv, i, path)?),
                _ => sink.drop_by_path.contains(path),
            };
            if dropped {
                continue;
            }
        }
        match (pv, &entries) {
            (Some(map), Some((keys, values))) if map.is_valid(i) => {
                let offs = map.value_offsets();
                let (lo, hi) = (offs[i] as usize, offs[i + 1] as usize);
                encode_into(
                    buf,
                    (lo..hi).map(|j| (keys.value(j), values.is_valid(j).then(|| values.value(j)))),
                );
            }
            _ => buf.clear(),
        }
        let sz = size.value(i).max(0) as u64;
        if sink.drop_sizes.contains(&sz)
            && let Some(n) = sink
                .drop_by_size
                .get_mut(&(buf.clone(), sz))
                .filter(|n| **n > 0)
        {
            *n -= 1;
            continue;
        }
        sink.partitions.push(buf, sz);
    }
    Ok(())
}

fn read_removes(rm: &StructArray, sink: &mut CheckpointSink<'_>) -> Result<(), String> {
    let size = child_i64(rm, "size")?;
    let ts = child_i64(rm, "deletionTimestamp")?;
    for i in 0..rm.len() {
        if !rm.is_valid(i) {
            continue;
        }
        let s = size.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i));
        let t = ts.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i));
        sink.tombstones.push(t, s);
    }
    Ok(())
}

fn read_txns(txn: &StructArray, sink: &mut CheckpointSink<'_>) -> Result<(), String> {
    let (Some(app), Some(ver)) = (child_str(txn, "appId")?, child_i64(txn, "version")?) else {
        return Ok(());
    };
    let upd = child_i64(txn, "lastUpdated")?;
    for i in 0..txn.len() {
        if txn.is_valid(i) && app.is_valid(i) && ver.is_valid(i) {
            sink.txns
                .entry(app.value(i).to_string())
                .or_insert(TxnState {
                    version: ver.value(i),
                    last_updated: upd.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i)),
                });
        }
    }
    Ok(())
}

fn list_strings(a: Option<&ArrayRef>, i: usize) -> Result<Option<Vec<String>>, String> {
    let Some(list) = a.and_then(|a| a.as_list_opt::<i32>()) else {
        return Ok(None);
    };
    if !list.is_valid(i) {
        return Ok(None);
    }
    let v = list.value(i);
    let s = to_str(&v)?;
    Ok(Some(
        (0..s.len())
            .filter(|&j| s.is_valid(j))
            .map(|j| s.value(j).to_string())
            .collect(),
    ))
}

fn read_metadata(md: &StructArray) -> Result<Option<MetaData>, String> {
    let Some(schema) = child_str(md, "schemaString")? else {
        return Ok(None);
    };
    let id = child_str(md, "id")?;
    let conf = child(md, "configuration").and_then(|c| c.as_map_opt());
    for i in 0..md.len() {
        if !md.is_valid(i) || !schema.is_valid(i) {
            continue;
        }
        let mut configuration = HashMap::new();
        if let Some(map) = conf.filter(|m| m.is_valid(i)) {
            let (k, v) = map_entries(map)?;
            let offs = map.value_offsets();
            for j in offs[i] as usize..offs[i + 1] as usize {
                configuration.insert(
                    k.value(j).to_string(),
                    v.is_valid(j).then(|| v.value(j).to_string()),
                );
            }
        }
        return Ok(Some(MetaData {
            id: id
                .as_ref()
                .filter(|a| a.is_valid(i))
                .map(|a| a.value(i).to_string())
                .unwrap_or_default(),
            schema_string: schema.value(i).to_string(),
            partition_columns: list_strings(child(md, "partitionColumns"), i)?.unwrap_or_default(),
            configuration,
        }));
    }
    Ok(None)
}

fn read_protocol(p: &StructArray) -> Result<Option<Protocol>, String> {
    let (Some(r), Some(w)) = (
        child_i64(p, "minReaderVersion")?,
        child_i64(p, "minWriterVersion")?,
    ) else {
        return Ok(None);
    };
    for i in 0..p.len() {
        if p.is_valid(i) && r.is_valid(i) {
            return Ok(Some(Protocol {
                min_reader_version: r.value(i) as i32,
                min_writer_version: if w.is_valid(i) { w.value(i) as i32 } else { 0 },
                reader_features: list_strings(child(p, "readerFeatures"), i)?,
                writer_features: list_strings(child(p, "writerFeatures"), i)?,
            }));
        }
    }
    Ok(None)
}
