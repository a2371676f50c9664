//! A file that rotates by size: the log file and the janitor's history. Before a write would
//! take it past `max_bytes` it is renamed to `PATH.1` (`PATH.1` to `PATH.2`, ..., the oldest of
//! `keep` dropped) and started afresh. Each write is one whole record (a log event, a history
//! line), so a record is never split across files; `rotated_paths` lists the files oldest
//! first for readers that read across the rotation.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file rotated by size (see the module). The tracing writer hands over one formatted event
/// per write, the history one line per write.
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

    fn numbered(&self, n: usize) -> PathBuf {
        numbered(&self.path, n)
    }

    pub fn path(&self) -> &Path {
        &self.path
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

/// `PATH.n`.
fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut p = path.to_path_buf().into_os_string();
    p.push(format!(".{n}"));
    PathBuf::from(p)
}

/// The files of `path` that exist, oldest first: `PATH.n` (the highest present) down to
/// `PATH.1`, then `PATH`. A gap ends the search (a rotation renames from the top down).
pub fn rotated_paths(path: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = (1..)
        .map(|n| numbered(path, n))
        .take_while(|p| p.exists())
        .collect();
    out.reverse();
    if path.exists() {
        out.push(path.to_path_buf());
    }
    out
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
    fn the_rotated_files_are_listed_oldest_first_and_hold_every_record_once() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("h.jsonl");
        assert!(rotated_paths(&path).is_empty());
        let mut f = RotatingFile::open(&path, 100, 3).unwrap();
        for i in 0..7 {
            f.write_all(format!("{i:0>39}\n").as_bytes()).unwrap();
        }
        let files = rotated_paths(&path);
        assert_eq!(
            files,
            [
                d.path().join("h.jsonl.3"),
                d.path().join("h.jsonl.2"),
                d.path().join("h.jsonl.1"),
                path.clone()
            ]
        );
        let lines: Vec<u32> = files
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(|l| l.parse::<u32>().unwrap())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            lines,
            (0..7).collect::<Vec<_>>(),
            "every line once, in order"
        );
    }
}
