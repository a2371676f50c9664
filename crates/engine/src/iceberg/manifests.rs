//! A snapshot's manifest list and its manifests (Avro object container files), read with the
//! `apache-avro` crate by field name, so format versions 1–3 read alike: v1 has no `content`
//! fields (everything is data), v2 adds delete manifests and delete files.

use std::collections::HashMap;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value;
use apache_avro::{Reader, Schema};

/// One row of a manifest list: a manifest file of the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestRef {
    pub path: String,
    pub length: u64,
    pub spec_id: i32,
    /// Holds delete files (v2 `content` = 1), else data files.
    pub deletes: bool,
    /// The snapshot that wrote the manifest (None: a v1 list without the field).
    pub added_snapshot_id: Option<i64>,
}

/// What a file listed in a manifest holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileContent {
    Data,
    PositionDeletes,
    EqualityDeletes,
}

/// A live (added or existing) file of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    pub content: FileContent,
    pub path: String,
    pub size: u64,
    pub records: u64,
    /// The partition struct: field name → transformed value.
    pub partition: Vec<(String, Value)>,
    /// Its columns' statistics, when asked for (`report --skipping`): most reads need sizes
    /// only, and a million files' bounds are worth not decoding.
    pub stats: Option<Box<FileStats>>,
}

/// A data file's column statistics by field id: `lower_bounds` and `upper_bounds` in Iceberg's
/// single-value serialisation, `null_value_counts`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileStats {
    pub lower: HashMap<i32, Vec<u8>>,
    pub upper: HashMap<i32, Vec<u8>>,
    pub nulls: HashMap<i32, i64>,
}

/// An Iceberg `map<int, V>`: Avro arrays of key/value records (as the spec writes them), or
/// an Avro map keyed by the id's text.
fn int_map<T>(v: Option<&Value>, value: impl Fn(&Value) -> Option<T>) -> HashMap<i32, T> {
    let mut out = HashMap::new();
    match v {
        Some(Value::Array(items)) => {
            for item in items {
                let Some(r) = record(item) else { continue };
                let key = match field(r, "key") {
                    Some(Value::Int(k)) => *k,
                    _ => continue,
                };
                if let Some(v) = field(r, "value").and_then(&value) {
                    out.insert(key, v);
                }
            }
        }
        Some(Value::Map(m)) => {
            for (k, v) in m {
                if let (Ok(k), Some(v)) = (k.parse(), value(unwrap_union(v))) {
                    out.insert(k, v);
                }
            }
        }
        _ => {}
    }
    out
}

fn file_stats(df: &[(String, Value)]) -> FileStats {
    let bytes = |v: &Value| match v {
        Value::Bytes(b) | Value::Fixed(_, b) => Some(b.clone()),
        _ => None,
    };
    let long = |v: &Value| match v {
        Value::Long(l) => Some(*l),
        Value::Int(i) => Some(i64::from(*i)),
        _ => None,
    };
    FileStats {
        lower: int_map(field(df, "lower_bounds"), bytes),
        upper: int_map(field(df, "upper_bounds"), bytes),
        nulls: int_map(field(df, "null_value_counts"), long),
    }
}

/// Entry status 2: the file was deleted by this manifest's snapshot, it is not live.
const STATUS_ADDED: i64 = 1;
const STATUS_DELETED: i64 = 2;

fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => unwrap_union(inner),
        other => other,
    }
}

fn field<'a>(record: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    record
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| unwrap_union(v))
}

fn int(record: &[(String, Value)], name: &str) -> Option<i64> {
    match field(record, name)? {
        Value::Int(i) => Some(i64::from(*i)),
        Value::Long(l) => Some(*l),
        _ => None,
    }
}

