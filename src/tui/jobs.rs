//! What the jobs panel shows for each compaction job, folded from the engine's `JobEvent`s.
//!
//! A job's status is not stored: it is derived from the facts its events (and the user's cancel)
//! established, so it cannot disagree with them. The engine sends exactly one
//! `JobEvent::Finished` per job, whatever happens (cancelled while waiting for a partition lock,
//! a failed replan, a runtime that could not start), so every job reaches a final status.

use std::time::{Duration, Instant};

use crate::engine::compact::cadence::PaceNote;
use crate::engine::compact::events::{
    CommitRecord, ConflictRecord, JobEvent, JobSummary, Progress,
};
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::model::partition::PartitionValues;

/// The number a job shows ("#3"): consecutive over the jobs of the session, compaction and
/// maintenance alike. The task id the runner knows a job by is another number (`JobView::id`),
/// shared with loads and plans, so it skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct JobNumber(pub u32);

impl std::fmt::Display for JobNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting for its partitions (another job holds them) or for its thread to start.
    Queued,
    Running,
    /// The user asked to cancel; the job stops before its next commit.
    Cancelling,
    Done,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn label(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Cancelling => "cancelling",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Failed => "failed",
        }
    }

    pub fn is_active(self) -> bool {
        matches!(
            self,
            JobStatus::Queued | JobStatus::Running | JobStatus::Cancelling
        )
    }
}

#[derive(Debug, Clone)]
pub struct JobView {
    /// The runner's task id.
    pub id: u64,
    /// What the user sees.
    pub number: JobNumber,
    pub table_uri: String,
    pub partitions: Vec<PartitionValues>,
    /// The newest counters; the totals are the plan's until the first progress event, and follow
    /// a replan.
    pub progress: Progress,
    /// Bytes read per second, one sample per progress event (newest last), for the sparkline.
    pub throughput: Vec<u64>,
    pub commits: Vec<CommitRecord>,
    /// Bins written and proven (`BinFinished`), counted as they come: progress reports are
    /// periodic, so a commit can arrive before the report that counts its bin.
    pub bins_finished: u64,
    /// Bins refused because another commit took their files.
    pub conflicts: Vec<ConflictRecord>,
    pub errors: Vec<String>,
    pub orphaned: usize,
    /// When the `Started` event came (the job held its partitions and began).
    pub started: Option<Instant>,
    /// When the `Finished` event came, and its summary.
    pub finished: Option<(Instant, JobSummary)>,
    /// The user confirmed a cancel.
    pub cancel_requested: bool,
    /// The read pace and why: the one the job started at (the runner's first event), then each
    /// change as it followed the writer's cadence or the user lifted it.
    pub pace: Option<PaceNote>,
    last_sample: Option<(Instant, u64)>,
}

const SAMPLES: usize = 120;

fn labels(p: &[PartitionValues]) -> String {
    p.iter().map(|v| v.label()).collect::<Vec<_>>().join(",")
}

impl JobView {
    pub fn new(id: u64, number: JobNumber, table_uri: String, plan: &CompactionPlan) -> Self {
        Self {
            id,
            number,
            table_uri,
            partitions: plan.partitions.iter().map(|p| p.values.clone()).collect(),
            progress: Progress {
                bins_total: plan.bins,
                files_total: plan.files_in,
                bytes_total: plan.bytes_in,
                ..Progress::default()
            },
            throughput: Vec::new(),
            commits: Vec::new(),
            bins_finished: 0,
            conflicts: Vec::new(),
            errors: Vec::new(),
            orphaned: 0,
            started: None,
            finished: None,
            cancel_requested: false,
            pace: None,
            last_sample: None,
        }
    }

    /// Held to a read pace (the writers' throttle or their cadence) that `f` can lift.
    pub fn paced(&self) -> bool {
        self.pace
            .as_ref()
            .is_some_and(|n| n.bytes_per_second.is_some())
    }

    pub fn status(&self) -> JobStatus {
        match &self.finished {
            Some((_, s)) if s.cancelled => JobStatus::Cancelled,
            Some((_, s)) if !s.errors.is_empty() => JobStatus::Failed,
            Some(_) => JobStatus::Done,
            None if self.cancel_requested => JobStatus::Cancelling,
            None if self.started.is_some() => JobStatus::Running,
            None => JobStatus::Queued,
        }
    }

