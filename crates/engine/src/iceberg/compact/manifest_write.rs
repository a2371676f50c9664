//! The manifests and manifest list of a `replace` snapshot (Iceberg spec: Manifests, Manifest
//! Lists, Sequence Number Inheritance): one new manifest of ADDED entries for the outputs; every
//! manifest that held a replaced file rewritten with that entry DELETED and its other live
//! entries EXISTING, all with their original snapshot ids and sequence numbers written out;
//! every other manifest reused as is. Rows are built on the existing files' own Avro schemas and
//! headers, so readers see the layout they wrote.

use std::collections::HashSet;

use apache_avro::Schema;
use apache_avro::types::Value;

use super::IcebergCompactError as E;
use super::avro_file::{AvroFile, long};
use super::plan::IceBin;
use super::rewrite::OutputFile;
use super::table_state::{
    Manifest, STATUS_ADDED, STATUS_DELETED, STATUS_EXISTING, TableState, data_file, file_path,
    is_live, status,
};

fn malformed(detail: impl Into<String>) -> E {
    E::Malformed {
        what: "manifest",
        file: String::new(),
        detail: detail.into(),
    }
}

/// The record schema of `schema` (a record, or a union holding one).
fn record_fields(schema: &Schema) -> Option<&[apache_avro::schema::RecordField]> {
    match schema {
        Schema::Record(r) => Some(&r.fields),
        Schema::Union(u) => u.variants().iter().find_map(record_fields),
        _ => None,
    }
}

/// `v` shaped for a field of schema `s`: the union branch chosen (null for None).
fn shaped(s: &Schema, v: Option<Value>) -> Result<Value, E> {
    match (s, v) {
        (Schema::Union(u), None) => u
            .variants()
            .iter()
            .position(|x| matches!(x, Schema::Null))
            .map(|i| Value::Union(i as u32, Box::new(Value::Null)))
            .ok_or_else(|| malformed("a required field has no value")),
        (Schema::Union(u), Some(v)) => {
            let v = match v {
                Value::Union(_, inner) => *inner,
                other => other,
            };
            u.variants()
                .iter()
                .position(|x| !matches!(x, Schema::Null))
                .map(|i| Value::Union(i as u32, Box::new(v)))
                .ok_or_else(|| malformed("a union without a value branch"))
        }
        (_, Some(v)) => Ok(v),
        (_, None) => Err(malformed("a required field has no value")),
    }
}

/// Sets fields of a record value (by name; names the schema lacks are skipped).
fn set(record: &mut Value, schema: &Schema, updates: &[(&str, Option<Value>)]) -> Result<(), E> {
    let fields = record_fields(schema).ok_or_else(|| malformed("not a record schema"))?;
    let Value::Record(values) = record else {
        return Err(malformed("not a record"));
    };
    for (name, v) in updates {
        let Some(f) = fields.iter().find(|f| f.name == *name) else {
            continue;
        };
        let Some(slot) = values.iter_mut().find(|(k, _)| k == name) else {
            continue;
        };
        slot.1 = shaped(&f.schema, v.clone())?;
    }
    Ok(())
}

fn field_schema<'a>(schema: &'a Schema, name: &str) -> Result<&'a Schema, E> {
    record_fields(schema)
        .and_then(|fs| fs.iter().find(|f| f.name == name))
        .map(|f| &f.schema)
        .ok_or_else(|| malformed(format!("no field {name}")))
}

fn data_file_mut(entry: &mut Value) -> Option<&mut Value> {
    let Value::Record(fields) = entry else {
        return None;
    };
    let (_, v) = fields.iter_mut().find(|(k, _)| k == "data_file")?;
    match v {
        Value::Union(_, inner) => Some(inner.as_mut()),
        other => Some(other),
    }
}

/// An Iceberg int→long map (an array of key/value records).
fn int_map<V: Clone>(
    m: &std::collections::BTreeMap<i32, V>,
    value: impl Fn(V) -> Value,
) -> Option<Value> {
    Some(Value::Array(
        m.iter()
            .map(|(k, v)| {
                Value::Record(vec![
                    ("key".into(), Value::Int(*k)),
                    ("value".into(), value(v.clone())),
                ])
            })
            .collect(),
    ))
}

