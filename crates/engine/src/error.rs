//! Engine errors. Every variant says what went wrong and what the user can do about it, and
//! keeps the error it came from as its `source` (delta-rs, object store, I/O), so callers can
//! tell failures apart by type. Messages include the source's text too: the TUI and `--json`
//! show one line per error (the CLI prints the chain without repeating it, see `cli::error_text`).

use std::error::Error as StdError;

use deltalake::DeltaTableError;
use object_store::client::{HttpError, HttpErrorKind};
use serde::Serialize;
use thiserror::Error;

use super::properties::InvalidProperty;

/// A boxed error cause, as object_store carries them.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(
        "{uri} does not exist. Check the path or URI (local paths, file://, s3://, gs://, az:// are accepted)."
    )]
    NotFound { uri: String },

    #[error(
        "{uri} is not a Delta table: it has no _delta_log/ folder, and no table was found below it (searched {depth} levels deep). Point lakehealth at a table's root folder, or at a folder that contains tables."
    )]
    NotATable { uri: String, depth: usize },

    #[error(
        "{uri} has an empty _delta_log/: the table was never committed (or its log was deleted). Nothing to report."
    )]
    EmptyLog { uri: String },

    #[error(
        "permission denied reading {what}: {source}. Check the file permissions or the credentials' access to this location."
    )]
    PermissionDenied {
        what: String,
        #[source]
        source: BoxError,
    },

    #[error(
        "the storage rejected the credentials for {uri}: {source}. Check AWS_*/GOOGLE_*/AZURE_* variables or --storage-option keys."
    )]
    Credentials {
        uri: String,
        #[source]
        source: BoxError,
    },

    /// None were given and the cloud's default chain found none (on S3 its last resort, the
    /// EC2 instance metadata service, fails off EC2 with a token error that explains nothing).
    #[error("no credentials for {uri}: {hint}. (The credential lookup said: {source})")]
    NoCredentials {
        uri: String,
        hint: &'static str,
        #[source]
        source: BoxError,
    },

    #[error("cannot reach {uri}: {source}. Check the endpoint, network and region settings.")]
    Unreachable {
        uri: String,
        #[source]
        source: BoxError,
    },

    #[error(
        "{uri}: commit {file} is corrupt at line {line}: {detail}. The log cannot be replayed past it; restore the file from a backup. lakehealth changed nothing."
    )]
    CorruptCommit {
        uri: String,
        file: String,
        line: usize,
        detail: String,
    },

    #[error(
        "{uri}: checkpoint {file} cannot be read: {source}. Restore it, or delete it and _last_checkpoint so readers replay the JSON commits (only if those still exist)."
    )]
    CorruptCheckpoint {
        uri: String,
        file: String,
        #[source]
        source: BoxError,
    },

    #[error("{uri}: the log is incomplete: {detail}")]
    LogGap { uri: String, detail: String },

    #[error("invalid location {input:?}: {detail}")]
    InvalidUri { input: String, detail: String },

    /// A storage operation failed in a way none of the variants above explains.
    #[error("{uri}: {what} failed: {source}")]
    Storage {
        uri: String,
        what: String,
        #[source]
        source: object_store::Error,
    },

    /// A delta-rs operation failed in a way none of the variants above explains.
    #[error("{uri}: {what} failed: {source}")]
    Delta {
        uri: String,
        what: String,
        #[source]
        source: Box<DeltaTableError>,
    },

    #[error("{uri}: {what} failed: {source}")]
    Io {
        uri: String,
        what: String,
        #[source]
        source: std::io::Error,
    },

    /// Encoding generated rows as Arrow or Parquet failed (`demo` and `stream` write their own).
    #[error("{uri}: {what} failed: {source}")]
    Encode {
        uri: String,
        what: String,
        #[source]
        source: BoxError,
    },

    /// A table property lakehealth needs has a value Delta cannot parse.
    #[error("{uri}: {source}. Fix the property (ALTER TABLE ... SET TBLPROPERTIES) or {remedy}.")]
    InvalidProperty {
        uri: String,
        #[source]
        source: InvalidProperty,
        remedy: &'static str,
    },

    /// An Iceberg metadata file, manifest list or manifest cannot be parsed.
    #[error(
        "{uri}: Iceberg {what} {file} cannot be read: {source}. Check that the file is complete (not cut short by a failed write) and that the table's metadata names it; lakehealth changed nothing."
    )]
    IcebergMetadata {
        uri: String,
        what: String,
        file: String,
        #[source]
        source: BoxError,
    },

    /// The table is valid, but this operation does not support it.
    #[error("{uri}: {detail}")]
    Unsupported { uri: String, detail: String },

    /// A local table's folder holds a symbolic link that leads out of it: lakehealth never
    /// reads, writes or deletes through it.
    #[error(transparent)]
    LinkLeavesTable(Box<LinkLeaves>),

    /// Reading the table hit a bug (a panic, caught): the table is reported as unreadable.
    #[error(
        "{uri}: lakehealth hit a bug while reading this table ({detail}); nothing was changed. Other tables are unaffected; please report this with the table's metadata"
    )]
    Panicked { uri: String, detail: String },

    /// A request that cannot be carried out as given (a bad selection or option).
    #[error("{0}")]
    InvalidRequest(String),

    /// No installation key to seal job records with: no job runs without them.
    #[error(
        "lakehealth cannot seal its job records, so it runs no job: {0}. Set $LAKEHEALTH_KEY or the config's [trust] key, or mend the key file (`lakehealth key`)"
    )]
    NoKey(#[source] crate::sealed::KeyError),

    /// The Iceberg catalog a table is read and committed through failed (its URI redacted).
    #[error("{uri}: {source}")]
    Catalog {
        uri: String,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What kind of error it was, for `--json` and the TUI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NotFound,
    NotATable,
    EmptyLog,
    PermissionDenied,
    Credentials,
    Unreachable,
    CorruptCommit,
    CorruptCheckpoint,
    LogGap,
    InvalidUri,
    Storage,
    Delta,
    Io,
    Encode,
    InvalidProperty,
    IcebergMetadata,
    Unsupported,
    InvalidRequest,
    Panicked,
    Catalog,
}

/// An access failure recognised from the types in an error's chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    PermissionDenied,
    Credentials,
    Unreachable,
}

