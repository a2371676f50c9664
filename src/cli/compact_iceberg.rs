//! `lakehealth compact` on an Iceberg table: the commit goes through the table's catalog
//! (`--catalog`, `--table`); the plan and every commit, conflict and failure on stderr, the
//! summary on stdout with `--json`.

use anyhow::{Result, bail};

use super::args::CompactArgs;
use super::run::Settings;
use crate::engine::compact::ordering::LayoutRequest;
use crate::engine::iceberg::compact::job::{
    IceEvent, IceRequest, MAX_RETRIES, compact_iceberg, event_text,
};
use crate::engine::iceberg::compact::order::OrderRequest;
use crate::engine::location::Location;

/// What to say when `command` (`compact`, `vacuum`) is given an Iceberg table and no catalog.
pub fn no_catalog_text(command: &str, uri: &str) -> String {
    format!(
        "an Iceberg table is committed through its catalog: name it with --catalog sqlite:///FILE \
         (the SQL catalog's database, as pyiceberg's SqlCatalog keeps it; sqlite:////abs/path for an absolute path), \
         --catalog postgresql://USER@HOST:PORT/DATABASE (the same SQL catalog on PostgreSQL; password from PGPASSWORD) \
         or --catalog http(s)://HOST:PORT (a REST catalog). \
         The table is found by its location, or named with --table NAMESPACE.NAME. \
         e.g. lakehealth {command} {uri} --catalog sqlite:////path/to/catalog.db"
    )
}

pub async fn compact(a: &CompactArgs, loc: &Location, s: &Settings) -> Result<()> {
    let Some(catalog) = a.catalog.clone() else {
        bail!("{}", no_catalog_text("compact", &a.uri));
    };
    if a.predicate.is_some() && !a.partition.is_empty() {
        bail!("give either --where or --partition, not both");
    }
    let order = match super::compact::layout(a) {
        LayoutRequest::Order {
            kind,
            columns,
            whole_partitions,
        } => Some(OrderRequest {
            kind,
            columns,
            whole_partitions,
        }),
        // Iceberg tables have no clustering: rows as read either way.
        LayoutRequest::Auto | LayoutRequest::Unclustered => None,
    };
    let req = IceRequest {
        catalog,
        table: a.table.clone(),
        target_file_size: s.target_override,
        partitions: a.partition.clone(),
        predicate: a.predicate.clone(),
        order,
        sort_memory: a.sort_memory.map_or(0, |m| m.0 as usize),
        dry_run: a.dry_run,
        max_retries: MAX_RETRIES,
        before_commit: None,
        // Ctrl-C stops before the next bin: no bin is left half-committed.
        cancel: (!a.dry_run).then(super::compact::cancel_on_ctrl_c),
    };
    let print = |e: &IceEvent| crate::errln!("{}", crate::engine::secrets::scrub(&event_text(e)));
    let summary = compact_iceberg(loc, &req, &s.open, &print).await?;
    if !a.dry_run {
        crate::errln!("{}", summary.summary_line());
        if let Some(line) = summary.cost_line() {
            crate::errln!("{line}");
        }
    }
    if summary.cancelled {
        crate::errln!("cancelled: stopped before the next bin; the snapshots committed above stay");
    }
    if a.json {
        let text = serde_json::to_string_pretty(&summary)?;
        crate::outln!("{}", crate::engine::secrets::scrub(&text));
    }
    if !summary.failures.is_empty() {
        bail!(
            "{} bins failed: {}",
            summary.failures.len(),
            summary
                .failures
                .iter()
                .map(|f| format!("{}: {}", f.partition, f.error))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}
