//! Typed progress of a compaction job, sent by the engine over a channel. The TUI jobs panel
//! and `lakehealth compact`'s stderr output are both driven by these.

use serde::{Deserialize, Serialize};

use super::fingerprint::Fingerprint;
use crate::delta::commit::Conflict;
use crate::model::partition::PartitionValues;

/// Cumulative counters of a running job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Progress {
    /// Measured by the counting object store.
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub files_read: u64,
    pub rows: u64,
    pub bins_done: u64,
    pub bins_total: u64,
    pub files_total: u64,
    pub bytes_total: u64,
    /// A finished bin waits this long more for its commit (`spacing`: a writer is active).
    pub commit_wait_ms: u64,
    /// The read pace now (`cadence`); None: unbounded.
    pub pace_bytes_per_second: Option<u64>,
}

/// Bytes read per input byte: each input is read once and its outputs (about as large) once
/// more for the content proof.
const READ_PER_INPUT_BYTE: f64 = 2.0;

impl Progress {
    /// Share of the work done, 0.0–1.0, by input files read (each counted once; bytes would
    /// count footers and the proof's read-back too).
    pub fn ratio(&self) -> f64 {
        if self.files_total == 0 {
            return 0.0;
        }
        (self.files_read as f64 / self.files_total as f64).clamp(0.0, 1.0)
    }

    /// Time left after `elapsed`: at the current pace when the job is paced, else at the speed
    /// so far. None before anything was read (no speed to go by) when unpaced.
    pub fn eta(&self, elapsed: std::time::Duration) -> Option<std::time::Duration> {
        let r = self.ratio();
        if r >= 1.0 {
            return Some(std::time::Duration::ZERO);
        }
        if let Some(pace) = self.pace_bytes_per_second {
            let left = self.bytes_total as f64 * (1.0 - r) * READ_PER_INPUT_BYTE;
            // Not `from_secs_f64`: it panics past u64::MAX seconds.
            return std::time::Duration::try_from_secs_f64(left / pace.max(1) as f64).ok();
        }
        (r > 0.0).then(|| elapsed.mul_f64((1.0 - r) / r))
    }

    /// "  next commit in 12 s (…)" while a finished bin waits for its turn; else empty.
    pub fn commit_wait_text(&self) -> String {
        if self.commit_wait_ms == 0 {
            return String::new();
        }
        format!(
            "  next commit in {} s (a writer is active: commits spaced)",
            self.commit_wait_ms.div_ceil(1000)
        )
    }
}

/// One commit that landed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitRecord {
    pub version: u64,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
    /// Rows the removed files' deletion vectors marked deleted (absent from the outputs).
    pub deleted_rows: u64,
    pub retries: u64,
    pub partitions: Vec<PartitionValues>,
    /// Bins in the commit: more than one when bins finished while the commit spacing held the
    /// first back (one commit slot spent on all of them).
    pub bins: u64,
    /// Each bin's content fingerprint (equal in its inputs and outputs), in commit order.
    pub fingerprints: Vec<Fingerprint>,
    /// What the commit did in each of its partitions (a commit may hold several partitions'
    /// bins: one commit slot spent on everything ready).
    pub by_partition: Vec<PartitionTally>,
}

/// One partition's share of a commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionTally {
    pub partition: PartitionValues,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
}

/// A bin that did not commit because another commit took its files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictRecord {
    pub partition: PartitionValues,
    #[serde(flatten)]
    pub conflict: Conflict,
    /// Bins planned again for the partition from the newer snapshot (0: nothing left to do).
    pub replanned_bins: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JobEvent {
    Started {
        bins: u64,
        files: u64,
        bytes: u64,
    },
    /// A queued job waited for its partitions and planned again before starting.
    Replanned {
        bins: u64,
        files: u64,
        bytes: u64,
    },
    Progress(Progress),
    BinFinished {
        partition: PartitionValues,
        files_in: u64,
        files_out: u64,
        bytes_in: u64,
        bytes_out: u64,
        rows: u64,
    },
    Committed(CommitRecord),
    /// The read pace changed, following the writer's cadence (`cadence`).
    Pace(super::cadence::PaceNote),
    /// Another commit took files of a bin: it did not commit, its outputs were deleted.
    Conflict(ConflictRecord),
    /// A commit certainly did not land; its output files were never referenced.
    CommitFailed {
        partitions: Vec<PartitionValues>,
        error: String,
        orphaned_files: Vec<String>,
    },
    /// A commit attempt failed in a way that may have landed and the log could not tell: its
    /// outputs are kept (deleting them could break a landed commit) and listed here.
    CommitUnknown {
        partitions: Vec<PartitionValues>,
        error: String,
        kept_files: Vec<String>,
    },
    /// A bin did not produce outputs that may commit; `error` serialises as `kind` + `error`.
    BinFailed {
        partition: PartitionValues,
        #[serde(flatten)]
        error: Failure,
    },
    Cancelled {
        orphaned_files: Vec<String>,
    },
    Finished(JobSummary),
}

