//! Applying new commits forward (oldest first) to a replayed `LogState`, so the statistics follow
//! the log without a full replay. The commit is parsed exactly as the replay parses it
//! (`walker::parse_commit`: same actions, same first-wins rule for a key added and removed by
//! one commit); what differs is only the direction.
//!
//! The replay keeps sizes per partition, not the paths of the checkpoint's files, so a remove of
//! a file added before the watch began is placed by the (partition, size) it records. Whatever
//! cannot be placed exactly is not guessed: `apply` answers with the reason a full replay is
//! needed and leaves the state as it was. That is: a remove without its partition or size of a
//! file not seen added, adds without a data change in a commit that removes nothing (files
//! restated: they may be live already), a (partition, size) no live file has, a file removed twice or added
//! again after a remove (the findings and tombstones need the replay), a change of partition
//! columns or schema, and a protocol change.

use std::collections::HashMap;

use serde::Serialize;

use super::actions::{ActionLine, AddFile, RemoveFile};
use super::file_size::logged_size;
use super::partition_key::{encode_into, resolve_key};
use super::state::{CommitSummary, LogState, TxnState};
use super::walker::{FetchedCommit, ParsedCommit, parse_commit};
use crate::delta::log::actions::physical_names;
use crate::error::Result;
use crate::model::partition::PartitionValues;

/// Why the incremental state was replaced by a full replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum ReloadReason {
    /// The first read of the table.
    Started,
    /// Log cleanup removed commits that were never read: `_last_checkpoint` names
    /// `checkpoint`, but commit `missing` is gone.
    LogCleanup { missing: u64, checkpoint: u64 },
    /// `_last_checkpoint` went back to an older version: the table was replaced.
    CheckpointWentBack { was: u64, now: u64 },
    /// A commit changed the partition columns or the schema.
    MetadataChanged { version: u64, what: String },
    /// A commit changed the protocol (reader/writer versions or features).
    ProtocolChanged { version: u64, what: String },
    /// A commit the incremental state cannot apply exactly (see the module documentation).
    Unplaceable { version: u64, detail: String },
    /// The user (or a caller) asked for it.
    Requested,
}

impl ReloadReason {
    pub fn describe(&self) -> String {
        match self {
            ReloadReason::Started => "first read of the log".into(),
            ReloadReason::LogCleanup {
                missing,
                checkpoint,
            } => format!(
                "log cleanup removed commit {missing} before it was read (checkpoint {checkpoint}); replayed from the checkpoint"
            ),
            ReloadReason::CheckpointWentBack { was, now } => format!(
                "_last_checkpoint went back from version {was} to {now} (the table was replaced); replayed"
            ),
            ReloadReason::MetadataChanged { version, what } => {
                format!("v{version} changed the {what}; replayed")
            }
            ReloadReason::ProtocolChanged { version, what } => {
                format!("v{version} changed the protocol ({what}); replayed")
            }
            ReloadReason::Unplaceable { version, detail } => {
                format!("v{version}: {detail}; replayed")
            }
            ReloadReason::Requested => "reload requested".into(),
        }
    }
}

/// What one commit did to one partition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionDelta {
    pub values: PartitionValues,
    pub files_added: u64,
    pub files_removed: u64,
    pub bytes_added: u64,
    pub bytes_removed: u64,
    /// Sizes of the files added (for arrival rates of small files under any threshold).
    pub added_sizes: Vec<u64>,
    /// An add or remove of this partition changed data (false for a compaction's).
    pub data_change: bool,
}

/// A commit as applied: its history line and what it did to each partition it touched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppliedCommit {
    pub summary: CommitSummary,
    /// Ordered by partition values.
    pub partitions: Vec<PartitionDelta>,
}

/// A file key's state as the commits applied since the replay left it.
#[derive(Debug, Clone)]
enum Known {
    Live { part: String, size: u64 },
    Removed,
}

/// One change to the sizes, decided before anything is changed.
enum Step {
    Drop { part: String, size: u64 },
    Push { part: String, size: u64 },
}

/// Why a commit cannot be placed on the state (the tail reloads instead).
struct Unplaceable(String);

/// A commit's changes, decided before any is applied.
#[derive(Default)]
struct Changes {
    steps: Vec<Step>,
    deltas: HashMap<String, PartitionDelta>,
}

/// Deciding a commit's changes: what is decided so far, the live files of each partition and
/// size it takes, and a buffer for partition keys.
#[derive(Default)]
struct Decision {
    changes: Changes,
    taken: HashMap<(String, u64), usize>,
    buf: String,
}

/// A replayed state and the commits applied on top of it.
pub struct Tail {
    state: LogState,
    known: HashMap<String, Known>,
    history_commits: usize,
    physical: HashMap<String, String>,
}

impl Tail {
    /// `history_commits`: how many commits the state's history keeps (the replay's window).
    pub fn new(state: LogState, history_commits: usize) -> Self {
        let physical = physical_names(&state.metadata.schema_string);
        Self {
            state,
            known: HashMap::new(),
            history_commits,
            physical,
        }
    }

