//! `lakehealth vacuum` on an Iceberg table: snapshots older than the retention are expired
//! through the table's catalog (`--catalog`, `--table`), then the files no retained snapshot
//! references, last modified before the retention, are deleted (`--dry-run` lists both and
//! changes nothing). The plan goes to stderr (stdout with `--dry-run`), the outcome to stdout.

use anyhow::{Result, bail};

use super::args::VacuumArgs;
use super::compact_iceberg::no_catalog_text;
use super::run::Settings;
use super::vacuum::{push_files, utc};
use crate::engine::iceberg::vacuum::{
    IceVacuumOutcome, IceVacuumPlan, IceVacuumRequest, MAX_SNAPSHOT_AGE, plan_iceberg_vacuum,
    run_iceberg_vacuum,
};
use crate::engine::location::Location;
use crate::engine::model::duration::exact_secs;
use crate::engine::size::format_bytes;

pub fn plan_text(p: &IceVacuumPlan, dry_run: bool) -> String {
    let ret = std::time::Duration::from_millis(p.retention_ms);
    let table_ret = exact_secs(std::time::Duration::from_millis(p.table_retention_ms));
    let source = if p.retention_ms == p.table_retention_ms {
        format!("the table's {MAX_SNAPSHOT_AGE}")
    } else if p.retention_check {
        format!("--retention; the table's is {table_ret}")
    } else {
        format!("--retention below the table's {table_ret}, allowed by --allow-short-retention")
    };
    let would = if dry_run { "would" } else { "to" };
    let mut o = format!(
        "vacuum {}of {} ({}): retention {} ({source}); before {}\n",
        if dry_run { "dry run " } else { "" },
        p.table,
        p.catalog_table,
        exact_secs(ret),
        utc(p.cutoff_ms),
    );
    o.push_str(&format!(
        "{would} expire {} of {} snapshots (keeping at least the newest {} and every branch and tag head)\n",
        p.snapshots_to_expire.len(),
        p.snapshots_to_expire.len() + p.snapshots_kept.len(),
        p.min_snapshots_to_keep,
    ));
    o.push_str(&format!(
        "{would} delete {} files ({}) no retained snapshot references\n",
        p.files_to_delete,
        format_bytes(p.bytes_to_delete)
    ));
    push_files(
        &mut o,
        "modified",
        p.files
            .iter()
            .map(|f| (f.path.as_str(), f.bytes, f.modified_ms)),
    );
    if !p.kept.is_empty() {
        o.push_str(&format!(
            "{} unreferenced files kept (metadata files, files modified after the cutoff, running jobs' outputs, other tables' files; --json says which)\n",
            p.kept.len()
        ));
    }
    o
}

pub fn outcome_text(o: &IceVacuumOutcome) -> String {
    let mut s = format!(
        "expired {} snapshots and deleted {} files ({}) from {}\n",
        o.snapshots_expired.len(),
        o.files_deleted,
        format_bytes(o.bytes_deleted),
        o.table
    );
    if !o.skipped.is_empty() {
        s.push_str(&format!(
            "{} files of the dry run were kept: referenced, changed or gone when checked again\n",
            o.skipped.len()
        ));
    }
    s
}

pub async fn run(a: &VacuumArgs, loc: &Location, s: &Settings) -> Result<()> {
    let Some(catalog) = a.catalog.clone() else {
        bail!("{}", no_catalog_text("vacuum", &a.uri));
    };
    let req = IceVacuumRequest {
        catalog,
        table: a.table.clone(),
        retention: a.retention,
        allow_short_retention: a.allow_short_retention,
    };
    let plan = plan_iceberg_vacuum(loc, &req, &s.open).await?;
    let text = plan_text(&plan, a.dry_run);
    if a.dry_run {
        if a.json {
            let v = serde_json::json!({"dry_run": true, "plan": plan, "outcome": null});
            crate::outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            crate::out!("{text}");
        }
        return Ok(());
    }
    crate::err!("{text}");
    let outcome = run_iceberg_vacuum(loc, &req, &s.open, &plan).await?;
    if a.json {
        let v = serde_json::json!({"dry_run": false, "plan": plan, "outcome": outcome});
        crate::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::out!("{}", outcome_text(&outcome));
    }
    if !outcome.failed.is_empty() {
        bail!(
            "{} files could not be deleted: {}",
            outcome.failed.len(),
            outcome.failed.join("; ")
        );
    }
    Ok(())
}