/// Walks `e` and its sources for an I/O, HTTP or object-store error that says why an access
/// failed.
fn access_failure(e: &(dyn StdError + 'static)) -> Option<Access> {
    use std::io::ErrorKind as Io;
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                Io::PermissionDenied => return Some(Access::PermissionDenied),
                Io::ConnectionRefused
                | Io::ConnectionReset
                | Io::ConnectionAborted
                | Io::TimedOut
                | Io::HostUnreachable
                | Io::NetworkUnreachable => return Some(Access::Unreachable),
                _ => {}
            }
        }
        if let Some(http) = err.downcast_ref::<HttpError>()
            && matches!(
                http.kind(),
                HttpErrorKind::Connect | HttpErrorKind::Timeout | HttpErrorKind::Interrupted
            )
        {
            return Some(Access::Unreachable);
        }
        if let Some(store) = err.downcast_ref::<object_store::Error>() {
            match store {
                object_store::Error::PermissionDenied { .. } => {
                    return Some(Access::PermissionDenied);
                }
                object_store::Error::Unauthenticated { .. } => return Some(Access::Credentials),
                _ => {}
            }
        }
        cur = err.source();
    }
    None
}

/// What to set when a location's store found no credentials, by scheme.
fn credentials_hint(uri: &str) -> &'static str {
    let scheme = uri.split("://").next().unwrap_or("");
    match scheme {
        "gs" => {
            "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a service account key file, or pass -o GOOGLE_SERVICE_ACCOUNT_KEY=... (or [storage] in the config file)"
        }
        "az" | "abfs" | "abfss" | "azure" | "adl" => {
            "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_KEY, or AZURE_CLIENT_ID/AZURE_CLIENT_SECRET/AZURE_TENANT_ID), or pass them as -o KEY=VALUE (or [storage] in the config file)"
        }
        _ => {
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones) or AWS_PROFILE, or pass -o AWS_ACCESS_KEY_ID=... -o AWS_SECRET_ACCESS_KEY=... (or [storage] in the config file); AWS_REGION and AWS_ENDPOINT_URL as needed"
        }
    }
}

