//! Log maintenance by policy: a checkpoint when enough commits piled up since the last one, a
//! VACUUM every so often (with the same retention guard as `lakehealth vacuum`: a retention
//! below the table's is refused, never overridden by a policy). On an Iceberg table VACUUM is
//! snapshot expiry and orphan removal through its catalog (`iceberg::vacuum`); it has no
//! checkpoint. Each decision is a JSON line with its reason, and each run a result line, like
//! compaction's.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::iceberg::vacuum::{IceVacuumRequest, plan_iceberg_vacuum, run_iceberg_vacuum};
use crate::location::Location;
use crate::maintenance::checkpoint::checkpoint;
use crate::maintenance::vacuum::{VacuumRequest, plan_vacuum, run_vacuum};
use crate::model::duration::{exact_secs, whole_units};
use crate::options::OpenOptions;
use crate::size::format_bytes;
use crate::stats::table_report::TableReport;

/// The policy's maintenance keys (all off unless set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaintenancePolicy {
    /// Checkpoint when at least this many commits are past the newest checkpoint.
    pub checkpoint_after_commits: Option<u64>,
    /// VACUUM when the last one (by this janitor's history or the log) is older than this.
    pub vacuum_every: Option<Duration>,
    /// None: the table's `delta.deletedFileRetentionDuration`.
    pub vacuum_retention: Option<Duration>,
}

