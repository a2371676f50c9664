//! Log health: how much a reader must replay (checkpoint lag), log size, commit rate and the
//! operation mix over the recent history window.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::delta::log::state::LogState;
use crate::model::trigger::Trigger;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogHealth {
    pub version: u64,
    pub checkpoint_version: Option<u64>,
    /// Commits a reader replays as JSON on top of the checkpoint.
    pub commits_since_checkpoint: u64,
    pub json_bytes_since_checkpoint: u64,
    pub checkpoint_interval: u64,
    /// More than twice the interval without a checkpoint: every open replays too much JSON.
    pub checkpoint_overdue: bool,
    pub log_bytes: u64,
    pub log_files: u64,
    pub last_commit_ms: Option<i64>,
    /// Commits in the summarised window and the rate they arrived at.
    pub window_commits: usize,
    pub commits_per_minute: Option<f64>,
    pub operations: BTreeMap<String, u64>,
    pub min_reader_version: Option<i32>,
    pub min_writer_version: Option<i32>,
    pub features: Vec<String>,
    /// Over the summarised window: bytes compactions wrote (commits without a data change)
    /// per byte the writers wrote (`write_amplification`).
    pub rewrite: Rewrite,
}

/// Bytes written by compaction beside bytes written by the table's writers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rewrite {
    /// Every commit without a data change, whoever made it.
    pub compaction_bytes: u64,
    /// Of those, lakehealth's janitor's small-file merges (`lakehealth.trigger` = janitor).
    pub janitor_bytes: u64,
    /// Of those, the janitor's re-clustering of whole partitions (`janitor-recluster`),
    /// counted apart: the price of keeping the layout, not of the small files.
    pub recluster_bytes: u64,
    pub writer_bytes: u64,
    /// The janitor's rewrites of what was streamed in: `janitor_bytes / writer_bytes`. Jobs
    /// run by hand and other engines' compactions are left out (`other_bytes`). None when the
    /// writers wrote nothing in the window.
    pub write_amplification: Option<f64>,
    /// The janitor's re-clustering per byte streamed in: `recluster_bytes / writer_bytes`.
    pub recluster_amplification: Option<f64>,
}

impl Rewrite {
    /// From commit summaries: a commit that changes no data (OPTIMIZE, ZORDER, a janitor's)
    /// rewrites; any other adds ingested bytes.
    pub fn of(commits: &[crate::delta::log::state::CommitSummary]) -> Self {
        let (mut compaction, mut janitor, mut recluster, mut writers) = (0u64, 0u64, 0u64, 0u64);
        for c in commits {
            if c.data_change {
                writers = writers.saturating_add(c.bytes_added);
            } else {
                compaction = compaction.saturating_add(c.bytes_added);
                match c.trigger {
                    Some(Trigger::Janitor) => janitor = janitor.saturating_add(c.bytes_added),
                    Some(Trigger::JanitorRecluster) => {
                        recluster = recluster.saturating_add(c.bytes_added)
                    }
                    Some(Trigger::Manual) | None => {}
                }
            }
        }
        Self {
            compaction_bytes: compaction,
            janitor_bytes: janitor,
            recluster_bytes: recluster,
            writer_bytes: writers,
            write_amplification: (writers > 0).then(|| janitor as f64 / writers as f64),
            recluster_amplification: (writers > 0).then(|| recluster as f64 / writers as f64),
        }
    }

    /// Bytes rewritten by compactions other than the janitor's (by hand, other engines).
    pub fn other_bytes(&self) -> u64 {
        self.compaction_bytes
            .saturating_sub(self.janitor_bytes)
            .saturating_sub(self.recluster_bytes)
    }
}

