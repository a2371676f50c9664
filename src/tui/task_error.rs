//! A background task's failure as the TUI holds it: the engine's kind of error and the message
//! shown. Actions are values, so it is `Clone` where `EngineError` is not.

use crate::engine::error::{EngineError, ErrorKind};
use crate::engine::iceberg::compact::IcebergCompactError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TaskError {
    /// What kind of engine error it was; None for the TUI's own (a previewed plan gone).
    pub kind: Option<ErrorKind>,
    pub message: String,
}

impl From<EngineError> for TaskError {
    fn from(e: EngineError) -> Self {
        Self {
            kind: Some(e.kind()),
            message: e.to_string(),
        }
    }
}

impl From<String> for TaskError {
    fn from(message: String) -> Self {
        Self {
            kind: None,
            message,
        }
    }
}

impl From<&str> for TaskError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

impl From<IcebergCompactError> for TaskError {
    fn from(e: IcebergCompactError) -> Self {
        match e {
            IcebergCompactError::Engine(e) => e.into(),
            other => other.to_string().into(),
        }
    }
}