fn string(record: &[(String, Value)], name: &str) -> Option<String> {
    match field(record, name)? {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn record(v: &Value) -> Option<&[(String, Value)]> {
    match unwrap_union(v) {
        Value::Record(r) => Some(r),
        _ => None,
    }
}

/// Why a manifest (list) row could not be understood.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Avro(#[from] apache_avro::Error),
    #[error("row {row}: {detail}")]
    Row { row: usize, detail: String },
    #[error("not a valid Avro object container file: {0}")]
    Header(&'static str),
}

const MAGIC: &[u8; 4] = b"Obj\x01";
/// The header key apache-avro reads a zstandard, bzip2 or xz level from.
const CODEC_LEVEL_KEY: &str = "avro.codec.compression_level";

/// The metadata map of an Avro object container file's header (the schema text, the codec, a
/// writer's own keys). Every reader of a manifest (list) calls it before apache-avro reads the
/// file: apache-avro 0.22 takes the first byte of `avro.codec.compression_level` without a
/// bounds check, so an empty one panicked (found by fuzzing).
pub fn container_header(bytes: &[u8]) -> Result<HashMap<String, Vec<u8>>, ManifestError> {
    let mut rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ManifestError::Header("no magic bytes"))?;
    let schema = Schema::parse_str(r#"{"type": "map", "values": "bytes"}"#)?;
    let reader = GenericDatumReader::builder(&schema).build()?;
    let Value::Map(map) = reader.read_value(&mut rest)? else {
        return Err(ManifestError::Header("no metadata map"));
    };
    let meta: HashMap<String, Vec<u8>> = map
        .into_iter()
        .filter_map(|(k, v)| match v {
            Value::Bytes(b) => Some((k, b)),
            _ => None,
        })
        .collect();
    if meta.get(CODEC_LEVEL_KEY).is_some_and(Vec::is_empty) {
        return Err(ManifestError::Header(
            "its avro.codec.compression_level is empty",
        ));
    }
    Ok(meta)
}

fn rows(bytes: &[u8]) -> Result<Vec<Vec<(String, Value)>>, ManifestError> {
    container_header(bytes)?;
    let reader = Reader::new(bytes)?;
    let mut out = Vec::new();
    for (i, v) in reader.enumerate() {
        match v? {
            Value::Record(r) => out.push(r),
            other => {
                return Err(ManifestError::Row {
                    row: i,
                    detail: format!("expected a record, found {other:?}"),
                });
            }
        }
    }
    Ok(out)
}

/// The manifests of a snapshot, from its manifest list.
pub fn read_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestRef>, ManifestError> {
    rows(bytes)?
        .iter()
        .enumerate()
        .map(|(row, r)| {
            let missing = |what: &str| ManifestError::Row {
                row,
                detail: format!("no {what}"),
            };
            Ok(ManifestRef {
                path: string(r, "manifest_path").ok_or_else(|| missing("manifest_path"))?,
                length: int(r, "manifest_length").unwrap_or(0).max(0) as u64,
                spec_id: int(r, "partition_spec_id").unwrap_or(0) as i32,
                deletes: int(r, "content").unwrap_or(0) == 1,
                added_snapshot_id: int(r, "added_snapshot_id"),
            })
        })
        .collect()
}

/// The live files of one manifest (entries with status added or existing), without their
/// column statistics.
pub fn read_manifest(bytes: &[u8]) -> Result<Vec<ManifestFile>, ManifestError> {
    read_manifest_with(bytes, false)
}

/// The same, with each data file's column statistics when `stats`.
pub fn read_manifest_with(bytes: &[u8], stats: bool) -> Result<Vec<ManifestFile>, ManifestError> {
    let mut out = Vec::new();
    for (row, r) in rows(bytes)?.iter().enumerate() {
        let missing = |what: &str| ManifestError::Row {
            row,
            detail: format!("no {what}"),
        };
        if int(r, "status").ok_or_else(|| missing("status"))? == STATUS_DELETED {
            continue;
        }
        let df = field(r, "data_file")
            .and_then(record)
            .ok_or_else(|| missing("data_file"))?;
        let content = match int(df, "content").unwrap_or(0) {
            0 => FileContent::Data,
            1 => FileContent::PositionDeletes,
            2 => FileContent::EqualityDeletes,
            other => {
                return Err(ManifestError::Row {
                    row,
                    detail: format!("unknown data_file.content {other}"),
                });
            }
        };
        out.push(ManifestFile {
            content,
            path: string(df, "file_path").ok_or_else(|| missing("data_file.file_path"))?,
            size: int(df, "file_size_in_bytes")
                .ok_or_else(|| missing("data_file.file_size_in_bytes"))?
                .max(0) as u64,
            records: int(df, "record_count").unwrap_or(0).max(0) as u64,
            partition: field(df, "partition")
                .and_then(record)
                .map(<[_]>::to_vec)
                .unwrap_or_default(),
            stats: (stats && content == FileContent::Data).then(|| Box::new(file_stats(df))),
        });
    }
    Ok(out)
}

/// What one snapshot changed in one of the manifests it wrote: the files it added (ADDED
/// entries) and those it removed (DELETED entries), each entry's snapshot id being the
/// snapshot's (or inherited from the manifest, which `snapshot_id` wrote).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManifestChanges {
    pub added: Vec<ManifestFile>,
    pub removed: Vec<ManifestFile>,
}

/// The entries of a manifest written by `snapshot_id` that it added or removed.
pub fn read_manifest_changes(
    bytes: &[u8],
    snapshot_id: i64,
) -> Result<ManifestChanges, ManifestError> {
    let mut out = ManifestChanges::default();
    for (row, r) in rows(bytes)?.iter().enumerate() {
        let missing = |what: &str| ManifestError::Row {
            row,
            detail: format!("no {what}"),
        };
        let status = int(r, "status").ok_or_else(|| missing("status"))?;
        // An entry without a snapshot id inherits the manifest's: `snapshot_id`.
        if int(r, "snapshot_id").is_some_and(|s| s != snapshot_id) {
            continue;
        }
        let df = field(r, "data_file")
            .and_then(record)
            .ok_or_else(|| missing("data_file"))?;
        if int(df, "content").unwrap_or(0) != 0 {
            continue;
        }
        let f = ManifestFile {
            content: FileContent::Data,
            path: string(df, "file_path").ok_or_else(|| missing("data_file.file_path"))?,
            size: int(df, "file_size_in_bytes").unwrap_or(0).max(0) as u64,
            records: int(df, "record_count").unwrap_or(0).max(0) as u64,
            partition: field(df, "partition")
                .and_then(record)
                .map(<[_]>::to_vec)
                .unwrap_or_default(),
            stats: None,
        };
        match status {
            STATUS_ADDED => out.added.push(f),
            STATUS_DELETED => out.removed.push(f),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use apache_avro::{Schema, Writer};

    /// A manifest with the fields this reader uses, as a v2 writer lays them out.
    pub fn manifest_bytes(entries: &[(i32, i32, &str, i64, Option<&str>)]) -> Vec<u8> {
        let schema = Schema::parse_str(
            r#"{"type": "record", "name": "manifest_entry", "fields": [
              {"name": "status", "type": "int"},
              {"name": "snapshot_id", "type": ["null", "long"], "default": null},
              {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
                {"name": "content", "type": "int"},
                {"name": "file_path", "type": "string"},
                {"name": "file_format", "type": "string"},
                {"name": "partition", "type": {"type": "record", "name": "r102", "fields": [
                  {"name": "category", "type": ["null", "string"], "default": null}]}},
                {"name": "record_count", "type": "long"},
                {"name": "file_size_in_bytes", "type": "long"}]}}]}"#,
        )
        .unwrap();
        let mut w = Writer::new(&schema, Vec::new()).unwrap();
        for &(status, content, path, size, cat) in entries {
            let cat = match cat {
                Some(c) => Value::Union(1, Box::new(Value::String(c.into()))),
                None => Value::Union(0, Box::new(Value::Null)),
            };
            let df = Value::Record(vec![
                ("content".into(), Value::Int(content)),
                ("file_path".into(), Value::String(path.into())),
                ("file_format".into(), Value::String("PARQUET".into())),
                (
                    "partition".into(),
                    Value::Record(vec![("category".into(), cat)]),
                ),
                ("record_count".into(), Value::Long(10)),
                ("file_size_in_bytes".into(), Value::Long(size)),
            ]);
            w.append_value(Value::Record(vec![
                ("status".into(), Value::Int(status)),
                (
                    "snapshot_id".into(),
                    Value::Union(1, Box::new(Value::Long(1))),
                ),
                ("data_file".into(), df),
            ]))
            .unwrap();
        }
        w.into_inner().unwrap()
    }

    #[test]
    fn a_snapshots_changes_are_its_added_and_deleted_data_entries() {
        // manifest_bytes writes every entry with snapshot id 1.
        let bytes = manifest_bytes(&[
            (1, 0, "s3://b/t/data/new.parquet", 100, Some("a")),
            (0, 0, "s3://b/t/data/old.parquet", 200, None),
            (2, 0, "s3://b/t/data/gone.parquet", 300, Some("a")),
            (1, 1, "s3://b/t/data/pos-del.parquet", 40, Some("a")),
        ]);
        let c = read_manifest_changes(&bytes, 1).unwrap();
        let paths = |v: &[ManifestFile]| v.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&c.added), vec!["s3://b/t/data/new.parquet"]);
        assert_eq!(paths(&c.removed), vec!["s3://b/t/data/gone.parquet"]);
        // Entries of another snapshot are not this one's changes.
        assert_eq!(
            read_manifest_changes(&bytes, 2).unwrap(),
            ManifestChanges::default()
        );
    }

    #[test]
    fn reads_live_entries_and_their_content_and_skips_deleted_ones() {
        let bytes = manifest_bytes(&[
            (1, 0, "s3://b/t/data/a.parquet", 100, Some("a")),
            (0, 0, "s3://b/t/data/b.parquet", 200, None),
            (2, 0, "s3://b/t/data/gone.parquet", 300, Some("a")),
            (1, 1, "s3://b/t/data/pos-del.parquet", 40, Some("a")),
            (1, 2, "s3://b/t/data/eq-del.parquet", 50, Some("a")),
        ]);
        let files = read_manifest(&bytes).unwrap();
        let got: Vec<(FileContent, &str, u64)> = files
            .iter()
            .map(|f| (f.content, f.path.as_str(), f.size))
            .collect();
        assert_eq!(
            got,
            vec![
                (FileContent::Data, "s3://b/t/data/a.parquet", 100),
                (FileContent::Data, "s3://b/t/data/b.parquet", 200),
                (
                    FileContent::PositionDeletes,
                    "s3://b/t/data/pos-del.parquet",
                    40
                ),
                (
                    FileContent::EqualityDeletes,
                    "s3://b/t/data/eq-del.parquet",
                    50
                ),
            ]
        );
        assert_eq!(files[0].partition[0].0, "category");
    }

    #[test]
    fn reads_a_manifest_list_without_content_as_data_manifests() {
        let schema = Schema::parse_str(
            r#"{"type": "record", "name": "manifest_file", "fields": [
              {"name": "manifest_path", "type": "string"},
              {"name": "manifest_length", "type": "long"},
              {"name": "partition_spec_id", "type": "int"}]}"#,
        )
        .unwrap();
        let mut w = Writer::new(&schema, Vec::new()).unwrap();
        w.append_value(Value::Record(vec![
            (
                "manifest_path".into(),
                Value::String("/t/metadata/m0.avro".into()),
            ),
            ("manifest_length".into(), Value::Long(1234)),
            ("partition_spec_id".into(), Value::Int(3)),
        ]))
        .unwrap();
        let list = read_manifest_list(&w.into_inner().unwrap()).unwrap();
        assert_eq!(
            list,
            vec![ManifestRef {
                path: "/t/metadata/m0.avro".into(),
                length: 1234,
                spec_id: 3,
                deletes: false,
                added_snapshot_id: None,
            }]
        );
    }

    /// Found by fuzzing (tests/cli/fuzz.rs): a zstandard manifest whose header holds an empty
    /// `avro.codec.compression_level` panicked apache-avro's reader (an index out of bounds).
    #[test]
    fn fuzz_regression_an_empty_codec_level_is_an_error_not_a_panic() {
        let schema = Schema::parse_str(
            r#"{"type": "record", "name": "manifest_file", "fields": [
              {"name": "manifest_path", "type": "string"}]}"#,
        )
        .unwrap();
        let codec = apache_avro::Codec::Zstandard(Default::default());
        let mut w = apache_avro::Writer::with_codec(&schema, Vec::new(), codec).unwrap();
        w.append_value(Value::Record(vec![(
            "manifest_path".into(),
            Value::String("/t/metadata/m0.avro".into()),
        )]))
        .unwrap();
        let mut bytes = w.into_inner().unwrap();
        assert_eq!(read_manifest_list(&bytes).unwrap().len(), 1);
        // The level's value: length 1 (zigzag 2) and one byte, made empty (zigzag 0).
        let key = CODEC_LEVEL_KEY.as_bytes();
        let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
        assert_eq!(bytes[at], 2);
        bytes.splice(at..at + 2, [0]);
        let e = read_manifest_list(&bytes).unwrap_err();
        assert!(matches!(e, ManifestError::Header(_)), "{e:?}");
        assert!(e.to_string().contains("compression_level is empty"), "{e}");
        assert!(read_manifest(&bytes).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(read_manifest(b"not avro at all").is_err());
        assert!(read_manifest_list(b"").is_err());
    }
}