/// What kind of failure a bin, a commit or the job had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The job or bin could not start (table schema, partition values, writer, runtime).
    Setup,
    /// An input file could not be read.
    Read,
    /// An input could not be conformed to the table schema without changing a value.
    Conform,
    /// Writing an output failed.
    Write,
    /// The outputs did not prove to hold exactly the inputs' rows.
    Verify,
    /// The bin's task panicked.
    Panicked,
    Cancelled,
    /// The commit certainly did not land.
    Commit,
    /// The commit may have landed; its outputs are kept.
    CommitUnknown,
}

impl FailureKind {
    /// The name `--json` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Setup => "setup",
            FailureKind::Read => "read",
            FailureKind::Conform => "conform",
            FailureKind::Write => "write",
            FailureKind::Verify => "verify",
            FailureKind::Panicked => "panicked",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Commit => "commit",
            FailureKind::CommitUnknown => "commit_unknown",
        }
    }
}

/// A failure's kind and message. Displays as the message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub kind: FailureKind,
    #[serde(rename = "error")]
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A failure in the summary, with the partitions it concerns (none for the job as a whole).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureRecord {
    pub partitions: Vec<PartitionValues>,
    #[serde(flatten)]
    pub failure: Failure,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobSummary {
    pub table_version_read: u64,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
    /// Rows deletion vectors marked deleted in the files removed: purged from storage.
    pub deleted_rows: u64,
    pub commits: Vec<CommitRecord>,
    pub cancelled: bool,
    /// One line per failure (`failures` has them typed).
    pub errors: Vec<String>,
    pub failures: Vec<FailureRecord>,
    /// Bins refused because another commit took their files.
    pub conflicts: Vec<ConflictRecord>,
    /// Files written but never committed (deleted when possible, else left for VACUUM).
    pub orphaned_files: Vec<String>,
    /// Outputs of commits whose outcome is unknown: kept, not deleted.
    pub unknown_outcome_files: Vec<String>,
    /// Time spent reading outputs back to prove their content (the cost of the check).
    pub verify_seconds: f64,
    /// Bytes sorted bins spilled to the temp folder (0: none, or none sorted).
    #[serde(default)]
    pub spilled_bytes: u64,
    /// The last pace and why, when the job followed a writer's cadence.
    pub pace: Option<super::cadence::PaceNote>,
    pub seconds: f64,
    /// What killed jobs had left on the table, settled before this job ran (`job_ledger`).
    pub swept: Box<super::job_ledger::Sweep>,
    /// The plan's requests, bytes and price (`price`), and what the job made (the store's
    /// counters, from its plan to its end; with a remote executor, the coordinator's share).
    pub estimate: Option<Box<crate::model::cost::Cost>>,
    pub actual: Option<Box<crate::model::cost::Cost>>,
}

impl JobSummary {
    /// Records a failure: typed in `failures`, and as `line` in `errors`.
    pub fn fail(&mut self, partitions: Vec<PartitionValues>, failure: Failure, line: String) {
        self.errors.push(line);
        self.failures.push(FailureRecord {
            partitions,
            failure,
        });
    }

    /// What the job did in `values`: its share of each commit that touched it, its conflicts,
    /// and the failures that concern it (with those of the job as a whole). Byte counters of
    /// the store (`bytes_read`, `bytes_written`) and times stay the job's.
    pub fn for_partition(&self, values: &PartitionValues) -> JobSummary {
        let mut s = JobSummary {
            table_version_read: self.table_version_read,
            cancelled: self.cancelled,
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            verify_seconds: self.verify_seconds,
            seconds: self.seconds,
            ..Default::default()
        };
        for c in &self.commits {
            let Some(t) = c.by_partition.iter().find(|t| &t.partition == values) else {
                continue;
            };
            s.files_removed += t.files_removed;
            s.files_added += t.files_added;
            s.bytes_removed += t.bytes_removed;
            s.bytes_added += t.bytes_added;
            s.rows += t.rows;
            s.commits.push(c.clone());
        }
        for (line, f) in self.errors.iter().zip(&self.failures) {
            if f.partitions.is_empty() || f.partitions.contains(values) {
                s.errors.push(line.clone());
                s.failures.push(f.clone());
            }
        }
        s.conflicts = self
            .conflicts
            .iter()
            .filter(|c| &c.partition == values)
            .cloned()
            .collect();
        s
    }

    /// A summary of a job that failed as a whole before running any bin.
    pub fn failed(kind: FailureKind, message: String) -> Self {
        let mut s = JobSummary::default();
        s.fail(
            Vec::new(),
            Failure {
                kind,
                message: message.clone(),
            },
            message,
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(d: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(d.into()))])
    }

    fn tally(d: &str, files: u64, rows: u64) -> PartitionTally {
        PartitionTally {
            partition: pv(d),
            files_removed: files,
            files_added: 1,
            bytes_removed: files * 10,
            bytes_added: files * 9,
            rows,
        }
    }

    #[test]
    fn the_eta_comes_from_the_current_pace_when_paced() {
        let mut p = Progress {
            files_read: 25,
            files_total: 100,
            bytes_total: 400 * 1024 * 1024,
            ..Default::default()
        };
        let elapsed = std::time::Duration::from_secs(10);
        assert_eq!(p.eta(elapsed), Some(std::time::Duration::from_secs(30)));
        // 300 MiB of inputs left, read twice, at 60 MiB/s.
        p.pace_bytes_per_second = Some(60 * 1024 * 1024);
        assert_eq!(p.eta(elapsed), Some(std::time::Duration::from_secs(10)));
        p.files_read = 0;
        p.pace_bytes_per_second = None;
        assert_eq!(p.eta(elapsed), None);
        p.files_read = 100;
        assert_eq!(p.eta(elapsed), Some(std::time::Duration::ZERO));
    }

    #[test]
    fn a_partitions_share_of_a_job_counts_only_its_bins_conflicts_and_failures() {
        let commit = |version, by_partition: Vec<PartitionTally>| CommitRecord {
            version,
            files_removed: by_partition.iter().map(|t| t.files_removed).sum(),
            files_added: by_partition.iter().map(|t| t.files_added).sum(),
            bytes_removed: 0,
            bytes_added: 0,
            rows: by_partition.iter().map(|t| t.rows).sum(),
            retries: 0,
            partitions: by_partition.iter().map(|t| t.partition.clone()).collect(),
            bins: by_partition.len() as u64,
            fingerprints: Vec::new(),
            deleted_rows: 0,
            by_partition,
        };
        let mut s = JobSummary {
            commits: vec![
                commit(7, vec![tally("1", 5, 50), tally("2", 3, 30)]),
                commit(9, vec![tally("2", 4, 40)]),
            ],
            ..Default::default()
        };
        s.fail(
            vec![pv("1")],
            Failure {
                kind: FailureKind::Read,
                message: "gone".into(),
            },
            "1: gone".into(),
        );
        s.fail(
            Vec::new(),
            Failure {
                kind: FailureKind::Setup,
                message: "no runtime".into(),
            },
            "no runtime".into(),
        );
        let one = s.for_partition(&pv("1"));
        assert_eq!((one.files_removed, one.rows, one.commits.len()), (5, 50, 1));
        assert_eq!(one.errors, vec!["1: gone".to_string(), "no runtime".into()]);
        let two = s.for_partition(&pv("2"));
        assert_eq!((two.files_removed, two.rows, two.commits.len()), (7, 70, 2));
        assert_eq!(two.bytes_removed, 70);
        assert_eq!(two.errors, vec!["no runtime".to_string()]);
        let three = s.for_partition(&pv("3"));
        assert!(three.commits.is_empty() && three.files_removed == 0);
    }

    #[test]
    fn a_bin_failure_serialises_its_kind_next_to_the_message() {
        let ev = JobEvent::BinFailed {
            partition: PartitionValues(vec![("d".into(), Some("1".into()))]),
            error: Failure {
                kind: FailureKind::CommitUnknown,
                message: "boom".into(),
            },
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"event": "bin_failed", "partition": {"d": "1"},
                               "kind": "commit_unknown", "error": "boom"})
        );
        assert_eq!(FailureKind::CommitUnknown.as_str(), "commit_unknown");
        let s = JobSummary::failed(FailureKind::Setup, "no runtime".into());
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["errors"], serde_json::json!(["no runtime"]));
        assert_eq!(
            v["failures"],
            serde_json::json!([{"partitions": [], "kind": "setup", "error": "no runtime"}])
        );
    }
}
