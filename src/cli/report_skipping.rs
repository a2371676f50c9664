//! `report --skipping`: each Delta or Iceberg table opened gets its skipping health (a
//! clustering or sort-order column past its bound becomes one of its findings), and the text
//! section: each column's overlap depth (how many files a lookup of one value opens), declared
//! columns first and marked, then the worst partitions.

use std::fmt::Write;

use futures::StreamExt;

use crate::engine::formats::skipping_health;
use crate::engine::location::Location;
use crate::engine::model::format::TableFormat;
use crate::engine::open::Opened;
use crate::engine::options::OpenOptions;
use crate::engine::stats::findings::skipping_findings;
use crate::engine::stats::skipping::SkippingHealth;
use crate::engine::stats::skipping::depth::Depth;
use crate::engine::stats::table_report::TableReport;

/// Measures one table (a Delta table's statistics from its log, an Iceberg table's from its
/// manifests' bounds); a failure is a warning of its report, not the command's end.
async fn attach(t: &mut TableReport, open: &OpenOptions) {
    let measured = match Location::parse(&t.uri) {
        Ok(loc) => skipping_health(&loc, t.format, open).await,
        Err(e) => Err(e),
    };
    match measured {
        Ok(h) => {
            t.findings.extend(skipping_findings(&h));
            t.skipping = Some(Box::new(h));
        }
        Err(e) => t.warnings.push(format!(
            "file statistics could not be read for skipping: {e}"
        )),
    }
}

/// `attach` for every Delta and Iceberg table opened (4 at a time under a root).
pub async fn attach_skipping_to(opened: &mut Opened, open: &OpenOptions) {
    let tables: Vec<&mut TableReport> = match opened {
        Opened::Table(t) => vec![t.as_mut()],
        Opened::Root(r) => r.tables.iter_mut().collect(),
    };
    futures::stream::iter(tables)
        .filter(|t| {
            std::future::ready(matches!(
                t.format,
                TableFormat::Delta | TableFormat::Iceberg
            ))
        })
        .for_each_concurrent(4, |t| attach(t, open))
        .await;
}

/// Columns listed in text (all of them in `--json`).
const COLUMNS_SHOWN: usize = 12;
/// Partitions listed in text.
const PARTITIONS_SHOWN: usize = 5;

pub fn skipping_text(h: &SkippingHealth, o: &mut String) {
    let _ = writeln!(
        o,
        "skipping (version {}, {} files; from {}, no data read):",
        h.version,
        h.files,
        h.source.describe()
    );
    if h.columns.is_empty() {
        let _ = writeln!(o, "  no column has min/max statistics");
        return;
    }
    let width = h
        .columns
        .iter()
        .take(COLUMNS_SHOWN)
        .map(|c| c.column.chars().count() + 2)
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        o,
        "  {:width$}  {:>10}  {:>6}  {:>12}  {:>7}",
        "column", "mean depth", "worst", "lookup opens", "skipped"
    );
    for c in h.columns.iter().take(COLUMNS_SHOWN) {
        let name = if c.clustering {
            format!("{} *", c.column)
        } else {
            c.column.clone()
        };
        let _ = writeln!(
            o,
            "  {name:width$}  {:>10.1}  {:>6}  {:>12}  {:>6.0}%  {}",
            c.depth.mean,
            c.depth.worst,
            format!("{:.1} files", c.depth.point_files),
            c.depth.skipped_share * 100.0,
            bar(&c.depth, 20),
        );
    }
    if h.columns.len() > COLUMNS_SHOWN {
        let _ = writeln!(
            o,
            "  ... and {} more columns (--json lists them all)",
            h.columns.len() - COLUMNS_SHOWN
        );
    }
    if let Some(note) = crate::engine::stats::skipping::without_stats_note(h) {
        let _ = writeln!(o, "  {note}");
    }
    if !h.clustering_columns.is_empty() {
        let _ = writeln!(
            o,
            "  * {} ({})",
            h.source.declared(),
            h.clustering_columns.join(", ")
        );
    }
    if let Some(first) = h.columns.first() {
        let buckets: Vec<String> = first
            .depth
            .histogram
            .iter()
            .scan(0usize, |from, b| {
                let label = if b.upto == *from + 1 {
                    b.upto.to_string()
                } else {
                    format!("{}-{}", *from + 1, b.upto)
                };
                *from = b.upto;
                Some(format!("{label}: {}", b.files))
            })
            .collect();
        let _ = writeln!(
            o,
            "  files by depth of {}: {}",
            first.column,
            buckets.join(", ")
        );
    }
    partitions_text(h, o);
}

/// How much of the bar the lookup's files fill: a full bar opens every file.
fn bar(d: &Depth, width: usize) -> String {
    if d.files == 0 {
        return String::new();
    }
    let filled = ((d.point_files / d.files as f64) * width as f64).ceil() as usize;
    "█".repeat(filled.min(width))
}

fn partitions_text(h: &SkippingHealth, o: &mut String) {
    let Some(column) = h.columns.first().map(|c| c.column.as_str()) else {
        return;
    };
    if h.partitions.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "  worst partitions by {column} ({} partitions):",
        h.partitions_total
    );
    for p in h.partitions.iter().take(PARTITIONS_SHOWN) {
        if let Some(c) = p.columns.first() {
            let _ = writeln!(
                o,
                "    {}  {} files  mean depth {:.1}  worst {}  skipped {:.0}%",
                p.partition.label(),
                p.files,
                c.mean_depth,
                c.worst_depth,
                c.skipped_share * 100.0
            );
        }
    }
}
