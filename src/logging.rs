//! Logs go to a file, never to the terminal (the TUI owns the screen). The file stays small:
//! dependencies log warnings only by default (delta-kernel's INFO lines run to ~19 KB each and
//! flooded the demo's log at 1.5 MB/s), and it rotates by size (`RotatingFile`).

use std::io::{self, Write};
use std::path::PathBuf;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

use crate::engine::rotating_file::RotatingFile;
use crate::engine::size::MIB;

/// Bytes a log file holds before it is rotated.
pub const MAX_LOG_BYTES: u64 = 8 * MIB;
/// Rotated files kept beside the current one (`lakehealth.log.1`, newest, to `.3`).
pub const KEPT_LOGS: usize = 3;
/// The filter without `LAKEHEALTH_LOG`: lakehealth's own INFO, dependencies' warnings.
pub const DEFAULT_FILTER: &str = "warn,lakehealth=info";

/// `lakehealth.log` in the platform data directory, or the system temp dir.
pub fn log_path() -> PathBuf {
    directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
        .map(|d| d.data_local_dir().to_path_buf())
        .unwrap_or_else(std::env::temp_dir)
        .join("lakehealth.log")
}

/// The log file with credentials scrubbed from every line (`engine::secrets`): an error a
/// library formats may quote a storage option. And inert (`engine::model::inert`): a line may
/// quote a table's text, and whoever `cat`s or `tail`s the log must not get its terminal
/// controls. The formatter writes no colours (`with_ansi(false)`), so none is ours.
pub struct Scrubbed<W>(pub W);

impl<W: Write> Write for Scrubbed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(crate::cli::print::shown(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `LAKEHEALTH_LOG` (e.g. `info`, `debug,deltalake=info`), else `DEFAULT_FILTER`.
pub fn filter() -> EnvFilter {
    EnvFilter::try_from_env("LAKEHEALTH_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// Starts file logging. Keep the guard alive.
pub fn init(path: Option<PathBuf>) -> Option<WorkerGuard> {
    let path = path.unwrap_or_else(log_path);
    let dir = path.parent()?.to_path_buf();
    std::fs::create_dir_all(&dir).ok()?;
    let file = RotatingFile::open(&path, MAX_LOG_BYTES, KEPT_LOGS).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(Scrubbed(file));
    tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_log_warnings_only_by_default() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("l.log");
        let file = RotatingFile::open(&path, MAX_LOG_BYTES, KEPT_LOGS).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_FILTER))
            .with_writer(std::sync::Mutex::new(Scrubbed(file)))
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "delta_kernel::log_segment", "kernel info line");
            tracing::info!(target: "deltalake_core::kernel", "delta info line");
            tracing::warn!(target: "delta_kernel::log_segment", "kernel warning line");
            tracing::info!(target: "lakehealth::engine::janitor", "own info line");
            tracing::debug!(target: "lakehealth::engine::janitor", "own debug line");
        });
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(!log.contains("kernel info line"), "{log}");
        assert!(!log.contains("delta info line"), "{log}");
        assert!(!log.contains("own debug line"), "{log}");
        assert!(log.contains("kernel warning line"), "{log}");
        assert!(log.contains("own info line"), "{log}");
    }

    #[test]
    fn a_logged_table_string_reaches_the_file_inert() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("l.log");
        let file = RotatingFile::open(&path, MAX_LOG_BYTES, KEPT_LOGS).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_FILTER))
            .with_writer(std::sync::Mutex::new(Scrubbed(file)))
            .with_ansi(false)
            .finish();
        let value = "p=\x1b]52;c;eA==\x07\r\u{9b}\u{202e}";
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "lakehealth::engine::janitor", "bad partition {value}");
            tracing::warn!(target: "lakehealth::engine::janitor", partition = value, "field");
        });
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(
            !log.contains(['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}']),
            "{log:?}"
        );
        assert!(
            log.contains("bad partition p=\\x1b]52;c;eA==\\x07"),
            "{log}"
        );
        assert_eq!(log.lines().count(), 2, "{log}");
    }
}
