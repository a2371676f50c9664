//! Reading the checkpoint under the JSON commits after it: every file key those commits touched
//! is decided by them, so the checkpoint's entry for it (live file or tombstone) is dropped.
//!
//! Paths are the bulk of a checkpoint's bytes, so the first pass reads none:
//! - a file removed after the checkpoint was live in it: one checkpoint file of the same
//!   (partition, size) is dropped, which leaves the same sizes per partition as dropping it;
//! - a checkpoint file with the (partition, size) of a file added after the checkpoint may be
//!   that file (a re-add), and a tombstone with the size of any touched file may be its older
//!   tombstone (a re-add, or a second remove): their paths are read for those rows only.
//!
//! - a file removed after the checkpoint by a remove without its partition (older writers) but
//!   with its size: the paths of the checkpoint's rows of that size are read.
//!
//! When a removed file's (partition, size) finds no checkpoint file and no tombstone explains it
//! (a remove spelling its partition differently, or a file the checkpoint never held), a
//! partition-less remove's path is not among the rows of its size, or a remove lacks its size,
//! the paths of the whole checkpoint are read instead.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::checkpoint::{
    CheckpointMeta, CheckpointReadError, CheckpointVisitor, read_checkpoint_file,
    read_checkpoint_keys,
};
use super::listing::Checkpoint;
use super::opened_checkpoint::CheckpointFiles;
use super::partition_key::{FastMap, FastSet, PartitionSizes};
use super::state::Tombstones;
use super::walker::Oldest;
use crate::error::{EngineError, Result};
use crate::progress::LoadProgress;

/// What the checkpoint adds to the state the JSON commits left.
#[derive(Debug, Default)]
pub struct CheckpointPart {
    /// Live files of the checkpoint not touched after it.
    pub partitions: PartitionSizes,
    pub tombstones: Tombstones,
    pub meta: CheckpointMeta,
    /// Keys removed after the checkpoint that it already listed as removed: removed twice.
    pub tombstoned_again: HashSet<String>,
    /// The paths of every checkpoint row were read (the fallback).
    pub read_all_paths: bool,
}

/// `opened`: the checkpoint's files, those already opened (`CheckpointFiles::open_ahead`) not
/// opened again.
pub async fn reconcile_checkpoint(
    opened: &mut CheckpointFiles,
    uri: &str,
    cp: &Checkpoint,
    files: &FastMap<String, Oldest>,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<CheckpointPart> {
    if let Some(plan) = SizePlan::new(files) {
        let mut pass = SizePass::new(plan);
        let paths = read_all(opened, uri, cp, false, &mut pass, progress).await?;
        if let Some(part) = pass.finish(opened, uri, cp, &paths, files).await? {
            return Ok(part);
        }
    }
    let mut pass = PathPass {
        files,
        part: CheckpointPart {
            read_all_paths: true,
            ..CheckpointPart::default()
        },
    };
    read_all(opened, uri, cp, true, &mut pass, progress).await?;
    Ok(pass.part)
}

/// Reads every file of the checkpoint and its sidecars; returns their paths, in row-number order
/// of the visitor's `file` index.
async fn read_all(
    opened: &mut CheckpointFiles,
    uri: &str,
    cp: &Checkpoint,
    with_paths: bool,
    visitor: &mut dyn FileIndexed,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Vec<String>> {
    let on_rows = |rows| progress(LoadProgress::ReadingCheckpoint { rows });
    let mut paths: Vec<String> = cp.files.clone();
    let mut i = 0;
    while i < paths.len() {
        visitor.set_file(i);
        let file = opened
            .get(&paths[i], cp.size_of(&paths[i]))
            .await
            .map_err(|detail| checkpoint_error(uri, &paths[i], detail))?;
        read_checkpoint_file(&file, with_paths, visitor.as_visitor(), &on_rows)
            .await
            .map_err(|detail| checkpoint_error(uri, &paths[i], detail))?;
        if i + 1 == cp.files.len() {
            // The sidecars (v2 checkpoints) were all named by the checkpoint files.
            let sidecars = std::mem::take(&mut visitor.as_visitor().meta().sidecars);
            paths.extend(
                sidecars
                    .into_iter()
                    .map(|sc| format!("_delta_log/_sidecars/{sc}")),
            );
        }
        i += 1;
    }
    Ok(paths)
}

/// A visitor that knows which checkpoint file it is reading (row numbers restart per file).
trait FileIndexed: Send {
    fn set_file(&mut self, file: usize);
    fn as_visitor(&mut self) -> &mut dyn CheckpointVisitor;
}

/// The exact fallback: every row's key is read and checked.
struct PathPass<'a> {
    files: &'a FastMap<String, Oldest>,
    part: CheckpointPart,
}

impl CheckpointVisitor for PathPass<'_> {
    fn add(&mut self, _row: u64, key: Option<&str>, part: &str, size: u64) {
        if !key.is_some_and(|k| self.files.contains_key(k)) {
            self.part.partitions.push(part, size);
        }
    }

    fn remove(&mut self, _row: u64, key: Option<&str>, ts: Option<i64>, size: Option<i64>) {
        match key.and_then(|k| self.files.get_key_value(k)) {
            Some((k, Oldest::Remove { .. })) => {
                self.part.tombstoned_again.insert(k.clone());
            }
            Some(_) => {}
            None => self.part.tombstones.push(ts, size),
        }
    }

    fn meta(&mut self) -> &mut CheckpointMeta {
        &mut self.part.meta
    }
}

