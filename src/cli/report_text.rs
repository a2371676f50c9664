//! Plain-text rendering of reports for `lakehealth report` (no terminal UI involved).

use std::fmt::Write;

use crate::engine::model::format::TableFormat;
use crate::engine::open::RootReport;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::details::IcebergDetails;
use crate::engine::stats::histogram::{Band, Histogram};
use crate::engine::stats::table_report::TableReport;

pub fn histogram_text(h: &Histogram, out: &mut String) {
    let max = h.buckets.iter().map(|b| b.files).max().unwrap_or(0).max(1);
    for b in &h.buckets {
        let label = match b.max_bytes {
            Some(hi) => format!("{:>9} – {:<9}", format_bytes(b.min_bytes), format_bytes(hi)),
            None => format!("{:>9} +{:10}", format_bytes(b.min_bytes), ""),
        };
        let bar = "█".repeat(((b.files * 30).div_ceil(max)) as usize);
        let mark = match b.band {
            Band::Target => "  ◀ target band",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {label} {:>8} files {:>10}  {bar}{mark}",
            b.files,
            format_bytes(b.bytes)
        );
    }
}

/// Findings first among the notes: they mean the table's data is already wrong.
pub fn findings_text(t: &TableReport, out: &mut String) {
    let checked = t.findings_checked.describe();
    if t.findings.is_empty() {
        let _ = writeln!(out, "findings: none (checked {checked})");
        return;
    }
    let _ = writeln!(out, "findings (checked {checked}):");
    for f in &t.findings {
        let _ = writeln!(out, "  ! {}", f.message);
    }
}

/// Partitions listed under the deleted rows (most deleted first).
const DELETED_ROWS_PARTITIONS: usize = 10;

/// Rows deletion vectors mark deleted: the table's total and per partition.
fn deleted_rows_text(t: &TableReport, out: &mut String) {
    let Some(d) = &t.deleted_rows else {
        return;
    };
    let pct = |deleted: u64, rows: u64| {
        if rows == 0 {
            0.0
        } else {
            100.0 * deleted as f64 / rows as f64
        }
    };
    let _ = writeln!(
        out,
        "deleted rows: {} of {} ({:.1} %) in {} files with deletion vectors; {} over {} %",
        format_count(d.deleted_rows),
        format_count(d.rows),
        pct(d.deleted_rows, d.rows),
        d.files_with_deletion_vectors,
        d.files_over_ratio.len(),
        d.max_deleted_ratio * 100.0
    );
    for p in d.partitions.iter().take(DELETED_ROWS_PARTITIONS) {
        let _ = writeln!(
            out,
            "  {:<40} {:>10} of {:>10} rows deleted ({:.1} %), {} files",
            p.values.label(),
            format_count(p.deleted_rows),
            format_count(p.rows),
            p.deleted_share * 100.0,
            p.files_with_deletion_vectors
        );
    }
    if d.partitions.len() > DELETED_ROWS_PARTITIONS {
        let _ = writeln!(
            out,
            "  ... and {} more partitions (--json lists them all)",
            d.partitions.len() - DELETED_ROWS_PARTITIONS
        );
    }
}

pub fn table_text(t: &TableReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}  ({}, {})", t.name, t.uri, t.format.label());
    sizes_text(t, &mut o);
    match (t.format, &t.iceberg) {
        (_, Some(i)) => {
            iceberg_text(t, i, &mut o);
            // `--skipping`'s (a sort-order column past its bound); Iceberg has no other.
            if !t.findings.is_empty() {
                findings_text(t, &mut o);
            }
            if let Some(h) = &t.skipping {
                super::report_skipping::skipping_text(h, &mut o);
            }
        }
        (TableFormat::ParquetFolder, _) => {}
        (TableFormat::SparkFileSink, _) => sink_text(t, &mut o),
        _ => {
            log_text(t, &mut o);
            findings_text(t, &mut o);
            deleted_rows_text(t, &mut o);
            orphans_text(t, &mut o);
            if let Some(h) = &t.skipping {
                super::report_skipping::skipping_text(h, &mut o);
            }
        }
    }
    folder_text(t, &mut o);
    // Iceberg's own section already says why (and what to run instead).
    if t.iceberg.is_none()
        && let Some(why) = t.format.why_not_compactable()
    {
        let _ = writeln!(o, "compaction: not available: {why}");
    }
    for w in &t.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    let _ = writeln!(o, "\nfile sizes:");
    histogram_text(&t.stats.histogram, &mut o);
    partitions_text(t, &mut o);
    o
}

