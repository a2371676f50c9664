//! The live log: follows a table's new commits, from any writer, by reading only the next
//! versions. One full replay to start; then each poll GETs `_delta_log/<v+1>.json` (and the
//! ones after it) until one is not found, applies each commit to the statistics (`tail`), and
//! publishes typed events. The log is never listed again while following: every few polls one
//! GET of `_last_checkpoint` tells of new checkpoints and of a log cleanup that removed commits
//! never read (then, and for whatever the incremental state cannot apply exactly, a full replay,
//! said in the event).

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::delta::log::replay::replay;
use crate::delta::log::state::LogState;
use crate::delta::log::tail::{AppliedCommit, ReloadReason, Tail};
use crate::delta::log::walker::FetchedCommit;
use crate::error::{EngineError, ErrorKind, Result};
use crate::location::Location;
use crate::model::thresholds::Thresholds;
use crate::options::OpenOptions;
use crate::options::ReplayOptions;
use crate::stats::table_report::TableReport;

/// Poll interval for local tables: a GET there costs nothing.
pub const LOCAL_POLL: Duration = Duration::from_secs(1);
/// Poll interval for object stores: one GET per table per 5 s costs little and still shows a
/// streaming writer's commits within seconds.
pub const REMOTE_POLL: Duration = Duration::from_secs(5);

/// The default poll interval for a location.
pub fn default_poll(loc: &Location) -> Duration {
    if loc.is_local() {
        LOCAL_POLL
    } else {
        REMOTE_POLL
    }
}

#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub poll: Duration,
    pub thresholds: Thresholds,
    pub replay: ReplayOptions,
    /// `_last_checkpoint` is read every this many polls.
    pub checkpoint_every: u32,
    /// Commits applied in one poll at most (a backlog is read over several polls, so the
    /// statistics are published in between).
    pub max_commits_per_poll: usize,
    /// Failed polls back off exponentially up to this.
    pub max_backoff: Duration,
}

impl WatchOptions {
    pub fn new(open: &OpenOptions, poll: Duration) -> Self {
        Self {
            poll,
            thresholds: open.thresholds,
            replay: open.replay,
            checkpoint_every: 10,
            max_commits_per_poll: 1000,
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// What the watcher publishes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LogEvent {
    /// The table as a full replay read it: the first event, and after every fallback.
    Reloaded {
        reason: ReloadReason,
        report: Box<TableReport>,
    },
    /// One commit applied, in version order.
    Commit(Box<AppliedCommit>),
    /// The statistics after the commits of one poll (sent after their `Commit` events), or
    /// after a new checkpoint was seen.
    Updated(Box<TableReport>),
    /// A poll failed; the watcher tries again after `retry_in`.
    Error {
        kind: ErrorKind,
        message: String,
        retry_in: Duration,
    },
}

/// A table being followed.
pub struct LogWatcher {
    store: Arc<dyn ObjectStore>,
    uri: String,
    name: String,
    opts: WatchOptions,
    tail: Tail,
    polls: u64,
}

fn commit_path(version: u64) -> String {
    format!("_delta_log/{version:020}.json")
}

impl LogWatcher {
    /// Replays the table once; `Reloaded { Started }` is the caller's first event (`report`).
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        uri: String,
        name: String,
        opts: WatchOptions,
    ) -> Result<Self> {
        let state = replay(&store, &uri, opts.replay, &|_| {}).await?;
        Ok(Self::from_state(store, uri, name, opts, state))
    }

    /// Follows on from a state already replayed (a `table::Table`'s): no second replay.
    pub fn from_state(
        store: Arc<dyn ObjectStore>,
        uri: String,
        name: String,
        opts: WatchOptions,
        state: LogState,
    ) -> Self {
        Self {
            tail: Tail::new(state, opts.replay.history_commits),
            store,
            uri,
            name,
            opts,
            polls: 0,
        }
    }

    pub fn version(&self) -> u64 {
        self.tail.version()
    }

    /// The log's state as followed so far.
    pub fn state(&self) -> &LogState {
        self.tail.state()
    }

    /// The table's store (its folder).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// The statistics of the state followed so far.
    pub fn report(&self) -> TableReport {
        TableReport::from_state(
            crate::model::format::TableFormat::Delta,
            self.uri.clone(),
            self.name.clone(),
            self.tail.state(),
            self.opts.thresholds,
            now_ms(),
        )
    }

    /// Replaces the state by a full replay.
    pub async fn reload(&mut self, reason: ReloadReason) -> Result<LogEvent> {
        let state = replay(&self.store, &self.uri, self.opts.replay, &|_| {}).await?;
        self.tail = Tail::new(state, self.opts.replay.history_commits);
        Ok(LogEvent::Reloaded {
            reason,
            report: Box::new(self.report()),
        })
    }

    /// GETs one commit; None when it does not exist (yet).
    async fn fetch(&self, version: u64) -> Result<Option<(FetchedCommit, u64)>> {
        let path = commit_path(version);
        let r = match self.store.get(&Path::from(path.as_str())).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(EngineError::from_store(&self.uri, &path, e)),
        };
        let size = r.meta.size;
        let modified_ms = Some(r.meta.last_modified.timestamp_millis());
        let bytes = match r.bytes().await {
            Ok(b) => b,
            // Written and removed again between the GET and the read: treated as not there.
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(EngineError::from_store(&self.uri, &path, e)),
        };
        Ok(Some((
            FetchedCommit {
                version,
                path,
                modified_ms,
                bytes,
                head_only: false,
            },
            size,
        )))
    }

