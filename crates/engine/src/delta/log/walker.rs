//! Applying JSON commits, newest first: the newest action on a file key decides whether it is
//! live, the oldest one tells what the checkpoint must have held for it, and removes are
//! followed across commits to find files removed twice.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

use super::actions::{ActionLine, AddFile, MetaData, Protocol, RemoveFile, file_key};
use super::file_size::{ImplausibleSizes, logged_size};
use super::partition_key::{FastMap, PartitionSizes, encode_into};
use super::state::{CommitOrigin, CommitSummary, RepeatedRemove, Tombstones, TxnState};
use crate::error::{EngineError, Result};
use crate::model::trigger::Trigger;

/// The oldest action on a file key among the JSON commits after the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Oldest {
    /// Canonical partition key and size: the checkpoint should not hold the key.
    Add { part: String, size: u64 },
    /// The checkpoint should hold the key as a live file; partition and size when recorded.
    Remove {
        part: Option<String>,
        size: Option<u64>,
    },
}

/// One commit file as fetched.
pub struct FetchedCommit {
    pub version: u64,
    pub path: String,
    pub modified_ms: Option<i64>,
    pub bytes: Bytes,
    /// Only the head was read (a big commit before the checkpoint, for the history panel).
    pub head_only: bool,
}

/// Consecutive removes of one key, newest first, with no add between them.
#[derive(Debug)]
struct Run {
    versions: Vec<u64>,
    size: Option<u64>,
}

pub struct Walker {
    /// Commits from this version on come after the checkpoint and decide the live files.
    first_live: u64,
    history_commits: usize,
    /// Every key touched after the checkpoint, with its oldest action there.
    pub files: FastMap<String, Oldest>,
    /// Live files added after the checkpoint.
    pub partitions: PartitionSizes,
    pub tombstones: Tombstones,
    pub txns: HashMap<String, TxnState>,
    pub metadata: Option<MetaData>,
    pub protocol: Option<Protocol>,
    /// Newest first.
    pub commits: Vec<CommitSummary>,
    runs: HashMap<String, Run>,
    repeated: Vec<RepeatedRemove>,
    origins: HashMap<u64, CommitOrigin>,
    /// The version the next commit must have to keep the fully read range unbroken.
    expect: Option<u64>,
    fully_read_from: Option<u64>,
    buf: String,
    /// Adds whose size no file can have (counted clamped).
    pub implausible: ImplausibleSizes,
}

impl Walker {
    /// `latest` is the table version: commits arrive from it downwards.
    pub fn new(first_live: u64, latest: u64, history_commits: usize) -> Self {
        Self {
            first_live,
            history_commits,
            files: FastMap::default(),
            partitions: PartitionSizes::default(),
            tombstones: Tombstones::default(),
            txns: HashMap::new(),
            metadata: None,
            protocol: None,
            commits: Vec::new(),
            runs: HashMap::new(),
            repeated: Vec::new(),
            origins: HashMap::new(),
            expect: Some(latest),
            fully_read_from: None,
            buf: String::new(),
            implausible: ImplausibleSizes::default(),
        }
    }

    /// Applies one commit; commits must come newest first.
    pub fn apply_commit(&mut self, uri: &str, c: FetchedCommit) -> Result<()> {
        let parsed = parse_commit(uri, &c)?;
        let live = c.version >= self.first_live;
        let (actions, summary) = (&parsed.actions, parsed.summary.clone());
        let adds: Vec<(&AddFile, &String)> = parsed.adds().collect();
        let removes: Vec<(&RemoveFile, &String)> = parsed.removes().collect();
        if live {
            for (add, key) in &adds {
                self.apply_add(add, key);
            }
            for (rm, key) in &removes {
                self.apply_remove(rm, key);
            }
            self.apply_other(actions);
        }
        if c.head_only {
            self.expect = None;
        } else {
            for (_, key) in &adds {
                self.run_add(key);
            }
            for (rm, key) in &removes {
                self.run_remove(key, c.version, rm.size);
            }
            self.origins.insert(
                c.version,
                CommitOrigin {
                    operation: summary.operation.clone(),
                    engine: summary.engine.clone(),
                    files_added: adds.len() as u64,
                },
            );
            if self.expect == Some(c.version) {
                self.fully_read_from = Some(c.version);
                self.expect = c.version.checked_sub(1);
            } else {
                self.expect = None;
            }
        }
        if self.commits.len() < self.history_commits {
            self.commits.push(summary);
        }
        Ok(())
    }

