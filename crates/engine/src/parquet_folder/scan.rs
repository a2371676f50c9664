//! Listing a folder of data files as a stream, folded as it arrives (no listing is held), with
//! progress (objects listed, rate) and its cost (objects, list requests).

use crate::stats::details::ListingCost;
use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use object_store::{ObjectMeta, ObjectStore};

use crate::detect::is_hidden;
use crate::error::{EngineError, Result};
use crate::progress::LoadProgress;

/// Keys per page of a list request on S3 and GCS (`ListObjectsV2` max-keys); Azure pages hold
/// up to 5,000, so the count is an upper bound there.
const KEYS_PER_LIST_REQUEST: u64 = 1000;
/// Progress is reported every this many objects.
const PROGRESS_EVERY: u64 = 5000;

/// Where a listed object belongs.
pub enum Entry<'a> {
    /// A Parquet file outside hidden folders.
    Data(&'a str),
    /// Under a `_`/`.` prefixed name (Spark's `_spark_metadata/` among them).
    Hidden(&'a str),
    Other(&'a str),
}

pub fn classify(rel: &str) -> Entry<'_> {
    if rel.split('/').any(is_hidden) {
        return Entry::Hidden(rel);
    }
    match rel.rsplit('/').next() {
        Some(name) if crate::detect::is_data_file(name) => Entry::Data(rel),
        _ => Entry::Other(rel),
    }
}

/// Lists every object below the store's root, calling `visit` on each as it arrives.
pub async fn list_folder(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    remote: bool,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
    mut visit: impl FnMut(&ObjectMeta),
) -> Result<ListingCost> {
    let started = Instant::now();
    let mut objects = 0u64;
    progress(LoadProgress::ListingObjects {
        objects: 0,
        per_second: 0,
    });
    let mut stream = store.list(None);
    while let Some(meta) = stream
        .try_next()
        .await
        .map_err(|e| EngineError::from_store(uri, "listing the folder", e))?
    {
        objects += 1;
        visit(&meta);
        if objects.is_multiple_of(PROGRESS_EVERY) {
            progress(LoadProgress::ListingObjects {
                objects,
                per_second: rate(objects, started),
            });
        }
    }
    progress(LoadProgress::ListingObjects {
        objects,
        per_second: rate(objects, started),
    });
    Ok(ListingCost {
        objects_listed: objects,
        list_requests: remote.then(|| objects.div_ceil(KEYS_PER_LIST_REQUEST).max(1)),
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn rate(objects: u64, started: Instant) -> u64 {
    let s = started.elapsed().as_secs_f64();
    if s > 0.0 {
        (objects as f64 / s) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_data_hidden_and_other_files() {
        assert!(matches!(classify("d=1/part-0.parquet"), Entry::Data(_)));
        assert!(matches!(classify("_SUCCESS"), Entry::Hidden(_)));
        assert!(matches!(
            classify("d=1/.part-0.parquet.crc"),
            Entry::Hidden(_)
        ));
        assert!(matches!(
            classify("_temporary/0/part-0.parquet"),
            Entry::Hidden(_)
        ));
        assert!(matches!(classify("_spark_metadata/0"), Entry::Hidden(_)));
        assert!(matches!(classify("d=1/notes.csv"), Entry::Other(_)));
    }
}
