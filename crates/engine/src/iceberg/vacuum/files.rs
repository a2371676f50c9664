//! The files in an Iceberg table's folder, sorted into those a vacuum deletes and the
//! unreferenced ones it keeps (and why). Referenced files are neither: they are the table.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use serde::Serialize;

use super::super::compact::IcebergCompactError as E;
use super::super::compact::confine::{is_output_of, path_key};
use super::IceVacuumFile;
use crate::iceberg::Stores;
use crate::nested_tables::NestedTables;

/// lakehealth's records in a table folder, and where Iceberg jobs keep theirs.
const STATE_DIR: &str = "_lakehealth";
const JOB_RECORDS: &str = "_lakehealth/iceberg-jobs/";

/// A file as listed.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Relative to the table's folder, as the store spells it.
    pub rel: Path,
    /// Absolute: the table's folder URL and `rel`.
    pub uri: String,
    pub bytes: u64,
    pub modified_ms: i64,
}

/// Why an unreferenced file is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptWhy {
    /// A metadata file or the version hint: a commit in flight may be about to name it.
    MetadataFile,
    /// Named by no snapshot and modified after the cutoff (the retention, at least an hour):
    /// a writer may be about to commit it.
    Young,
    /// An output of a lakehealth compaction whose record is still in the table: its sweep
    /// decides.
    JobOutput,
    /// Inside a table nested in this one's folder, or in a log folder.
    AnotherTable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    pub path: String,
    pub why: KeptWhy,
}

/// The sorting of a listing.
#[derive(Debug, Default)]
pub struct Classified {
    /// Sorted by path.
    pub delete: Vec<IceVacuumFile>,
    pub kept: Vec<Kept>,
}

/// Every file under the table's folder `root` (a URL ending in `/`).
pub async fn list_folder(stores: &mut Stores<'_>, root: &str, uri: &str) -> Result<Vec<Listed>, E> {
    let (store, prefix) = table_store(stores, root)?;
    let listed: Vec<object_store::ObjectMeta> =
        store
            .list(None)
            .try_collect()
            .await
            .map_err(|source| E::Store {
                path: format!("{uri} (listing {prefix})"),
                source,
            })?;
    Ok(listed
        .into_iter()
        .map(|m| Listed {
            uri: format!("{root}{}", m.location),
            rel: m.location,
            bytes: m.size,
            modified_ms: m.last_modified.timestamp_millis(),
        })
        .collect())
}

/// A store whose paths are relative to the table's folder.
fn table_store(stores: &mut Stores<'_>, root: &str) -> Result<(Arc<dyn ObjectStore>, Path), E> {
    let (store, prefix) = stores.resolve(root)?;
    let rooted: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(store, prefix.clone()));
    Ok((rooted, prefix))
}

/// The sets and instants a listing is sorted by.
pub struct Cutoffs<'a> {
    /// What the table's metadata references now (after the expiry).
    pub referenced: &'a HashSet<String>,
    /// What it referenced before the expiry: a file only expired snapshots named was committed
    /// once, so no writer is about to commit it; it goes whatever its age.
    pub expired_refs: &'a HashSet<String>,
    /// A file no snapshot ever named (an orphan) goes only when modified before this: a
    /// writer may have written it and not yet committed.
    pub orphan_cutoff_ms: i64,
}