    pub fn state(&self) -> &LogState {
        &self.state
    }

    pub fn version(&self) -> u64 {
        self.state.version
    }

    fn values(&self, raw: &str) -> PartitionValues {
        let cols = &self.state.metadata.partition_columns;
        let v = resolve_key(raw, cols, &self.physical);
        PartitionValues(cols.iter().cloned().zip(v).collect())
    }

    /// Applies commit `state.version + 1`. `Ok(Err(reason))`: only a full replay can apply it
    /// exactly; the state is unchanged. `size` is the commit file's size (log health).
    pub fn apply(
        &mut self,
        uri: &str,
        c: FetchedCommit,
        size: u64,
    ) -> Result<std::result::Result<AppliedCommit, ReloadReason>> {
        let version = c.version;
        let parsed = parse_commit(uri, &c)?;
        if let Some(r) = self.metadata_or_protocol_change(version, &parsed.actions) {
            return Ok(Err(r));
        }
        // Decide every change first: a commit is applied whole or not at all.
        let changes = match self.decide(&parsed) {
            Ok(changes) => changes,
            Err(Unplaceable(detail)) => {
                return Ok(Err(ReloadReason::Unplaceable { version, detail }));
            }
        };
        for s in changes.steps {
            match s {
                Step::Drop { part, size } => {
                    self.state.partitions.remove_one(&part, size);
                }
                Step::Push { part, size } => self.state.partitions.push(&part, size),
            }
        }
        self.remember_files(&parsed);
        self.apply_other_actions(&parsed.actions);
        self.record_commit(&c, size, &parsed.summary);
        let mut partitions: Vec<PartitionDelta> = changes.deltas.into_values().collect();
        partitions.sort_by(|a, b| a.values.cmp(&b.values));
        Ok(Ok(AppliedCommit {
            summary: parsed.summary,
            partitions,
        }))
    }

    /// What the commit changes, partition by partition, or why it cannot be placed.
    fn decide(&self, parsed: &ParsedCommit) -> std::result::Result<Changes, Unplaceable> {
        // Adds without a data change and no remove restate files that may already be live (a
        // writer recomputing statistics): only the replay knows which paths the checkpoint has.
        if parsed.removes().next().is_none()
            && parsed.adds().any(|(a, _)| a.data_change == Some(false))
        {
            return Err(Unplaceable(
                "files added again without a data change (restated)".into(),
            ));
        }
        let mut d = Decision::default();
        for (rm, key) in parsed.removes() {
            self.decide_remove(rm, key, &mut d)?;
        }
        for (add, key) in parsed.adds() {
            self.decide_add(add, key, &mut d)?;
        }
        if let Some(((part, size), _)) = d
            .taken
            .iter()
            .find(|((part, size), n)| self.state.partitions.count(part, *size) < **n)
        {
            let at = self.values(part).label();
            return Err(Unplaceable(format!(
                "{at} holds fewer live files of {size} bytes than removed"
            )));
        }
        Ok(d.changes)
    }

    /// A remove drops one live file of its partition and size.
    fn decide_remove(
        &self,
        rm: &RemoveFile,
        key: &str,
        d: &mut Decision,
    ) -> std::result::Result<(), Unplaceable> {
        let (part, size) = match self.known.get(key) {
            Some(Known::Live { part, size }) => (part.clone(), *size),
            Some(Known::Removed) => {
                return Err(Unplaceable(format!("{} was removed twice", rm.path)));
            }
            None => remove_place(rm, &mut d.buf).ok_or_else(|| {
                Unplaceable(format!(
                    "the remove of {} records no partition or size",
                    rm.path
                ))
            })?,
        };
        let n = d.taken.entry((part.clone(), size)).or_default();
        *n += 1;
        if self.state.partitions.count(&part, size) < *n {
            return Err(Unplaceable(format!(
                "no live file of {size} bytes in the partition of {} to remove",
                rm.path
            )));
        }
        let delta = self.delta(&mut d.changes.deltas, &part);
        delta.files_removed += 1;
        delta.bytes_removed += size;
        delta.data_change |= rm.data_change.unwrap_or(true);
        d.changes.steps.push(Step::Drop { part, size });
        Ok(())
    }

    /// An add pushes a file; the newest add of a live key replaces it.
    fn decide_add(
        &self,
        add: &AddFile,
        key: &str,
        d: &mut Decision,
    ) -> std::result::Result<(), Unplaceable> {
        match self.known.get(key) {
            Some(Known::Removed) => {
                return Err(Unplaceable(format!(
                    "{} was added again after a remove",
                    add.path
                )));
            }
            Some(Known::Live { part, size }) => {
                *d.taken.entry((part.clone(), *size)).or_default() += 1;
                d.changes.steps.push(Step::Drop {
                    part: part.clone(),
                    size: *size,
                });
            }
            None => {}
        }
        let (part, size) = add_place(add, &mut d.buf);
        let delta = self.delta(&mut d.changes.deltas, &part);
        delta.files_added += 1;
        delta.bytes_added += size;
        delta.added_sizes.push(size);
        delta.data_change |= add.data_change.unwrap_or(true);
        d.changes.steps.push(Step::Push { part, size });
        Ok(())
    }

