//! `lakehealth vacuum`: deletes the data files the log removed longer ago than the retention,
//! and the orphan files (no version references them) last modified longer ago than it
//! (`--dry-run` lists both and deletes nothing). The plan is printed first; the real run
//! deletes exactly the removed files listed or nothing, and of the orphans listed those still
//! orphans when checked again.

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::args::VacuumArgs;
use super::run::Settings;
use crate::engine::location::Location;
use crate::engine::maintenance::orphans::{
    MIN_ORPHAN_AGE, OrphanOutcome, OrphanPlan, delete_orphans, plan_orphans,
};
use crate::engine::maintenance::vacuum::{
    VacuumEvent, VacuumOutcome, VacuumPlan, VacuumRequest, plan_vacuum, run_vacuum,
};
use crate::engine::model::duration::exact_secs;
use crate::engine::secrets::scrub;
use crate::engine::size::format_bytes;

/// Paths listed in the text output (all of them with --json).
pub(super) const LISTED: usize = 20;

pub(super) fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

pub fn plan_text(p: &VacuumPlan, dry_run: bool) -> String {
    let ret = std::time::Duration::from_millis(p.retention_ms);
    let source = if p.retention_ms == p.table_retention_ms {
        "the table's delta.deletedFileRetentionDuration".to_string()
    } else if p.retention_check {
        format!(
            "--retention; the table's is {}",
            exact_secs(std::time::Duration::from_millis(p.table_retention_ms))
        )
    } else {
        format!(
            "--retention below the table's {}, allowed by --allow-short-retention",
            exact_secs(std::time::Duration::from_millis(p.table_retention_ms))
        )
    };
    let mut o = format!(
        "vacuum {}of {} at version {}: retention {} ({source}); files removed before {}\n",
        if dry_run { "dry run " } else { "" },
        p.table,
        p.version,
        exact_secs(ret),
        utc(p.cutoff_ms),
    );
    o.push_str(&format!(
        "{} {} files ({})\n",
        if dry_run {
            "would delete"
        } else {
            "to delete:"
        },
        p.files_to_delete,
        format_bytes(p.bytes_to_delete)
    ));
    push_files(
        &mut o,
        "removed",
        p.files
            .iter()
            .map(|f| (f.path.as_str(), f.bytes, f.removed_at_ms)),
    );
    if !p.already_gone.is_empty() {
        o.push_str(&format!(
            "{} files past the retention are already gone from storage\n",
            p.already_gone.len()
        ));
    }
    o.push_str(&format!(
        "removed files in the log: {} ({}), {} inside the retention\n",
        p.debt.removed_files,
        format_bytes(p.debt.removed_bytes),
        p.debt.removed_files.saturating_sub(p.debt.vacuumable_files)
    ));
    o
}

/// The orphans part of the plan: what is deleted, and the unreferenced files that are kept.
pub fn orphan_plan_text(p: &OrphanPlan, dry_run: bool) -> String {
    let s = &p.scan;
    let mut o = format!(
        "orphan files (no version up to {} references them, no running job owns them): {} {} files ({}) last modified before {} (the retention, at least {})\n",
        s.version,
        if dry_run {
            "would delete"
        } else {
            "to delete:"
        },
        p.files_to_delete,
        format_bytes(p.bytes_to_delete),
        utc(p.cutoff_ms),
        exact_secs(MIN_ORPHAN_AGE),
    );
    if let Some(why) = &p.refused {
        o.push_str(&format!(
            "  {} orphan files ({}) are kept: {why}\n",
            s.files,
            format_bytes(s.bytes)
        ));
    }
    for f in s.orphans.iter().take(LISTED) {
        o.push_str(&format!(
            "  {:<72} {:>10}  modified {}\n",
            f.path,
            format_bytes(f.bytes),
            utc(f.modified_ms)
        ));
    }
    if s.orphans.len() > LISTED {
        o.push_str(&format!(
            "  ... and {} more (--json lists all)\n",
            s.orphans.len() - LISTED
        ));
    }
    let jobs = s.jobs.join(", ");
    for (what, g) in [
        ("unreferenced files inside the retention, kept", &s.recent),
        (
            &*format!(
                "outputs of unsettled lakehealth jobs ({jobs}), kept: `lakehealth compact --pickup` settles them"
            ),
            &s.job_owned,
        ),
        (
            "unreferenced files of partitions a compaction is rewriting, kept",
            &s.in_flight,
        ),
        (
            "unreferenced files behind symbolic links, never deleted",
            &s.behind_symlinks,
        ),
    ] {
        if g.files > 0 {
            o.push_str(&format!(
                "  {what}: {} files ({})\n",
                g.files,
                format_bytes(g.bytes)
            ));
        }
    }
    o
}

