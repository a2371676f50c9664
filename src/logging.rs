//! Logs go to a file, never to the terminal (the TUI owns the screen). The file stays small:
//! dependencies log warnings only by default (delta-kernel's INFO lines run to ~19 KB each and
//! flooded the demo's log at 1.5 MB/s), and it rotates by size (`RotatingFile`).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

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

/// A log file that, before a write would take it past `max_bytes`, is renamed to `PATH.1`
/// (`PATH.1` to `PATH.2`, ..., the oldest of `keep` dropped) and started afresh. Writes are
/// whole events (the tracing writer hands over one formatted event per write), so a line is
/// never split across files.
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    max_bytes: u64,
    keep: usize,
}

impl RotatingFile {
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            size,
            max_bytes,
            keep,
        })
    }

    /// `PATH.n`.
    fn numbered(&self, n: usize) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    }

    fn rotate(&mut self) -> io::Result<()> {
        let ignore_missing = |r: io::Result<()>| match r {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        if self.keep == 0 {
            ignore_missing(std::fs::remove_file(&self.path))?;
        } else {
            for n in (1..self.keep).rev() {
                ignore_missing(std::fs::rename(self.numbered(n), self.numbered(n + 1)))?;
            }
            ignore_missing(std::fs::rename(&self.path, self.numbered(1)))?;
        }
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max_bytes {
            // A failed rotation must not lose the line: keep appending to the current file.
            let _ = self.rotate();
        }
        self.file.write_all(buf)?;
        self.size += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The log file with credentials scrubbed from every line (`engine::secrets`): an error a
/// library formats may quote a storage option.
pub struct Scrubbed<W>(pub W);

impl<W: Write> Write for Scrubbed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(crate::engine::secrets::scrub(&text).as_bytes())?;
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
    fn the_log_rotates_by_size_and_keeps_the_newest_files() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("l.log");
        let mut f = RotatingFile::open(&path, 100, 2).unwrap();
        for i in 0..10 {
            // 40 bytes a line: two fit in a file, the third rotates.
            f.write_all(format!("{i:0>39}\n").as_bytes()).unwrap();
        }
        f.flush().unwrap();
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        let first = |text: String| {
            text.lines()
                .next()
                .map(|l| l.trim_start_matches('0').to_string())
        };
        assert_eq!(read(path.clone()).lines().count(), 2);
        assert_eq!(first(read(path.clone())), Some("8".into()));
        assert_eq!(first(read(d.path().join("l.log.1"))), Some("6".into()));
        assert_eq!(first(read(d.path().join("l.log.2"))), Some("4".into()));
        assert!(
            !d.path().join("l.log.3").exists(),
            "only 2 rotated files are kept"
        );
        for p in ["l.log", "l.log.1", "l.log.2"] {
            assert!(
                std::fs::metadata(d.path().join(p)).unwrap().len() <= 100,
                "{p}"
            );
        }
    }

    #[test]
    fn an_existing_log_counts_towards_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("l.log");
        std::fs::write(&path, vec![b'x'; 90]).unwrap();
        let mut f = RotatingFile::open(&path, 100, 1).unwrap();
        f.write_all(b"0123456789abcdef\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789abcdef\n");
        assert_eq!(std::fs::read(d.path().join("l.log.1")).unwrap().len(), 90);
    }

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
}
