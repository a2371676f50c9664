//! `lakehealth compact`: plan, then run with progress on stderr and a summary on stdout.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::args::CompactArgs;
use super::run::Settings;
use crate::engine::clock::now_ms;
use crate::engine::compact::events::{JobEvent, JobSummary, Progress};
use crate::engine::compact::job::{CompactRequest, PreparedJob, run_isolated};
use crate::engine::compact::locks::PartitionLocks;
use crate::engine::compact::ordering::{LayoutRequest, OrderKind};
use crate::engine::compact::plan::{CompactionPlan, DeletedRows, Selection};
use crate::engine::compact::selection::Predicate;
use crate::engine::exec::pickup::{PickupMode, PickupSummary, pickup};
use crate::engine::janitor::throttle;
use crate::engine::location::Location;
use crate::engine::size::{format_bytes, plural};
use crate::engine::table::Table;

fn labels(p: &[crate::engine::model::partition::PartitionValues]) -> String {
    p.iter().map(|v| v.label()).collect::<Vec<_>>().join(",")
}

pub fn plan_text(p: &CompactionPlan) -> String {
    let mut o = format!(
        "plan at version {}: {}, {}, {} ({}) -> ~{} (target {}, files >= {} untouched)\n",
        p.table_version,
        plural(p.partitions.len() as u64, "partition"),
        plural(p.bins, "bin"),
        plural(p.files_in, "file"),
        format_bytes(p.bytes_in),
        plural(p.predicted_files_out, "file"),
        format_bytes(p.target_file_size),
        format_bytes(p.min_file_size),
    );
    for part in &p.partitions {
        o.push_str(&format!(
            "  {:<40} {:>3} bins  {:>6} -> ~{:<4} files  {:>10}  files after ~{}\n",
            part.values.label(),
            part.bins.len(),
            part.files_in,
            part.predicted_files_out,
            format_bytes(part.bytes_in),
            part.predicted_files_after
        ));
    }
    if p.deletion_vector_files > 0 {
        o.push_str(&format!(
            "  {} files with deletion vectors: their {} deleted rows are left out of the outputs ({} rewritten for their deleted rows alone)\n",
            p.deletion_vector_files, p.deleted_rows, p.files_rewritten_for_deletes
        ));
    }
    if let Some(order) = &p.order {
        o.push_str(&format!(
            "  order: {}; rows are only reordered (proven as a multiset)\n",
            order.describe()
        ));
        if let Some(d) = order.depths_text() {
            o.push_str(&format!("  {d}\n"));
        }
    }
    for n in &p.notes {
        o.push_str(&format!("  {}\n", n.text()));
    }
    if p.bins > 0 {
        o.push_str(&format!(
            "  estimate: {}\n",
            p.estimate.describe(format_bytes)
        ));
    }
    o
}

/// The job's requests and price beside the plan's estimate.
fn cost_line(s: &JobSummary) -> Option<String> {
    let actual = s.actual.as_deref()?;
    let mut line = format!("cost: {}", actual.describe(format_bytes));
    if let Some(e) = s.estimate.as_deref() {
        line.push_str(&format!(
            " (estimated {} requests, {})",
            e.requests.total_requests(),
            crate::engine::model::cost::usd_text(e.usd)
        ));
    }
    Some(line)
}

/// The selection the flags ask for, checked against the table's partition columns.
fn selection(a: &CompactArgs, partition_columns: &[String]) -> Result<Selection> {
    Ok(match (&a.predicate, a.partition.is_empty()) {
        (Some(_), false) => bail!("give either --where or --partition, not both"),
        (Some(p), true) => Selection::Predicate(Predicate::parse(p, partition_columns)?),
        (None, false) => Selection::Labels(a.partition.clone()),
        (None, true) => Selection::All,
    })
}

/// Prints a job's events on stderr as they arrive: progress at most once a second, every
/// commit, conflict and failure.
struct ProgressPrinter {
    start: Instant,
    /// When progress was last printed (the start: the first line comes after a second).
    last: Instant,
}

impl ProgressPrinter {
    fn new() -> Self {
        let start = Instant::now();
        Self { start, last: start }
    }

