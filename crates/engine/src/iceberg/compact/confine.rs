//! What a job record may name. A record is a plain file beside the table: anyone who can write
//! the table can write one, naming anything. So a path it names is deleted only if it can be
//! an output of that very job on this very table: inside the table's folder (no `..`, no other
//! bucket), in no other table nested in it, reached through no link out of it, and named
//! `NNNNN-lakehealth-<job>-<uuid>.parquet` with the record's own job id. Anything else is
//! refused, said, and left alone.

use std::collections::HashMap;

use url::Url;

use crate::iceberg::{Stores, is_under, local_path};

/// Why a record, or a path it names, is not acted on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "job record {record}: its job id {job:?} is not its file's name or not a plain token (letters, digits, '-', '_'); the record is ignored"
    )]
    BadJobId { record: String, job: String },
    #[error("{path}: outside the table's folder {root}; a job record names only its own outputs")]
    OutsideTable { path: String, root: String },
    #[error(
        "{path}: not an output of job {job} (its outputs are named NNNNN-lakehealth-{job}-<uuid>.parquet)"
    )]
    NotItsOutput { path: String, job: String },
    #[error("{path}: inside {other}, another table within this one's folder")]
    OtherTable { path: String, other: String },
    #[error("{path}: a symbolic link (or behind one) to {target}, outside the table's folder")]
    LinkOut { path: String, target: String },
    #[error("{path}: cannot be checked ({why})")]
    Unchecked { path: String, why: String },
}