    fn apply_add(&mut self, add: &AddFile, key: &str) {
        encode_into(
            &mut self.buf,
            add.partition_values
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref())),
        );
        let size = logged_size(add.size);
        self.implausible.note(&add.path, add.size);
        if !self.files.contains_key(key) {
            // The newest action on the key: it is live.
            self.partitions.push(&self.buf, size);
        }
        self.files.insert(
            key.to_string(),
            Oldest::Add {
                part: self.buf.clone(),
                size,
            },
        );
    }

    fn apply_remove(&mut self, rm: &RemoveFile, key: &str) {
        if !self.files.contains_key(key) {
            self.tombstones.push(rm.deletion_timestamp, rm.size);
        }
        let part = rm.partition_values.as_ref().map(|pv| {
            encode_into(
                &mut self.buf,
                pv.iter().map(|(k, v)| (k.as_str(), v.as_deref())),
            );
            self.buf.clone()
        });
        self.files.insert(
            key.to_string(),
            Oldest::Remove {
                part,
                size: rm.size.filter(|s| *s >= 0).map(logged_size),
            },
        );
    }

    /// Metadata, protocol and streaming transactions: the newest of each wins.
    fn apply_other(&mut self, actions: &[ActionLine]) {
        for a in actions {
            if let (None, Some(md)) = (&self.metadata, &a.meta_data) {
                self.metadata = Some(md.clone());
            }
            if let (None, Some(p)) = (&self.protocol, &a.protocol) {
                self.protocol = Some(p.clone());
            }
            if let Some(t) = &a.txn {
                self.txns.entry(t.app_id.clone()).or_insert(TxnState {
                    version: t.version,
                    last_updated: t.last_updated,
                });
            }
        }
    }

    /// An add ends the run of removes newer than it.
    fn run_add(&mut self, key: &str) {
        if let Some(run) = self.runs.remove(key) {
            self.close_run(run, None);
        }
    }

    fn run_remove(&mut self, key: &str, version: u64, size: Option<i64>) {
        let size = size.filter(|s| *s >= 0).map(|s| s as u64);
        match self.runs.get_mut(key) {
            Some(run) => {
                if run.versions.last() != Some(&version) {
                    run.versions.push(version);
                }
                run.size = run.size.or(size);
            }
            None => {
                self.runs.insert(
                    key.to_string(),
                    Run {
                        versions: vec![version],
                        size,
                    },
                );
            }
        }
    }

    fn close_run(&mut self, mut run: Run, removed_by_checkpoint: Option<u64>) {
        if run.versions.len() + usize::from(removed_by_checkpoint.is_some()) >= 2 {
            run.versions.reverse();
            self.repeated.push(RepeatedRemove {
                versions: run.versions,
                removed_by_checkpoint,
                size: run.size,
            });
        }
    }

    /// Closes the remaining runs. `tombstoned` are keys the checkpoint of `checkpoint_version`
    /// listed as removed although a commit after it removed them (again).
    pub fn finish_runs(
        &mut self,
        tombstoned: &HashSet<String>,
        checkpoint_version: Option<u64>,
    ) -> (
        Vec<RepeatedRemove>,
        BTreeMap<u64, CommitOrigin>,
        Option<u64>,
    ) {
        let runs: Vec<(String, Run)> = self.runs.drain().collect();
        for (key, run) in runs {
            // Only when the oldest remove read is after the checkpoint: one at or before it is
            // the remove the checkpoint's tombstone records.
            let earlier = checkpoint_version.filter(|cp| {
                tombstoned.contains(&key) && run.versions.last().is_some_and(|v| v > cp)
            });
            self.close_run(run, earlier);
        }
        let mut repeated = std::mem::take(&mut self.repeated);
        repeated.sort_by(|a, b| a.versions.cmp(&b.versions));
        let origins: BTreeMap<u64, CommitOrigin> = repeated
            .iter()
            .flat_map(|r| r.versions.iter())
            .filter_map(|v| self.origins.get(v).map(|o| (*v, o.clone())))
            .collect();
        (repeated, origins, self.fully_read_from)
    }
}

/// One commit's actions, read as every reader of this crate reads them: the protocol gives a
/// commit's actions no order, so a key both added and removed by one commit is ambiguous; it is
/// read as delta-rs reads it, the first of the two wins. The replay (newest first) and the live
/// watcher (oldest first) both apply exactly these adds and removes.
pub struct ParsedCommit {
    pub actions: Vec<ActionLine>,
    /// (index into `actions`, file key) of the adds and removes that decide their key.
    adds: Vec<(usize, String)>,
    removes: Vec<(usize, String)>,
    pub summary: CommitSummary,
}

impl ParsedCommit {
    pub fn adds(&self) -> impl Iterator<Item = (&AddFile, &String)> {
        self.adds
            .iter()
            .filter_map(|(i, k)| Some((self.actions[*i].add.as_ref()?, k)))
    }