    /// Records the user's cancel; false when the job already ended (nothing to cancel).
    pub fn request_cancel(&mut self) -> bool {
        if self.finished.is_some() {
            return false;
        }
        self.cancel_requested = true;
        true
    }

    /// Folds one event in; returns true when a commit landed (the table view should reload).
    pub fn apply(&mut self, ev: JobEvent, now: Instant) -> bool {
        match ev {
            JobEvent::Started { .. } => {
                self.started = Some(now);
                self.last_sample = Some((now, self.progress.bytes_read));
            }
            JobEvent::Progress(p) => self.sample(p, now),
            JobEvent::Committed(c) => {
                self.commits.push(c);
                return true;
            }
            JobEvent::CommitFailed {
                partitions,
                error,
                orphaned_files,
            } => {
                self.errors
                    .push(format!("commit {}: {error}", labels(&partitions)));
                self.orphaned += orphaned_files.len();
            }
            JobEvent::CommitUnknown {
                partitions,
                error,
                kept_files,
            } => self.errors.push(format!(
                "commit {} may have landed ({error}): {} output files kept",
                labels(&partitions),
                kept_files.len()
            )),
            JobEvent::Conflict(c) => {
                self.progress.bins_total += c.replanned_bins;
                self.conflicts.push(c);
            }
            JobEvent::BinFailed { partition, error } => {
                self.errors.push(format!("{}: {error}", partition.label()))
            }
            JobEvent::Cancelled { orphaned_files } => self.orphaned += orphaned_files.len(),
            JobEvent::Replanned { bins, files, bytes } => {
                self.progress.bins_total = bins;
                self.progress.files_total = files;
                self.progress.bytes_total = bytes;
            }
            JobEvent::BinFinished { .. } => self.bins_finished += 1,
            JobEvent::Pace(note) => self.pace = Some(note),
            JobEvent::Finished(s) => self.finish(s, now),
        }
        false
    }

    fn sample(&mut self, p: Progress, now: Instant) {
        if let Some((t, b)) = self.last_sample {
            let dt = now.duration_since(t).as_secs_f64();
            if dt >= 0.2 {
                let rate = (p.bytes_read.saturating_sub(b) as f64 / dt) as u64;
                self.throughput.push(rate);
                if self.throughput.len() > SAMPLES {
                    self.throughput.remove(0);
                }
                self.last_sample = Some((now, p.bytes_read));
            }
        }
        self.progress = p;
    }

    fn finish(&mut self, s: JobSummary, now: Instant) {
        // The engine sends one final event; should another come, the first one stands.
        if self.finished.is_some() {
            return;
        }
        if self.errors.is_empty() {
            self.errors = s.errors.clone();
        }
        self.finished = Some((now, s));
    }

    /// Bins done, never fewer than the commits or finished bins seen (whichever report came
    /// last).
    pub fn bins_done(&self) -> u64 {
        self.progress
            .bins_done
            .max(self.bins_finished)
            .max(self.commits.iter().map(|c| c.bins.max(1)).sum::<u64>())
    }

    /// Average read throughput since the job started; None before any time passed.
    pub fn bytes_per_second(&self, now: Instant) -> Option<f64> {
        let end = self.finished.as_ref().map_or(now, |(t, _)| *t);
        let secs = end.duration_since(self.started?).as_secs_f64();
        (secs > 0.0).then(|| self.progress.bytes_read as f64 / secs)
    }

    /// Share of the work done, 0.0–1.0 (`Progress::ratio`); a finished job is done.
    pub fn ratio(&self) -> f64 {
        if self.progress.files_total == 0 && self.finished.is_some() {
            return 1.0;
        }
        self.progress.ratio()
    }