    /// `_last_checkpoint`'s version and size, when the file exists and parses.
    async fn last_checkpoint(&self) -> Result<Option<(u64, Option<u64>)>> {
        let path = "_delta_log/_last_checkpoint";
        let r = match self.store.get(&Path::from(path)).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(EngineError::from_store(&self.uri, path, e)),
        };
        let bytes = r
            .bytes()
            .await
            .map_err(|e| EngineError::from_store(&self.uri, path, e))?;
        let v: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
        Ok(v.and_then(|v| {
            let version = v.get("version")?.as_u64()?;
            Some((version, v.get("sizeInBytes").and_then(|s| s.as_u64())))
        }))
    }

    /// One poll: the new commits (each a `Commit` event, then one `Updated`), or a `Reloaded`
    /// when the state had to be replayed. No event when nothing changed.
    pub async fn poll(&mut self) -> Result<Vec<LogEvent>> {
        self.polls += 1;
        let mut events = Vec::new();
        while events.len() < self.opts.max_commits_per_poll {
            let next = self.version() + 1;
            let Some((commit, size)) = self.fetch(next).await? else {
                break;
            };
            match self.tail.apply(&self.uri, commit, size)? {
                Ok(applied) => events.push(LogEvent::Commit(Box::new(applied))),
                Err(reason) => {
                    events.push(self.reload(reason).await?);
                    return Ok(events);
                }
            }
        }
        let mut changed = !events.is_empty();
        if self
            .polls
            .is_multiple_of(u64::from(self.opts.checkpoint_every.max(1)))
        {
            match self.check_checkpoint().await? {
                Checkpointed::Reload(reason) => {
                    events.push(self.reload(reason).await?);
                    return Ok(events);
                }
                Checkpointed::New => changed = true,
                Checkpointed::Same => {}
            }
        }
        if changed {
            events.push(LogEvent::Updated(Box::new(self.report())));
        }
        Ok(events)
    }

    async fn check_checkpoint(&mut self) -> Result<Checkpointed> {
        let Some((cp, size)) = self.last_checkpoint().await? else {
            return Ok(Checkpointed::Same);
        };
        let version = self.version();
        let known = self.tail.state().checkpoint_version;
        if let Some(was) = known.filter(|was| cp < *was) {
            return Ok(Checkpointed::Reload(ReloadReason::CheckpointWentBack {
                was,
                now: cp,
            }));
        }
        if cp > version {
            // A checkpoint beyond what was read: the next commit may have landed meanwhile
            // (read next poll), or log cleanup removed it.
            if self.fetch(version + 1).await?.is_some() {
                return Ok(Checkpointed::Same);
            }
            return Ok(Checkpointed::Reload(ReloadReason::LogCleanup {
                missing: version + 1,
                checkpoint: cp,
            }));
        }
        Ok(if self.tail.note_checkpoint(cp, size) {
            Checkpointed::New
        } else {
            Checkpointed::Same
        })
    }

    /// Follows the table until `cancel`: polls every interval, sends each event on `tx`. A
    /// failed poll sends `Error` and backs off (doubling, up to `max_backoff`). Returns when
    /// cancelled or when nobody listens any more.
    pub async fn run(mut self, tx: mpsc::UnboundedSender<LogEvent>, cancel: CancellationToken) {
        let mut failures = 0u32;
        loop {
            let wait = backoff(self.opts.poll, failures, self.opts.max_backoff);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            let result = tokio::select! {
                _ = cancel.cancelled() => return,
                r = self.poll() => r,
            };
            match result {
                Ok(events) => {
                    failures = 0;
                    for e in events {
                        if tx.send(e).is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let event = LogEvent::Error {
                        kind: e.kind(),
                        message: e.to_string(),
                        retry_in: backoff(self.opts.poll, failures, self.opts.max_backoff),
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

enum Checkpointed {
    Same,
    New,
    Reload(ReloadReason),
}

/// The wait before the next poll after `failures` failed ones in a row.
pub fn backoff(poll: Duration, failures: u32, max: Duration) -> Duration {
    let factor = 1u32 << failures.min(16);
    poll.saturating_mul(factor).min(max.max(poll))
}

/// Opens the table at `loc` and follows it until `cancel`: the first event is `Reloaded {
/// Started }` (or `Error`s, retried with back-off, until the table can be read).
pub async fn follow(
    loc: &Location,
    name: String,
    open: &OpenOptions,
    poll: Duration,
    tx: mpsc::UnboundedSender<LogEvent>,
    cancel: CancellationToken,
) {
    let opts = WatchOptions::new(open, poll);
    let mut failures = 0u32;
    let watcher = loop {
        let attempt = async {
            let store = loc.open_store(&open.storage_options)?;
            LogWatcher::open(store, loc.display(), name.clone(), opts.clone()).await
        };
        let result = tokio::select! {
            _ = cancel.cancelled() => return,
            r = attempt => r,
        };
        match result {
            Ok(w) => break w,
            Err(e) => {
                failures = failures.saturating_add(1);
                let retry_in = backoff(poll, failures, opts.max_backoff);
                let event = LogEvent::Error {
                    kind: e.kind(),
                    message: e.to_string(),
                    retry_in,
                };
                if tx.send(event).is_err() {
                    return;
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(retry_in) => {}
                }
            }
        }
    };
    follow_from(watcher, tx, cancel).await;
}

/// Follows `watcher`'s table until `cancel`: the first event is `Reloaded { Started }`.
pub async fn follow_from(
    watcher: LogWatcher,
    tx: mpsc::UnboundedSender<LogEvent>,
    cancel: CancellationToken,
) {
    let first = LogEvent::Reloaded {
        reason: ReloadReason::Started,
        report: Box::new(watcher.report()),
    };
    if tx.send(first).is_err() {
        return;
    }
    watcher.run(tx, cancel).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let s = Duration::from_secs(1);
        let max = Duration::from_secs(60);
        assert_eq!(backoff(s, 0, max), s);
        assert_eq!(backoff(s, 3, max), Duration::from_secs(8));
        assert_eq!(backoff(s, 40, max), max);
        // A poll slower than the cap is never shortened.
        assert_eq!(
            backoff(Duration::from_secs(90), 2, max),
            Duration::from_secs(90)
        );
    }
}
