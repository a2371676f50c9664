//! Finding Delta tables under a root folder or bucket prefix: any folder holding `_delta_log/`
//! is a table (its subfolders are not searched). Bounded depth, concurrent listing.

use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path;

use super::error::{EngineError, Result};
use super::progress::LoadProgress;

/// Folders never worth descending into: Delta/Spark internals and Hive partition folders.
fn skip(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.') || name.contains('=')
}

/// Relative paths (no trailing slash; "" for the root itself) of tables under the store's root.
pub async fn discover_tables(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    max_depth: usize,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Vec<String>> {
    let mut tables = Vec::new();
    let mut frontier: Vec<Option<Path>> = vec![None];
    let mut folders = 0;
    for depth in 0..=max_depth {
        if frontier.is_empty() {
            break;
        }
        let listed: Vec<(Option<Path>, Result<Vec<Path>>)> = futures::stream::iter(frontier)
            .map(|prefix| {
                let store = store.clone();
                async move {
                    let r = store
                        .list_with_delimiter(prefix.as_ref())
                        .await
                        .map(|l| l.common_prefixes)
                        .map_err(|e| EngineError::from_store(uri, "folder listing", e));
                    (prefix, r)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        let mut next = Vec::new();
        for (prefix, children) in listed {
            folders += 1;
            let children = match children {
                Ok(c) => c,
                // The root itself must be listable; deeper failures only hide that folder.
                Err(e) if prefix.is_none() => return Err(e),
                Err(e) => {
                    tracing::warn!("skipping {prefix:?}: {e}");
                    continue;
                }
            };
            if children.iter().any(|c| c.filename() == Some("_delta_log")) {
                tables.push(prefix.map(|p| p.to_string()).unwrap_or_default());
                continue;
            }
            if depth < max_depth {
                next.extend(
                    children
                        .into_iter()
                        .filter(|c| !c.filename().is_some_and(skip))
                        .map(Some),
                );
            }
        }
        progress(LoadProgress::Discovering {
            folders,
            tables: tables.len(),
        });
        frontier = next;
    }
    tables.sort();
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

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
        let found = discover_tables(&store, "mem", 2, &|_| {}).await.unwrap();
        assert_eq!(found, vec!["raw/events".to_string(), "sales".to_string()]);
        let deep = discover_tables(&store, "mem", 4, &|_| {}).await.unwrap();
        assert!(deep.contains(&"a/b/c/d".to_string()));
    }
}