    /// The commit's files, by key: removed ones become tombstones, added ones are live.
    fn remember_files(&mut self, parsed: &ParsedCommit) {
        let mut buf = String::new();
        for (rm, key) in parsed.removes() {
            self.known.insert(key.clone(), Known::Removed);
            self.state.tombstones.push(rm.deletion_timestamp, rm.size);
        }
        for (add, key) in parsed.adds() {
            let (part, size) = add_place(add, &mut buf);
            self.known.insert(key.clone(), Known::Live { part, size });
        }
    }

    /// Metadata (only its configuration can differ here, checked before) and transactions.
    fn apply_other_actions(&mut self, actions: &[ActionLine]) {
        for a in actions {
            if let Some(md) = &a.meta_data {
                self.state.metadata = md.clone();
            }
            if let Some(t) = &a.txn {
                self.state.txns.insert(
                    t.app_id.clone(),
                    TxnState {
                        version: t.version,
                        last_updated: t.last_updated,
                    },
                );
            }
        }
    }

    /// The commit's file in the log listing, and its line in the history.
    fn record_commit(&mut self, c: &FetchedCommit, size: u64, summary: &CommitSummary) {
        let s = &mut self.state;
        s.version = c.version;
        s.listing.add(
            &c.path,
            size,
            c.modified_ms
                .and_then(chrono::DateTime::<chrono::Utc>::from_timestamp_millis),
        );
        s.json_bytes_since_checkpoint += size;
        s.commits.insert(0, summary.clone());
        s.commits.truncate(self.history_commits);
    }

    fn delta<'d>(
        &self,
        deltas: &'d mut HashMap<String, PartitionDelta>,
        part: &str,
    ) -> &'d mut PartitionDelta {
        deltas
            .entry(part.to_string())
            .or_insert_with(|| PartitionDelta {
                values: self.values(part),
                files_added: 0,
                files_removed: 0,
                bytes_added: 0,
                bytes_removed: 0,
                added_sizes: Vec::new(),
                data_change: false,
            })
    }

    fn metadata_or_protocol_change(
        &self,
        version: u64,
        actions: &[super::actions::ActionLine],
    ) -> Option<ReloadReason> {
        for a in actions {
            if let Some(md) = &a.meta_data {
                let old = &self.state.metadata;
                let what = if md.partition_columns != old.partition_columns {
                    Some(format!(
                        "partition columns from [{}] to [{}]",
                        old.partition_columns.join(", "),
                        md.partition_columns.join(", ")
                    ))
                } else if md.schema_string != old.schema_string {
                    Some("schema".to_string())
                } else {
                    None
                };
                if let Some(what) = what {
                    return Some(ReloadReason::MetadataChanged { version, what });
                }
            }
            if let Some(p) = &a.protocol {
                let old = self.state.protocol.as_ref();
                let same = old.is_some_and(|o| {
                    o.min_reader_version == p.min_reader_version
                        && o.min_writer_version == p.min_writer_version
                        && o.reader_features == p.reader_features
                        && o.writer_features == p.writer_features
                });
                if !same {
                    let from = old.map_or("none".to_string(), |o| {
                        format!(
                            "reader {} writer {}",
                            o.min_reader_version, o.min_writer_version
                        )
                    });
                    return Some(ReloadReason::ProtocolChanged {
                        version,
                        what: format!(
                            "{from} -> reader {} writer {}",
                            p.min_reader_version, p.min_writer_version
                        ),
                    });
                }
            }
        }
        None
    }

    /// A checkpoint of `version` was written (read from `_last_checkpoint`): readers now start
    /// there. `size` is its size when `_last_checkpoint` records it.
    pub fn note_checkpoint(&mut self, version: u64, size: Option<u64>) -> bool {
        let s = &mut self.state;
        if version > s.version || s.checkpoint_version.is_some_and(|c| c >= version) {
            return false;
        }
        s.checkpoint_version = Some(version);
        s.json_bytes_since_checkpoint = s
            .listing
            .commits
            .range(version + 1..)
            .map(|(_, (_, size, _))| *size)
            .sum();
        if let Some(b) = size {
            s.listing.log_bytes += b;
            s.listing.log_objects += 1;
        }
        true
    }
}

fn add_place(add: &AddFile, buf: &mut String) -> (String, u64) {
    encode_into(
        buf,
        add.partition_values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref())),
    );
    (buf.clone(), logged_size(add.size))
}

fn remove_place(rm: &RemoveFile, buf: &mut String) -> Option<(String, u64)> {
    let pv = rm.partition_values.as_ref()?;
    let size = logged_size(rm.size.filter(|s| *s >= 0)?);
    encode_into(buf, pv.iter().map(|(k, v)| (k.as_str(), v.as_deref())));
    Some((buf.clone(), size))
}