    /// Prints every event of `rx` until the job's sender is dropped.
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<JobEvent>) {
        while let Some(ev) = rx.recv().await {
            if let Some(line) = self.line(&ev, Instant::now()) {
                crate::errln!("{}", crate::engine::secrets::scrub(&line));
            }
        }
    }

    /// The line for `ev` at `now`, if it gets one.
    fn line(&mut self, ev: &JobEvent, now: Instant) -> Option<String> {
        Some(match ev {
            JobEvent::Progress(p) => {
                if now.duration_since(self.last).as_secs_f64() < 1.0 {
                    return None;
                }
                self.last = now;
                progress_line(p, now.duration_since(self.start).as_secs_f64())
            }
            JobEvent::Committed(c) => format!(
                "committed v{}: {} -{} +{} files ({} -> {}), {} rows, {} retries",
                c.version,
                labels(&c.partitions),
                c.files_removed,
                c.files_added,
                format_bytes(c.bytes_removed),
                format_bytes(c.bytes_added),
                c.rows,
                c.retries
            ),
            JobEvent::CommitFailed {
                partitions, error, ..
            } => format!("commit failed for {}: {error}", labels(partitions)),
            JobEvent::CommitUnknown {
                partitions,
                error,
                kept_files,
            } => format!(
                "commit outcome unknown for {}: {error}; its {} output files are kept",
                labels(partitions),
                kept_files.len()
            ),
            JobEvent::Conflict(c) => format!(
                "conflict in {}: {}; bin not committed, outputs deleted, {} bins planned again",
                c.partition.label(),
                c.conflict,
                c.replanned_bins
            ),
            JobEvent::BinFailed { partition, error } => format!(
                "bin failed in {} ({}): {error}",
                partition.label(),
                error.kind.as_str()
            ),
            JobEvent::Pace(note) => note.text(),
            JobEvent::Replanned { bins, files, bytes } => format!(
                "the table moved since the plan: planned again, {bins} bins, {files} files ({})",
                format_bytes(*bytes)
            ),
            _ => return None,
        })
    }
}

fn progress_line(p: &Progress, secs: f64) -> String {
    let rate = p.bytes_read as f64 / secs.max(0.001);
    let eta = p
        .eta(std::time::Duration::try_from_secs_f64(secs).unwrap_or_default())
        .map_or("-".into(), |d| format!("{}s", d.as_secs()));
    format!(
        "bins {}/{}  files {}/{}  read {}  written {}  rows {}  {}/s  ETA {eta}{}",
        p.bins_done,
        p.bins_total,
        p.files_read,
        p.files_total,
        format_bytes(p.bytes_read),
        format_bytes(p.bytes_written),
        p.rows,
        format_bytes(rate as u64),
        p.commit_wait_text(),
    )
}

fn summary_line(s: &JobSummary) -> String {
    format!(
        "done in {:.1}s: -{} +{} files, read {}, wrote {}, {} commits, {} conflicts, content check {:.1}s{}",
        s.seconds,
        s.files_removed,
        s.files_added,
        format_bytes(s.bytes_read),
        format_bytes(s.bytes_written),
        s.commits.len(),
        s.conflicts.len(),
        s.verify_seconds,
        if s.cancelled { " (cancelled)" } else { "" }
    )
}

/// The `--json` summary: the job's summary with the plan it ran.
fn print_json(summary: &JobSummary, plan: &CompactionPlan) -> Result<()> {
    let mut v = serde_json::to_value(summary)?;
    v["plan"] = serde_json::to_value(plan)?;
    let text = serde_json::to_string_pretty(&v)?;
    crate::outln!("{}", crate::engine::secrets::scrub(&text));
    Ok(())
}

/// Cancels on Ctrl-C: no further commits, uncommitted output removed.
pub(super) fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            crate::errln!("cancelling: no further commits; uncommitted output is removed");
            c2.cancel();
        }
    });
    cancel
}

/// The row order the flags ask for (clap keeps them exclusive).
pub(super) fn layout(a: &CompactArgs) -> LayoutRequest {
    if !a.sort_by.is_empty() {
        LayoutRequest::Order {
            kind: OrderKind::Sort,
            columns: a.sort_by.clone(),
            whole_partitions: true,
        }
    } else if !a.zorder.is_empty() {
        LayoutRequest::Order {
            kind: OrderKind::ZOrder,
            columns: a.zorder.clone(),
            whole_partitions: true,
        }
    } else if a.unclustered {
        LayoutRequest::Unclustered
    } else {
        LayoutRequest::Auto
    }
}

/// Plans the compaction the flags ask for (the plan is printed on stderr).
async fn plan_job(a: &CompactArgs, s: &Settings) -> Result<PreparedJob> {
    let loc = Location::parse(&a.uri)?;
    // Opened once: our own log reader gives the partition columns, the observed compression
    // ratio and the writers, and delta-rs's snapshot the files, from one read of the log.
    let table = Table::open(&loc, &s.open, &|_| {}).await?;
    let report = table.report().clone();
    if !report.format.can_compact() {
        bail!(
            "{}",
            crate::engine::formats::compaction_unsupported(&report)
        );
    }
    let req = CompactRequest {
        selection: selection(a, &report.partition_columns)?,
        target_file_size: s.target_override,
        min_file_size: a.min_file_size.map(|m| m.0),
        parallelism: a.parallelism.unwrap_or(1),
        max_bin_bytes: None,
        strategy: Default::default(),
        deleted_rows: DeletedRows {
            max_ratio: a.max_deleted_ratio,
            purge: a.purge,
        },
        layout: layout(a),
        sort_memory: a.sort_memory.map(|m| m.0 as usize),
        storage_options: s.open.storage_options.clone(),
    };
    let mut job = table.prepare_compaction(&req, s.open.thresholds).await?;
    job.exec.executor = s.executor.clone();
    if a.pickup {
        // A dry run changes nothing: pickup only says what it would commit and delete.
        let mode = if a.dry_run {
            PickupMode::Preview
        } else {
            PickupMode::Apply
        };
        let p = pickup(&mut job.table.table, &job.table.uri, mode).await?;
        crate::errln!("{}", pickup_line(&p));
        job.replan_if_stale().await?;
    }
    if a.dry_run && !a.json {
        // The answer of a dry run: on stdout, so it can be piped or saved.
        crate::out!("{}", plan_text(&job.plan));
    } else {
        crate::err!("{}", plan_text(&job.plan));
    }
    crate::errln!("executor: {}", job.exec.executor.describe());
    if a.parallelism.is_none() {
        // Ingestion first: the same rule as the janitor's.
        let t = throttle::for_table(&report.commits, &report.streaming_writers, now_ms());
        crate::errln!("parallelism: {}", t.reason);
        job.set_throttle(t);
    }
    Ok(job)
}