/// Sorts `listed`: referenced files (by `path_key`) are dropped, lakehealth's records are not
/// looked at, and of the rest, those past every reason to keep them are to be deleted.
pub async fn classify(
    stores: &mut Stores<'_>,
    root: &str,
    listed: Vec<Listed>,
    cut: &Cutoffs<'_>,
) -> Result<Classified, E> {
    let referenced = cut.referenced;
    let (store, _) = table_store(stores, root)?;
    let mut nested = NestedTables::new(store);
    let jobs: BTreeSet<String> = listed
        .iter()
        .filter_map(|f| {
            let name = f.rel.as_ref().strip_prefix(JOB_RECORDS)?;
            name.strip_suffix(".json").map(str::to_string)
        })
        .filter(|j| !j.contains('/'))
        .collect();
    let mut out = Classified::default();
    for f in listed {
        let rel = f.rel.as_ref();
        if rel.split('/').next() == Some(STATE_DIR) {
            continue;
        }
        let Some(key) = path_key(&f.uri) else {
            continue;
        };
        if referenced.contains(&key) {
            continue;
        }
        let name = f.rel.filename().unwrap_or_default();
        let why = if name.ends_with(".metadata.json") || name == "version-hint.text" {
            Some(KeptWhy::MetadataFile)
        } else if nested.foreign(&f.rel).await.is_some() {
            Some(KeptWhy::AnotherTable)
        } else if jobs.iter().any(|j| is_output_of(name, j)) {
            Some(KeptWhy::JobOutput)
        } else if !cut.expired_refs.contains(&key) && f.modified_ms >= cut.orphan_cutoff_ms {
            Some(KeptWhy::Young)
        } else {
            None
        };
        match why {
            Some(why) => out.kept.push(Kept { path: f.uri, why }),
            None => out.delete.push(IceVacuumFile {
                path: f.uri,
                bytes: f.bytes,
                modified_ms: f.modified_ms,
            }),
        }
    }
    out.delete.sort_by(|a, b| a.path.cmp(&b.path));
    out.kept.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::OpenOptions;

    fn listed(root: &str, rel: &str, modified_ms: i64) -> Listed {
        Listed {
            rel: Path::parse(rel).unwrap(),
            uri: format!("{root}{rel}"),
            bytes: 10,
            modified_ms,
        }
    }

    #[tokio::test]
    async fn only_old_orphans_and_files_of_expired_snapshots_of_this_table_are_deleted() {
        let d = tempfile::tempdir().unwrap();
        for dir in [
            "data",
            "metadata",
            "inner/_delta_log",
            "_lakehealth/iceberg-jobs",
        ] {
            std::fs::create_dir_all(d.path().join(dir)).unwrap();
        }
        std::fs::write(d.path().join("inner/_delta_log/0.json"), b"{}").unwrap();
        let root = url::Url::from_directory_path(d.path()).unwrap().to_string();
        let job = "0a1b2c";
        let files = vec![
            listed(&root, "data/live.parquet", 0),
            listed(&root, "data/old.parquet", 0),
            listed(&root, "data/young.parquet", 1_000),
            listed(&root, "metadata/00003-x.metadata.json", 0),
            listed(&root, "metadata/version-hint.text", 0),
            listed(&root, "inner/d=1/f.parquet", 0),
            listed(
                &root,
                &format!("data/00001-lakehealth-{job}-ab12.parquet"),
                0,
            ),
            listed(&root, &format!("_lakehealth/iceberg-jobs/{job}.json"), 0),
        ];
        let referenced: HashSet<String> =
            [path_key(&format!("{root}data/live.parquet")).unwrap()].into();
        let opts = OpenOptions::default();
        let mut stores = Stores::new(&opts);
        let expired_refs: HashSet<String> =
            [path_key(&format!("{root}data/replaced.parquet")).unwrap()].into();
        let mut files = files;
        files.push(listed(&root, "data/replaced.parquet", 1_000));
        let cut = Cutoffs {
            referenced: &referenced,
            expired_refs: &expired_refs,
            orphan_cutoff_ms: 500,
        };
        let c = classify(&mut stores, &root, files, &cut).await.unwrap();
        let deleted: Vec<&str> = c.delete.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            deleted,
            [
                format!("{root}data/old.parquet"),
                format!("{root}data/replaced.parquet")
            ]
        );
        let kept: Vec<(String, KeptWhy)> = c
            .kept
            .iter()
            .map(|k| (k.path.strip_prefix(&root).unwrap().to_string(), k.why))
            .collect();
        assert_eq!(
            kept,
            [
                (
                    format!("data/00001-lakehealth-{job}-ab12.parquet"),
                    KeptWhy::JobOutput
                ),
                ("data/young.parquet".to_string(), KeptWhy::Young),
                ("inner/d=1/f.parquet".to_string(), KeptWhy::AnotherTable),
                (
                    "metadata/00003-x.metadata.json".to_string(),
                    KeptWhy::MetadataFile
                ),
                (
                    "metadata/version-hint.text".to_string(),
                    KeptWhy::MetadataFile
                ),
            ]
        );
    }
}
