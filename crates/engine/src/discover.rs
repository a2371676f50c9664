//! Finding tables under a root folder or bucket prefix: any folder that `formats::probe_format`
//! recognises (Delta, a Spark file sink, Iceberg, a Parquet folder) is a table, labelled with its
//! format; its subfolders are not searched. Bounded depth, concurrent listing. A re-listing
//! (`rediscover`) trusts the tables it already knows: their parent's listing shows they are
//! still there, so it costs one LIST per folder above the tables, not one per table.

use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path;

use super::detect::{FolderChildren, child, list_children, probe_format};
use super::error::Result;
use super::progress::LoadProgress;
use crate::model::format::TableFormat;

/// A table found under a root: its path from the root ("" for the root itself) and format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundTable {
    pub rel: String,
    pub format: TableFormat,
}

/// Folders never worth descending into: Delta/Spark internals and Hive partition folders.
fn skip(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.') || name.contains('=')
}

/// Tables under the store's root, by relative path (no trailing slash; "" for the root itself).
pub async fn discover(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    max_depth: usize,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Vec<FoundTable>> {
    rediscover(store, uri, max_depth, &[], progress).await
}

/// As `discover`, but a folder among `known` (tables an earlier listing found) is taken as
/// that table without listing it, as long as its parent still lists it: a table removed is
/// gone from the result, a new one is probed. (A known folder whose log alone was deleted
/// stays a table until the folder goes: its reads then find nothing new.)
pub async fn rediscover(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    max_depth: usize,
    known: &[FoundTable],
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Vec<FoundTable>> {
    let known: std::collections::HashMap<&str, TableFormat> = known
        .iter()
        .filter(|t| !t.rel.is_empty())
        .map(|t| (t.rel.as_str(), t.format))
        .collect();
    let mut tables = Vec::new();
    let mut frontier: Vec<Option<Path>> = vec![None];
    let mut folders = 0;
    for depth in 0..=max_depth {
        if frontier.is_empty() {
            break;
        }
        type Probed = Result<(FolderChildren, Option<TableFormat>)>;
        let listed: Vec<(Option<Path>, Probed)> = futures::stream::iter(frontier)
            .map(|prefix| {
                let store = store.clone();
                async move {
                    let r = async {
                        let c = list_children(&store, uri, prefix.as_ref()).await?;
                        let f = probe_format(&store, uri, prefix.as_ref(), &c).await?;
                        Ok((c, f))
                    }
                    .await;
                    (prefix, r)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        let mut next = Vec::new();
        for (prefix, children) in listed {
            folders += 1;
            let (children, format) = match children {
                Ok(c) => c,
                // The root itself must be listable; deeper failures only hide that folder.
                Err(e) if prefix.is_none() => return Err(e),
                Err(e) => {
                    tracing::warn!("skipping {prefix:?}: {e}");
                    continue;
                }
            };
            if let Some(format) = format {
                tables.push(FoundTable {
                    rel: prefix.map(|p| p.to_string()).unwrap_or_default(),
                    format,
                });
                continue;
            }
            if depth < max_depth {
                for c in children.folders.iter().filter(|c| !skip(c)) {
                    let path = child(prefix.as_ref(), c);
                    let key: &str = path.as_ref();
                    match known.get(key) {
                        Some(&format) => tables.push(FoundTable {
                            rel: path.to_string(),
                            format,
                        }),
                        None => next.push(Some(path)),
                    }
                }
            }
        }
        progress(LoadProgress::Discovering {
            folders,
            tables: tables.len(),
        });
        frontier = next;
    }
    tables.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    async fn put(store: &Arc<dyn ObjectStore>, paths: &[&str]) {
        for p in paths {
            store
                .put(&Path::from(*p), PutPayload::from_static(b"{}"))
                .await
                .unwrap();
        }
    }

    fn found(rel: &str) -> FoundTable {
        FoundTable {
            rel: rel.into(),
            format: TableFormat::Delta,
        }
    }

    #[tokio::test]
    async fn a_relisting_takes_known_tables_from_their_parents_listing_and_drops_removed_ones() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        put(
            &store,
            &[
                "db/a/_delta_log/00000000000000000000.json",
                "db/new/_delta_log/00000000000000000000.json",
                // Known as a table but holding none now: not probed, so still taken as one.
                "db/kept/data.txt",
            ],
        )
        .await;
        let known = [found("db/a"), found("db/kept"), found("db/removed")];
        let got = rediscover(&store, "mem", 2, &known, &|_| {}).await.unwrap();
        let rels: Vec<&str> = got.iter().map(|t| t.rel.as_str()).collect();
        assert_eq!(
            rels,
            vec!["db/a", "db/kept", "db/new"],
            "known and present kept unprobed, new found, removed gone"
        );
    }

    #[tokio::test]
    async fn finds_tables_and_stops_at_depth() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        for p in [
            "sales/_delta_log/00000000000000000000.json",
            "sales/day=1/part-0.parquet",
            "raw/events/_delta_log/00000000000000000000.json",
            "raw/events/nested/_delta_log/00000000000000000000.json",
            "a/b/c/d/_delta_log/00000000000000000000.json",
            "notes/readme.txt",
        ] {
            store
                .put(&Path::from(p), PutPayload::from_static(b"{}"))
                .await
                .unwrap();
        }
        let delta = |found: Vec<FoundTable>| -> Vec<String> {
            found
                .into_iter()
                .filter(|t| t.format == TableFormat::Delta)
                .map(|t| t.rel)
                .collect()
        };
        let found = delta(discover(&store, "mem", 2, &|_| {}).await.unwrap());
        assert_eq!(found, vec!["raw/events".to_string(), "sales".to_string()]);
        let deep = delta(discover(&store, "mem", 4, &|_| {}).await.unwrap());
        assert!(deep.contains(&"a/b/c/d".to_string()));
        // Beside the Delta tables: a Parquet folder and a Spark sink, labelled.
        for p in [
            "plain/day=1/part-0.parquet",
            "sink/_spark_metadata/0",
            "sink/part-0.parquet",
        ] {
            store
                .put(&Path::from(p), PutPayload::from_static(b"{}"))
                .await
                .unwrap();
        }
        let all = discover(&store, "mem", 2, &|_| {}).await.unwrap();
        let labelled: Vec<(&str, TableFormat)> =
            all.iter().map(|t| (t.rel.as_str(), t.format)).collect();
        assert_eq!(
            labelled,
            vec![
                ("plain", TableFormat::ParquetFolder),
                ("raw/events", TableFormat::Delta),
                ("sales", TableFormat::Delta),
                ("sink", TableFormat::SparkFileSink),
            ]
        );
    }
}
