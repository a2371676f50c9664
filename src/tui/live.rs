//! The live log of the open table as the app keeps it: whether it is followed, the watcher's
//! status, the commits that arrived while following, and the arrival rates the forecasts use.
//! The watcher itself is engine code (`engine::delta::watch`); `App::update` feeds its events here.

use std::time::Duration;

use crate::engine::delta::log::tail::ReloadReason;
use crate::engine::delta::watch::LogEvent;
use crate::engine::delta::watch::{LOCAL_POLL, default_poll};
use crate::engine::janitor::forecast::{Arrivals, Forecast, RATE_WINDOW, forecast};
use crate::engine::janitor::policy::Policy;
use crate::engine::location::Location;
use crate::engine::stats::table_report::{PartitionReport, TableReport};

/// Whether the open table follows its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// The table is read when opened and on `r` only.
    Off,
    /// Followed; `poll` None: the engine's default for the location (1 s local, 5 s remote).
    On { poll: Option<Duration> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum LiveStatus {
    /// The first replay runs.
    Starting,
    Following {
        version: u64,
    },
    /// The last poll failed; the watcher retries.
    Failing {
        message: String,
        retry_in: Duration,
    },
}

/// One watcher of the open table.
#[derive(Debug)]
pub struct Live {
    /// The id of the `Effect::Watch` that started it: events of another are stale.
    pub id: u64,
    pub uri: String,
    pub poll: Duration,
    pub status: LiveStatus,
    /// The first version applied live (commits from it on are marked in the feed).
    pub live_from: Option<u64>,
    /// Commits applied since following began.
    pub commits_seen: u64,
    /// The newest compaction (a commit that removed files and changed no data) seen live: a
    /// job's commit shows here whoever made it, however busy the writers keep the feed.
    pub last_compaction: Option<CompactionSeen>,
    /// Why the state was last replayed in full, after the start.
    pub last_reload: Option<ReloadReason>,
    pub arrivals: Arrivals,
    /// The policy forecasts are made with (the janitor's default unless one is configured).
    pub policy: Policy,
}

/// A compaction commit the live log saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSeen {
    pub version: u64,
    pub files_removed: u64,
    pub files_added: u64,
}

/// The poll interval for `uri`: `poll` when given, else the default for its location.
pub fn resolve_poll(uri: &str, poll: Option<Duration>) -> Duration {
    poll.unwrap_or_else(|| Location::parse(uri).map_or(LOCAL_POLL, |l| default_poll(&l)))
}

/// What an event means for the table shown.
pub enum Shown {
    /// Show this report (the same table, newer).
    Table(Box<TableReport>),
    Nothing,
}

impl Live {
    pub fn new(id: u64, uri: String, poll: Duration, policy: Policy, now_ms: i64) -> Self {
        Self {
            id,
            uri,
            poll,
            status: LiveStatus::Starting,
            live_from: None,
            commits_seen: 0,
            last_compaction: None,
            last_reload: None,
            arrivals: Arrivals::new(now_ms, RATE_WINDOW),
            policy,
        }
    }

    /// Takes one event of this watcher in.
    pub fn apply(&mut self, event: LogEvent, now_ms: i64) -> Shown {
        match event {
            LogEvent::Reloaded { reason, report } => {
                self.status = LiveStatus::Following {
                    version: report.version,
                };
                if reason == ReloadReason::Started {
                    self.live_from = Some(report.version + 1);
                    self.arrivals
                        .seed_commit_times(report.commits.iter().filter_map(|c| c.timestamp_ms));
                } else {
                    self.last_reload = Some(reason);
                }
                Shown::Table(report)
            }
            LogEvent::Commit(c) => {
                self.commits_seen += 1;
                let s = &c.summary;
                if !s.data_change && s.files_removed > 0 {
                    self.last_compaction = Some(CompactionSeen {
                        version: s.version,
                        files_removed: s.files_removed,
                        files_added: s.files_added,
                    });
                }
                self.arrivals
                    .record(&c, self.policy.small_file_size, now_ms);
                Shown::Nothing
            }
            LogEvent::Updated(report) => {
                self.status = LiveStatus::Following {
                    version: report.version,
                };
                Shown::Table(report)
            }
            LogEvent::Error {
                message, retry_in, ..
            } => {
                self.status = LiveStatus::Failing { message, retry_in };
                Shown::Nothing
            }
        }
    }

    /// The forecast of a partition. The report counts small files by its own threshold, so
    /// there is one only when that is the policy's (the default policy's always is).
    pub fn forecast(&self, t: &TableReport, p: &PartitionReport, now_ms: i64) -> Option<Forecast> {
        if t.thresholds.small_file_size != self.policy.small_file_size {
            return None;
        }
        let rate = self.arrivals.small_files_per_hour(&p.values, now_ms);
        Some(forecast(
            &self.policy,
            &p.values,
            p.stats.files,
            p.stats.small_files,
            rate,
            now_ms,
        ))
    }
}