impl MaintenancePolicy {
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(n) = self.checkpoint_after_commits {
            parts.push(format!("checkpoint at >= {n} commits since the last"));
        }
        if let Some(e) = self.vacuum_every {
            parts.push(format!(
                "vacuum every {} (retention {})",
                whole_units(e),
                self.vacuum_retention
                    .map(exact_secs)
                    .unwrap_or_else(|| "the table's".into())
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaintenanceAction {
    Checkpoint,
    Vacuum,
}

impl MaintenanceAction {
    pub fn label(self) -> &'static str {
        match self {
            MaintenanceAction::Checkpoint => "checkpoint",
            MaintenanceAction::Vacuum => "vacuum",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaintenanceOutcome {
    Checkpointed,
    NotNeeded,
    Vacuumed,
    NothingToDelete,
    Failed,
}

/// One JSON line (`"type": "maintenance"`): a decision, and for a due one its result.
#[derive(Debug, Clone, Serialize)]
pub struct MaintenanceLine {
    pub ts: String,
    pub table: String,
    pub action: MaintenanceAction,
    /// `due` or `not_due`.
    pub decision: &'static str,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<MaintenanceOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Checkpoint: its version. Vacuum: VACUUM START and END.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_deleted: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_deleted: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether a checkpoint is due (None: the policy has no checkpoint rule).
pub fn decide_checkpoint(
    p: &MaintenancePolicy,
    commits_since: u64,
    checkpoint_version: Option<u64>,
) -> Option<(bool, String)> {
    let n = p.checkpoint_after_commits?;
    let since = match checkpoint_version {
        Some(v) => format!("since the checkpoint at version {v}"),
        None => "and no checkpoint yet".into(),
    };
    Some(if commits_since >= n {
        (true, format!("due: {commits_since} commits {since} >= {n}"))
    } else {
        (
            false,
            format!("not due: {commits_since} commits {since} < {n}"),
        )
    })
}

/// Whether a vacuum is due, given when the last one ran (None: the policy has no vacuum rule).
pub fn decide_vacuum(
    p: &MaintenancePolicy,
    last_vacuum_ms: Option<i64>,
    now_ms: i64,
) -> Option<(bool, String)> {
    let every = p.vacuum_every?;
    let every_ms = every.as_millis().min(i64::MAX as u128) as i64;
    Some(match last_vacuum_ms {
        None => (
            true,
            format!(
                "due: no vacuum seen yet (vacuum_every {})",
                whole_units(every)
            ),
        ),
        Some(t) if now_ms - t >= every_ms => (
            true,
            format!(
                "due: last vacuum {} ago >= {}",
                whole_units(Duration::from_millis((now_ms - t).max(0) as u64)),
                whole_units(every)
            ),
        ),
        Some(t) => (
            false,
            format!(
                "not due: last vacuum {} ago < {}",
                whole_units(Duration::from_millis((now_ms - t).max(0) as u64)),
                whole_units(every)
            ),
        ),
    })
}

/// Expires an Iceberg table's snapshots and removes its unreferenced files through `catalog`,
/// with the table's retention unless the policy names a longer one.
async fn vacuum_iceberg(
    line: &mut MaintenanceLine,
    loc: &Location,
    catalog: &str,
    p: &MaintenancePolicy,
    opts: &OpenOptions,
) {
    let req = IceVacuumRequest {
        catalog: catalog.to_string(),
        table: None,
        retention: p.vacuum_retention,
        // As for Delta: a policy never lifts the retention check.
        allow_short_retention: false,
    };
    let plan = match plan_iceberg_vacuum(loc, &req, opts).await {
        Ok(plan) => plan,
        Err(e) => return fail(line, e.to_string()),
    };
    match run_iceberg_vacuum(loc, &req, opts, &plan).await {
        Ok(o) => {
            line.outcome = Some(if o.files_deleted > 0 || !o.snapshots_expired.is_empty() {
                MaintenanceOutcome::Vacuumed
            } else {
                MaintenanceOutcome::NothingToDelete
            });
            line.files_deleted = Some(o.files_deleted);
            line.bytes_deleted = Some(o.bytes_deleted);
            line.summary = Some(format!(
                "expired {} snapshots and deleted {} files ({}) no retained snapshot references, older than the {} retention",
                o.snapshots_expired.len(),
                o.files_deleted,
                format_bytes(o.bytes_deleted),
                exact_secs(Duration::from_millis(plan.retention_ms))
            ));
            if !o.failed.is_empty() {
                line.error = Some(o.failed.join("; "));
            }
        }
        Err(e) => fail(line, e.to_string()),
    }
}

/// Runs a due action and fills in the line's result.
pub async fn run(
    line: &mut MaintenanceLine,
    t: &TableFacts,
    p: &MaintenancePolicy,
    opts: &OpenOptions,
) {
    let loc = &t.loc;
    let storage_options = &opts.storage_options;
    if let Some(catalog) = &t.iceberg_catalog {
        return match line.action {
            MaintenanceAction::Vacuum => vacuum_iceberg(line, loc, catalog, p, opts).await,
            // An Iceberg table has no checkpoint; `maintain` never decides one.
            MaintenanceAction::Checkpoint => {}
        };
    }
    match line.action {
        MaintenanceAction::Checkpoint => match checkpoint(loc, storage_options).await {
            Ok(o) => {
                line.outcome = Some(if o.written {
                    MaintenanceOutcome::Checkpointed
                } else {
                    MaintenanceOutcome::NotNeeded
                });
                line.versions = vec![o.version];
                line.summary = Some(if o.written {
                    format!(
                        "checkpoint of version {} written ({})",
                        o.version,
                        format_bytes(o.bytes)
                    )
                } else {
                    o.reason
                });
            }
            Err(e) => fail(line, e.to_string()),
        },
        MaintenanceAction::Vacuum => {
            // The policy cannot override the retention check: a short retention is refused.
            let req = VacuumRequest {
                retention: p.vacuum_retention,
                allow_short_retention: false,
                storage_options: storage_options.clone(),
            };
            let plan = match plan_vacuum(loc, &req).await {
                Ok(plan) => plan,
                Err(e) => return fail(line, e.to_string()),
            };
            let cancel = tokio_util::sync::CancellationToken::new();
            match run_vacuum(loc, &req, &plan, &cancel, &|_| {}).await {
                Ok(o) => {
                    line.outcome = Some(if o.files_deleted > 0 {
                        MaintenanceOutcome::Vacuumed
                    } else {
                        MaintenanceOutcome::NothingToDelete
                    });
                    line.versions = o
                        .vacuum_start_version
                        .into_iter()
                        .chain(o.vacuum_end_version)
                        .collect();
                    line.files_deleted = Some(o.files_deleted);
                    line.bytes_deleted = Some(o.bytes_deleted);
                    line.summary = Some(format!(
                        "deleted {} files ({}) removed before the {} retention",
                        o.files_deleted,
                        format_bytes(o.bytes_deleted),
                        exact_secs(Duration::from_millis(plan.retention_ms))
                    ));
                }
                Err(e) => fail(line, e.to_string()),
            }
        }
    }
}

fn fail(line: &mut MaintenanceLine, e: String) {
    line.outcome = Some(MaintenanceOutcome::Failed);
    line.summary = Some(format!("failed: {e}"));
    line.error = Some(e);
}

/// When each table was last vacuumed by a janitor, from the history's tail (so `--once` from
/// cron keeps its rhythm). Failed runs do not count.
pub fn last_vacuums(path: &Path) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    // The history's last 8 MiB, across its rotated files.
    let Ok(lines) = super::history::tail_lines(path, 8 * 1024 * 1024) else {
        return out;
    };
    #[derive(serde::Deserialize)]
    struct L {
        #[serde(rename = "type")]
        kind: String,
        ts: String,
        table: String,
        action: MaintenanceAction,
        outcome: Option<String>,
    }
    for line in &lines {
        if let Ok(l) = serde_json::from_slice::<L>(line)
            && l.kind == "maintenance"
            && l.action == MaintenanceAction::Vacuum
            && matches!(l.outcome.as_deref(), Some("vacuumed" | "nothing_to_delete"))
            && let Ok(t) = chrono::DateTime::parse_from_rfc3339(&l.ts)
        {
            out.insert(l.table, t.timestamp_millis());
        }
    }
    out
}

/// What the janitor knows of a table for maintenance, taken from the cycle's report.
#[derive(Debug, Clone)]
pub struct TableFacts {
    pub loc: Location,
    pub id: String,
    pub commits_since_checkpoint: u64,
    pub checkpoint_version: Option<u64>,
    /// The newest VACUUM END among the commits the report read.
    pub last_vacuum_in_log: Option<i64>,
    /// An Iceberg table's catalog (None: a Delta table).
    pub iceberg_catalog: Option<String>,
}

impl TableFacts {
    pub fn of(loc: &Location, id: &str, r: &TableReport) -> Self {
        Self {
            loc: loc.clone(),
            id: id.to_string(),
            commits_since_checkpoint: r.log.commits_since_checkpoint,
            checkpoint_version: r.log.checkpoint_version,
            last_vacuum_in_log: r
                .commits
                .iter()
                .filter(|c| c.operation == "VACUUM END")
                .filter_map(|c| c.timestamp_ms)
                .max(),
            iceberg_catalog: None,
        }
    }

    /// An Iceberg table, maintained through `catalog` (its vacuums are known from the history).
    pub fn iceberg(loc: &Location, id: &str, catalog: &str) -> Self {
        Self {
            loc: loc.clone(),
            id: id.to_string(),
            commits_since_checkpoint: 0,
            checkpoint_version: None,
            last_vacuum_in_log: None,
            iceberg_catalog: Some(catalog.to_string()),
        }
    }
}

/// Decides (and runs what is due) for every table; returns the lines, decisions with their
/// results. `last_vacuum` is updated with the vacuums that ran.
pub async fn maintain(
    tables: &[TableFacts],
    p: &MaintenancePolicy,
    last_vacuum: &mut HashMap<String, i64>,
    opts: &OpenOptions,
    now_ms: i64,
    cancel: &tokio_util::sync::CancellationToken,
) -> Vec<MaintenanceLine> {
    let mut lines = Vec::new();
    for t in tables {
        let last = last_vacuum.get(&t.id).copied().max(t.last_vacuum_in_log);
        // Vacuum first: a checkpoint drops expired tombstones, and VACUUM finds files by them.
        let checkpoint = match t.iceberg_catalog {
            Some(_) => None,
            None => decide_checkpoint(p, t.commits_since_checkpoint, t.checkpoint_version),
        };
        let decisions = [
            (MaintenanceAction::Vacuum, decide_vacuum(p, last, now_ms)),
            (MaintenanceAction::Checkpoint, checkpoint),
        ];
        for (action, decision) in decisions {
            let Some((due, reason)) = decision else {
                continue;
            };
            let mut line = MaintenanceLine {
                ts: super::history::ts(now_ms),
                table: t.id.clone(),
                action,
                decision: if due { "due" } else { "not_due" },
                reason,
                outcome: None,
                summary: None,
                versions: Vec::new(),
                files_deleted: None,
                bytes_deleted: None,
                error: None,
            };
            // A signal stops new work; the decision is still recorded.
            if due && !cancel.is_cancelled() {
                run(&mut line, t, p, opts).await;
                line.ts = super::history::ts(crate::clock::now_ms());
                if action == MaintenanceAction::Vacuum
                    && line.outcome != Some(MaintenanceOutcome::Failed)
                {
                    last_vacuum.insert(t.id.clone(), now_ms);
                }
            }
            lines.push(line);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_and_vacuum_decisions_say_why() {
        let p = MaintenancePolicy {
            checkpoint_after_commits: Some(10),
            vacuum_every: Some(Duration::from_secs(86_400)),
            vacuum_retention: None,
        };
        assert_eq!(
            decide_checkpoint(&p, 12, Some(30)),
            Some((
                true,
                "due: 12 commits since the checkpoint at version 30 >= 10".into()
            ))
        );
        assert_eq!(
            decide_checkpoint(&p, 3, None),
            Some((
                false,
                "not due: 3 commits and no checkpoint yet < 10".into()
            ))
        );
        let now = 10 * 86_400_000;
        assert_eq!(
            decide_vacuum(&p, None, now),
            Some((true, "due: no vacuum seen yet (vacuum_every 24 h)".into()))
        );
        assert_eq!(
            decide_vacuum(&p, Some(now - 3_600_000), now),
            Some((false, "not due: last vacuum 60 min ago < 24 h".into()))
        );
        assert_eq!(
            decide_vacuum(&p, Some(now - 3 * 86_400_000), now),
            Some((true, "due: last vacuum 3 d ago >= 24 h".into()))
        );
        assert_eq!(
            decide_checkpoint(&MaintenancePolicy::default(), 99, None),
            None
        );
        assert_eq!(
            decide_vacuum(&MaintenancePolicy::default(), None, now),
            None
        );
    }
}