impl FileIndexed for PathPass<'_> {
    fn set_file(&mut self, _file: usize) {}
    fn as_visitor(&mut self) -> &mut dyn CheckpointVisitor {
        self
    }
}

/// What the JSON commits after the checkpoint say the checkpoint held, by (partition, size).
struct SizePlan {
    /// Files removed after the checkpoint whose (partition, size) no added file shares: so
    /// many checkpoint files of that (partition, size) are dropped.
    drop: FastMap<(String, u64), u32>,
    /// (partition, size) of files added after the checkpoint: checkpoint files of it are
    /// checked by path (they may be the same file, added again).
    check: FastSet<(String, u64)>,
    /// Sizes of every touched file: tombstones of these sizes are checked by path.
    sizes: FastSet<u64>,
    /// Sizes of files removed without their partition: checkpoint files of them are checked
    /// by path.
    size_only: FastSet<u64>,
    /// The keys of those files: each must be found by path, or every path is read.
    unplaced: FastSet<String>,
}

impl SizePlan {
    /// None when a remove lacks its size (only every path can match it).
    fn new(files: &FastMap<String, Oldest>) -> Option<Self> {
        let mut check = FastSet::default();
        let mut sizes = FastSet::default();
        let mut size_only = FastSet::default();
        let mut unplaced = FastSet::default();
        let mut removed = Vec::new();
        for (key, o) in files {
            match o {
                Oldest::Add { part, size } => {
                    check.insert((part.clone(), *size));
                    sizes.insert(*size);
                }
                Oldest::Remove {
                    part: Some(part),
                    size: Some(size),
                } => {
                    removed.push((part.clone(), *size));
                    sizes.insert(*size);
                }
                Oldest::Remove {
                    part: None,
                    size: Some(size),
                } => {
                    size_only.insert(*size);
                    sizes.insert(*size);
                    unplaced.insert(key.clone());
                }
                Oldest::Remove { size: None, .. } => return None,
            }
        }
        let mut drop: FastMap<(String, u64), u32> = FastMap::default();
        for k in removed {
            if !check.contains(&k) {
                *drop.entry(k).or_default() += 1;
            }
        }
        Some(Self {
            drop,
            check,
            sizes,
            size_only,
            unplaced,
        })
    }
}

/// A checkpoint row whose key decides what happens to it.
struct Candidate {
    file: usize,
    row: u64,
    kind: CandidateKind,
}

enum CandidateKind {
    Add { part: String, size: u64 },
    Tombstone { ts: Option<i64>, size: Option<i64> },
}

struct SizePass {
    plan: SizePlan,
    file: usize,
    part: CheckpointPart,
    candidates: Vec<Candidate>,
    /// Scratch key for map lookups without allocating per row.
    key: (String, u64),
}

impl SizePass {
    fn new(plan: SizePlan) -> Self {
        Self {
            plan,
            file: 0,
            part: CheckpointPart::default(),
            candidates: Vec::new(),
            key: (String::new(), 0),
        }
    }

