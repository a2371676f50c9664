//! Logs go to a file, never to the terminal (the TUI owns the screen).

use std::path::PathBuf;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// `lakehealth.log` in the platform data directory, or the system temp dir.
pub fn log_path() -> PathBuf {
    directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
        .map(|d| d.data_local_dir().to_path_buf())
        .unwrap_or_else(std::env::temp_dir)
        .join("lakehealth.log")
}

/// The log file with credentials scrubbed from every line (`engine::secrets`): an error a
/// library formats may quote a storage option.
struct Scrubbed(std::fs::File);

impl std::io::Write for Scrubbed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(crate::engine::secrets::scrub(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Starts file logging; level from `LAKEHEALTH_LOG` (default `info`). Keep the guard alive.
pub fn init(path: Option<PathBuf>) -> Option<WorkerGuard> {
    let path = path.unwrap_or_else(log_path);
    let dir = path.parent()?.to_path_buf();
    std::fs::create_dir_all(&dir).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking(Scrubbed(file));
    let filter = EnvFilter::try_from_env("LAKEHEALTH_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,deltalake=warn,datafusion=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
