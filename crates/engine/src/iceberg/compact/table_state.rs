//! One version of an Iceberg table as a commit needs it: the metadata JSON kept whole (every
//! field lakehealth does not model is written back unchanged), the current snapshot's manifest
//! list and every manifest with all their entries (live and deleted), read through the catalog's
//! `metadata_location`.

use apache_avro::types::Value;

use super::IcebergCompactError as E;
use super::avro_file::{AvroFile, field, long, string};
use crate::iceberg::Stores;
use crate::iceberg::metadata::{Snapshot, TableMetadata};

/// Manifest entry status (the Iceberg spec's `status`).
pub const STATUS_EXISTING: i32 = 0;
pub const STATUS_ADDED: i32 = 1;
pub const STATUS_DELETED: i32 = 2;

/// A manifest of the current snapshot, with its row in the manifest list.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub path: String,
    pub spec_id: i32,
    /// Holds delete files.
    pub deletes: bool,
    /// The manifest list row's `sequence_number`: what ADDED entries with none inherit.
    pub sequence_number: i64,
    /// The row's `added_snapshot_id`: what entries without a snapshot id inherit.
    pub added_snapshot_id: i64,
    pub file: AvroFile,
}

impl Manifest {
    /// An entry's data sequence number, inherited from the manifest when null.
    pub fn data_sequence(&self, entry: &Value) -> i64 {
        long(entry, "sequence_number").unwrap_or(self.sequence_number)
    }

    pub fn file_sequence(&self, entry: &Value) -> i64 {
        long(entry, "file_sequence_number").unwrap_or(self.sequence_number)
    }

    pub fn snapshot_id(&self, entry: &Value) -> i64 {
        long(entry, "snapshot_id").unwrap_or(self.added_snapshot_id)
    }
}

pub fn status(entry: &Value) -> Option<i32> {
    long(entry, "status").map(|s| s as i32)
}

pub fn is_live(entry: &Value) -> bool {
    status(entry) != Some(STATUS_DELETED)
}

pub fn data_file(entry: &Value) -> Option<&Value> {
    field(entry, "data_file")
}

/// The data file's path (every entry has one).
pub fn file_path(entry: &Value) -> Option<String> {
    string(data_file(entry)?, "file_path")
}

#[derive(Debug, Clone)]
pub struct TableState {
    pub metadata_location: String,
    pub json: serde_json::Value,
    pub meta: TableMetadata,
    /// The current snapshot's manifest list (None: no snapshot yet).
    pub list: Option<AvroFile>,
    /// In manifest-list order (row i of the list is manifest i).
    pub manifests: Vec<Manifest>,
}

impl TableState {
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.meta.current_snapshot()
    }

    pub fn table_uuid(&self) -> Option<&str> {
        self.json.get("table-uuid").and_then(|v| v.as_str())
    }

    pub fn last_sequence_number(&self) -> i64 {
        self.json
            .get("last-sequence-number")
            .and_then(|v| v.as_i64())
            .unwrap_or(0)
    }

    /// Loads the table whose current metadata file is `metadata_location`. Only format v2 is
    /// written: v1 has no sequence numbers to keep, v3 adds row lineage (`first-row-id`) and
    /// deletion vectors that a v2 writer would get wrong.
    pub async fn load(
        stores: &mut Stores<'_>,
        table: &str,
        metadata_location: &str,
    ) -> Result<Self, E> {
        let (bytes, _) = stores
            .read(table, "metadata file", metadata_location)
            .await?;
        let json: serde_json::Value = serde_json::from_slice(&bytes).map_err(|source| E::Json {
            file: metadata_location.to_string(),
            source,
        })?;
        let meta = TableMetadata::parse(&bytes).map_err(|source| E::Json {
            file: metadata_location.to_string(),
            source,
        })?;
        match meta.format_version {
            2 => {}
            3 => return Err(E::Unsupported(
                "format v3 tables are not compacted: v3 adds row lineage (first-row-id, next-row-id) and deletion vectors that a rewrite must carry, which lakehealth does not write yet".into(),
            )),
            v => return Err(E::Unsupported(format!(
                "format v{v} tables are not compacted: lakehealth writes v2 commits (sequence numbers); upgrade the table to format-version 2"
            ))),
        }
        let mut state = TableState {
            metadata_location: metadata_location.to_string(),
            json,
            meta,
            list: None,
            manifests: Vec::new(),
        };
        let Some(snap) = state.snapshot() else {
            return Ok(state);
        };
        let Some(list_uri) = snap.manifest_list.clone() else {
            return Err(E::Unsupported(
                "the current snapshot lists its manifests inline (an early v1 writer)".into(),
            ));
        };
        let list = read_avro(stores, table, "manifest list", &list_uri).await?;
        for (i, row) in list.rows.iter().enumerate() {
            let bad = |detail: &str| E::Malformed {
                what: "manifest list",
                file: list_uri.clone(),
                detail: format!("row {i}: {detail}"),
            };
            let path = string(row, "manifest_path").ok_or_else(|| bad("no manifest_path"))?;
            let file = read_avro(stores, table, "manifest", &path).await?;
            state.manifests.push(Manifest {
                spec_id: long(row, "partition_spec_id").ok_or_else(|| bad("no spec id"))? as i32,
                deletes: long(row, "content").unwrap_or(0) == 1,
                sequence_number: long(row, "sequence_number")
                    .ok_or_else(|| bad("no sequence_number (a v2 list has one)"))?,
                added_snapshot_id: long(row, "added_snapshot_id")
                    .ok_or_else(|| bad("no added_snapshot_id"))?,
                path,
                file,
            });
        }
        state.list = Some(list);
        Ok(state)
    }

    /// Every live data file path of the snapshot.
    pub fn live_data_files(&self) -> std::collections::HashSet<String> {
        self.manifests
            .iter()
            .filter(|m| !m.deletes)
            .flat_map(|m| m.file.rows.iter())
            .filter(|e| is_live(e))
            .filter_map(file_path)
            .collect()
    }
}

pub(super) async fn read_avro(
    stores: &mut Stores<'_>,
    table: &str,
    what: &'static str,
    uri: &str,
) -> Result<AvroFile, E> {
    let (bytes, _) = stores.read(table, what, uri).await?;
    AvroFile::read(&bytes).map_err(|source| E::Avro {
        what,
        file: uri.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::OpenOptions;

    async fn load_version(v: u8) -> Result<TableState, E> {
        let d = tempfile::tempdir().unwrap();
        let meta = d.path().join("00001-x.metadata.json");
        std::fs::write(
            &meta,
            serde_json::json!({"format-version": v, "location": "/t", "current-snapshot-id": -1})
                .to_string(),
        )
        .unwrap();
        let opts = OpenOptions::default();
        let mut stores = Stores::new(&opts);
        TableState::load(&mut stores, "t", meta.to_str().unwrap()).await
    }

    #[tokio::test]
    async fn format_v3_and_v1_are_refused_with_the_reason_and_v2_loads() {
        let e = load_version(3).await.unwrap_err().to_string();
        assert!(e.contains("format v3") && e.contains("row lineage"), "{e}");
        let e = load_version(1).await.unwrap_err().to_string();
        assert!(
            e.contains("format v1") && e.contains("sequence numbers"),
            "{e}"
        );
        let s = load_version(2).await.unwrap();
        assert!(s.list.is_none() && s.manifests.is_empty());
    }
}