/// Commits per minute between the oldest and newest timestamps of `timestamps`.
pub fn rate_per_minute(timestamps: &[i64]) -> Option<f64> {
    let (min, max) = timestamps
        .iter()
        .fold((i64::MAX, i64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    if timestamps.len() < 2 || max <= min {
        return None;
    }
    let minutes = (max - min) as f64 / 60_000.0;
    // n commits span n-1 intervals
    Some((timestamps.len() - 1) as f64 / minutes)
}

impl LogHealth {
    /// `interval`: the table's `delta.checkpointInterval` (or Delta's default).
    pub fn from_state(s: &LogState, interval: u64) -> Self {
        let since = match s.checkpoint_version {
            Some(c) => s.version - c,
            None => s.version + 1,
        };
        let timestamps: Vec<i64> = s.commits.iter().filter_map(|c| c.timestamp_ms).collect();
        let mut operations = BTreeMap::new();
        for c in &s.commits {
            *operations.entry(c.operation.clone()).or_insert(0) += 1;
        }
        let mut features: Vec<String> = s
            .protocol
            .iter()
            .flat_map(|p| {
                p.reader_features
                    .iter()
                    .flatten()
                    .chain(p.writer_features.iter().flatten())
                    .cloned()
            })
            .collect();
        features.sort();
        features.dedup();
        Self {
            version: s.version,
            checkpoint_version: s.checkpoint_version,
            commits_since_checkpoint: since,
            json_bytes_since_checkpoint: s.json_bytes_since_checkpoint,
            checkpoint_interval: interval,
            checkpoint_overdue: since > 2 * interval,
            log_bytes: s.listing.log_bytes,
            log_files: s.listing.log_objects,
            last_commit_ms: s.commits.first().and_then(|c| c.timestamp_ms),
            window_commits: s.commits.len(),
            commits_per_minute: rate_per_minute(&timestamps),
            operations,
            min_reader_version: s.protocol.as_ref().map(|p| p.min_reader_version),
            min_writer_version: s.protocol.as_ref().map(|p| p.min_writer_version),
            features,
            rewrite: Rewrite::of(&s.commits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_amplification_is_the_janitors_rewrites_per_ingested_byte_and_manual_jobs_stay_apart() {
        let c = |data_change, bytes_added, trigger| crate::delta::log::state::CommitSummary {
            version: 0,
            timestamp_ms: None,
            operation: if data_change { "WRITE" } else { "OPTIMIZE" }.into(),
            files_added: 1,
            files_removed: 0,
            bytes_added,
            bytes_removed: 0,
            data_change,
            query_id: None,
            epoch_id: None,
            engine: None,
            trigger,
        };
        let janitor = Some(Trigger::Janitor);
        let r = Rewrite::of(&[
            c(true, 100, None),
            c(true, 100, None),
            c(false, 300, janitor),
            c(false, 900, Some(Trigger::Manual)),
            c(false, 50, None),
        ]);
        assert_eq!(
            (r.compaction_bytes, r.janitor_bytes, r.writer_bytes),
            (1250, 300, 200)
        );
        assert_eq!(r.write_amplification, Some(1.5), "manual jobs left out");
        assert_eq!(r.other_bytes(), 950);
        let r = Rewrite::of(&[
            c(true, 100, None),
            c(false, 50, janitor),
            c(false, 400, Some(Trigger::JanitorRecluster)),
        ]);
        assert_eq!(
            (r.write_amplification, r.recluster_amplification),
            (Some(0.5), Some(4.0)),
            "re-clustering counted apart from the small-file merges"
        );
        assert_eq!(r.other_bytes(), 0);
        assert_eq!(
            Rewrite::of(&[c(false, 5, janitor)]).write_amplification,
            None
        );
    }

    #[test]
    fn rate_counts_intervals() {
        // 4 commits over 3 minutes: 1 per minute
        assert_eq!(rate_per_minute(&[0, 60_000, 120_000, 180_000]), Some(1.0));
        assert_eq!(rate_per_minute(&[5]), None);
        assert_eq!(rate_per_minute(&[5, 5]), None);
    }
}