/// Whether `e` (or a source of it) says that no credentials were found at all, as opposed to
/// credentials that were rejected. The AWS SDK's provider chain reports it through
/// delta-rs as a `NotSupported` store error whose source is the chain's `CredentialsError`
/// (a crate lakehealth does not link directly, so it is recognised by its text), and its last
/// resort is the EC2 instance metadata service (IMDS).
fn no_credentials(e: &(dyn StdError + 'static)) -> bool {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string().to_ascii_lowercase();
        let credential_error = matches!(
            err.downcast_ref::<object_store::Error>(),
            Some(object_store::Error::NotSupported { .. })
        ) && text.contains("credential");
        // IMDS: its address, or its token path when AWS_METADATA_ENDPOINT moves it.
        if credential_error
            || text.contains("169.254.169.254")
            || text.contains("/latest/api/token")
            || text.contains("/latest/meta-data/iam")
            || text.contains("imds session token")
            || text.contains("no credentials")
            || text.contains("credentials provider was not enabled")
            || text.contains("failed to load credentials")
        {
            return true;
        }
        cur = err.source();
    }
    false
}

impl EngineError {
    /// Turns a storage error into the most specific actionable error.
    pub fn from_store(uri: &str, what: &str, e: object_store::Error) -> Self {
        use object_store::Error as E;
        if no_credentials(&e) {
            return EngineError::NoCredentials {
                uri: uri.to_string(),
                hint: credentials_hint(uri),
                source: Box::new(e),
            };
        }
        match e {
            E::NotFound { .. } => EngineError::NotFound {
                uri: format!("{uri} ({what})"),
            },
            E::PermissionDenied { source, .. } => EngineError::PermissionDenied {
                what: format!("{what} in {uri}"),
                source,
            },
            E::Unauthenticated { source, .. } => EngineError::Credentials {
                uri: uri.to_string(),
                source,
            },
            other => match access_failure(&other) {
                Some(access) => Self::access(uri, what, access, Box::new(other)),
                None => EngineError::Storage {
                    uri: uri.to_string(),
                    what: what.to_string(),
                    source: other,
                },
            },
        }
    }

    /// Turns a delta-rs error into the most specific actionable error: a missing log is not a
    /// table, a storage failure is classified as `from_store` does.
    pub fn from_delta(uri: &str, what: &str, e: DeltaTableError) -> Self {
        match e {
            DeltaTableError::NotATable(_) => EngineError::NotATable {
                uri: uri.to_string(),
                depth: 0,
            },
            DeltaTableError::ObjectStore { source } => Self::from_store(uri, what, source),
            other if no_credentials(&other) => EngineError::NoCredentials {
                uri: uri.to_string(),
                hint: credentials_hint(uri),
                source: Box::new(other),
            },
            other => match access_failure(&other) {
                Some(access) => Self::access(uri, what, access, Box::new(other)),
                None => EngineError::Delta {
                    uri: uri.to_string(),
                    what: what.to_string(),
                    source: Box::new(other),
                },
            },
        }
    }

    fn access(uri: &str, what: &str, access: Access, source: BoxError) -> Self {
        match access {
            Access::PermissionDenied => EngineError::PermissionDenied {
                what: format!("{what} in {uri}"),
                source,
            },
            Access::Credentials => EngineError::Credentials {
                uri: uri.to_string(),
                source,
            },
            Access::Unreachable => EngineError::Unreachable {
                uri: uri.to_string(),
                source,
            },
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::NotFound { .. } => ErrorKind::NotFound,
            EngineError::NotATable { .. } => ErrorKind::NotATable,
            EngineError::EmptyLog { .. } => ErrorKind::EmptyLog,
            EngineError::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            EngineError::Credentials { .. }
            | EngineError::NoCredentials { .. }
            | EngineError::NoKey(_) => ErrorKind::Credentials,
            EngineError::Unreachable { .. } => ErrorKind::Unreachable,
            EngineError::CorruptCommit { .. } => ErrorKind::CorruptCommit,
            EngineError::CorruptCheckpoint { .. } => ErrorKind::CorruptCheckpoint,
            EngineError::LogGap { .. } => ErrorKind::LogGap,
            EngineError::InvalidUri { .. } => ErrorKind::InvalidUri,
            EngineError::Storage { .. } => ErrorKind::Storage,
            EngineError::Delta { .. } => ErrorKind::Delta,
            EngineError::Io { .. } => ErrorKind::Io,
            EngineError::Encode { .. } => ErrorKind::Encode,
            EngineError::InvalidProperty { .. } => ErrorKind::InvalidProperty,
            EngineError::IcebergMetadata { .. } => ErrorKind::IcebergMetadata,
            EngineError::Unsupported { .. } | EngineError::LinkLeavesTable(_) => {
                ErrorKind::Unsupported
            }
            EngineError::InvalidRequest(_) => ErrorKind::InvalidRequest,
            EngineError::Panicked { .. } => ErrorKind::Panicked,
            EngineError::Catalog { .. } => ErrorKind::Catalog,
        }
    }
}

