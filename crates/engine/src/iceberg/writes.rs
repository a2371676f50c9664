//! What each snapshot of an Iceberg table wrote, for the janitor's time rules
//! (`written_within`, `quiet_period`, the age rule), as a Delta table's commits are read for
//! them (`janitor::activity`): the manifests a snapshot's list says it wrote hold the data
//! files it added (ADDED entries) and removed (DELETED entries). A snapshot never changes, so
//! a caller that keeps what it read reads each once. Only the current snapshot's ancestors
//! still in the metadata can be read: how far back they reach is how far back writes are known
//! (all of it when the oldest has no parent: the table's first snapshot).

use std::collections::HashMap;

use super::manifests::{read_manifest_changes, read_manifest_list};
use super::metadata::TableMetadata;
use super::{SpecView, Stores, iceberg_error, partition_columns, read_inside, read_metadata};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::options::OpenOptions;

/// One snapshot of the current snapshot's ancestry.
#[derive(Debug, Clone, PartialEq)]
pub struct Ancestor {
    pub snapshot_id: i64,
    pub sequence: u64,
    pub ts_ms: i64,
}

/// What one snapshot wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotWrites {
    pub ancestor: Ancestor,
    /// Its operation is not `replace`: it changed data (a compaction changes none).
    pub data_change: bool,
    /// Data files added: path, partition values in the table's partition-column order, size.
    pub added: Vec<(String, Vec<Option<String>>, u64)>,
    /// Data files removed: path, partition values.
    pub removed: Vec<(String, Vec<Option<String>>)>,
}

/// A table's history as of one metadata file, to read snapshots' writes from.
pub struct History<'a> {
    loc: Location,
    uri: String,
    opts: &'a OpenOptions,
    stores: Stores<'a>,
    meta: TableMetadata,
    /// The table's partition columns (as the report names them).
    pub columns: Vec<String>,
    specs: HashMap<i32, SpecView>,
}

impl<'a> History<'a> {
    /// Reads the metadata file at `metadata` (the one the table's catalog names).
    pub async fn open(metadata: &Location, opts: &'a OpenOptions) -> Result<History<'a>> {
        let uri = metadata.display();
        let mut stores = Stores::new(opts);
        let (_, _, meta) = read_metadata(metadata, &mut stores, &uri).await?;
        let columns = partition_columns(&meta);
        let types = meta.field_types();
        let specs = meta
            .specs()
            .iter()
            .map(|s| (s.spec_id, SpecView::new(s, &columns, &types)))
            .collect();
        Ok(History {
            loc: metadata.clone(),
            uri,
            opts,
            stores,
            meta,
            columns,
            specs,
        })
    }

    /// The current snapshot and its ancestors still in the metadata, newest first, and whether
    /// the oldest of them is the table's first snapshot (no parent).
    pub fn ancestors(&self) -> (Vec<Ancestor>, bool) {
        let by_id: HashMap<i64, &super::metadata::Snapshot> = self
            .meta
            .snapshots
            .iter()
            .map(|s| (s.snapshot_id, s))
            .collect();
        let mut out = Vec::new();
        let mut at = self.meta.current_snapshot();
        let mut first = false;
        // Bounded by the snapshots there are: a parent loop in hostile metadata ends it.
        while let Some(s) = at {
            if out.len() >= by_id.len() {
                break;
            }
            out.push(Ancestor {
                snapshot_id: s.snapshot_id,
                sequence: s.sequence_number,
                ts_ms: s.timestamp_ms,
            });
            match s.parent_snapshot_id {
                None => {
                    first = true;
                    at = None;
                }
                Some(p) => at = by_id.get(&p).copied(),
            }
        }
        (out, first)
    }

    /// What `a` wrote: its manifest list, then the manifests it wrote.
    pub async fn writes(&mut self, a: &Ancestor) -> Result<SnapshotWrites> {
        let uri = self.uri.clone();
        let Some(snap) = self
            .meta
            .snapshots
            .iter()
            .find(|s| s.snapshot_id == a.snapshot_id)
        else {
            return Err(EngineError::Unsupported {
                uri,
                detail: format!("snapshot {} is not in the metadata", a.snapshot_id),
            });
        };
        let data_change = snap.operation() != "replace";
        let Some(list_uri) = snap.manifest_list.clone() else {
            return Err(EngineError::Unsupported {
                uri,
                detail: "a snapshot lists its manifests inline (an early Iceberg v1 writer); lakehealth reads manifest lists only".into(),
            });
        };
        read_inside(&self.loc, self.opts, &uri, "manifest list", &list_uri)?;
        let (bytes, _) = self.stores.read(&uri, "manifest list", &list_uri).await?;
        let list = read_manifest_list(&bytes)
            .map_err(|e| iceberg_error(&uri, "manifest list", &list_uri, e))?;
        let mut out = SnapshotWrites {
            ancestor: a.clone(),
            data_change,
            added: Vec::new(),
            removed: Vec::new(),
        };
        let n = self.columns.len();
        for m in list
            .iter()
            .filter(|m| !m.deletes && m.added_snapshot_id == Some(a.snapshot_id))
        {
            read_inside(&self.loc, self.opts, &uri, "manifest", &m.path)?;
            let (bytes, _) = self.stores.read(&uri, "manifest", &m.path).await?;
            let changes = read_manifest_changes(&bytes, a.snapshot_id)
                .map_err(|e| iceberg_error(&uri, "manifest", &m.path, e))?;
            let Some(spec) = self.specs.get(&m.spec_id) else {
                return Err(iceberg_error(
                    &uri,
                    "manifest",
                    &m.path,
                    format!("partition spec {} is not in the table metadata", m.spec_id),
                ));
            };
            for f in changes.added {
                let values = spec.values(&f.partition, n);
                out.added.push((f.path, values, f.size));
            }
            for f in changes.removed {
                let values = spec.values(&f.partition, n);
                out.removed.push((f.path, values));
            }
        }
        Ok(out)
    }
}
