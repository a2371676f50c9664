//! Where a table or a root of tables lives: parsing user input into a URL and opening an
//! object store on it through deltalake's storage handlers (local, s3, gs, az).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use object_store::ObjectStore;
use url::Url;

use super::error::{EngineError, Result};
use super::local_fs::ConfinedDeletes;
use super::model::percent::decode as percent_decode;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub url: Url,
}

impl Location {
    /// Accepts a local path (relative or absolute), `file://`, `s3://`, `s3a://`, `gs://`,
    /// `az://`, `abfss://`. A local path must exist.
    pub fn parse(input: &str) -> Result<Self> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(EngineError::InvalidUri {
                input: input.into(),
                detail: "it is empty".into(),
            });
        }
        if trimmed.contains("://") {
            // Errors name the input without its credentials.
            let shown = crate::secrets::scrub(input).into_owned();
            let input = shown.as_str();
            let mut url = Url::parse(trimmed).map_err(|e| EngineError::InvalidUri {
                input: input.into(),
                detail: e.to_string(),
            })?;
            if url.scheme() == "file" {
                let path = url.to_file_path().map_err(|_| EngineError::InvalidUri {
                    input: input.into(),
                    detail: "not a valid local file URL".into(),
                })?;
                return Self::from_local(&path, input);
            }
            if !matches!(
                url.scheme(),
                "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "azure" | "adl" | "memory"
            ) {
                return Err(EngineError::InvalidUri {
                    input: input.into(),
                    detail: format!(
                        "unsupported scheme {:?}; use a local path, file://, s3://, gs:// or az://",
                        url.scheme()
                    ),
                });
            }
            if !url.path().ends_with('/') {
                let p = format!("{}/", url.path());
                url.set_path(&p);
            }
            refuse_log_folder(url.path(), input, |table| {
                let mut u = url.clone();
                u.set_path(table);
                crate::secrets::redact_url(u.as_str())
            })?;
            return Ok(Self { url });
        }
        Self::from_local(Path::new(trimmed), input)
    }

    fn from_local(path: &Path, input: &str) -> Result<Self> {
        let abs = std::fs::canonicalize(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => EngineError::NotFound { uri: input.into() },
            std::io::ErrorKind::PermissionDenied => EngineError::PermissionDenied {
                what: input.into(),
                source: Box::new(e),
            },
            _ => EngineError::InvalidUri {
                input: input.into(),
                detail: e.to_string(),
            },
        })?;
        refuse_log_folder(&abs.to_string_lossy(), input, |table| table.to_string())?;
        // An Iceberg table may be named by its metadata file.
        if abs.is_file() && abs.to_string_lossy().ends_with(".metadata.json") {
            let url = Url::from_file_path(&abs).map_err(|_| EngineError::InvalidUri {
                input: input.into(),
                detail: "cannot be expressed as a file URL".into(),
            })?;
            return Ok(Self { url });
        }
        if !abs.is_dir() {
            return Err(EngineError::InvalidUri {
                input: input.into(),
                detail: "it is a file; a Delta table is a folder".into(),
            });
        }
        let url = Url::from_directory_path(&abs).map_err(|_| EngineError::InvalidUri {
            input: input.into(),
            detail: "cannot be expressed as a file URL".into(),
        })?;
        Ok(Self { url })
    }

    pub fn is_local(&self) -> bool {
        self.url.scheme() == "file"
    }

    /// Local paths print as paths, remote ones as URLs without user info, query or fragment
    /// (credentials: `s3://key:secret@bucket`, an Azure SAS `?sig=...`).
    pub fn display(&self) -> String {
        if self.is_local()
            && let Ok(p) = self.url.to_file_path()
        {
            return p.display().to_string();
        }
        crate::secrets::redact_url(self.url.as_str())
            .trim_end_matches('/')
            .to_string()
    }

    /// The last path segment: the table's name in lists.
    pub fn name(&self) -> String {
        self.url
            .path_segments()
            .and_then(|mut s| s.rfind(|x| !x.is_empty()))
            .map(percent_decode)
            .unwrap_or_else(|| self.display())
    }

    /// A location `rel` below this one (`rel` uses `/` separators, no leading slash).
    pub fn join(&self, rel: &str) -> Result<Location> {
        let rel = rel.trim_matches('/');
        let url = self
            .url
            .join(&format!("{rel}/"))
            .map_err(|e| EngineError::InvalidUri {
                input: rel.into(),
                detail: e.to_string(),
            })?;
        Ok(Location { url })
    }

    /// An object store whose root is this location. On a local disk its deletes stay beneath
    /// this folder and never go through a link (`local_fs`).
    pub fn open_store(&self, options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>> {
        let store = self.log_store(options)?.object_store(None);
        Ok(match self.local_folder() {
            Some(folder) => ConfinedDeletes::wrap(store, self.key_path()?, folder),
            None => store,
        })
    }

    /// The object store of the bucket (or file system) this location is in: `table::Table`
    /// reads the log through a cache over it and hands the same store to delta-rs. On a local
    /// disk its deletes stay beneath this location's folder, through no link.
    pub fn open_root_store(
        &self,
        options: &HashMap<String, String>,
    ) -> Result<Arc<dyn ObjectStore>> {
        let folder = self.local_folder();
        self.open_root_store_beneath(options, folder)
    }

    /// `open_root_store`, a local store's deletes confined to `beneath` instead (an Iceberg
    /// job's store is opened at the file system's root and confined to its table's folder).
    pub fn open_root_store_beneath(
        &self,
        options: &HashMap<String, String>,
        beneath: Option<std::path::PathBuf>,
    ) -> Result<Arc<dyn ObjectStore>> {
        let store = self.log_store(options)?.root_object_store(None);
        Ok(match (self.is_local(), beneath) {
            (true, Some(folder)) => ConfinedDeletes::wrap(store, Default::default(), folder),
            // A local store with no folder given: beneath the file system's root, through no
            // link.
            (true, None) => ConfinedDeletes::wrap(store, Default::default(), "/".into()),
            (false, _) => store,
        })
    }

    /// The folder of a local location.
    fn local_folder(&self) -> Option<std::path::PathBuf> {
        self.is_local()
            .then(|| self.url.to_file_path().ok())
            .flatten()
    }

    /// This location as a key under the file system's (or the bucket's) root.
    fn key_path(&self) -> Result<object_store::path::Path> {
        object_store::path::Path::from_url_path(self.url.path()).map_err(|e| {
            EngineError::InvalidUri {
                input: self.display(),
                detail: e.to_string(),
            }
        })
    }

    fn log_store(
        &self,
        options: &HashMap<String, String>,
    ) -> Result<deltalake::logstore::LogStoreRef> {
        let config =
            deltalake::logstore::StorageConfig::parse_options(options.clone()).map_err(|e| {
                EngineError::InvalidUri {
                    input: self.display(),
                    detail: format!("bad storage option: {e}"),
                }
            })?;
        deltalake::logstore::logstore_for(&self.url, config).map_err(|e| EngineError::InvalidUri {
            input: self.display(),
            detail: format!(
                "cannot open storage: {e}. For s3/gs/az check credentials and --storage-option values"
            ),
        })
    }
}

