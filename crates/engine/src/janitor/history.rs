//! The janitor's record: one JSON line per decision, job result, cycle and schedule change,
//! appended to a history file (and, with `--json`, printed on stdout). Field names of results
//! follow Databricks' OPTIMIZE metrics where they fit, so runs can be compared. No line ever
//! holds storage options or credentials: tables are named by their URI without user info.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::decide::DecisionKind;
use super::schedule::TableSchedule;
use crate::compact::events::ConflictRecord;
use crate::model::partition::PartitionValues;

/// Schedule lines are looked for in this much of the history's end.
const RESTORE_TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// `janitor-history.jsonl` in the platform data directory (where the log file lives).
pub fn default_path() -> PathBuf {
    directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
        .map(|d| d.data_local_dir().to_path_buf())
        .unwrap_or_else(std::env::temp_dir)
        .join("janitor-history.jsonl")
}

/// RFC 3339 UTC with milliseconds.
pub fn ts(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// At least one commit landed.
    Compacted,
    /// Every bin lost its files to another commit; nothing was committed.
    Conflict,
    /// The plan had no bin (or nothing was left after another compactor's commit).
    NothingToCompact,
    Failed,
    /// Stopped by SIGINT/SIGTERM before its next commit.
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
pub struct DecisionLine {
    pub ts: String,
    pub table: String,
    pub partition: PartitionValues,
    pub rule: String,
    pub decision: DecisionKind,
    pub reason: String,
    pub files: u64,
    pub small_files: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResultLine {
    pub ts: String,
    pub table: String,
    pub partition: PartitionValues,
    pub rule: String,
    /// The decision that started the job (always due) and its reason.
    pub decision: DecisionKind,
    pub reason: String,
    pub outcome: Outcome,
    /// What happened, for humans.
    pub summary: String,
    pub number_of_compacted_files: u64,
    pub amount_of_data_compacted_bytes: u64,
    pub number_of_output_files: u64,
    pub amount_of_output_data_bytes: u64,
    pub rows: u64,
    /// Versions committed, in order.
    pub versions: Vec<u64>,
    pub duration_ms: u64,
    /// Bins whose files another commit took (not committed).
    pub conflicts: Vec<ConflictRecord>,
    pub errors: Vec<String>,
    pub table_version_read: Option<u64>,
    /// The job's budget and why (`throttle`): the writers it yielded to, or every core.
    pub throttle: String,
    /// The pace the job ended at and why, when it followed a writer's cadence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<crate::compact::cadence::PaceNote>,
    /// The table's bytes written by the janitor's compactions per byte its writers wrote, over
    /// its recent log when the job was decided (jobs run by hand left out; None: no ingest).
    pub write_amplification: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// The first line of a run: the policy in force and where it came from.
    Policy {
        ts: String,
        policy: serde_json::Value,
        summary: String,
        targets: Vec<String>,
        history: String,
    },
    Decision(DecisionLine),
    Result(ResultLine),
    /// A checkpoint or vacuum decision, with its result when it ran.
    Maintenance(super::maintenance::MaintenanceLine),
    /// A table (or root) that could not be read this cycle.
    TableError {
        ts: String,
        table: String,
        error: String,
    },
    /// A table's failure record changed (or is not clean): what the next run starts from.
    Schedule {
        ts: String,
        table: String,
        #[serde(flatten)]
        schedule: TableSchedule,
    },
    /// The end of a cycle, counted.
    Cycle {
        ts: String,
        cycle: u64,
        tables: u64,
        partitions: u64,
        due: u64,
        not_due: u64,
        skipped: u64,
        backing_off: u64,
        suspended: u64,
        /// Partitions whose table's job is in flight.
        running: u64,
        /// Jobs that ended since the last cycle line.
        jobs: u64,
        failed_jobs: u64,
        /// Jobs still running as the cycle ended (cycles never wait for them).
        jobs_in_flight: u64,
        table_errors: u64,
        duration_ms: u64,
    },
    /// The run stopped on a signal, and what it stopped.
    Stopped {
        ts: String,
        reason: String,
    },
    Warning {
        ts: String,
        message: String,
    },
    /// What a running job is doing: it started (and how it is throttled), it waits for a
    /// commit slot, it committed. Its result is a `Result` line.
    Activity {
        ts: String,
        table: String,
        /// The partitions of the job (one job holds a table's due partitions).
        partitions: Vec<PartitionValues>,
        message: String,
    },
}

/// The history file, opened for appending.
pub struct History {
    path: PathBuf,
    file: std::fs::File,
}

impl History {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One line in one write: two janitors appending to one file never interleave inside a
    /// line (O_APPEND).
    pub fn append(&mut self, line: &Line) -> std::io::Result<()> {
        let text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        let mut buf = crate::secrets::scrub(&text).into_owned().into_bytes();
        buf.push(b'\n');
        self.file.write_all(&buf)
    }
}

/// The newest schedule line per table in the history's tail: failures carried over from the
/// last run (so `--once` from cron backs off and suspends as a long-running janitor does).
pub fn restore(path: &Path) -> std::io::Result<HashMap<String, TableSchedule>> {
    let mut out = HashMap::new();
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    let start = len.saturating_sub(RESTORE_TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut text = Vec::new();
    f.read_to_end(&mut text)?;
    let mut lines = text.split(|b| *b == b'\n');
    if start > 0 {
        // A partial first line.
        lines.next();
    }
    #[derive(serde::Deserialize)]
    struct ScheduleLine {
        #[serde(rename = "type")]
        kind: String,
        table: Option<String>,
        #[serde(flatten)]
        schedule: TableSchedule,
    }
    for line in lines.filter(|l| l.windows(10).any(|w| w == b"\"schedule\"")) {
        if let Ok(s) = serde_json::from_slice::<ScheduleLine>(line)
            && s.kind == "schedule"
            && let Some(t) = s.table
        {
            out.insert(t, s.schedule);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_json_with_typed_partitions() {
        let l = Line::Decision(DecisionLine {
            ts: ts(0),
            table: "/t".into(),
            partition: PartitionValues(vec![
                ("d".into(), Some("2026-11-30".into())),
                ("k".into(), None),
            ]),
            rule: "default".into(),
            decision: DecisionKind::NotDue,
            reason: "not due: 3 small files < 50".into(),
            files: 4,
            small_files: 3,
            bytes: 10,
        });
        let v = serde_json::to_value(&l).unwrap();
        assert_eq!(v["type"], "decision");
        assert_eq!(v["ts"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["decision"], "not_due");
        assert_eq!(
            v["partition"],
            serde_json::json!({"d": "2026-11-30", "k": null})
        );
    }

    #[test]
    fn schedules_restore_from_the_newest_line_per_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/h.jsonl");
        let mut h = History::open(&path).unwrap();
        let sched = |n: u32| TableSchedule {
            failures: n,
            last_failure_ms: Some(n as i64),
            last_error: Some(format!("e{n}")),
        };
        for (t, n) in [("a", 1), ("b", 2), ("a", 3)] {
            h.append(&Line::Schedule {
                ts: ts(0),
                table: t.into(),
                schedule: sched(n),
            })
            .unwrap();
        }
        h.append(&Line::Stopped {
            ts: ts(0),
            reason: "the word \"schedule\" in a reason".into(),
        })
        .unwrap();
        let r = restore(&path).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r["a"], sched(3));
        assert_eq!(r["b"], sched(2));
        assert!(restore(&dir.path().join("none")).unwrap().is_empty());
    }
}