/// A link that leads out of a table's folder, as an error: what lakehealth refused to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{uri}: {link} is a symbolic link (or lies behind one) to {target}, outside the table's folder{more}; lakehealth never follows a link out of the table root, so it does not {action} this table (nothing was changed). Replace the link with the files it points to, or open that folder as its own table"
)]
pub struct LinkLeaves {
    pub uri: String,
    /// The link (or the path behind it), relative to the table folder.
    pub link: String,
    /// Where it leads (resolved), or why it cannot be resolved.
    pub target: String,
    /// " (3 such links)" when there are more.
    pub more: String,
    pub action: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(source: BoxError) -> object_store::Error {
        object_store::Error::Generic {
            store: "Test",
            source,
        }
    }

    #[test]
    fn store_errors_are_classified_by_type() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = EngineError::from_store("/t", "_delta_log/", generic(Box::new(denied)));
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        assert!(e.source().is_some());

        let refused = HttpError::new(
            HttpErrorKind::Connect,
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        );
        let e = EngineError::from_store("s3://b/t", "_delta_log/", generic(Box::new(refused)));
        assert_eq!(e.kind(), ErrorKind::Unreachable, "{e}");
        assert!(e.to_string().starts_with("cannot reach s3://b/t"), "{e}");

        let e = EngineError::from_store(
            "s3://b/t",
            "_delta_log/",
            object_store::Error::Unauthenticated {
                path: "t".into(),
                source: "InvalidAccessKeyId".into(),
            },
        );
        assert_eq!(e.kind(), ErrorKind::Credentials, "{e}");
        assert!(e.to_string().contains("InvalidAccessKeyId"), "{e}");

        let e = EngineError::from_store(
            "/t",
            "x",
            object_store::Error::NotFound {
                path: "x".into(),
                source: "gone".into(),
            },
        );
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");

        // Unrecognised: kept as it is, with its type.
        let e = EngineError::from_store("/t", "x", generic("odd".into()));
        assert!(matches!(
            e,
            EngineError::Storage {
                source: object_store::Error::Generic { .. },
                ..
            }
        ));
    }

    #[test]
    fn missing_s3_credentials_say_what_to_set() {
        let imds: BoxError =
            "Error performing PUT http://169.254.169.254/latest/api/token: 403 Forbidden".into();
        let e = EngineError::from_store(
            "s3://b/t",
            "_delta_log/",
            object_store::Error::NotSupported { source: imds },
        );
        assert_eq!(e.kind(), ErrorKind::Credentials, "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with("no credentials for s3://b/t: set AWS_ACCESS_KEY_ID"),
            "{text}"
        );
        assert!(text.contains("-o AWS_ACCESS_KEY_ID="), "{text}");
        let e = EngineError::from_store(
            "gs://b/t",
            "x",
            generic("the credentials provider was not enabled".into()),
        );
        assert!(
            e.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{e}"
        );
    }

    #[test]
    fn delta_errors_keep_their_source() {
        let e = EngineError::from_delta(
            "/t",
            "loading the table",
            DeltaTableError::NotATable("no log".into()),
        );
        assert_eq!(e.kind(), ErrorKind::NotATable);
        let e = EngineError::from_delta(
            "/t",
            "loading the table",
            DeltaTableError::ObjectStore {
                source: generic(Box::new(std::io::Error::from(
                    std::io::ErrorKind::PermissionDenied,
                ))),
            },
        );
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        let e = EngineError::from_delta("/t", "loading the table", DeltaTableError::NoSchema);
        assert_eq!(e.kind(), ErrorKind::Delta);
        assert!(
            matches!(&e, EngineError::Delta { source, .. } if matches!(**source, DeltaTableError::NoSchema))
        );
        assert!(e.source().is_some());
        assert!(
            e.to_string().starts_with("/t: loading the table failed: "),
            "{e}"
        );
        assert!(
            std::mem::size_of::<EngineError>() <= 128,
            "keep Result<_, EngineError> small"
        );
    }
}