pub fn orphan_outcome_text(o: &OrphanOutcome) -> String {
    let mut t = String::new();
    if o.files_deleted > 0 {
        t.push_str(&format!(
            "deleted {} orphan files ({})\n",
            o.files_deleted,
            format_bytes(o.bytes_deleted)
        ));
    }
    if !o.skipped.is_empty() {
        t.push_str(&format!(
            "kept {} planned orphan files: no longer orphans when checked again\n",
            o.skipped.len()
        ));
    }
    for f in &o.failed {
        t.push_str(&format!("could not delete orphan file {f}\n"));
    }
    t
}

pub fn outcome_text(o: &VacuumOutcome) -> String {
    match (o.vacuum_start_version, o.vacuum_end_version) {
        _ if o.files_deleted == 0 => {
            format!("nothing to delete in {}; no commit written\n", o.table)
        }
        (start, Some(end)) => format!(
            "deleted {} files ({}) from {}; VACUUM START at version {}, VACUUM END at version {end}\n",
            o.files_deleted,
            format_bytes(o.bytes_deleted),
            o.table,
            start.map_or("?".to_string(), |s| s.to_string()),
        ),
        (_, None) => format!(
            "deleted {} files ({}) from {}\n",
            o.files_deleted,
            format_bytes(o.bytes_deleted),
            o.table
        ),
    }
}

pub async fn run(a: VacuumArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    // A location that cannot be listed is left to the Delta path, which says why.
    if crate::engine::iceberg::is_iceberg_location(&loc, &s.open)
        .await
        .unwrap_or(false)
    {
        return super::vacuum_iceberg::run(&a, &loc, s).await;
    }
    let req = VacuumRequest {
        retention: a.retention,
        allow_short_retention: a.allow_short_retention,
        storage_options: s.open.storage_options.clone(),
    };
    let plan = plan_vacuum(&loc, &req).await?;
    let retention = std::time::Duration::from_millis(plan.retention_ms);
    // Orphans that cannot be checked do not hold up the removed files: said, and exit 1.
    let orphans = plan_orphans(&loc, &req.storage_options, plan.now_ms, retention)
        .await
        .map_err(|e| scrub(&e.to_string()).into_owned());
    let text = plan_text(&plan, a.dry_run)
        + &match &orphans {
            Ok(o) => orphan_plan_text(o, a.dry_run),
            Err(e) => format!("orphan files could not be checked: {e}\n"),
        };
    let orphans_json = |outcome: serde_json::Value| match &orphans {
        Ok(p) => serde_json::json!({ "plan": p, "outcome": outcome }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    if a.dry_run {
        if a.json {
            let v = serde_json::json!({
                "dry_run": true, "plan": plan, "outcome": null,
                "orphans": orphans_json(serde_json::Value::Null),
            });
            crate::outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            crate::out!("{text}");
        }
        return orphans
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("orphan files could not be checked: {e}"));
    }
    crate::err!("{text}");
    let cancel = CancellationToken::new();
    let outcome = run_vacuum(&loc, &req, &plan, &cancel, &|ev| {
        if let VacuumEvent::Deleting { files, bytes } = ev {
            crate::errln!("deleting {files} files ({})", format_bytes(bytes));
        }
    })
    .await?;
    let deleted = match &orphans {
        Ok(p) => delete_orphans(&loc, &req.storage_options, p, &cancel).await?,
        Err(_) => OrphanOutcome::default(),
    };
    if a.json {
        let v = serde_json::json!({
            "dry_run": false, "plan": plan, "outcome": outcome,
            "orphans": orphans_json(serde_json::to_value(&deleted)?),
        });
        crate::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        // "Nothing to delete" would read wrong above the orphans it did delete.
        if outcome.files_deleted > 0 || deleted.files_deleted == 0 {
            crate::out!("{}", outcome_text(&outcome));
        }
        crate::out!("{}", orphan_outcome_text(&deleted));
    }
    if let Err(e) = &orphans {
        anyhow::bail!("orphan files could not be checked: {e}");
    }
    if !deleted.failed.is_empty() {
        anyhow::bail!(
            "{} orphan files could not be deleted: {}",
            deleted.failed.len(),
            deleted.failed.join("; ")
        );
    }
    Ok(())
}

/// The first `LISTED` of `files` (path, bytes, when `what` happened to it), one line each, then
/// how many more `--json` lists.
pub(super) fn push_files<'a>(
    o: &mut String,
    what: &str,
    files: impl ExactSizeIterator<Item = (&'a str, u64, i64)>,
) {
    let n = files.len();
    for (path, bytes, ms) in files.take(LISTED) {
        o.push_str(&format!(
            "  {path:<72} {:>10}  {what} {}\n",
            format_bytes(bytes),
            utc(ms)
        ));
    }
    if n > LISTED {
        o.push_str(&format!(
            "  ... and {} more (--json lists all)\n",
            n - LISTED
        ));
    }
}