    /// Time left: at the current pace when paced, else at the speed so far (`Progress::eta`).
    pub fn eta(&self, now: Instant) -> Option<Duration> {
        if !self.status().is_active() {
            return None;
        }
        self.progress.eta(now.duration_since(self.started?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(files: u64, bytes: u64) -> CompactionPlan {
        CompactionPlan {
            table_version: 1,
            target_file_size: 1,
            min_file_size: 1,
            compression_ratio: 1.0,
            partitions: vec![],
            files_in: files,
            bytes_in: bytes,
            predicted_files_out: 1,
            bins: 1,
            deletion_vector_files: 0,
            deleted_rows: 0,
            notes: Vec::new(),
            estimate: Default::default(),
            order: None,
            files_rewritten_for_deletes: 0,
        }
    }

    fn progress(files_read: u64, bytes_read: u64) -> JobEvent {
        JobEvent::Progress(Progress {
            bytes_read,
            files_read,
            bins_total: 1,
            files_total: 12,
            bytes_total: 100,
            ..Progress::default()
        })
    }

    #[test]
    fn the_status_follows_the_events_and_the_users_cancel() {
        let now = Instant::now();
        let mut j = JobView::new(1, JobNumber(1), "t".into(), &plan(12, 100));
        assert_eq!(j.status(), JobStatus::Queued);
        j.apply(
            JobEvent::Started {
                bins: 1,
                files: 12,
                bytes: 100,
            },
            now,
        );
        assert_eq!(j.status(), JobStatus::Running);
        assert!(j.request_cancel());
        assert_eq!(j.status(), JobStatus::Cancelling);
        j.apply(
            JobEvent::Finished(JobSummary {
                cancelled: true,
                ..Default::default()
            }),
            now,
        );
        assert_eq!(j.status(), JobStatus::Cancelled);
        assert!(!j.request_cancel(), "an ended job cannot be cancelled");
        assert_eq!(j.status(), JobStatus::Cancelled);
    }

    #[test]
    fn a_job_cancelled_before_it_started_ends_cancelled() {
        let mut j = JobView::new(1, JobNumber(1), "t".into(), &plan(12, 100));
        j.request_cancel();
        assert_eq!(j.status(), JobStatus::Cancelling);
        j.apply(
            JobEvent::Cancelled {
                orphaned_files: vec![],
            },
            Instant::now(),
        );
        assert_eq!(
            j.status(),
            JobStatus::Cancelling,
            "only Finished ends a job"
        );
        j.apply(
            JobEvent::Finished(JobSummary {
                cancelled: true,
                ..Default::default()
            }),
            Instant::now(),
        );
        assert_eq!(j.status(), JobStatus::Cancelled);
    }

    #[test]
    fn a_final_event_with_errors_is_failed_and_a_second_final_event_changes_nothing() {
        let mut j = JobView::new(1, JobNumber(1), "t".into(), &plan(12, 100));
        j.apply(
            JobEvent::Finished(JobSummary {
                errors: vec!["replan: log unreadable".into()],
                ..Default::default()
            }),
            Instant::now(),
        );
        assert_eq!(j.status(), JobStatus::Failed);
        assert_eq!(j.errors, vec!["replan: log unreadable".to_string()]);
        j.apply(JobEvent::Finished(JobSummary::default()), Instant::now());
        assert_eq!(j.status(), JobStatus::Failed);
    }

    #[test]
    fn bins_done_counts_a_committed_bin_before_the_next_progress_report() {
        let mut j = JobView::new(1, JobNumber(1), "t".into(), &plan(12, 100));
        j.progress.bins_total = 4;
        j.apply(progress(3, 30), Instant::now());
        assert_eq!(j.progress.bins_done, 0);
        j.apply(
            JobEvent::BinFinished {
                partition: PartitionValues(vec![]),
                files_in: 3,
                files_out: 1,
                bytes_in: 30,
                bytes_out: 10,
                rows: 3,
            },
            Instant::now(),
        );
        assert_eq!(j.bins_done(), 1, "not 0/4 beside a commit");
    }

    #[test]
    fn the_gauge_counts_files_read_and_never_passes_full() {
        let mut j = JobView::new(1, JobNumber(1), "t".into(), &plan(12, 100));
        j.apply(progress(6, 130), Instant::now());
        assert_eq!(j.ratio(), 0.5, "113 MiB of 111 MiB read is not 100 %");
        j.apply(progress(12, 260), Instant::now());
        assert_eq!(j.ratio(), 1.0);
        j.apply(
            JobEvent::Replanned {
                bins: 2,
                files: 24,
                bytes: 200,
            },
            Instant::now(),
        );
        assert_eq!(j.ratio(), 0.5, "a replan's totals are the new denominator");
    }
}