/// A manifest the snapshot writes: its bytes and its manifest-list row.
pub struct WrittenManifest {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Counts of a manifest's entries for its list row.
#[derive(Default)]
struct Counts {
    added: (i64, i64),
    existing: (i64, i64),
    deleted: (i64, i64),
    min_sequence: Option<i64>,
}

fn list_row(
    template: &Value,
    list_schema: &Schema,
    path: &str,
    length: usize,
    snapshot_id: i64,
    sequence: i64,
    c: &Counts,
) -> Result<Value, E> {
    let mut row = template.clone();
    let l = Value::Long;
    let i = |v: i64| Value::Int(v as i32);
    set(
        &mut row,
        list_schema,
        &[
            ("manifest_path", Some(Value::String(path.to_string()))),
            ("manifest_length", Some(l(length as i64))),
            ("sequence_number", Some(l(sequence))),
            (
                "min_sequence_number",
                Some(l(c.min_sequence.unwrap_or(sequence))),
            ),
            ("added_snapshot_id", Some(l(snapshot_id))),
            // v2 names, and the older Java names of the same fields.
            ("added_files_count", Some(i(c.added.0))),
            ("added_data_files_count", Some(i(c.added.0))),
            ("existing_files_count", Some(i(c.existing.0))),
            ("existing_data_files_count", Some(i(c.existing.0))),
            ("deleted_files_count", Some(i(c.deleted.0))),
            ("deleted_data_files_count", Some(i(c.deleted.0))),
            ("added_rows_count", Some(l(c.added.1))),
            ("existing_rows_count", Some(l(c.existing.1))),
            ("deleted_rows_count", Some(l(c.deleted.1))),
        ],
    )?;
    Ok(row)
}

/// What the bin's commit writes besides the Parquet outputs.
pub struct SnapshotFiles {
    pub manifests: Vec<WrittenManifest>,
    pub list_path: String,
    pub list_bytes: Vec<u8>,
}

/// The new snapshot's identity, and where its files go.
#[derive(Clone, Copy)]
struct NewSnapshot<'a> {
    snapshot_id: i64,
    sequence: i64,
    metadata_dir: &'a str,
}

impl NewSnapshot<'_> {
    fn manifest_path(&self, tag: &str) -> String {
        format!("{}{}-{tag}.avro", self.metadata_dir, uuid::Uuid::new_v4())
    }

    fn list_row(
        &self,
        template: &Value,
        list: &AvroFile,
        path: &str,
        len: usize,
        c: &Counts,
    ) -> Result<Value, E> {
        list_row(
            template,
            &list.schema,
            path,
            len,
            self.snapshot_id,
            self.sequence,
            c,
        )
    }
}

/// Builds the manifests and manifest list of the snapshot replacing `bin`'s files with
/// `outputs` on top of `base`. Fails (a conflict) when a replaced file is not live in `base`.
pub fn build(
    base: &TableState,
    bin: &IceBin,
    outputs: &[OutputFile],
    snapshot_id: i64,
    sequence: i64,
    metadata_dir: &str,
) -> Result<SnapshotFiles, E> {
    let snap = NewSnapshot {
        snapshot_id,
        sequence,
        metadata_dir,
    };
    let list = base
        .list
        .as_ref()
        .ok_or_else(|| E::Conflict("the table has no snapshot any more".into()))?;
    let Touched {
        mut rows,
        mut manifests,
        template,
    } = rewrite_touched(base, list, bin, snap)?;
    let (mi, template) = template;
    let added = added_manifest(
        &base.manifests[mi],
        &template,
        outputs,
        snapshot_id,
        &snap.manifest_path("m0"),
    )?;
    let counts = Counts {
        added: (
            outputs.len() as i64,
            outputs.iter().map(|o| o.records as i64).sum(),
        ),
        min_sequence: Some(sequence),
        ..Default::default()
    };
    let added_row = snap.list_row(
        &list.rows[mi],
        list,
        &added.path,
        added.bytes.len(),
        &counts,
    )?;
    rows.insert(0, added_row);
    manifests.insert(0, added);
    let (list_path, list_bytes) = write_list(base, list, &rows, snap)?;
    Ok(SnapshotFiles {
        manifests,
        list_path,
        list_bytes,
    })
}

