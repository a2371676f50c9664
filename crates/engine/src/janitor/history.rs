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
use crate::rotating_file::{RotatingFile, rotated_paths};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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
    /// The same for the janitor's re-clustering, counted apart.
    pub recluster_amplification: Option<f64>,
    /// The whole job's requests, bytes and price, planned and measured: on its first
    /// partition's line only, so a sum over the history is what the janitor spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Box<crate::model::cost::Cost>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Box<crate::model::cost::Cost>>,
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
    Result(Box<ResultLine>),
    /// A checkpoint or vacuum decision, with its result when it ran.
    Maintenance(super::maintenance::MaintenanceLine),
    /// A table (or root) that could not be read this cycle.
    TableError {
        ts: String,
        table: String,
        error: String,
    },
    /// The depth a re-clustered partition was left at (`left`, its order's columns), read
    /// after the job: it is not due again until twice that (`janitor::clustering`). Empty:
    /// within the bound, no floor. What the next run (`--once` from cron) starts from.
    Floor {
        ts: String,
        table: String,
        partition: PartitionValues,
        left: Vec<super::clustering::ColumnDepth>,
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
        /// Partitions due for re-clustering (`max_depth`).
        recluster: u64,
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

/// How the history file rotates: at `max_bytes`, keeping `keep` older files (`PATH.1` newest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    pub max_bytes: u64,
    pub keep: usize,
}

impl Default for Rotation {
    fn default() -> Self {
        Self {
            max_bytes: 10 * crate::size::MIB,
            keep: 5,
        }
    }
}

/// Where the history is written and how it rotates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryFile {
    pub path: PathBuf,
    pub rotation: Rotation,
}

impl From<PathBuf> for HistoryFile {
    /// `path` with the default rotation.
    fn from(path: PathBuf) -> Self {
        Self {
            path,
            rotation: Rotation::default(),
        }
    }
}

impl HistoryFile {
    pub fn open(&self) -> std::io::Result<History> {
        History::open_with(&self.path, self.rotation)
    }
}

/// The history file, opened for appending; it rotates by size.
pub struct History {
    file: RotatingFile,
}

impl History {
    /// Opens `path` with the default rotation (10 MiB, 5 older files kept).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Self::open_with(path, Rotation::default())
    }

    pub fn open_with(path: &Path, rotation: Rotation) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(Self {
            file: RotatingFile::open(path, rotation.max_bytes, rotation.keep)?,
        })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// One line in one write: two janitors appending to one file never interleave inside a
    /// line (O_APPEND), and a rotation never splits one.
    pub fn append(&mut self, line: &Line) -> std::io::Result<()> {
        let text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        let mut buf = crate::secrets::scrub(&text).into_owned().into_bytes();
        buf.push(b'\n');
        self.file.write_all(&buf)
    }
}

