//! What the jobs panel shows for each compaction job, folded from the engine's `JobEvent`s.

use std::time::{Duration, Instant};

use crate::engine::compact::events::{CommitRecord, ConflictRecord, JobEvent, Progress};
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::stats::table_report::PartitionValues;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Queued,
    Running,
    Done,
    Cancelling,
    Cancelled,
    Failed,
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
    pub id: u64,
    pub table_uri: String,
    pub partitions: Vec<String>,
    pub status: JobStatus,
    pub plan_files: u64,
    pub plan_bytes: u64,
    pub plan_bins: u64,
    pub progress: Progress,
    /// Bytes read per second, one sample per progress event (newest last), for the sparkline.
    pub throughput: Vec<u64>,
    pub commits: Vec<CommitRecord>,
    /// Bins refused because another commit took their files.
    pub conflicts: Vec<ConflictRecord>,
    pub errors: Vec<String>,
    pub orphaned: usize,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    last_sample: Option<(Instant, u64)>,
}

const SAMPLES: usize = 120;

fn labels(p: &[PartitionValues]) -> String {
    p.iter().map(|v| v.label()).collect::<Vec<_>>().join(",")
}

impl JobView {
    pub fn new(id: u64, table_uri: String, plan: &CompactionPlan) -> Self {
        Self {
            id,
            table_uri,
            partitions: plan.partitions.iter().map(|p| p.values.label()).collect(),
            status: JobStatus::Queued,
            plan_files: plan.files_in,
            plan_bytes: plan.bytes_in,
            plan_bins: plan.bins,
            progress: Progress {
                bins_total: plan.bins,
                files_total: plan.files_in,
                bytes_total: plan.bytes_in,
                ..Progress::default()
            },
            throughput: Vec::new(),
            commits: Vec::new(),
            conflicts: Vec::new(),
            errors: Vec::new(),
            orphaned: 0,
            started: None,
            finished: None,
            last_sample: None,
        }
    }

    /// Folds one event in; returns true when a commit landed (the table view should reload).
    pub fn apply(&mut self, ev: JobEvent, now: Instant) -> bool {
        match ev {
            JobEvent::Started { .. } => {
                if self.status == JobStatus::Queued {
                    self.status = JobStatus::Running;
                }
                self.started = Some(now);
                self.last_sample = Some((now, 0));
            }
            JobEvent::Progress(p) => {
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
                self.plan_bins += c.replanned_bins;
                self.conflicts.push(c);
            }
            JobEvent::BinFailed { partition, error } => {
                self.errors.push(format!("{}: {error}", partition.label()))
            }
            JobEvent::Cancelled { orphaned_files } => {
                self.orphaned += orphaned_files.len();
                self.status = JobStatus::Cancelled;
            }
            JobEvent::Replanned { bins, files, bytes } => {
                self.plan_bins = bins;
                self.plan_files = files;
                self.plan_bytes = bytes;
            }
            JobEvent::BinFinished { .. } => {}
            JobEvent::Finished(s) => {
                self.finished = Some(now);
                self.status = if s.cancelled {
                    JobStatus::Cancelled
                } else if !s.errors.is_empty() {
                    JobStatus::Failed
                } else {
                    JobStatus::Done
                };
                if self.errors.is_empty() {
                    self.errors = s.errors;
                }
            }
        }
        false
    }

    /// Average read throughput since the job started.
    pub fn bytes_per_second(&self, now: Instant) -> f64 {
        let end = self.finished.unwrap_or(now);
        match self.started {
            Some(s) => {
                self.progress.bytes_read as f64 / end.duration_since(s).as_secs_f64().max(0.001)
            }
            None => 0.0,
        }
    }

    pub fn eta(&self, now: Instant) -> Option<Duration> {
        if !self.status.is_active() {
            return None;
        }
        let rate = self.bytes_per_second(now);
        (rate > 0.0).then(|| {
            Duration::from_secs_f64(
                self.plan_bytes.saturating_sub(self.progress.bytes_read) as f64 / rate,
            )
        })
    }

    pub fn ratio(&self) -> f64 {
        if self.plan_bytes == 0 {
            return 1.0;
        }
        (self.progress.bytes_read as f64 / self.plan_bytes as f64).clamp(0.0, 1.0)
    }
}