/// The list rows and rewritten manifests of `base`, with the bin's files DELETED, and the
/// entry (and its manifest's index) the outputs' entries are modelled on.
struct Touched {
    rows: Vec<Value>,
    manifests: Vec<WrittenManifest>,
    template: (usize, Value),
}

/// Rewrites each manifest that holds a replaced file (others are reused as they are); every
/// replaced file must be found live, in a manifest of the bin's spec.
fn rewrite_touched(
    base: &TableState,
    list: &AvroFile,
    bin: &IceBin,
    snap: NewSnapshot,
) -> Result<Touched, E> {
    let replaced: HashSet<String> = bin.paths();
    let mut found: HashSet<String> = HashSet::new();
    let mut manifests = Vec::new();
    let mut rows = Vec::new();
    // The entry and manifest the outputs' entries are modelled on (the bin's first input).
    let mut template: Option<(usize, Value)> = None;
    for (mi, (m, row)) in base.manifests.iter().zip(&list.rows).enumerate() {
        let touched = !m.deletes
            && m.file
                .rows
                .iter()
                .any(|e| is_live(e) && file_path(e).is_some_and(|p| replaced.contains(&p)));
        if !touched {
            // A manifest of no live file (its files were replaced or deleted by an earlier
            // snapshot, which recorded it) is left out, as Iceberg's and pyiceberg's writers
            // leave it: so a stream compacted as it lands keeps a bounded manifest list.
            if m.file.rows.iter().any(is_live) {
                rows.push(row.clone());
            }
            continue;
        }
        if m.spec_id != bin.spec_id {
            return Err(E::Conflict(format!(
                "a replaced file is now in a manifest of partition spec {} (the bin's is {})",
                m.spec_id, bin.spec_id
            )));
        }
        let (entries, counts) = rewrite_entries(
            m,
            &replaced,
            snap.snapshot_id,
            &mut found,
            &mut template,
            mi,
        )?;
        let path = snap.manifest_path("m1");
        let bytes = m.file.write(&entries).map_err(|source| E::Avro {
            what: "manifest",
            file: path.clone(),
            source,
        })?;
        rows.push(snap.list_row(row, list, &path, bytes.len(), &counts)?);
        manifests.push(WrittenManifest { path, bytes });
    }
    if let Some(missing) = replaced.iter().find(|p| !found.contains(*p)) {
        return Err(E::Conflict(format!("{missing} is no longer live")));
    }
    let Some(template) = template else {
        return Err(E::Conflict("the bin's files are no longer live".into()));
    };
    Ok(Touched {
        rows,
        manifests,
        template,
    })
}

/// The new manifest list: `rows` under the base list's header, with the new snapshot's ids.
fn write_list(
    base: &TableState,
    list: &AvroFile,
    rows: &[Value],
    snap: NewSnapshot,
) -> Result<(String, Vec<u8>), E> {
    let list_path = format!(
        "{}snap-{}-1-{}.avro",
        snap.metadata_dir,
        snap.snapshot_id,
        uuid::Uuid::new_v4()
    );
    let mut header = list.clone();
    let parent = base.snapshot().map(|s| s.snapshot_id);
    header.meta.insert(
        "snapshot-id".into(),
        snap.snapshot_id.to_string().into_bytes(),
    );
    header.meta.insert(
        "parent-snapshot-id".into(),
        parent.map_or("null".into(), |p| p.to_string()).into_bytes(),
    );
    header.meta.insert(
        "sequence-number".into(),
        snap.sequence.to_string().into_bytes(),
    );
    let list_bytes = header.write(rows).map_err(|source| E::Avro {
        what: "manifest list",
        file: list_path.clone(),
        source,
    })?;
    Ok((list_path, list_bytes))
}

