//! `lakehealth compact`: plan, then run with progress on stderr and a summary on stdout.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::args::CompactArgs;
use super::run::Settings;
use crate::engine::compact::events::JobEvent;
use crate::engine::compact::job::{CompactRequest, observed_ratio, prepare, run_isolated};
use crate::engine::compact::locks::PartitionLocks;
use crate::engine::compact::plan::{CompactionPlan, Selection};
use crate::engine::compact::selection::Predicate;
use crate::engine::location::Location;
use crate::engine::open::load_table;
use crate::engine::size::format_bytes;

fn labels(p: &[crate::engine::stats::table_report::PartitionValues]) -> String {
    p.iter().map(|v| v.label()).collect::<Vec<_>>().join(",")
}

pub fn plan_text(p: &CompactionPlan) -> String {
    let mut o = format!(
        "plan at version {}: {} partitions, {} bins, {} files ({}) -> ~{} files (target {}, files >= {} untouched)\n",
        p.table_version,
        p.partitions.len(),
        p.bins,
        p.files_in,
        format_bytes(p.bytes_in),
        p.predicted_files_out,
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
    if p.skipped_deletion_vector_files > 0 {
        o.push_str(&format!(
            "  {} small files with deletion vectors are left alone\n",
            p.skipped_deletion_vector_files
        ));
    }
    o
}

pub async fn compact(a: CompactArgs, s: &Settings, target: Option<u64>) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    // Our own log reader gives the partition columns and the observed compression ratio.
    let report = load_table(&loc, &s.open, &|_| {}).await?;
    let selection = match (&a.predicate, a.partition.is_empty()) {
        (Some(_), false) => bail!("give either --where or --partition, not both"),
        (Some(p), true) => Selection::Predicate(Predicate::parse(p, &report.partition_columns)?),
        (None, false) => Selection::Labels(a.partition.clone()),
        (None, true) => Selection::All,
    };
    let req = CompactRequest {
        selection,
        target_file_size: target,
        min_file_size: a.min_file_size.map(|m| m.0),
        parallelism: a.parallelism,
        max_bin_bytes: None,
        storage_options: s.open.storage_options.clone(),
    };
    let job = prepare(
        &loc,
        &req,
        s.open.thresholds,
        observed_ratio(&report.commits),
    )
    .await?;
    eprint!("{}", plan_text(&job.plan));
    if a.dry_run {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&job.plan)?);
        }
        return Ok(());
    }
    if job.plan.bins == 0 {
        eprintln!("nothing to compact");
        if a.json {
            println!(
                "{}",
                serde_json::json!({"files_removed": 0, "files_added": 0, "bytes_read": 0, "bytes_written": 0, "commits": []})
            );
        }
        return Ok(());
    }
    let plan = job.plan.clone();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("cancelling: no further commits; uncommitted output is removed");
            c2.cancel();
        }
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(async move {
        let start = Instant::now();
        let mut last = Instant::now();
        while let Some(ev) = rx.recv().await {
            match ev {
                JobEvent::Progress(p) if last.elapsed().as_secs_f64() >= 1.0 => {
                    last = Instant::now();
                    let secs = start.elapsed().as_secs_f64().max(0.001);
                    let rate = p.bytes_read as f64 / secs;
                    let eta = if rate > 0.0 {
                        format!(
                            "{:.0}s",
                            p.bytes_total.saturating_sub(p.bytes_read) as f64 / rate
                        )
                    } else {
                        "-".into()
                    };
                    eprintln!(
                        "bins {}/{}  files {}/{}  read {}  written {}  rows {}  {}/s  ETA {eta}",
                        p.bins_done,
                        p.bins_total,
                        p.files_read,
                        p.files_total,
                        format_bytes(p.bytes_read),
                        format_bytes(p.bytes_written),
                        p.rows,
                        format_bytes(rate as u64),
                    );
                }
                JobEvent::Committed(c) => eprintln!(
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
                } => {
                    eprintln!("commit failed for {}: {error}", labels(&partitions))
                }
                JobEvent::CommitUnknown {
                    partitions,
                    error,
                    kept_files,
                } => eprintln!(
                    "commit outcome unknown for {}: {error}; its {} output files are kept",
                    labels(&partitions),
                    kept_files.len()
                ),
                JobEvent::Conflict(c) => eprintln!(
                    "conflict in {}: {}; bin not committed, outputs deleted, {} bins planned again",
                    c.partition.label(),
                    c.conflict,
                    c.replanned_bins
                ),
                JobEvent::BinFailed { partition, error } => {
                    eprintln!("bin failed in {}: {error}", partition.label())
                }
                _ => {}
            }
        }
    });
    let summary = run_isolated(job, Arc::new(PartitionLocks::default()), cancel, tx).await?;
    let _ = printer.await;
    eprintln!(
        "done in {:.1}s: -{} +{} files, read {}, wrote {}, {} commits, {} conflicts, content check {:.1}s{}",
        summary.seconds,
        summary.files_removed,
        summary.files_added,
        format_bytes(summary.bytes_read),
        format_bytes(summary.bytes_written),
        summary.commits.len(),
        summary.conflicts.len(),
        summary.verify_seconds,
        if summary.cancelled {
            " (cancelled)"
        } else {
            ""
        }
    );
    if a.json {
        let mut v = serde_json::to_value(&summary)?;
        v["plan"] = serde_json::to_value(&plan)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
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
