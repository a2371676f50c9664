//! Engine errors. Every variant says what went wrong and what the user can do about it.

use thiserror::Error;

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
        "permission denied reading {what}: {detail}. Check the file permissions or the credentials' access to this location."
    )]
    PermissionDenied { what: String, detail: String },

    #[error(
        "the storage rejected the credentials for {uri}: {detail}. Check AWS_*/GOOGLE_*/AZURE_* variables or --storage-option keys."
    )]
    Credentials { uri: String, detail: String },

    #[error("cannot reach {uri}: {detail}. Check the endpoint, network and region settings.")]
    Unreachable { uri: String, detail: String },

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
        "{uri}: checkpoint {file} cannot be read: {detail}. Restore it, or delete it and _last_checkpoint so readers replay the JSON commits (only if those still exist)."
    )]
    CorruptCheckpoint {
        uri: String,
        file: String,
        detail: String,
    },

    #[error("{uri}: the log is incomplete: {detail}")]
    LogGap { uri: String, detail: String },

    #[error("invalid location {input:?}: {detail}")]
    InvalidUri { input: String, detail: String },

    #[error("{0}")]
    Storage(String),

    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

impl EngineError {
    /// Turns a storage error into the most specific actionable error.
    pub fn from_store(uri: &str, what: &str, e: object_store::Error) -> Self {
        use object_store::Error as E;
        match e {
            E::NotFound { .. } => EngineError::NotFound {
                uri: format!("{uri} ({what})"),
            },
            E::PermissionDenied { source, .. } => EngineError::PermissionDenied {
                what: format!("{what} in {uri}"),
                detail: source.to_string(),
            },
            E::Unauthenticated { source, .. } => EngineError::Credentials {
                uri: uri.to_string(),
                detail: source.to_string(),
            },
            other => classify_message(uri, what, &other.to_string()),
        }
    }
}

fn classify_message(uri: &str, what: &str, msg: &str) -> EngineError {
    let lower = msg.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if has(&["permission denied", "os error 13"]) {
        EngineError::PermissionDenied {
            what: format!("{what} in {uri}"),
            detail: msg.to_string(),
        }
    } else if has(&[
        "invalidaccesskeyid",
        "signaturedoesnotmatch",
        "accessdenied",
        "403 forbidden",
        "401 unauthorized",
        "missing credentials",
        "no credentials",
        "expiredtoken",
    ]) {
        EngineError::Credentials {
            uri: uri.to_string(),
            detail: msg.to_string(),
        }
    } else if has(&[
        "error sending request",
        "connection refused",
        "dns error",
        "timed out",
        "connect error",
        "nosuchbucket",
        "tcp connect",
    ]) {
        EngineError::Unreachable {
            uri: uri.to_string(),
            detail: msg.to_string(),
        }
    } else {
        EngineError::Storage(format!("{uri}: reading {what} failed: {msg}"))
    }
}
