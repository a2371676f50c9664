//! The skipping panel (`d` on a Delta table): one bar per column, the share of files a lookup
//! of one value opens (clustering columns first and marked, then the worst), its mean and worst
//! depth, the first column's depth histogram, and the selected partition's depths.

use ratatui::style::Color;
use ratatui::text::{Line, Span};

use super::inert;
use super::preview_dialog::{Body, PreviewView, failed};
use super::style;
use crate::engine::stats::skipping::{ColumnSkipping, SkippingHealth};
use crate::tui::app::SkippingDialog;

/// Width of a column's bar.
const BAR: usize = 24;
/// Columns listed (the report's `--json` has them all).
const COLUMNS: usize = 12;

pub fn view(d: &SkippingDialog) -> PreviewView<'_> {
    let lines = match &d.result {
        None => vec![Line::from(format!(
            "reading the file statistics of {} ...",
            d.table_uri
        ))],
        Some(Err(e)) => failed(format!("cannot measure skipping: {e}"), "Esc close"),
        Some(Ok(h)) => health_lines(h, d.request.partition.as_ref()),
    };
    PreviewView {
        title: " Skipping: files a lookup of one value opens ",
        border: Color::Cyan,
        width: 90,
        height: 30,
        body: Body::Lines(lines, None),
    }
}

fn health_lines(
    h: &SkippingHealth,
    partition: Option<&crate::engine::model::partition::PartitionValues>,
) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        format!(
            " version {}, {} files; from the log's min/max statistics (no data read)",
            h.version, h.files
        ),
        style::dim(),
    ))];
    if h.columns.is_empty() {
        lines.push(Line::from(
            " no column has min/max statistics: every query opens every file",
        ));
        return lines;
    }
    let width = h
        .columns
        .iter()
        .take(COLUMNS)
        .map(|c| c.column.chars().count() + 2)
        .max()
        .unwrap_or(6)
        .clamp(6, 28);
    lines.push(Line::from(Span::styled(
        format!(
            " {:width$}  {:BAR$}  {:>12}  {:>6}  {:>6}",
            "column", "opened by a lookup", "opens", "mean", "worst"
        ),
        style::dim(),
    )));
    for c in h.columns.iter().take(COLUMNS) {
        lines.push(column_line(c, width));
    }
    if h.columns.len() > COLUMNS {
        lines.push(Line::from(Span::styled(
            format!(
                " ... and {} more (`lakehealth report --skipping --json`)",
                h.columns.len() - COLUMNS
            ),
            style::dim(),
        )));
    }
    if let Some(note) = crate::engine::stats::skipping::without_stats_note(h) {
        lines.push(Line::from(Span::styled(
            format!(" {note}"),
            style::score(30),
        )));
    }
    if !h.clustering_columns.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " * {} ({})",
                h.source.declared(),
                h.clustering_columns.join(", ")
            ),
            style::dim(),
        )));
    }
    for f in &h.findings {
        lines.push(Line::from(Span::styled(
            format!(" {}", inert::text(&f.message_for(h.source))),
            style::score(30),
        )));
    }
    if let Some(first) = h.columns.first() {
        lines.push(Line::from(""));
        lines.push(Line::from(format!(
            " files by depth of {}:",
            inert::text(&first.column)
        )));
        let most = first
            .depth
            .histogram
            .iter()
            .map(|b| b.files)
            .max()
            .unwrap_or(0)
            .max(1);
        // Empty buckets below the first file are one line, so deep tables fit the panel.
        let hist = &first.depth.histogram;
        let skip = hist.iter().take_while(|b| b.files == 0).count();
        let mut from = skip.checked_sub(1).map_or(0, |i| hist[i].upto);
        if from > 0 {
            lines.push(Line::from(format!(
                "   {:>9}  {:>6}",
                format!("1-{from}"),
                0
            )));
        }
        for b in &hist[skip..] {
            let label = if b.upto == from + 1 {
                b.upto.to_string()
            } else {
                format!("{}-{}", from + 1, b.upto)
            };
            from = b.upto;
            lines.push(Line::from(format!(
                "   {label:>9}  {:>6}  {}",
                b.files,
                "█".repeat((b.files * BAR).div_ceil(most))
            )));
        }
    }
    if let Some(p) = partition.and_then(|p| h.partitions.iter().find(|x| x.partition == *p)) {
        lines.push(Line::from(""));
        lines.push(Line::from(format!(
            " partition {} ({} files):",
            p.partition.label(),
            p.files
        )));
        for c in p.columns.iter().take(4) {
            lines.push(Line::from(format!(
                "   {:width$}  mean depth {:.1}  worst {}  skipped {:.0}%",
                c.column,
                c.mean_depth,
                c.worst_depth,
                c.skipped_share * 100.0
            )));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(" Esc close", style::dim())));
    lines
}

fn column_line(c: &ColumnSkipping, width: usize) -> Line<'static> {
    let d = &c.depth;
    let share = if d.files == 0 {
        0.0
    } else {
        d.point_files / d.files as f64
    };
    let filled = ((share * BAR as f64).ceil() as usize).min(BAR);
    let name = if c.clustering {
        format!("{} *", c.column)
    } else {
        c.column.clone()
    };
    // Green when a lookup opens few files, red when it opens most.
    let score = ((1.0 - share) * 100.0).round() as u8;
    Line::from(vec![
        Span::raw(format!(" {name:width$}  ")),
        Span::styled("█".repeat(filled), style::score(score)),
        Span::raw(format!(
            "{}  {:>12}  {:>6.1}  {:>6}",
            " ".repeat(BAR - filled),
            format!("{:.1} files", d.point_files),
            d.mean,
            d.worst
        )),
    ])
}