    pub fn removes(&self) -> impl Iterator<Item = (&RemoveFile, &String)> {
        self.removes
            .iter()
            .filter_map(|(i, k)| Some((self.actions[*i].remove.as_ref()?, k)))
    }
}

/// Parses a fetched commit file into its deciding adds and removes and its history line.
pub fn parse_commit(uri: &str, c: &FetchedCommit) -> Result<ParsedCommit> {
    let actions = parse_actions(uri, c)?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut adds = Vec::new();
    let mut removes = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        if let Some(add) = &a.add {
            let key = file_key(&add.path, add.deletion_vector.as_ref());
            if seen.insert(key.clone()) {
                adds.push((i, key));
            }
        }
        if let Some(rm) = &a.remove {
            let key = file_key(&rm.path, rm.deletion_vector.as_ref());
            if seen.insert(key.clone()) {
                removes.push((i, key));
            }
        }
    }
    let summary = summarize(c, &actions);
    Ok(ParsedCommit {
        actions,
        adds,
        removes,
        summary,
    })
}

fn parse_actions(uri: &str, c: &FetchedCommit) -> Result<Vec<ActionLine>> {
    let mut lines: Vec<&[u8]> = c.bytes.split(|&b| b == b'\n').collect();
    if c.head_only {
        lines.pop(); // the last line was cut by the range read
    }
    let mut out = Vec::with_capacity(lines.len());
    for (n, line) in lines.into_iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let a: ActionLine =
            serde_json::from_slice(line).map_err(|e| EngineError::CorruptCommit {
                uri: uri.into(),
                file: c.path.clone(),
                line: n + 1,
                detail: e.to_string(),
            })?;
        out.push(a);
    }
    Ok(out)
}