/// A touched manifest's entries: replaced files DELETED by this snapshot, other live files
/// EXISTING; sequence numbers and snapshot ids written out (an EXISTING or DELETED entry
/// inherits nothing). Entries already DELETED are dropped, as Iceberg's writers do.
fn rewrite_entries(
    m: &Manifest,
    replaced: &HashSet<String>,
    snapshot_id: i64,
    found: &mut HashSet<String>,
    template: &mut Option<(usize, Value)>,
    mi: usize,
) -> Result<(Vec<Value>, Counts), E> {
    let schema = &m.file.schema;
    let mut out = Vec::new();
    let mut c = Counts::default();
    for e in m.file.rows.iter().filter(|e| is_live(e)) {
        let path = file_path(e).ok_or_else(|| malformed("an entry without a file path"))?;
        let records = data_file(e)
            .and_then(|d| long(d, "record_count"))
            .unwrap_or(0);
        let (data_seq, file_seq) = (m.data_sequence(e), m.file_sequence(e));
        let gone = replaced.contains(&path);
        let mut entry = e.clone();
        let (st, sid) = if gone {
            found.insert(path);
            if template.is_none() {
                *template = Some((mi, e.clone()));
            }
            c.deleted.0 += 1;
            c.deleted.1 += records;
            (STATUS_DELETED, snapshot_id)
        } else {
            c.existing.0 += 1;
            c.existing.1 += records;
            (STATUS_EXISTING, m.snapshot_id(e))
        };
        c.min_sequence = Some(c.min_sequence.map_or(data_seq, |s: i64| s.min(data_seq)));
        debug_assert!(status(e) != Some(STATUS_DELETED));
        set(
            &mut entry,
            schema,
            &[
                ("status", Some(Value::Int(st))),
                ("snapshot_id", Some(Value::Long(sid))),
                ("sequence_number", Some(Value::Long(data_seq))),
                ("file_sequence_number", Some(Value::Long(file_seq))),
            ],
        )?;
        out.push(entry);
    }
    Ok((out, c))
}

/// The manifest of the outputs: ADDED entries modelled on `template` (an entry of the bin's
/// partition), sequence numbers left to inheritance so a retried commit only rewrites the list.
fn added_manifest(
    m: &Manifest,
    template: &Value,
    outputs: &[OutputFile],
    snapshot_id: i64,
    path: &str,
) -> Result<WrittenManifest, E> {
    let schema = &m.file.schema;
    let df_schema = field_schema(schema, "data_file")?;
    let mut entries = Vec::new();
    for o in outputs {
        let mut entry = template.clone();
        set(
            &mut entry,
            schema,
            &[
                ("status", Some(Value::Int(STATUS_ADDED))),
                ("snapshot_id", Some(Value::Long(snapshot_id))),
                ("sequence_number", None),
                ("file_sequence_number", None),
            ],
        )?;
        let df = data_file_mut(&mut entry).ok_or_else(|| malformed("no data_file"))?;
        let bytes = |b: Vec<u8>| Value::Bytes(b);
        let mut updates: Vec<(&str, Option<Value>)> = vec![
            ("content", Some(Value::Int(0))),
            ("file_path", Some(Value::String(o.path.clone()))),
            ("file_format", Some(Value::String("PARQUET".into()))),
            ("record_count", Some(Value::Long(o.records as i64))),
            ("file_size_in_bytes", Some(Value::Long(o.size as i64))),
            (
                "column_sizes",
                int_map(&o.metrics.column_sizes, Value::Long),
            ),
            (
                "value_counts",
                int_map(&o.metrics.value_counts, Value::Long),
            ),
            (
                "null_value_counts",
                int_map(&o.metrics.null_value_counts, Value::Long),
            ),
            ("lower_bounds", int_map(&o.metrics.lower_bounds, bytes)),
            ("upper_bounds", int_map(&o.metrics.upper_bounds, bytes)),
            ("sort_order_id", o.sort_order_id.map(Value::Int)),
        ];
        // Everything else a file describes about itself is not known for the output: null.
        for f in record_fields(df_schema).unwrap_or_default() {
            let known = matches!(
                f.name.as_str(),
                "content"
                    | "file_path"
                    | "file_format"
                    | "partition"
                    | "record_count"
                    | "file_size_in_bytes"
                    | "column_sizes"
                    | "value_counts"
                    | "null_value_counts"
                    | "lower_bounds"
                    | "upper_bounds"
                    | "sort_order_id"
            );
            if !known {
                updates.push((f.name.as_str(), None));
            }
        }
        set(df, df_schema, &updates)?;
        entries.push(entry);
    }
    let bytes = m.file.write(&entries).map_err(|source| E::Avro {
        what: "manifest",
        file: path.to_string(),
        source,
    })?;
    Ok(WrittenManifest {
        path: path.to_string(),
        bytes,
    })
}
