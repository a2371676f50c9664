//! Which data files an Iceberg compaction rewrites: per partition of one spec, the files under
//! `rewrite_data_files`' minimum size, packed in manifest order into groups it would rewrite
//! (`RewriteOptions::rewrites`). A bin never mixes specs or partitions, and partitions with delete
//! files are left alone (a rewrite would have to apply them first) and counted.

use std::collections::{HashMap, HashSet};

use apache_avro::types::Value;
use indexmap::IndexMap;
use serde::Serialize;

use super::avro_file::{field, long};
use super::order::IceOrder;
use super::table_state::{Manifest, TableState, data_file, file_path, is_live};
use super::where_filter::IceWhere;
use crate::iceberg::transforms::{Transform, display};
use crate::model::cost::Cost;
use crate::stats::rewrite_preview::RewriteOptions;

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
    /// The order rows are written in (`--sort-by`, `--zorder`): every file of each chosen
    /// partition is rewritten. None: bin-packing of small files, rows as read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<IceOrder>,
    /// What the job will cost (`price`), priced at the store's rates.
    pub estimate: Cost,
    /// The `--where` that chose the partitions, as the SQL parser renders it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
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
/// whose label is in `only`. With an `order`, every file of a partition is rewritten in one
/// bin (as `OPTIMIZE ... ZORDER BY` does), unless it is one file that would stay one file.
pub fn plan(
    state: &TableState,
    target: u64,
    only: &[String],
    filter: Option<&IceWhere>,
    order: Option<IceOrder>,
) -> IcePlan {
    let specs = state.meta.specs();
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
            let whole = order.as_ref().is_some_and(|o| o.whole_partitions);
            if !is_parquet(e) || (!whole && f.size >= options.min_file_size) {
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
        if let Some(f) = filter {
            let spec = specs.iter().find(|s| s.spec_id == spec_id);
            if !spec.is_some_and(|s| f.may_match(s, &partition)) {
                continue;
            }
        }
        if order.as_ref().is_some_and(|o| o.whole_partitions) {
            let bytes: u64 = files.iter().map(|f| f.size).sum();
            if files.len() > 1 || bytes >= 2 * options.target_file_size {
                bins.push(IceBin {
                    spec_id,
                    label,
                    partition,
                    files,
                });
            }
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
    let largest = bins.iter().map(IceBin::bytes).max().unwrap_or(0);
    IcePlan {
        snapshot_id: state.snapshot().map(|s| s.snapshot_id),
        target_file_size: options.target_file_size,
        min_file_size: options.min_file_size,
        bins,
        partitions_with_deletes: under_deletes.len() as u64,
        files_under_deletes: under_deletes.values().sum(),
        order: order.map(|mut o| {
            o.predict((largest / options.target_file_size.max(1)).max(1));
            o
        }),
        estimate: Cost::default(),
        predicate: filter.map(|f| f.predicate.text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::compact::avro_file::AvroFile;
    use crate::iceberg::manifests::tests::manifest_bytes;
    use crate::iceberg::metadata::TableMetadata;

    fn manifest(
        spec_id: i32,
        deletes: bool,
        entries: &[(i32, i32, &str, i64, Option<&str>)],
    ) -> Manifest {
        Manifest {
            path: format!("/t/metadata/m-{spec_id}-{deletes}.avro"),
            spec_id,
            deletes,
            sequence_number: 1,
            added_snapshot_id: 1,
            file: AvroFile::read(&manifest_bytes(entries)).unwrap(),
        }
    }

    fn state(manifests: Vec<Manifest>) -> TableState {
        let json = serde_json::json!({
            "format-version": 2, "location": "/t", "current-snapshot-id": 1,
            "partition-specs": [
                {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "transform": "identity", "name": "category"}]},
                {"spec-id": 1, "fields": [{"source-id": 2, "field-id": 1000, "transform": "identity", "name": "category"}]}],
            "schemas": [{"schema-id": 0, "type": "struct", "fields": [
                {"id": 2, "name": "category", "type": "string", "required": false}]}],
            "snapshots": [{"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1, "manifest-list": "/l"}]
        });
        TableState {
            metadata_location: "/t/metadata/00001-x.metadata.json".into(),
            meta: TableMetadata::parse(json.to_string().as_bytes()).unwrap(),
            json,
            list: None,
            manifests,
        }
    }

    fn five(prefix: &str, cat: &'static str) -> Vec<(i32, i32, String, i64, Option<&'static str>)> {
        (0..5)
            .map(|i| {
                (
                    1,
                    0,
                    format!("/t/data/{prefix}-{i}.parquet"),
                    100,
                    Some(cat),
                )
            })
            .collect()
    }

    fn entries<'a>(
        v: &'a [(i32, i32, String, i64, Option<&'static str>)],
    ) -> Vec<(i32, i32, &'a str, i64, Option<&'static str>)> {
        v.iter()
            .map(|(a, b, p, s, c)| (*a, *b, p.as_str(), *s, *c))
            .collect()
    }

    #[test]
    fn a_bin_never_mixes_specs_and_partitions_with_delete_files_are_left_alone_and_counted() {
        let mut spec0 = five("s0a", "a");
        spec0.extend(five("s0b", "b"));
        // A deleted entry is not live: never rewritten.
        spec0.push((2, 0, "/t/data/gone.parquet".into(), 100, Some("a")));
        let spec1 = five("s1a", "a");
        let data = vec![
            manifest(0, false, &entries(&spec0)),
            manifest(1, false, &entries(&spec1)),
        ];
        // Without delete files: one bin per spec and partition.
        let p = plan(&state(data.clone()), 1000, &[], None, None);
        let got: Vec<(i32, &str, usize)> = p
            .bins
            .iter()
            .map(|b| (b.spec_id, b.label.as_str(), b.files.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "category=a", 5),
                (0, "category=b", 5),
                (1, "category=a", 5)
            ]
        );
        assert!(
            p.bins
                .iter()
                .all(|b| b.files.iter().all(|f| f.path.contains(&format!(
                    "s{}{}",
                    b.spec_id,
                    &b.label["category=".len()..]
                ))))
        );
        // A position delete file in spec 0, category b: that partition, and every partition of
        // spec 1 (the delete could name its files), are left alone and counted.
        let mut with_deletes = data;
        with_deletes.push(manifest(
            0,
            true,
            &[(1, 1, "/t/data/pos-del.parquet", 10, Some("b"))],
        ));
        let s = state(with_deletes);
        let p = plan(&s, 1000, &[], None, None);
        let got: Vec<(i32, &str)> = p
            .bins
            .iter()
            .map(|b| (b.spec_id, b.label.as_str()))
            .collect();
        assert_eq!(got, vec![(0, "category=a")]);
        assert_eq!((p.partitions_with_deletes, p.files_under_deletes), (2, 10));
        // Only the labels asked for.
        assert!(
            plan(&s, 1000, &["category=b".into()], None, None)
                .bins
                .is_empty()
        );
    }

    #[test]
    fn a_delete_file_of_another_spec_keeps_every_partition_of_the_others_alone() {
        let s = state(vec![
            manifest(0, false, &entries(&five("s0a", "a"))),
            manifest(1, true, &[(1, 2, "/t/data/eq-del.parquet", 10, None)]),
        ]);
        let p = plan(&s, 1000, &[], None, None);
        assert!(p.bins.is_empty());
        assert_eq!(p.files_under_deletes, 5);
    }

    #[test]
    fn an_order_rewrites_every_file_of_a_partition_in_one_bin_but_not_one_file_that_stays_one() {
        let mut files = five("a", "a");
        // A file above the minimum size: bin-packing leaves it, an order rewrites it.
        files.push((1, 0, "/t/data/a-big.parquet".into(), 5000, Some("a")));
        files.push((1, 0, "/t/data/b-only.parquet".into(), 100, Some("b")));
        let s = state(vec![manifest(0, false, &entries(&files))]);
        let packed = plan(&s, 1000, &[], None, None);
        assert_eq!(packed.bins.len(), 1);
        assert_eq!(packed.bins[0].files.len(), 5);
        let order = crate::iceberg::compact::order::IceOrder {
            order: crate::compact::ordering::RowOrder {
                kind: crate::compact::ordering::OrderKind::Sort,
                columns: vec!["category".into()],
                physical: vec!["category".into()],
            },
            field_ids: vec![2],
            sort_order_id: None,
            whole_partitions: true,
            what_if: Vec::new(),
        };
        let by_bin = crate::iceberg::compact::order::IceOrder {
            whole_partitions: false,
            ..order.clone()
        };
        let binned = plan(&s, 1000, &[], None, Some(by_bin));
        assert_eq!(
            binned.bins.len(),
            1,
            "ordered bins of small files: the bin-pack's bins"
        );
        assert_eq!(binned.bins[0].files.len(), 5);
        let sorted = plan(&s, 1000, &[], None, Some(order));
        let got: Vec<(&str, usize)> = sorted
            .bins
            .iter()
            .map(|b| (b.label.as_str(), b.files.len()))
            .collect();
        assert_eq!(
            got,
            vec![("category=a", 6)],
            "b's one small file stays one file"
        );
        let what_if = &sorted.order.as_ref().unwrap().what_if;
        assert_eq!(what_if.len(), 1);
        assert_eq!(what_if[0].expected, 1.0, "a sort tiles its column");
    }
}