    /// Resolves the candidates by path; None when the fallback (all paths) is needed.
    async fn finish(
        mut self,
        opened: &mut CheckpointFiles,
        uri: &str,
        cp: &Checkpoint,
        paths: &[String],
        files: &FastMap<String, Oldest>,
    ) -> Result<Option<CheckpointPart>> {
        let mut by_file: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for c in &self.candidates {
            by_file.entry(c.file).or_default().push(c.row);
        }
        let mut keys: HashMap<(usize, u64), String> = HashMap::new();
        for (file, rows) in by_file {
            let path = &paths[file];
            let opened_file = opened
                .get(path, cp.size_of(path))
                .await
                .map_err(|detail| checkpoint_error(uri, path, detail))?;
            let found = read_checkpoint_keys(&opened_file, &rows)
                .await
                .map_err(|detail| checkpoint_error(uri, path, detail))?;
            keys.extend(found.into_iter().map(|(row, k)| ((file, row), k)));
        }
        // Removed files the checkpoint held as tombstones, by (partition, size) of `drop`.
        let mut explained: HashMap<(String, u64), u32> = HashMap::new();
        for c in std::mem::take(&mut self.candidates) {
            let key = keys.get(&(c.file, c.row));
            let touched = key.and_then(|k| files.get_key_value(k.as_str()));
            if let Some((k, _)) = touched {
                self.plan.unplaced.remove(k);
            }
            match (c.kind, touched) {
                (CandidateKind::Add { part, size }, None) => {
                    self.part.partitions.push(&part, size);
                }
                (CandidateKind::Add { .. }, Some((_, o))) => {
                    // A file of a size checked by path that `drop` counted: found by path.
                    if let Oldest::Remove {
                        part: Some(p),
                        size: Some(s),
                    } = o
                        && let Some(n) = self.plan.drop.get_mut(&(p.clone(), *s))
                    {
                        *n = n.saturating_sub(1);
                    }
                }
                (CandidateKind::Tombstone { ts, size }, None) => {
                    self.part.tombstones.push(ts, size);
                }
                (CandidateKind::Tombstone { .. }, Some((k, o))) => {
                    if let Oldest::Remove {
                        part: Some(p),
                        size: Some(s),
                    } = o
                    {
                        self.part.tombstoned_again.insert(k.clone());
                        let ps = (p.clone(), *s);
                        if self.plan.drop.contains_key(&ps) {
                            *explained.entry(ps).or_default() += 1;
                        }
                    }
                }
            }
        }
        // A file removed without its partition that no row of its size is: paths decide.
        if !self.plan.unplaced.is_empty() {
            return Ok(None);
        }
        // `drop` now holds what found no checkpoint file. A file removed again was a tombstone,
        // so it needed none, and the file of its (partition, size) dropped in its place goes
        // back. Anything else left over is a remove spelled unlike the checkpoint: paths decide.
        for ((part, size), left) in &self.plan.drop {
            let e = explained.get(&(part.clone(), *size)).copied().unwrap_or(0);
            if *left > e {
                return Ok(None);
            }
            for _ in 0..e - left {
                self.part.partitions.push(part, *size);
            }
        }
        Ok(Some(self.part))
    }
}

impl SizePass {
    /// A checkpoint file whose path decides whether it is still live.
    fn check_add(&mut self, row: u64, part: &str, size: u64) {
        self.candidates.push(Candidate {
            file: self.file,
            row,
            kind: CandidateKind::Add {
                part: part.to_string(),
                size,
            },
        });
    }
}

impl CheckpointVisitor for SizePass {
    fn add(&mut self, row: u64, _key: Option<&str>, part: &str, size: u64) {
        if self.plan.size_only.contains(&size) {
            // Maybe a file removed without its partition: its path decides (a file `drop`
            // counts is then found by path too).
            return self.check_add(row, part, size);
        }
        if self.plan.sizes.contains(&size) {
            self.key.0.clear();
            self.key.0.push_str(part);
            self.key.1 = size;
            if let Some(n) = self.plan.drop.get_mut(&self.key).filter(|n| **n > 0) {
                *n -= 1;
                return;
            }
            if self.plan.check.contains(&self.key) {
                return self.check_add(row, part, size);
            }
        }
        self.part.partitions.push(part, size);
    }

    fn remove(&mut self, row: u64, _key: Option<&str>, ts: Option<i64>, size: Option<i64>) {
        let maybe_touched = !self.plan.sizes.is_empty()
            && size.is_none_or(|s| s >= 0 && self.plan.sizes.contains(&(s as u64)));
        if maybe_touched {
            self.candidates.push(Candidate {
                file: self.file,
                row,
                kind: CandidateKind::Tombstone { ts, size },
            });
        } else {
            self.part.tombstones.push(ts, size);
        }
    }

    fn meta(&mut self) -> &mut CheckpointMeta {
        &mut self.part.meta
    }
}

impl FileIndexed for SizePass {
    fn set_file(&mut self, file: usize) {
        self.file = file;
    }
    fn as_visitor(&mut self) -> &mut dyn CheckpointVisitor {
        self
    }
}

/// A checkpoint file that could not be read: a storage failure is reported as one (a file
/// that vanished mid-read is a gap in the log), anything else means the file is corrupt.
pub fn checkpoint_error(uri: &str, file: &str, e: CheckpointReadError) -> EngineError {
    match e {
        CheckpointReadError::Store(object_store::Error::NotFound { source, .. }) => {
            EngineError::LogGap {
                uri: uri.into(),
                detail: format!("checkpoint file {file} disappeared while reading: {source}"),
            }
        }
        CheckpointReadError::Store(e) => EngineError::from_store(uri, file, e),
        e => EngineError::CorruptCheckpoint {
            uri: uri.into(),
            file: file.into(),
            source: Box::new(e),
        },
    }
}
