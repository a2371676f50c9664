//! Reading the `_delta_log/` listing: which commits and checkpoints exist, and which
//! checkpoint a reader should start from.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

/// One checkpoint of a version (single file, multi-part, or a v2 UUID-named one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub version: u64,
    /// Object paths relative to the table root, in part order.
    pub files: Vec<String>,
    /// Number of parts the file names promise (1 for single and v2 checkpoints).
    pub parts_expected: u32,
    /// Listed sizes of its files (a reader needs no HEAD request for them).
    pub sizes: HashMap<String, u64>,
}

impl Checkpoint {
    /// The listed size of one of its files (None for a sidecar).
    pub fn size_of(&self, file: &str) -> Option<u64> {
        self.sizes.get(file).copied()
    }

    pub fn is_complete(&self) -> bool {
        self.files.len() as u32 == self.parts_expected
    }
}

#[derive(Debug, Clone, Default)]
pub struct LogListing {
    /// version → (path, size, last modified)
    pub commits: BTreeMap<u64, (String, u64, Option<DateTime<Utc>>)>,
    pub checkpoints: BTreeMap<u64, Checkpoint>,
    /// Total bytes of everything under `_delta_log/` (commits, checkpoints, sidecars, crc...).
    pub log_bytes: u64,
    pub log_objects: u64,
    /// `_last_checkpoint`'s version, if the file was present and readable.
    pub last_checkpoint_hint: Option<u64>,
    /// A `_last_checkpoint` file was listed (its content is read separately).
    pub has_last_checkpoint_file: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFile {
    Commit(u64),
    /// version, part index (1-based), parts total
    CheckpointPart(u64, u32, u32),
    /// Classic single-file or v2 UUID-named checkpoint.
    Checkpoint(u64),
    LastCheckpoint,
    Other,
}

fn version_prefix(name: &str) -> Option<(u64, &str)> {
    if name.len() < 20 || !name.as_bytes()[..20].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = name[..20].parse().ok()?;
    Some((v, &name[20..]))
}

/// Classifies a file name found directly in `_delta_log/`.
pub fn classify(name: &str) -> LogFile {
    if name == "_last_checkpoint" {
        return LogFile::LastCheckpoint;
    }
    let Some((version, rest)) = version_prefix(name) else {
        return LogFile::Other;
    };
    if rest == ".json" {
        return LogFile::Commit(version);
    }
    let Some(cp) = rest.strip_prefix(".checkpoint") else {
        return LogFile::Other;
    };
    if cp == ".parquet" {
        return LogFile::Checkpoint(version);
    }
    // .checkpoint.0000000001.0000000003.parquet
    if let Some(parts) = cp
        .strip_suffix(".parquet")
        .and_then(|s| s.strip_prefix('.'))
    {
        let mut it = parts.split('.');
        if let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) {
            if a.len() == 10
                && b.len() == 10
                && let (Ok(i), Ok(n)) = (a.parse(), b.parse())
            {
                return LogFile::CheckpointPart(version, i, n);
            }
            return LogFile::Other;
        }
        // .checkpoint.<uuid>.parquet (v2)
        if it_is_uuid(parts) {
            return LogFile::Checkpoint(version);
        }
    }
    LogFile::Other
}