/// A job id as lakehealth makes them (a UUID's hex): a plain token, never a path.
pub fn safe_job_id(job: &str) -> bool {
    !job.is_empty()
        && job.len() <= 64
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `name` is `NNNNN-lakehealth-<job>-<hex>.parquet` for exactly this `job`.
pub fn is_output_of(name: &str, job: &str) -> bool {
    let Some(stem) = name.strip_suffix(".parquet") else {
        return false;
    };
    let Some((n, rest)) = stem.split_once('-') else {
        return false;
    };
    let tail = rest
        .strip_prefix("lakehealth-")
        .and_then(|r| r.strip_prefix(job))
        .and_then(|r| r.strip_prefix('-'));
    !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit())
        && tail.is_some_and(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `root` (a URL, or an absolute local path) as a folder URL ending in `/`.
pub fn folder_url(root: &str) -> String {
    let trimmed = root.trim_end_matches('/');
    let local = trimmed
        .starts_with('/')
        .then(|| Url::from_directory_path(trimmed).ok())
        .flatten();
    local.map_or_else(|| format!("{trimmed}/"), |u| u.to_string())
}

/// Parses a path as metadata writes it: an absolute local path or a URI.
fn parse(target: &str) -> Option<Url> {
    if target.starts_with('/') {
        Url::from_file_path(target).ok()
    } else {
        Url::parse(target).ok()
    }
}

/// One spelling of a path, for telling whether two name the same file: a record may write a
/// live file as `/t/x`, `file:/t/x`, `file:///t//x` or with `%20` for a space.
pub fn path_key(p: &str) -> Option<String> {
    let url = parse(p)?;
    let path: Vec<String> = url
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    Some(format!(
        "{}://{}/{}",
        url.scheme(),
        url.authority(),
        path.join("/")
    ))
}

/// The checks that need no I/O: inside `root` by name, and named as `job`'s output.
pub fn named_as_output(root: &str, path: &str, job: &str) -> Result<(), Refused> {
    let root = folder_url(root);
    if !is_under(&root, path) {
        return Err(Refused::OutsideTable {
            path: path.to_string(),
            root,
        });
    }
    let name = path.rsplit('/').next().unwrap_or_default();
    if !safe_job_id(job) || !is_output_of(name, job) {
        return Err(Refused::NotItsOutput {
            path: path.to_string(),
            job: job.to_string(),
        });
    }
    Ok(())
}

/// The folders between `root` (excluded) and the file `path` (its own folder included), as
/// URLs without a trailing `/`, outermost first. None when `path` is not under `root`.
pub fn folders_between(root: &str, path: &str) -> Option<Vec<String>> {
    let root = folder_url(root);
    let (r, p) = (Url::parse(&root).ok()?, parse(path)?);
    let rel = p.path().strip_prefix(r.path())?;
    let segments: Vec<&str> = rel.split('/').collect();
    let (_, folders) = segments.split_last()?;
    // The segments are the URL's (percent-encoded): joined to the root's URL, not its path.
    let base = root.trim_end_matches('/');
    Some(
        (1..=folders.len())
            .map(|i| format!("{base}/{}", folders[..i].join("/")))
            .collect(),
    )
}

/// Folders already looked at: whether each is a table of its own.
#[derive(Default)]
pub struct NestedTables {
    seen: HashMap<String, bool>,
}

impl NestedTables {
    /// Refuses `path` when a folder between the table's root and it is another table's root
    /// (an Iceberg `metadata/*.metadata.json` or a Delta `_delta_log/` in it): that table, not
    /// this one, says whether its files are live.
    pub async fn refuse_other(
        &mut self,
        stores: &mut Stores<'_>,
        root: &str,
        path: &str,
    ) -> Result<(), Refused> {
        let Some(folders) = folders_between(root, path) else {
            return Err(Refused::OutsideTable {
                path: path.to_string(),
                root: folder_url(root),
            });
        };
        for f in folders {
            let is_table = match self.seen.get(&f) {
                Some(&t) => t,
                None => {
                    let t = is_table_root(stores, &f)
                        .await
                        .map_err(|why| Refused::Unchecked {
                            path: path.to_string(),
                            why,
                        })?;
                    self.seen.insert(f.clone(), t);
                    t
                }
            };
            if is_table {
                return Err(Refused::OtherTable {
                    path: path.to_string(),
                    other: f,
                });
            }
        }
        Ok(())
    }
}

/// Whether `folder` holds an Iceberg table's metadata or a Delta log.
async fn is_table_root(stores: &mut Stores<'_>, folder: &str) -> Result<bool, String> {
    for (sub, marks) in [("metadata", ".metadata.json"), ("_delta_log", ".json")] {
        let (store, prefix) = stores
            .resolve(&format!("{folder}/{sub}/"))
            .map_err(|e| e.to_string())?;
        let listed = match store.list_with_delimiter(Some(&prefix)).await {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e.to_string()),
        };
        if listed
            .objects
            .iter()
            .any(|o| o.location.filename().is_some_and(|n| n.ends_with(marks)))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Refuses a local `path` under `root` that a symbolic link leads out of the root.
pub fn refuse_link_out(root: &str, path: &str) -> Result<(), Refused> {
    let (Some(r), Some(p)) = (local_path(&folder_url(root)), local_path(path)) else {
        return Ok(());
    };
    match crate::root_links::resolves_outside(&r, &p) {
        None => Ok(()),
        Some(target) => Err(Refused::LinkOut {
            path: path.to_string(),
            target,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_job_id_is_a_plain_token_never_a_path() {
        assert!(safe_job_id(JOB));
        assert!(safe_job_id("job_1-a"));
        let long = "a".repeat(65);
        for bad in [
            "",
            "..",
            "a/b",
            "../x",
            "a b",
            "a\\b",
            "x.json",
            long.as_str(),
        ] {
            assert!(!safe_job_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn only_the_jobs_own_parquet_outputs_carry_its_name() {
        let own = format!("00001-lakehealth-{JOB}-0f0f.parquet");
        assert!(is_output_of(&own, JOB));
        assert!(!is_output_of(&own, "0123456789abcdef0123456789abcdee"));
        // Another job's id that starts with this one's.
        assert!(!is_output_of(
            &format!("00001-lakehealth-{JOB}x-0f.parquet"),
            JOB
        ));
        assert!(!is_output_of(
            &format!("00001-lakehealth-{JOB}-0f.metadata.json"),
            JOB
        ));
        assert!(!is_output_of(
            &format!("x-lakehealth-{JOB}-0f.parquet"),
            JOB
        ));
        assert!(!is_output_of(
            &format!("00001-lakehealth-{JOB}-.parquet"),
            JOB
        ));
        assert!(!is_output_of(
            &format!("00001-lakehealth-{JOB}-0f/x.parquet"),
            JOB
        ));
        assert!(!is_output_of("00000-0-data.parquet", JOB));
    }

    #[test]
    fn a_record_names_only_outputs_inside_its_own_table() {
        let root = "file:///wh/a";
        let out = |dir: &str| format!("{dir}/00001-lakehealth-{JOB}-0f.parquet");
        assert_eq!(
            named_as_output(root, &out("file:///wh/a/data"), JOB),
            Ok(())
        );
        assert_eq!(named_as_output(root, &out("/wh/a/data/d=1"), JOB), Ok(()));
        for outside in [
            out("file:///wh/b/data"),
            out("/wh/b/data"),
            out("/wh/ab/data"),
            out("file:///wh/a/../b/data"),
            out("/wh/a/data/../../b"),
            out("s3://bucket/wh/a/data"),
            "relative/x.parquet".to_string(),
        ] {
            assert!(
                matches!(
                    named_as_output(root, &outside, JOB),
                    Err(Refused::OutsideTable { .. })
                ),
                "{outside}"
            );
        }
        assert!(matches!(
            named_as_output(root, "/wh/a/data/00000-0-data.parquet", JOB),
            Err(Refused::NotItsOutput { .. })
        ));
        assert!(matches!(
            named_as_output(root, &out("/wh/a/data"), "../b"),
            Err(Refused::NotItsOutput { .. })
        ));
    }

    #[test]
    fn every_spelling_of_a_file_has_one_key() {
        let k = path_key("file:///wh/a/d=x y/f.parquet");
        assert!(k.is_some());
        for other in [
            "/wh/a/d=x y/f.parquet",
            "file:/wh/a/d=x%20y/f.parquet",
            "file:///wh//a/d=x y/f.parquet",
        ] {
            assert_eq!(path_key(other), k, "{other}");
        }
        // A local path is taken literally: its `%20` is in the file's name.
        assert_ne!(path_key("/wh/a/d=x%20y/f.parquet"), k);
        assert_ne!(path_key("s3://b/wh/a/d=x y/f.parquet"), k);
        assert_ne!(path_key("/wh/a/d=x y/g.parquet"), k);
    }

    #[test]
    fn the_folders_between_the_root_and_a_file_are_listed_outermost_first() {
        assert_eq!(
            folders_between("file:///wh/a", "/wh/a/data/d=1/x.parquet"),
            Some(vec![
                "file:///wh/a/data".to_string(),
                "file:///wh/a/data/d=1".to_string()
            ])
        );
        assert_eq!(
            folders_between("s3://b/wh/a/", "s3://b/wh/a/x.parquet"),
            Some(vec![])
        );
        assert_eq!(folders_between("file:///wh/a", "/wh/b/x.parquet"), None);
    }

    #[tokio::test]
    async fn a_file_inside_a_table_nested_in_the_root_is_the_other_tables() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("a");
        std::fs::create_dir_all(root.join("data/b/metadata")).unwrap();
        std::fs::write(root.join("data/b/metadata/v1.metadata.json"), b"{}").unwrap();
        std::fs::create_dir_all(root.join("data/c/_delta_log")).unwrap();
        std::fs::write(root.join("data/c/_delta_log/0.json"), b"{}").unwrap();
        std::fs::create_dir_all(root.join("data/d=1")).unwrap();
        let opts = crate::options::OpenOptions::default();
        let mut stores = Stores::new(&opts);
        let mut nested = NestedTables::default();
        let r = root.to_str().unwrap();
        let at = |p: &str| format!("{r}/{p}");
        assert_eq!(
            nested
                .refuse_other(&mut stores, r, &at("data/d=1/x.parquet"))
                .await,
            Ok(())
        );
        for other in ["data/b/data/x.parquet", "data/c/x.parquet"] {
            let e = nested.refuse_other(&mut stores, r, &at(other)).await;
            assert!(
                matches!(e, Err(Refused::OtherTable { .. })),
                "{other}: {e:?}"
            );
        }
    }
}