fn pickup_line(p: &PickupSummary) -> String {
    let mut line = if p.dry_run {
        format!(
            "pickup (dry run, nothing changed): {} results would commit, {} already committed, {} would be discarded, {} outputs would be deleted",
            p.would_commit.len(),
            p.already_committed,
            p.discarded.len(),
            p.deleted_outputs
        )
    } else {
        format!(
            "pickup: {} results committed ({}), {} already committed, {} discarded, {} outputs deleted",
            p.committed.len(),
            p.committed
                .iter()
                .map(|v| format!("v{v}"))
                .collect::<Vec<_>>()
                .join(", "),
            p.already_committed,
            p.discarded.len(),
            p.deleted_outputs
        )
    };
    for c in &p.would_commit {
        line.push_str(&format!("\n  would commit {c}"));
    }
    for d in &p.discarded {
        line.push_str(&format!("\n  discarded {d}"));
    }
    for r in &p.refused_paths {
        line.push_str(&format!("\n  not deleted: {r}"));
    }
    if !p.kept_outputs.is_empty() {
        line.push_str(&format!(
            "\n  {} outputs kept (commit outcome unknown or not deletable)",
            p.kept_outputs.len()
        ));
    }
    line
}

pub async fn compact(a: CompactArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    // A location that cannot be listed is left to the Delta path, which says why.
    if crate::engine::iceberg::is_iceberg_location(&loc, &s.open)
        .await
        .unwrap_or(false)
    {
        return super::compact_iceberg::compact(&a, &loc, s).await;
    }
    let job = plan_job(&a, s).await?;
    let plan = job.plan.clone();
    if a.dry_run {
        if a.json {
            crate::outln!("{}", serde_json::to_string_pretty(&plan)?);
        }
        return Ok(());
    }
    if plan.bins == 0 {
        crate::errln!("nothing to compact");
        // What killed jobs left is settled all the same.
        let swept = crate::engine::compact::job_ledger::sweep(
            &job.table.table,
            crate::engine::clock::now_ms(),
        )
        .await;
        if a.json {
            let summary = JobSummary {
                table_version_read: plan.table_version,
                swept: Box::new(swept),
                ..Default::default()
            };
            print_json(&summary, &plan)?;
        }
        return Ok(());
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(ProgressPrinter::new().run(rx));
    let locks = Arc::new(PartitionLocks::default());
    let summary = run_isolated(job, locks, cancel_on_ctrl_c(), tx).await;
    let _ = printer.await;
    crate::errln!("{}", summary_line(&summary));
    if let Some(line) = cost_line(&summary) {
        crate::errln!("{line}");
    }
    if a.json {
        print_json(&summary, &plan)?;
    }
    if !summary.errors.is_empty() {
        bail!(
            "{} errors: {}",
            summary.errors.len(),
            summary.errors.join("; ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compact::events::{Failure, FailureKind};
    use crate::engine::model::partition::PartitionValues;

    #[test]
    fn progress_prints_at_most_once_a_second_and_failures_name_their_kind() {
        let mut p = ProgressPrinter::new();
        let t0 = p.start;
        let ev = JobEvent::Progress(Progress {
            bytes_read: 50,
            bytes_total: 100,
            files_read: 5,
            files_total: 10,
            ..Default::default()
        });
        assert!(p.line(&ev, t0).is_none(), "nothing in the first second");
        let first = p.line(&ev, t0 + std::time::Duration::from_secs(1)).unwrap();
        assert!(first.contains("ETA 1s"), "{first}");
        assert!(
            p.line(&ev, t0 + std::time::Duration::from_millis(1500))
                .is_none()
        );
        assert!(
            p.line(&ev, t0 + std::time::Duration::from_secs(2))
                .is_some()
        );
        let failed = JobEvent::BinFailed {
            partition: PartitionValues(vec![("d".into(), Some("1".into()))]),
            error: Failure {
                kind: FailureKind::Verify,
                message: "rows differ".into(),
            },
        };
        assert_eq!(
            p.line(&failed, t0).unwrap(),
            "bin failed in d=1 (verify): rows differ"
        );
    }
}