fn it_is_uuid(s: &str) -> bool {
    s.len() == 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

impl LogListing {
    pub fn add(&mut self, rel_path: &str, size: u64, modified: Option<DateTime<Utc>>) {
        self.log_bytes += size;
        self.log_objects += 1;
        let Some(name) = rel_path.strip_prefix("_delta_log/") else {
            return;
        };
        if name.contains('/') {
            return; // _sidecars/ and other subfolders: counted, not classified
        }
        match classify(name) {
            LogFile::Commit(v) => {
                self.commits
                    .insert(v, (rel_path.to_string(), size, modified));
            }
            LogFile::Checkpoint(v) => {
                // Prefer a classic checkpoint when a v2 one of the same version also exists.
                let entry = self.checkpoints.entry(v).or_insert(Checkpoint {
                    version: v,
                    files: vec![],
                    parts_expected: 1,
                    sizes: HashMap::new(),
                });
                entry.sizes.insert(rel_path.to_string(), size);
                if entry.files.is_empty() || rel_path.ends_with(".checkpoint.parquet") {
                    entry.files = vec![rel_path.to_string()];
                    entry.parts_expected = 1;
                }
            }
            LogFile::CheckpointPart(v, _, n) => {
                let entry = self.checkpoints.entry(v).or_insert(Checkpoint {
                    version: v,
                    files: vec![],
                    parts_expected: n,
                    sizes: HashMap::new(),
                });
                entry.sizes.insert(rel_path.to_string(), size);
                if entry.parts_expected == n {
                    entry.files.push(rel_path.to_string());
                    entry.files.sort();
                }
            }
            LogFile::LastCheckpoint => self.has_last_checkpoint_file = true,
            LogFile::Other => {}
        }
    }

    /// Latest version the log holds: newest commit, or a checkpoint newer than every commit.
    pub fn latest_version(&self) -> Option<u64> {
        let c = self.commits.keys().next_back().copied();
        let k = self
            .checkpoints
            .values()
            .filter(|c| c.is_complete())
            .map(|c| c.version)
            .next_back();
        c.max(k)
    }

    /// Newest complete checkpoint at or below `version`.
    pub fn usable_checkpoint(&self, version: u64) -> Option<&Checkpoint> {
        self.checkpoints
            .range(..=version)
            .rev()
            .map(|(_, c)| c)
            .find(|c| c.is_complete())
    }

    /// Checkpoints that are missing parts (reported as a warning).
    pub fn incomplete_checkpoints(&self) -> impl Iterator<Item = &Checkpoint> {
        self.checkpoints.values().filter(|c| !c.is_complete())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_log_file_names() {
        assert_eq!(classify("00000000000000000010.json"), LogFile::Commit(10));
        assert_eq!(
            classify("00000000000000000010.checkpoint.parquet"),
            LogFile::Checkpoint(10)
        );
        assert_eq!(
            classify("00000000000000000010.checkpoint.0000000002.0000000003.parquet"),
            LogFile::CheckpointPart(10, 2, 3)
        );
        assert_eq!(
            classify(
                "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet"
            ),
            LogFile::Checkpoint(10)
        );
        assert_eq!(classify("_last_checkpoint"), LogFile::LastCheckpoint);
        assert_eq!(classify("00000000000000000010.crc"), LogFile::Other);
        assert_eq!(
            classify("00000000000000000001.00000000000000000009.compacted.json"),
            LogFile::Other
        );
        assert_eq!(classify("_commit_abc.json.tmp"), LogFile::Other);
    }

    #[test]
    fn picks_newest_complete_checkpoint() {
        let mut l = LogListing::default();
        for v in 0..=25u64 {
            l.add(&format!("_delta_log/{v:020}.json"), 10, None);
        }
        l.add(
            "_delta_log/00000000000000000010.checkpoint.parquet",
            100,
            None,
        );
        l.add(
            "_delta_log/00000000000000000020.checkpoint.0000000001.0000000002.parquet",
            100,
            None,
        );
        assert_eq!(l.latest_version(), Some(25));
        assert_eq!(l.usable_checkpoint(25).map(|c| c.version), Some(10));
        assert_eq!(l.incomplete_checkpoints().count(), 1);
        l.add(
            "_delta_log/00000000000000000020.checkpoint.0000000002.0000000002.parquet",
            100,
            None,
        );
        assert_eq!(l.usable_checkpoint(25).map(|c| c.version), Some(20));
        assert_eq!(l.usable_checkpoint(15).map(|c| c.version), Some(10));
        assert_eq!(l.log_objects, 29);
    }
}