/// The history panel's line for a commit.
fn summarize(c: &FetchedCommit, actions: &[ActionLine]) -> CommitSummary {
    let mut s = CommitSummary {
        version: c.version,
        timestamp_ms: c.modified_ms,
        operation: String::from("UNKNOWN"),
        files_added: 0,
        files_removed: 0,
        bytes_added: 0,
        bytes_removed: 0,
        data_change: false,
        query_id: None,
        epoch_id: None,
        engine: None,
        trigger: None,
    };
    let mut info = None;
    for a in actions {
        if let Some(add) = &a.add {
            s.files_added += 1;
            s.bytes_added = s.bytes_added.saturating_add(logged_size(add.size));
            s.data_change |= add.data_change.unwrap_or(true);
        }
        if let Some(rm) = &a.remove {
            s.files_removed += 1;
            s.bytes_removed = s
                .bytes_removed
                .saturating_add(logged_size(rm.size.unwrap_or(0)));
            s.data_change |= rm.data_change.unwrap_or(true);
        }
        if let Some(ci) = &a.commit_info {
            s.operation = ci.operation.clone().unwrap_or_else(|| "UNKNOWN".into());
            if let Some(ts) = ci.timestamp {
                s.timestamp_ms = Some(ts);
            }
            s.query_id = ci.param("queryId");
            s.epoch_id = ci.param("epochId").and_then(|v| v.parse().ok());
            s.engine = ci.engine();
            s.trigger = ci.lakehealth_trigger.as_deref().and_then(Trigger::parse);
            info = Some(ci);
        }
    }
    if c.head_only
        && let Some(ci) = info
    {
        // Counts of a commit read by its head come from its operationMetrics.
        let m = |keys: &[&str]| keys.iter().find_map(|k| ci.metric(k));
        s.files_added = m(&["numAddedFiles", "numFiles"]).unwrap_or(s.files_added);
        s.files_removed = m(&["numRemovedFiles"]).unwrap_or(s.files_removed);
        s.bytes_added = m(&["numAddedBytes", "numOutputBytes"]).unwrap_or(s.bytes_added);
        s.bytes_removed = m(&["numRemovedBytes"]).unwrap_or(s.bytes_removed);
        s.data_change = ci.operation.as_deref() != Some("OPTIMIZE");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(version: u64, lines: &[serde_json::Value]) -> FetchedCommit {
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        FetchedCommit {
            version,
            path: format!("_delta_log/{version:020}.json"),
            modified_ms: None,
            bytes: Bytes::from(text.join("\n")),
            head_only: false,
        }
    }

    fn add(path: &str, size: u64) -> serde_json::Value {
        serde_json::json!({"add": {"path": path, "partitionValues": {"d": "1"}, "size": size,
            "modificationTime": 0, "dataChange": true}})
    }

    fn remove(path: &str, size: u64) -> serde_json::Value {
        serde_json::json!({"remove": {"path": path, "partitionValues": {"d": "1"}, "size": size,
            "deletionTimestamp": 5, "dataChange": false}})
    }

    fn info(op: &str) -> serde_json::Value {
        serde_json::json!({"commitInfo": {"operation": op, "clientVersion": "delta-rs.1.6.6"}})
    }

    /// Applies `commits` (oldest first, as written) newest first.
    fn walk(first_live: u64, commits: Vec<FetchedCommit>) -> Walker {
        let latest = commits.last().map_or(0, |c| c.version);
        let mut w = Walker::new(first_live, latest, 100);
        for c in commits.into_iter().rev() {
            w.apply_commit("t", c).unwrap();
        }
        w
    }

    #[test]
    fn remove_then_add_of_one_path_is_live_once() {
        let w = walk(
            0,
            vec![
                commit(0, &[add("a", 10)]),
                commit(1, &[remove("a", 10)]),
                commit(2, &[add("a", 10)]),
            ],
        );
        assert_eq!(w.partitions.files(), 1);
        assert!(w.tombstones.entries.is_empty());
    }

    #[test]
    fn add_and_remove_of_one_key_in_one_commit_are_decided_by_the_first() {
        let w = walk(
            0,
            vec![
                commit(0, &[add("a", 10), add("b", 10)]),
                commit(1, &[add("a", 10), remove("a", 10)]),
                commit(2, &[remove("b", 10), add("b", 10)]),
            ],
        );
        assert_eq!(w.partitions.files(), 1);
        assert_eq!(w.tombstones.entries.len(), 1);
    }

    #[test]
    fn oldest_action_tells_what_the_checkpoint_held() {
        // Commits 5 and 6 follow a checkpoint at 4.
        let w = walk(
            5,
            vec![
                commit(5, &[remove("old", 7), add("new", 8)]),
                commit(6, &[remove("new", 8)]),
            ],
        );
        assert_eq!(
            w.files.get("old"),
            Some(&Oldest::Remove {
                part: Some("d\u{1e}=1\u{1f}".into()),
                size: Some(7)
            })
        );
        assert!(matches!(
            w.files.get("new"),
            Some(Oldest::Add { size: 8, .. })
        ));
        assert_eq!(w.partitions.files(), 0);
        assert_eq!(w.tombstones.entries.len(), 2);
    }

    #[test]
    fn two_commits_removing_one_file_are_a_repeated_remove() {
        let mut w = walk(
            0,
            vec![
                commit(0, &[add("a", 10), add("b", 20), add("c", 5)]),
                commit(
                    1,
                    &[
                        info("OPTIMIZE"),
                        remove("a", 10),
                        remove("b", 20),
                        add("x", 30),
                    ],
                ),
                commit(
                    2,
                    &[
                        info("OPTIMIZE"),
                        remove("a", 10),
                        remove("b", 20),
                        add("y", 30),
                    ],
                ),
                // Removed, re-added, removed: not a duplicate.
                commit(3, &[remove("c", 5)]),
                commit(4, &[add("c", 5)]),
                commit(5, &[info("DELETE"), remove("c", 5)]),
            ],
        );
        let (rep, origins, from) = w.finish_runs(&HashSet::new(), None);
        assert_eq!(rep.len(), 2);
        assert!(rep.iter().all(|r| r.versions == vec![1, 2]));
        assert_eq!(from, Some(0));
        assert_eq!(origins.len(), 2);
        assert_eq!(origins[&2].operation, "OPTIMIZE");
        assert_eq!(origins[&2].engine.as_deref(), Some("delta-rs.1.6.6"));
    }

    #[test]
    fn a_remove_after_the_checkpoint_of_a_tombstoned_file_is_repeated() {
        let mut w = walk(
            3,
            vec![commit(3, &[remove("a", 10)]), commit(4, &[remove("b", 10)])],
        );
        let tomb = HashSet::from(["a".to_string()]);
        let (rep, _, from) = w.finish_runs(&tomb, Some(2));
        assert_eq!(from, Some(3));
        assert_eq!(
            rep,
            vec![RepeatedRemove {
                versions: vec![3],
                removed_by_checkpoint: Some(2),
                size: Some(10)
            }]
        );
    }

    #[test]
    fn a_head_only_commit_ends_the_fully_read_range() {
        let latest = 3;
        let mut w = Walker::new(3, latest, 100);
        let mut c2 = commit(2, &[info("WRITE")]);
        c2.head_only = true;
        w.apply_commit("t", commit(3, &[add("a", 1)])).unwrap();
        w.apply_commit("t", c2).unwrap();
        w.apply_commit("t", commit(1, &[add("b", 1)])).unwrap();
        let (_, _, from) = w.finish_runs(&HashSet::new(), None);
        assert_eq!(from, Some(3));
    }
}