/// The history's last `max_bytes` as whole lines, across its rotated files (oldest first).
pub fn tail_lines(path: &Path, max_bytes: u64) -> std::io::Result<Vec<Vec<u8>>> {
    let mut chunks: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut left = max_bytes;
    // Newest file first, until the budget is spent.
    for p in rotated_paths(path).iter().rev() {
        if left == 0 {
            break;
        }
        let mut f = match std::fs::File::open(p) {
            Ok(f) => f,
            // Rotated away between the listing and the open: its lines are in the next file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let len = f.metadata()?.len();
        let start = len.saturating_sub(left);
        f.seek(SeekFrom::Start(start))?;
        let mut text = Vec::new();
        f.read_to_end(&mut text)?;
        left = left.saturating_sub(len - start);
        let mut lines: Vec<Vec<u8>> = text
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        if start > 0 && !lines.is_empty() {
            // A partial first line.
            lines.remove(0);
        }
        chunks.push(lines);
    }
    chunks.reverse();
    Ok(chunks.into_iter().flatten().collect())
}

/// The newest schedule line per table in the history's tail (across its rotation): failures
/// carried over from the last run (so `--once` from cron backs off and suspends as a
/// long-running janitor does).
pub fn restore(path: &Path) -> std::io::Result<HashMap<String, TableSchedule>> {
    let mut out = HashMap::new();
    #[derive(serde::Deserialize)]
    struct ScheduleLine {
        #[serde(rename = "type")]
        kind: String,
        table: Option<String>,
        #[serde(flatten)]
        schedule: TableSchedule,
    }
    let lines = tail_lines(path, RESTORE_TAIL_BYTES)?;
    for line in lines
        .iter()
        .filter(|l| l.windows(10).any(|w| w == b"\"schedule\""))
    {
        if let Ok(s) = serde_json::from_slice::<ScheduleLine>(line)
            && s.kind == "schedule"
            && let Some(t) = s.table
        {
            out.insert(t, s.schedule);
        }
    }
    Ok(out)
}

/// Re-clustering's state in the history's tail, per table: the floors its reads set (`floor`
/// lines), and the partitions re-clustered since (compacted `recluster` results), whose floor
/// the next read sets.
#[derive(Debug, Default, PartialEq)]
pub struct Reclustered {
    pub floors: HashMap<String, HashMap<PartitionValues, Vec<super::clustering::ColumnDepth>>>,
    pub pending: HashMap<String, Vec<PartitionValues>>,
}

pub fn restore_reclustered(path: &Path) -> std::io::Result<Reclustered> {
    #[derive(serde::Deserialize)]
    struct Any {
        #[serde(rename = "type")]
        kind: String,
        table: String,
        partition: PartitionValues,
        #[serde(default)]
        decision: Option<DecisionKind>,
        #[serde(default)]
        outcome: Option<Outcome>,
        #[serde(default)]
        left: Vec<super::clustering::ColumnDepth>,
    }
    let mut out = Reclustered::default();
    let lines = tail_lines(path, RESTORE_TAIL_BYTES)?;
    for line in lines.iter().filter(|l| {
        l.windows(7).any(|w| w == b"\"floor\"") || l.windows(11).any(|w| w == b"\"recluster\"")
    }) {
        let Ok(l) = serde_json::from_slice::<Any>(line) else {
            continue;
        };
        let pending = out.pending.entry(l.table.clone()).or_default();
        match l.kind.as_str() {
            "floor" => {
                pending.retain(|p| *p != l.partition);
                let floors = out.floors.entry(l.table).or_default();
                if l.left.is_empty() {
                    floors.remove(&l.partition);
                } else {
                    floors.insert(l.partition, l.left);
                }
            }
            "result"
                if l.decision == Some(DecisionKind::Recluster)
                    && l.outcome == Some(Outcome::Compacted)
                    && !pending.contains(&l.partition) =>
            {
                pending.push(l.partition);
            }
            _ => {}
        }
    }
    out.pending.retain(|_, v| !v.is_empty());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_clustered_partition_is_pending_until_a_floor_line_and_the_newest_floor_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let lines = [
            r#"{"type":"floor","ts":"t","table":"/a","partition":{"d":"1"},"left":[{"column":"s","mean":9.0}]}"#,
            r#"{"type":"result","table":"/a","partition":{"d":"1"},"decision":"recluster","outcome":"compacted"}"#,
            r#"{"type":"result","table":"/a","partition":{"d":"2"},"decision":"recluster","outcome":"failed"}"#,
            r#"{"type":"result","table":"/b","partition":{"d":"3"},"decision":"recluster","outcome":"compacted"}"#,
            r#"{"type":"floor","ts":"t","table":"/b","partition":{"d":"3"},"left":[{"column":"s","mean":17.0}]}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let r = restore_reclustered(&path).unwrap();
        let pv = |d: &str| PartitionValues(vec![("d".into(), Some(d.into()))]);
        assert_eq!(
            r.pending.get("/a"),
            Some(&vec![pv("1")]),
            "re-clustered after its floor"
        );
        assert!(!r.pending.contains_key("/b"));
        assert_eq!(r.floors["/b"][&pv("3")][0].mean, 17.0);
        assert_eq!(
            r.floors["/a"][&pv("1")][0].mean,
            9.0,
            "kept until the next read"
        );
    }

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

    #[test]
    fn the_history_rotates_by_size_and_every_line_stays_readable_across_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let rotation = Rotation {
            max_bytes: 1024,
            keep: 50,
        };
        let mut h = History::open_with(&path, rotation).unwrap();
        for i in 0..200 {
            h.append(&Line::Stopped {
                ts: ts(i),
                reason: format!("line {i}"),
            })
            .unwrap();
        }
        let files = rotated_paths(&path);
        assert!(files.len() > 5, "rotated: {files:?}");
        for f in &files {
            let len = std::fs::metadata(f).unwrap().len();
            assert!(len <= rotation.max_bytes, "{f:?} holds {len} bytes");
        }
        let lines = tail_lines(&path, u64::MAX).unwrap();
        let reasons: Vec<String> = lines
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                v["reason"].as_str().unwrap().to_string()
            })
            .collect();
        let expected: Vec<String> = (0..200).map(|i| format!("line {i}")).collect();
        assert_eq!(reasons, expected, "every line once, whole, in order");
    }

    #[test]
    fn only_the_configured_number_of_rotated_files_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let rotation = Rotation {
            max_bytes: 512,
            keep: 2,
        };
        let mut h = History::open_with(&path, rotation).unwrap();
        for i in 0..200 {
            h.append(&Line::Stopped {
                ts: ts(i),
                reason: format!("line {i}"),
            })
            .unwrap();
        }
        assert_eq!(
            rotated_paths(&path).len(),
            3,
            "the current file and 2 older"
        );
        let total: u64 = rotated_paths(&path)
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        assert!(total <= 3 * 512, "bounded: {total} bytes");
    }

    #[test]
    fn a_schedule_written_before_a_rotation_is_restored_from_the_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let mut h = History::open_with(
            &path,
            Rotation {
                max_bytes: 400,
                keep: 5,
            },
        )
        .unwrap();
        let sched = TableSchedule {
            failures: 2,
            last_failure_ms: Some(7),
            last_error: Some("boom".into()),
        };
        h.append(&Line::Schedule {
            ts: ts(0),
            table: "t".into(),
            schedule: sched.clone(),
        })
        .unwrap();
        for i in 0..20 {
            h.append(&Line::Stopped {
                ts: ts(i),
                reason: "cycle".into(),
            })
            .unwrap();
        }
        assert!(
            !std::fs::read_to_string(&path).unwrap().contains("schedule"),
            "the schedule line was rotated out of the current file"
        );
        assert_eq!(restore(&path).unwrap()["t"], sched);
    }

    #[test]
    fn the_tail_stops_at_its_byte_budget_with_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let mut h = History::open_with(
            &path,
            Rotation {
                max_bytes: 300,
                keep: 20,
            },
        )
        .unwrap();
        for i in 0..100 {
            h.append(&Line::Stopped {
                ts: ts(i),
                reason: format!("line {i}"),
            })
            .unwrap();
        }
        let lines = tail_lines(&path, 500).unwrap();
        assert!(!lines.is_empty() && lines.len() < 100, "{}", lines.len());
        for l in &lines {
            serde_json::from_slice::<serde_json::Value>(l).unwrap();
        }
        let last: serde_json::Value = serde_json::from_slice(lines.last().unwrap()).unwrap();
        assert_eq!(last["reason"], "line 99", "the newest line is last");
    }
}
