//! The subset of Delta log actions lakehealth reads, as they appear in JSON commits.
//! Unknown fields and actions are ignored, so newer writers' logs still parse.

use std::collections::HashMap;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
pub struct ActionLine {
    pub add: Option<AddFile>,
    pub remove: Option<RemoveFile>,
    #[serde(rename = "metaData")]
    pub meta_data: Option<MetaData>,
    pub protocol: Option<Protocol>,
    pub txn: Option<Txn>,
    #[serde(rename = "commitInfo")]
    pub commit_info: Option<CommitInfo>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVector {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    pub offset: Option<i32>,
    /// Rows the vector marks deleted (required by the protocol).
    pub cardinality: Option<i64>,
}

impl DeletionVector {
    /// The spec's unique id of a deletion vector.
    pub fn unique_id(&self) -> String {
        match self.offset {
            Some(o) => format!("{}{}@{o}", self.storage_type, self.path_or_inline_dv),
            None => format!("{}{}", self.storage_type, self.path_or_inline_dv),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddFile {
    pub path: String,
    #[serde(default)]
    pub partition_values: HashMap<String, Option<String>>,
    pub size: i64,
    pub data_change: Option<bool>,
    pub deletion_vector: Option<DeletionVector>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoveFile {
    pub path: String,
    pub size: Option<i64>,
    pub deletion_timestamp: Option<i64>,
    pub data_change: Option<bool>,
    pub partition_values: Option<HashMap<String, Option<String>>>,
    pub deletion_vector: Option<DeletionVector>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaData {
    #[serde(default)]
    pub id: String,
    /// Required by the protocol, yet absent in some of Spark's own test tables (Spark reads
    /// them): empty when absent, and `missing_required` names it.
    #[serde(default)]
    pub schema_string: String,
    /// None when absent (as `schemaString`, Spark tolerates it).
    #[serde(default)]
    pub format: Option<Format>,
    #[serde(default)]
    pub partition_columns: Vec<String>,
    #[serde(default)]
    pub configuration: HashMap<String, Option<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Format {
    #[serde(default)]
    pub provider: String,
}

impl MetaData {
    /// Fields the protocol requires that this `metaData` lacks (`schemaString`, `format`).
    pub fn missing_required(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.schema_string.is_empty() {
            out.push("schemaString");
        }
        if self.format.is_none() {
            out.push("format");
        }
        out
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    pub reader_features: Option<Vec<String>>,
    pub writer_features: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    pub last_updated: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitInfo {
    pub timestamp: Option<i64>,
    pub operation: Option<String>,
    #[serde(default)]
    pub operation_parameters: HashMap<String, serde_json::Value>,
    #[serde(default)]
    pub operation_metrics: HashMap<String, serde_json::Value>,
    pub engine_info: Option<String>,
    /// delta-rs writes its version here instead of `engineInfo` ("delta-rs.1.6.6").
    pub client_version: Option<String>,
    pub is_blind_append: Option<bool>,
    /// When the commit is considered to have succeeded (the `inCommitTimestamp` feature).
    pub in_commit_timestamp: Option<i64>,
    /// The id a lakehealth compaction commit carries (`delta::commit::COMMIT_ID_KEY`), to find
    /// its own commit after an ambiguous failure.
    #[serde(rename = "lakehealth.commitId")]
    pub lakehealth_commit_id: Option<String>,
    /// Who started the lakehealth compaction that made this commit (`model::trigger`).
    #[serde(rename = "lakehealth.trigger")]
    pub lakehealth_trigger: Option<String>,
}

impl CommitInfo {
    /// Operation metrics are strings in Spark's logs and numbers in some others.
    pub fn metric(&self, key: &str) -> Option<u64> {
        match self.operation_metrics.get(key)? {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// Who wrote the commit: `engineInfo` (Spark, Flink), else `clientVersion` (delta-rs).
    pub fn engine(&self) -> Option<String> {
        self.engine_info
            .clone()
            .or_else(|| self.client_version.clone())
    }

    pub fn param(&self, key: &str) -> Option<String> {
        match self.operation_parameters.get(key)? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// A commit's actions, one JSON object a line, read leniently: a line that is not an action
/// is skipped. For looking things up in commits; reading the log itself rejects a corrupt
/// commit (`walker::parse_commit`).
pub fn scan(bytes: &[u8]) -> impl Iterator<Item = ActionLine> + '_ {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<ActionLine>(l).ok())
}

/// The commit's `commitInfo`, if it has one.
pub fn commit_info(bytes: &[u8]) -> Option<CommitInfo> {
    scan(bytes).find_map(|a| a.commit_info)
}

/// `numRecords` of a file's statistics JSON (None when absent or unreadable): serde skips
/// every other field without building it.
pub fn num_records(stats: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct Stats {
        #[serde(rename = "numRecords")]
        num_records: Option<u64>,
    }
    serde_json::from_str::<Stats>(stats).ok()?.num_records
}

/// Identity of a file in the log: its path plus its deletion vector, as the spec reconciles them.
pub fn file_key(path: &str, dv: Option<&DeletionVector>) -> String {
    match dv {
        Some(dv) => format!("{path}\u{1f}{}", dv.unique_id()),
        None => path.to_string(),
    }
}

/// Logical partition column names by physical name (column mapping), from the schema string.
pub fn physical_names(schema_string: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(schema_string) else {
        return out;
    };
    for f in v
        .get("fields")
        .and_then(|f| f.as_array())
        .into_iter()
        .flatten()
    {
        let name = f.get("name").and_then(|n| n.as_str());
        let phys = f
            .get("metadata")
            .and_then(|m| m.get("delta.columnMapping.physicalName"))
            .and_then(|p| p.as_str());
        if let (Some(n), Some(p)) = (name, phys) {
            out.insert(p.to_string(), n.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_spark_add_with_dv_and_ignores_unknown_fields() {
        let line = r#"{"add":{"path":"a.parquet","partitionValues":{"k":null},"size":635,"modificationTime":1,"dataChange":true,"stats":"{}","tags":{"x":"y"},"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2}}}"#;
        let a: ActionLine = serde_json::from_str(line).unwrap();
        let add = a.add.unwrap();
        assert_eq!(add.size, 635);
        assert_eq!(add.partition_values.get("k"), Some(&None));
        let key = file_key(&add.path, add.deletion_vector.as_ref());
        assert_ne!(key, "a.parquet");
    }

    #[test]
    fn metadata_without_schema_string_or_format_parses_and_names_them() {
        let a: ActionLine =
            serde_json::from_str(r#"{"metaData":{"id":"x","partitionColumns":["d"]}}"#).unwrap();
        let md = a.meta_data.unwrap();
        assert_eq!(md.partition_columns, vec!["d".to_string()]);
        assert_eq!(md.missing_required(), vec!["schemaString", "format"]);
        let a: ActionLine = serde_json::from_str(
            r#"{"metaData":{"id":"x","format":{"provider":"parquet"},"schemaString":"{}"}}"#,
        )
        .unwrap();
        assert!(a.meta_data.unwrap().missing_required().is_empty());
    }

    #[test]
    fn scanning_skips_what_is_not_an_action_and_finds_the_commit_info() {
        let commit = concat!(
            r#"{"remove":{"path":"a%20b.parquet","dataChange":false}}"#,
            "\nnot json\n",
            r#"{"commitInfo":{"operation":"OPTIMIZE","clientVersion":"delta-rs.1","lakehealth.commitId":"c1"}}"#,
            "\n"
        );
        let removed: Vec<String> = scan(commit.as_bytes())
            .filter_map(|a| a.remove.map(|r| r.path))
            .collect();
        assert_eq!(removed, ["a%20b.parquet"]);
        let ci = commit_info(commit.as_bytes()).unwrap();
        assert_eq!(ci.operation.as_deref(), Some("OPTIMIZE"));
        assert_eq!(ci.engine().as_deref(), Some("delta-rs.1"));
        assert_eq!(ci.lakehealth_commit_id.as_deref(), Some("c1"));
        assert_eq!(
            crate::delta::commit::COMMIT_ID_KEY,
            "lakehealth.commitId",
            "the key the field is read from"
        );
    }

    #[test]
    fn metrics_accept_strings_and_numbers() {
        let c: CommitInfo = serde_json::from_str(
            r#"{"operation":"OPTIMIZE","operationMetrics":{"numAddedFiles":"3","numRemovedFiles":7}}"#,
        )
        .unwrap();
        assert_eq!(c.metric("numAddedFiles"), Some(3));
        assert_eq!(c.metric("numRemovedFiles"), Some(7));
        assert_eq!(c.metric("missing"), None);
    }
}
