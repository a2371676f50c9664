//! Which data files an Iceberg compaction rewrites: per partition of one spec, the files under
//! `rewrite_data_files`' minimum size, packed in manifest order into groups it would rewrite
//! (`RewriteOptions::rewrites`). A bin never mixes specs or partitions, and partitions with delete
//! files are left alone (a rewrite would have to apply them first) and counted.

use std::collections::{HashMap, HashSet};

use apache_avro::types::Value;
use indexmap::IndexMap;
use serde::Serialize;

use super::avro_file::{field, long};
use super::table_state::{Manifest, TableState, data_file, file_path, is_live};
use crate::engine::formats::iceberg::rewrite_preview::RewriteOptions;
use crate::engine::formats::iceberg::transforms::{Transform, display};

/// A data file a bin replaces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinFile {
    pub path: String,
    pub size: u64,
    pub records: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct IceBin {
    pub spec_id: i32,
    /// The partition as shown (`category=a/ts_day=2026-11-30`).
    pub label: String,
    /// The partition struct as the manifests hold it (copied into the outputs' entries).
    #[serde(skip)]
    pub partition: Value,
    pub files: Vec<BinFile>,
}

impl IceBin {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    pub fn records(&self) -> u64 {
        self.files.iter().map(|f| f.records).sum()
    }

    pub fn paths(&self) -> HashSet<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct IcePlan {
    pub snapshot_id: Option<i64>,
    pub target_file_size: u64,
    pub min_file_size: u64,
    pub bins: Vec<IceBin>,
    /// Partitions left alone because delete files apply to them, and their data files.
    pub partitions_with_deletes: u64,
    pub files_under_deletes: u64,
}

impl IcePlan {
    pub fn files_in(&self) -> u64 {
        self.bins.iter().map(|b| b.files.len() as u64).sum()
    }

    pub fn bytes_in(&self) -> u64 {
        self.bins.iter().map(IceBin::bytes).sum()
    }
}

/// (spec id, partition struct as text): the identity of a partition.
type PartitionKey = (i32, String);

fn partition_of(entry: &Value) -> Value {
    data_file(entry)
        .and_then(|d| field(d, "partition"))
        .cloned()
        .unwrap_or(Value::Record(Vec::new()))
}

fn key(spec_id: i32, partition: &Value) -> PartitionKey {
    (spec_id, format!("{partition:?}"))
}

/// Partitions delete files may apply to. A delete file of another spec may reference files of
/// any partition (a position delete names files by path; an unpartitioned equality delete
/// applies everywhere), so then every partition counts as having deletes.
pub struct DeleteScope {
    partitions: HashSet<PartitionKey>,
    specs: HashSet<i32>,
}

impl DeleteScope {
    pub fn of(state: &TableState) -> Self {
        let mut s = DeleteScope {
            partitions: HashSet::new(),
            specs: HashSet::new(),
        };
        for m in state.manifests.iter().filter(|m| m.deletes) {
            for e in m.file.rows.iter().filter(|e| is_live(e)) {
                s.specs.insert(m.spec_id);
                s.partitions.insert(key(m.spec_id, &partition_of(e)));
            }
        }
        s
    }

    pub fn applies(&self, spec_id: i32, partition: &Value) -> bool {
        self.partitions.contains(&key(spec_id, partition))
            || self.specs.iter().any(|&s| s != spec_id)
    }
}

fn label(state: &TableState, spec_id: i32, partition: &Value) -> String {
    let types = state.meta.field_types();
    let Some(spec) = state
        .meta
        .specs()
        .into_iter()
        .find(|s| s.spec_id == spec_id)
    else {
        return format!("spec {spec_id}");
    };
    let values: Vec<&Value> = match partition {
        Value::Record(r) => r.iter().map(|(_, v)| v).collect(),
        _ => Vec::new(),
    };
    if spec.fields.is_empty() {
        return "(unpartitioned)".into();
    }
    spec.fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let ty = types.get(&f.source_id).cloned().unwrap_or_default();
            let v = values
                .get(i)
                .and_then(|v| display(v, &Transform::parse(&f.transform), &ty));
            format!("{}={}", f.name, v.as_deref().unwrap_or("null"))
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn bin_file(entry: &Value) -> Option<BinFile> {
    let df = data_file(entry)?;
    Some(BinFile {
        path: file_path(entry)?,
        size: long(df, "file_size_in_bytes")?.max(0) as u64,
        records: long(df, "record_count")?.max(0) as u64,
    })
}

/// Only Parquet data files are rewritten (Avro and ORC data files are left alone).
fn is_parquet(entry: &Value) -> bool {
    data_file(entry)
        .and_then(|d| super::avro_file::string(d, "file_format"))
        .is_some_and(|f| f.eq_ignore_ascii_case("parquet"))
}

/// The plan for `state` with the table's target (`target`), optionally limited to partitions
/// whose label is in `only`.
pub fn plan(state: &TableState, target: u64, only: &[String]) -> IcePlan {
    let options = RewriteOptions::defaults(target);
    let deletes = DeleteScope::of(state);
    // (spec, partition) → (partition value, candidate files in manifest order)
    let mut groups: IndexMap<PartitionKey, (Value, Vec<BinFile>)> = IndexMap::new();
    let mut under_deletes: HashMap<PartitionKey, u64> = HashMap::new();
    let data: Vec<&Manifest> = state.manifests.iter().filter(|m| !m.deletes).collect();
    for m in data {
        for e in m.file.rows.iter().filter(|e| is_live(e)) {
            let p = partition_of(e);
            if deletes.applies(m.spec_id, &p) {
                *under_deletes.entry(key(m.spec_id, &p)).or_default() += 1;
                continue;
            }
            let Some(f) = bin_file(e) else { continue };
            if f.size >= options.min_file_size || !is_parquet(e) {
                continue;
            }
            groups
                .entry(key(m.spec_id, &p))
                .or_insert_with(|| (p.clone(), Vec::new()))
                .1
                .push(f);
        }
    }
    let mut bins = Vec::new();
    for ((spec_id, _), (partition, files)) in groups {
        let label = label(state, spec_id, &partition);
        if !only.is_empty() && !only.contains(&label) {
            continue;
        }
        let mut current: Vec<BinFile> = Vec::new();
        let mut packed: Vec<Vec<BinFile>> = Vec::new();
        for f in files {
            let bytes: u64 = current.iter().map(|f| f.size).sum();
            if !current.is_empty() && bytes + f.size > options.max_file_group_size {
                packed.push(std::mem::take(&mut current));
            }
            current.push(f);
        }
        packed.push(current);
        for files in packed {
            let bytes = files.iter().map(|f| f.size).sum();
            if options.rewrites(files.len() as u64, bytes) {
                bins.push(IceBin {
                    spec_id,
                    label: label.clone(),
                    partition: partition.clone(),
                    files,
                });
            }
        }
    }
    IcePlan {
        snapshot_id: state.snapshot().map(|s| s.snapshot_id),
        target_file_size: options.target_file_size,
        min_file_size: options.min_file_size,
        bins,
        partitions_with_deletes: under_deletes.len() as u64,
        files_under_deletes: under_deletes.values().sum(),
    }
}
