//! Avro object container files read and written with their header kept byte for byte: Iceberg
//! readers (pyiceberg, Java) resolve manifest fields by the `field-id` attributes of the schema
//! JSON in the header, and the header's user metadata (`partition-spec`, `snapshot-id` ...) is
//! part of the format, so a rewritten manifest or manifest list carries the original schema text
//! rather than a re-serialised one.

use std::collections::HashMap;

use apache_avro::types::Value;
use apache_avro::{Codec, Reader, Schema, Writer};

const MAGIC: &[u8; 4] = b"Obj\x01";
pub const SCHEMA_KEY: &str = "avro.schema";
const CODEC_KEY: &str = "avro.codec";

#[derive(Debug, thiserror::Error)]
pub enum AvroFileError {
    #[error(transparent)]
    Avro(#[from] apache_avro::Error),
    #[error(transparent)]
    Container(#[from] crate::iceberg::manifests::ManifestError),
    #[error("not an Avro object container file: {0}")]
    Header(&'static str),
}

/// A container file: its header metadata (schema text included), parsed schema and rows.
#[derive(Debug, Clone)]
pub struct AvroFile {
    pub meta: HashMap<String, Vec<u8>>,
    pub schema: Schema,
    pub rows: Vec<Value>,
}

fn header_schema() -> Result<Schema, AvroFileError> {
    Ok(Schema::parse_str(r#"{"type": "map", "values": "bytes"}"#)?)
}

impl AvroFile {
    pub fn read(bytes: &[u8]) -> Result<Self, AvroFileError> {
        // Checked before apache-avro reads the file (see `container_header`).
        let meta = crate::iceberg::manifests::container_header(bytes)?;
        if !meta.contains_key(SCHEMA_KEY) {
            return Err(AvroFileError::Header("no avro.schema"));
        }
        let reader = Reader::new(bytes)?;
        let schema = reader.writer_schema().clone();
        let rows = reader.collect::<Result<Vec<_>, _>>()?;
        Ok(Self { meta, schema, rows })
    }

    /// The user metadata value `key` as text.
    pub fn meta_str(&self, key: &str) -> Option<String> {
        self.meta
            .get(key)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// The file with `rows`, this file's schema text and metadata (uncompressed blocks).
    pub fn write(&self, rows: &[Value]) -> Result<Vec<u8>, AvroFileError> {
        let mut meta: HashMap<String, Value> = self
            .meta
            .iter()
            .filter(|(k, _)| k.as_str() != CODEC_KEY)
            .map(|(k, v)| (k.clone(), Value::Bytes(v.clone())))
            .collect();
        meta.insert(CODEC_KEY.into(), Value::Bytes(b"null".to_vec()));
        let marker: [u8; 16] = *uuid::Uuid::new_v4().as_bytes();
        let mut out = MAGIC.to_vec();
        let header = header_schema()?;
        let writer = apache_avro::writer::datum::GenericDatumWriter::builder(&header).build()?;
        out.extend(writer.write_value_to_vec(Value::Map(meta))?);
        out.extend_from_slice(&marker);
        let mut w = Writer::append_to_with_codec(&self.schema, out, Codec::Null, marker)?;
        for r in rows {
            // Validated against the schema: a row that does not fit is an error, not a corrupt file.
            w.append_value_ref(r)?;
        }
        Ok(w.into_inner()?)
    }
}

/// A record's field (unions unwrapped).
pub fn field<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    match record {
        Value::Record(fields) => fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| unwrap_union(v)),
        Value::Union(_, inner) => field(inner, name),
        _ => None,
    }
}

pub fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => unwrap_union(inner),
        other => other,
    }
}

/// An integer field (int or long), None when absent or null.
pub fn long(record: &Value, name: &str) -> Option<i64> {
    match field(record, name)? {
        Value::Int(i) => Some(i64::from(*i)),
        Value::Long(l) => Some(*l),
        _ => None,
    }
}

pub fn string(record: &Value, name: &str) -> Option<String> {
    match field(record, name)? {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_file_keeps_the_schema_text_and_metadata() {
        // A field-id attribute apache-avro does not model: the header keeps it verbatim.
        let text = r#"{"type": "record", "name": "r", "fields": [
            {"name": "a", "type": "long", "field-id": 7}]}"#;
        let original = AvroFile {
            meta: HashMap::from([
                (SCHEMA_KEY.to_string(), text.as_bytes().to_vec()),
                ("snapshot-id".to_string(), b"42".to_vec()),
            ]),
            schema: Schema::parse_str(text).unwrap(),
            rows: Vec::new(),
        };
        let rows = vec![
            Value::Record(vec![("a".into(), Value::Long(5))]),
            Value::Record(vec![("a".into(), Value::Long(6))]),
        ];
        let again = AvroFile::read(&original.write(&rows).unwrap()).unwrap();
        assert_eq!(again.rows, rows);
        assert_eq!(again.meta_str(SCHEMA_KEY).as_deref(), Some(text));
        assert_eq!(again.meta_str("snapshot-id").as_deref(), Some("42"));
        // What apache-avro's own writer wrote reads the same way.
        let mut w = Writer::new(&original.schema, Vec::new()).unwrap();
        w.append_value(rows[0].clone()).unwrap();
        assert_eq!(
            AvroFile::read(&w.into_inner().unwrap()).unwrap().rows,
            rows[..1]
        );
        // A row that does not fit the schema is refused.
        assert!(
            original
                .write(&[Value::Record(vec![("a".into(), Value::String("x".into()))])])
                .is_err()
        );
    }
}
