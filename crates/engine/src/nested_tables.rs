//! Tables nested in another table's folder. A table's writer can name any path below its root
//! in its own records (a Delta `remove`, a job ledger), including the files of a table that
//! lives in a subfolder: that table, not this one, says whether its files are live. So no delete
//! made for one table (VACUUM, a sweep) may reach into a folder that is a table of its own, nor
//! into a log or lakehealth's records at any depth.
//!
//! A folder is a table when it holds a `_delta_log/` or a `metadata/` folder (an Iceberg
//! table) with anything in it. A folder that cannot be listed counts as a table: the delete is
//! refused rather than guessed.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::{Path, PathPart};

/// The folders whose presence makes a folder a table's root.
const MARKERS: [&str; 2] = ["_delta_log", "metadata"];

/// Folder names no delete made for a table may pass through, at any depth: a Delta log and
/// lakehealth's own records (`_lakehealth/`).
const RESERVED: [&str; 2] = ["_delta_log", "_lakehealth"];

/// Why a path is not this table's to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Foreign {
    /// A log or lakehealth's records (`folder` is the segment).
    Reserved { folder: String },
    /// Inside `root`, a table of its own.
    InTable { root: String },
    /// `folder` could not be listed to tell.
    Unchecked { folder: String, why: String },
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Foreign::Reserved { folder } => write!(f, "it is inside a {folder}/ folder"),
            Foreign::InTable { root } => write!(
                f,
                "it is inside {root}/, a table of its own (its own log says whether its files are live)"
            ),
            Foreign::Unchecked { folder, why } => write!(
                f,
                "{folder}/ could not be listed to tell whether it is a table of its own: {why}"
            ),
        }
    }
}

/// A reserved segment of `path` (its own name excluded: a file named `_delta_log` is a file).
pub fn reserved(path: &Path) -> Option<Foreign> {
    let parts: Vec<PathPart<'_>> = path.parts().collect();
    let (_, folders) = parts.split_last()?;
    folders
        .iter()
        .find(|p| RESERVED.contains(&p.as_ref()))
        .map(|p| Foreign::Reserved {
            folder: p.as_ref().to_string(),
        })
}

/// Folders below one table's root already looked at, each asked once.
pub struct NestedTables {
    store: Arc<dyn ObjectStore>,
    known: HashMap<Path, Result<bool, String>>,
}

impl NestedTables {
    /// `store` is rooted at the table's root.
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        NestedTables {
            store,
            known: HashMap::new(),
        }
    }

    /// Why `path` (relative to the table's root) is not this table's to delete, if it is not.
    pub async fn foreign(&mut self, path: &Path) -> Option<Foreign> {
        if let Some(r) = reserved(path) {
            return Some(r);
        }
        for folder in folders_of(path) {
            let answer = match self.known.get(&folder) {
                Some(a) => a.clone(),
                None => {
                    let a = holds_a_table(&self.store, &folder).await;
                    self.known.insert(folder.clone(), a.clone());
                    a
                }
            };
            match answer {
                Ok(false) => {}
                Ok(true) => {
                    return Some(Foreign::InTable {
                        root: folder.to_string(),
                    });
                }
                Err(why) => {
                    return Some(Foreign::Unchecked {
                        folder: folder.to_string(),
                        why,
                    });
                }
            }
        }
        None
    }

    /// `foreign` of each path, asking for up to 16 folders at once; the paths that are not
    /// this table's, with why, in the order given.
    pub async fn foreign_of(&mut self, paths: &[Path]) -> Vec<(Path, Foreign)> {
        let mut unknown: Vec<Path> = paths
            .iter()
            .flat_map(folders_of)
            .filter(|f| !self.known.contains_key(f))
            .collect();
        unknown.sort();
        unknown.dedup();
        let store = &self.store;
        let found: Vec<(Path, Result<bool, String>)> = futures::stream::iter(unknown)
            .map(|f| async move {
                let a = holds_a_table(store, &f).await;
                (f, a)
            })
            .buffer_unordered(16)
            .collect()
            .await;
        self.known.extend(found);
        let mut out = Vec::new();
        for p in paths {
            if let Some(why) = self.foreign(p).await {
                out.push((p.clone(), why));
            }
        }
        out
    }
}

/// The folders between the root (excluded) and `path`'s own folder (included), outermost first.
fn folders_of(path: &Path) -> Vec<Path> {
    let parts: Vec<PathPart<'_>> = path.parts().collect();
    (1..parts.len())
        .map(|depth| Path::from_iter(parts[..depth].iter().cloned()))
        .collect()
}

/// Whether `folder` holds a table's log or metadata.
async fn holds_a_table(store: &Arc<dyn ObjectStore>, folder: &Path) -> Result<bool, String> {
    for marker in MARKERS {
        let prefix = folder.clone().join(marker);
        match store.list(Some(&prefix)).next().await {
            Some(Ok(_)) => return Ok(true),
            Some(Err(object_store::Error::NotFound { .. })) | None => {}
            Some(Err(e)) => return Err(e.to_string()),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    fn p(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

    #[test]
    fn a_log_or_lakehealths_records_at_any_depth_are_reserved_but_a_file_so_named_is_not() {
        assert!(reserved(&p("d=1/part-0.parquet")).is_none());
        assert!(reserved(&p("_delta_log")).is_none());
        for s in [
            "_delta_log/00000000000000000000.json",
            "nested/_delta_log/00000000000000000000.json",
            "d=1/_lakehealth/local-jobs/x.ledger",
        ] {
            assert!(
                matches!(reserved(&p(s)), Some(Foreign::Reserved { .. })),
                "{s}"
            );
        }
    }

    #[tokio::test]
    async fn a_path_below_a_folder_holding_a_log_or_metadata_belongs_to_that_table() {
        let store = Arc::new(InMemory::new());
        for key in [
            "nested/_delta_log/00000000000000000000.json",
            "d=1/ice/metadata/v1.metadata.json",
            "d=1/part-0.parquet",
        ] {
            store
                .put(&p(key), PutPayload::from_static(b"x"))
                .await
                .unwrap();
        }
        let mut nested = NestedTables::new(store);
        let paths = [
            p("d=1/part-0.parquet"),
            p("nested/d=x/part-1.parquet"),
            p("d=1/ice/data/f.parquet"),
            p("part-2.parquet"),
        ];
        let foreign = nested.foreign_of(&paths).await;
        assert_eq!(
            foreign,
            vec![
                (
                    paths[1].clone(),
                    Foreign::InTable {
                        root: "nested".into()
                    }
                ),
                (
                    paths[2].clone(),
                    Foreign::InTable {
                        root: "d=1/ice".into()
                    }
                ),
            ]
        );
    }
}