/// Refuses a location inside a Delta table's `_delta_log/` (the folder itself or a file in
/// it), naming the table to open instead: read as a folder it would pass for a Parquet table.
/// `shown` renders the table's path (the path up to the `_delta_log` segment) for the message.
fn refuse_log_folder(path: &str, input: &str, shown: impl Fn(&str) -> String) -> Result<()> {
    let Some(at) = path.match_indices("_delta_log").map(|(i, _)| i).find(|&i| {
        let before = path[..i].chars().next_back();
        let after = path[i + "_delta_log".len()..].chars().next();
        matches!(before, Some('/') | Some('\\')) && matches!(after, None | Some('/') | Some('\\'))
    }) else {
        return Ok(());
    };
    let table = &path[..at];
    let table = if table.len() > 1 {
        table.trim_end_matches(['/', '\\'])
    } else {
        table
    };
    Err(EngineError::InvalidUri {
        input: input.into(),
        detail: format!(
            "it is inside the log folder (_delta_log) of a Delta table; open the table itself: {}",
            shown(table)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_remote_uris_with_trailing_slash() {
        let l = Location::parse("s3://lake/events").unwrap();
        assert_eq!(l.url.as_str(), "s3://lake/events/");
        assert_eq!(l.name(), "events");
        assert_eq!(l.display(), "s3://lake/events");
        let j = l.join("day=1").unwrap();
        assert_eq!(j.url.as_str(), "s3://lake/events/day=1/");
    }

    #[test]
    fn rejects_unknown_schemes_and_missing_paths() {
        let e = Location::parse("ftp://x/y").unwrap_err().to_string();
        assert!(e.contains("unsupported scheme"), "{e}");
        let e = Location::parse("/definitely/not/here").unwrap_err();
        assert!(matches!(e, EngineError::NotFound { .. }), "{e}");
    }

    #[test]
    fn local_paths_become_file_urls() {
        let d = tempfile::tempdir().unwrap();
        let l = Location::parse(d.path().to_str().unwrap()).unwrap();
        assert!(l.is_local());
        assert!(l.url.as_str().starts_with("file:///"));
        assert!(l.url.as_str().ends_with('/'));
    }

    #[test]
    fn the_log_folder_points_to_its_table() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("t/_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join("00000000000000000000.json"), "{}").unwrap();
        let table = std::fs::canonicalize(d.path().join("t")).unwrap();
        for input in [log.clone(), log.join("00000000000000000000.json")] {
            let e = Location::parse(input.to_str().unwrap())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("open the table itself: {}", table.display())),
                "{e}"
            );
        }
        let e = Location::parse("s3://b/lake/t/_delta_log/")
            .unwrap_err()
            .to_string();
        assert!(e.contains("open the table itself: s3://b/lake/t"), "{e}");
        // A name that merely contains it is no log folder.
        assert!(Location::parse("s3://b/lake/my_delta_logs/").is_ok());
    }

    #[test]
    fn azure_locations_print_with_their_container() {
        let l = Location::parse("abfss://cont@acct.dfs.core.windows.net/lake/t").unwrap();
        assert_eq!(l.display(), "abfss://cont@acct.dfs.core.windows.net/lake/t");
    }

    #[test]
    fn decodes_names() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("caf%C3%A9%2Fx"), "café/x");
    }
}
