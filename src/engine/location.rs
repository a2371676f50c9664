//! Where a table or a root of tables lives: parsing user input into a URL and opening an
//! object store on it through deltalake's storage handlers (local, s3, gs, az).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use object_store::ObjectStore;
use url::Url;

use super::error::{EngineError, Result};

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
            let shown = crate::engine::secrets::scrub(input).into_owned();
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
        crate::engine::secrets::redact_url(self.url.as_str())
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

    /// An object store whose root is this location.
    pub fn open_store(&self, options: &HashMap<String, String>) -> Result<Arc<dyn ObjectStore>> {
        let config =
            deltalake::logstore::StorageConfig::parse_options(options.clone()).map_err(|e| {
                EngineError::InvalidUri {
                    input: self.display(),
                    detail: format!("bad storage option: {e}"),
                }
            })?;
        let store = deltalake::logstore::logstore_for(&self.url, config).map_err(|e| {
            EngineError::InvalidUri {
                input: self.display(),
                detail: format!(
                    "cannot open storage: {e}. For s3/gs/az check credentials and --storage-option values"
                ),
            }
        })?;
        Ok(store.object_store(None))
    }
}

/// A URL path segment as text (`%20` -> ` `); invalid UTF-8 is replaced, a stray `%` kept.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
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
    fn decodes_names() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("caf%C3%A9%2Fx"), "café/x");
    }
}