/// Files, bytes, health and the size distribution of the whole table.
fn sizes_text(t: &TableReport, o: &mut String) {
    let s = &t.stats;
    let _ = writeln!(
        o,
        "version {}  files {}  bytes {}  health {}/100",
        t.version,
        s.files,
        format_bytes(s.bytes),
        s.health_score
    );
    let _ = writeln!(
        o,
        "small files (< {}) {} ({:.0}%), {}  ideal {}  excess {}",
        format_bytes(t.thresholds.small_file_size),
        s.small_files,
        s.small_share() * 100.0,
        format_bytes(s.small_bytes),
        s.ideal_files,
        s.excess_files
    );
    let _ = writeln!(
        o,
        "file size min {}  median {}  mean {}  max {}  target {}{}",
        format_bytes(s.min_file_size),
        format_bytes(s.median_file_size),
        format_bytes(s.mean_file_size),
        format_bytes(s.max_file_size),
        format_bytes(t.thresholds.target_file_size),
        match (t.table_target_file_size, &t.iceberg) {
            (Some(_), Some(_)) => " (write.target-file-size-bytes)",
            (Some(_), None) => " (delta.targetFileSize)",
            _ => "",
        }
    );
}

/// Log health, vacuum debt and streaming writers.
fn log_text(t: &TableReport, o: &mut String) {
    let l = &t.log;
    let _ = writeln!(
        o,
        "log: checkpoint {}  commits since {}  log size {}  {} files  rate {}",
        l.checkpoint_version
            .map_or("none".into(), |v| v.to_string()),
        l.commits_since_checkpoint,
        format_bytes(l.log_bytes),
        l.log_files,
        l.commits_per_minute
            .map_or("-".into(), |r| format!("{r:.1}/min"))
    );
    let ops: Vec<String> = l
        .operations
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(
        o,
        "operations (last {} commits): {}",
        l.window_commits,
        ops.join(", ")
    );
    let r = &l.rewrite;
    if r.compaction_bytes > 0 {
        let janitor = match r.write_amplification {
            Some(wa) => format!(
                "the janitor wrote {} for {} the writers wrote ({wa:.2}x)",
                format_bytes(r.janitor_bytes),
                format_bytes(r.writer_bytes)
            ),
            None => format!("the janitor wrote {}", format_bytes(r.janitor_bytes)),
        };
        // Re-clustering keeps the layout, not the file count: its price is said apart.
        let recluster = match (r.recluster_bytes, r.recluster_amplification) {
            (0, _) => String::new(),
            (b, Some(x)) => format!(
                "; re-clustering (max_depth) wrote {} ({x:.2}x)",
                format_bytes(b)
            ),
            (b, None) => format!("; re-clustering (max_depth) wrote {}", format_bytes(b)),
        };
        let _ = writeln!(
            o,
            "rewrites (last {} commits): {janitor}{recluster}; other compactions (by hand, other engines) {}",
            l.window_commits,
            format_bytes(r.other_bytes()),
        );
    }
    let _ = writeln!(
        o,
        "vacuum debt: {} removed files, {} ({} past the {}h retention)",
        t.vacuum.removed_files,
        format_bytes(t.vacuum.removed_bytes),
        format_bytes(t.vacuum.vacuumable_bytes),
        t.vacuum.retention_hours
    );
    for w in &t.streaming_writers {
        let _ = writeln!(
            o,
            "streaming writer {}: batch {}{}",
            w.app_id,
            w.last_batch,
            w.batches_per_minute
                .map_or(String::new(), |r| format!(", {r:.1} batches/min"))
        );
    }
}

/// A Spark sink's log: batches, their rate, the last one's time.
fn sink_text(t: &TableReport, o: &mut String) {
    let l = &t.log;
    let _ = writeln!(
        o,
        "sink log: batch {}  compacted at {}  {} log files ({})  rate {}  last batch {}",
        t.version,
        l.checkpoint_version
            .map_or("none".into(), |v| v.to_string()),
        l.log_files,
        format_bytes(l.log_bytes),
        l.commits_per_minute
            .map_or("-".into(), |r| format!("{r:.1}/min")),
        l.last_commit_ms
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map_or("-".into(), |t| t.to_rfc3339())
    );
}

fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// Files in the table's folders that no version references (Delta, when they were listed).
pub fn orphans_text(t: &TableReport, o: &mut String) {
    let Some(s) = &t.orphans else { return };
    let age = crate::engine::model::duration::exact(std::time::Duration::from_millis(s.min_age_ms));
    if s.files == 0 {
        let _ = writeln!(
            o,
            "orphans: none (data files no version references, older than {age})"
        );
    } else {
        let _ = writeln!(
            o,
            "orphans: {} files, {} (no version up to {} references them, no running job owns them, older than {age}; `lakehealth vacuum` deletes them past its retention):",
            s.files,
            format_bytes(s.bytes),
            s.version
        );
        for f in &s.orphans {
            let _ = writeln!(
                o,
                "  {:<72} {:>10}  modified {}",
                f.path,
                format_bytes(f.bytes),
                utc(f.modified_ms)
            );
        }
        if s.files > s.orphans.len() as u64 {
            let _ = writeln!(
                o,
                "  ... and {} more (--json: the first {})",
                s.files - s.orphans.len() as u64,
                s.orphans.len()
            );
        }
    }
    let jobs = s.jobs.join(", ");
    for (what, g) in [
        (
            format!("unreferenced files younger than {age} (a writer may still commit them)"),
            &s.recent,
        ),
        (
            format!(
                "outputs of unsettled lakehealth jobs ({jobs}; `lakehealth compact --pickup` settles them)"
            ),
            &s.job_owned,
        ),
        (
            "unreferenced files of partitions a compaction is rewriting".to_string(),
            &s.in_flight,
        ),
        (
            "unreferenced files behind symbolic links (never deleted)".to_string(),
            &s.behind_symlinks,
        ),
        (
            "files of another table inside this one's folder (never deleted)".to_string(),
            &s.in_other_tables,
        ),
    ] {
        if g.files > 0 {
            let _ = writeln!(o, "{what}: {} files, {}", g.files, format_bytes(g.bytes));
        }
    }
    if !s.unreadable_job_files.is_empty() {
        let _ = writeln!(
            o,
            "unreadable job files (no orphan is deleted while they remain): {}",
            s.unreadable_job_files.join(", ")
        );
    }
}

/// What the listing cost, and the files beside the data (orphans of a sink apart).
fn folder_text(t: &TableReport, o: &mut String) {
    let Some(f) = &t.folder else { return };
    let _ = writeln!(
        o,
        "listing: {} objects{} in {:.1}s",
        format_count(f.listing.objects_listed),
        f.listing
            .list_requests
            .map_or(String::new(), |r| format!(", {r} list requests")),
        f.listing.seconds
    );
    for (what, g) in [
        ("orphans (not in the sink log)", f.orphans.as_ref()),
        (
            "missing (in the sink log, not in the folder)",
            f.missing.as_ref(),
        ),
        ("hidden files", Some(&f.hidden_files)),
        ("other files", Some(&f.other_files)),
    ] {
        if let Some(g) = g.filter(|g| g.files > 0) {
            let _ = writeln!(o, "{what}: {} files, {}", g.files, format_bytes(g.bytes));
        }
    }
}

/// Iceberg's snapshot, delete files, snapshot history and the rewrite_data_files preview.
fn iceberg_text(t: &TableReport, i: &IcebergDetails, o: &mut String) {
    let _ = writeln!(o, "{}", i.summary());
    let _ = writeln!(o, "metadata: {}", i.metadata_file);
    let _ = writeln!(
        o,
        "delete files: {} ({}): {}",
        i.delete_files.files(),
        format_bytes(i.delete_files.bytes()),
        i.delete_files.describe()
    );
    let ops: Vec<String> = t
        .log
        .operations
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(
        o,
        "snapshots: {}  operations: {}  rate {}",
        t.commits.len(),
        ops.join(", "),
        t.log
            .commits_per_minute
            .map_or("-".into(), |r| format!("{r:.1}/min"))
    );
    let _ = writeln!(o, "{}", i.rewrite_summary());
    let _ = writeln!(
        o,
        "compaction: through the table's catalog (lakehealth compact TABLE --catalog sqlite:///FILE)"
    );
}

/// One line per partition, most excess files first.
fn partitions_text(t: &TableReport, o: &mut String) {
    let _ = writeln!(
        o,
        "\n{:<40} {:>8} {:>10} {:>7} {:>8} {:>6}",
        "partition", "files", "bytes", "small%", "excess", "health"
    );
    let mut parts: Vec<_> = t.partitions.iter().collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.stats.excess_files));
    for p in parts {
        let _ = writeln!(
            o,
            "{:<40} {:>8} {:>10} {:>6.0}% {:>8} {:>6}",
            p.values.label(),
            p.stats.files,
            format_bytes(p.stats.bytes),
            p.stats.small_share() * 100.0,
            p.stats.excess_files,
            p.stats.health_score
        );
    }
}

pub fn root_text(r: &RootReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}: {} tables (worst first)", r.root, r.tables.len());
    let _ = writeln!(
        o,
        "{:<32} {:<10} {:>8} {:>8} {:>10} {:>7} {:>8} {:>6}",
        "table", "format", "version", "files", "bytes", "small%", "excess", "health"
    );
    for t in &r.tables {
        let _ = writeln!(
            o,
            "{:<32} {:<10} {:>8} {:>8} {:>10} {:>6.0}% {:>8} {:>6}",
            t.name,
            t.format.label(),
            t.version,
            format_count(t.stats.files),
            format_bytes(t.stats.bytes),
            t.stats.small_share() * 100.0,
            t.stats.excess_files,
            t.stats.health_score
        );
    }
    for e in &r.errors {
        let _ = writeln!(o, "error: {}: {}", e.uri, e.error);
    }
    o
}
