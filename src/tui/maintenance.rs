//! Log maintenance in the TUI: the vacuum preview (a dry run the user confirms) and the
//! checkpoint and vacuum jobs, folded from their typed events like compaction jobs are.

use crate::engine::maintenance::checkpoint::CheckpointOutcome;
use crate::engine::maintenance::vacuum::{VacuumEvent, VacuumOutcome};
use crate::engine::size::format_bytes;
use crate::tui::task_error::TaskError;

/// The vacuum preview: the dry run being made, then its plan (or why there is none).
pub type VacuumDialog = super::preview::Preview<super::preview::Vacuum>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceKind {
    Checkpoint,
    Vacuum,
}

impl MaintenanceKind {
    pub fn label(self) -> &'static str {
        match self {
            MaintenanceKind::Checkpoint => "checkpoint",
            MaintenanceKind::Vacuum => "vacuum",
        }
    }
}

/// What a maintenance job reports; its last event is always `Finished`.
#[derive(Debug, Clone, PartialEq)]
pub enum MaintenanceEvent {
    Vacuum(VacuumEvent),
    Finished(Result<MaintenanceResult, TaskError>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum MaintenanceResult {
    Checkpoint(CheckpointOutcome),
    Vacuum(VacuumOutcome),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceStatus {
    Running,
    Done,
    Failed,
}

impl MaintenanceStatus {
    pub fn label(self) -> &'static str {
        match self {
            MaintenanceStatus::Running => "running",
            MaintenanceStatus::Done => "done",
            MaintenanceStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone)]
pub struct MaintenanceJob {
    /// The runner's task id.
    pub id: u64,
    /// What the user sees.
    pub number: super::jobs::JobNumber,
    pub kind: MaintenanceKind,
    pub table_uri: String,
    /// What it is doing now ("checking the plan", "deleting 12 files (3 MiB)").
    pub phase: String,
    pub finished: Option<Result<MaintenanceResult, TaskError>>,
}

impl MaintenanceJob {
    pub fn new(
        id: u64,
        number: super::jobs::JobNumber,
        kind: MaintenanceKind,
        table_uri: String,
        phase: String,
    ) -> Self {
        Self {
            id,
            number,
            kind,
            table_uri,
            phase,
            finished: None,
        }
    }

    pub fn status(&self) -> MaintenanceStatus {
        match &self.finished {
            None => MaintenanceStatus::Running,
            Some(Ok(_)) => MaintenanceStatus::Done,
            Some(Err(_)) => MaintenanceStatus::Failed,
        }
    }

    /// Applies an event; true when the job changed the table (reload it).
    pub fn apply(&mut self, ev: MaintenanceEvent) -> bool {
        match ev {
            MaintenanceEvent::Vacuum(VacuumEvent::Checking) => {
                self.phase = "checking the plan against the latest version".into();
                false
            }
            MaintenanceEvent::Vacuum(VacuumEvent::Deleting { files, bytes }) => {
                self.phase = format!("deleting {files} files ({})", format_bytes(bytes));
                false
            }
            // The outcome comes with `Finished`.
            MaintenanceEvent::Vacuum(VacuumEvent::Done(_)) => false,
            MaintenanceEvent::Finished(r) => {
                let changed = match &r {
                    Ok(MaintenanceResult::Checkpoint(c)) => c.written,
                    Ok(MaintenanceResult::Vacuum(v)) => v.vacuum_end_version.is_some(),
                    Err(_) => false,
                };
                self.finished = Some(r);
                changed
            }
        }
    }

    /// One line: the outcome, the error, or the phase.
    pub fn detail(&self) -> String {
        match &self.finished {
            None => self.phase.clone(),
            Some(Err(e)) => e.message.clone(),
            Some(Ok(MaintenanceResult::Checkpoint(c))) if c.written => format!(
                // The job's kind ("checkpoint") is printed before this line.
                "version {} written ({}): {}",
                c.version,
                format_bytes(c.bytes),
                c.reason.trim_start_matches("written: ")
            ),
            Some(Ok(MaintenanceResult::Checkpoint(c))) => c.reason.clone(),
            Some(Ok(MaintenanceResult::Vacuum(v))) => match v.vacuum_end_version {
                Some(end) => format!(
                    "deleted {} files ({}); VACUUM START v{}, END v{end}",
                    v.files_deleted,
                    format_bytes(v.bytes_deleted),
                    v.vacuum_start_version
                        .map_or("?".to_string(), |s| s.to_string()),
                ),
                None => "nothing to delete; no commit written".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vacuum_job_folds_its_events_into_a_status_and_a_line() {
        let mut j = MaintenanceJob::new(
            3,
            super::super::jobs::JobNumber(1),
            MaintenanceKind::Vacuum,
            "/t".into(),
            "starting".into(),
        );
        assert_eq!(j.status(), MaintenanceStatus::Running);
        assert!(!j.apply(MaintenanceEvent::Vacuum(VacuumEvent::Deleting {
            files: 2,
            bytes: 2048
        })));
        assert_eq!(j.detail(), "deleting 2 files (2 KiB)");
        let outcome = VacuumOutcome {
            table: "/t".into(),
            version_read: 4,
            retention_ms: 0,
            files_deleted: 2,
            bytes_deleted: 2048,
            deleted: vec!["a".into(), "b".into()],
            vacuum_start_version: Some(5),
            vacuum_end_version: Some(6),
        };
        assert!(
            j.apply(MaintenanceEvent::Finished(Ok(MaintenanceResult::Vacuum(
                outcome
            ))))
        );
        assert_eq!(j.status(), MaintenanceStatus::Done);
        assert_eq!(
            j.detail(),
            "deleted 2 files (2 KiB); VACUUM START v5, END v6"
        );
        let mut f = MaintenanceJob::new(
            4,
            super::super::jobs::JobNumber(2),
            MaintenanceKind::Checkpoint,
            "/t".into(),
            "".into(),
        );
        f.apply(MaintenanceEvent::Finished(Err("denied".into())));
        assert_eq!(
            (f.status(), f.detail()),
            (MaintenanceStatus::Failed, "denied".into())
        );
    }

    #[test]
    fn a_checkpoint_line_does_not_repeat_its_kind() {
        let mut j = MaintenanceJob::new(
            5,
            crate::tui::jobs::JobNumber(1),
            MaintenanceKind::Checkpoint,
            "/t".into(),
            "".into(),
        );
        j.apply(MaintenanceEvent::Finished(Ok(
            MaintenanceResult::Checkpoint(CheckpointOutcome {
                table: "/t".into(),
                version: 271,
                previous_checkpoint: Some(260),
                commits_since_previous: 11,
                written: true,
                files: vec!["_delta_log/x.checkpoint.parquet".into()],
                bytes: 2048,
                reason: "written: 11 commits since the checkpoint at version 260".into(),
                expired_tombstones: 0,
            }),
        )));
        let line = format!("{} {}", j.kind.label(), j.detail());
        assert_eq!(
            line,
            "checkpoint version 271 written (2 KiB): 11 commits since the checkpoint at version 260"
        );
    }
}
