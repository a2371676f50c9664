//! The table header: totals, health, log and vacuum summary.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::style;
use crate::engine::formats::TableFormat;
use crate::engine::formats::iceberg::IcebergDetails;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::TableReport;

pub fn draw(f: &mut Frame, area: Rect, t: &TableReport) {
    let s = &t.stats;
    let l = &t.log;
    let line1 = Line::from(vec![
        Span::styled(
            format!(" health {:>3}/100 ", s.health_score),
            style::score(s.health_score),
        ),
        Span::raw(format!(
            " v{}  {} files  {}  {} partitions  small (<{}) {} ({:.0}%)  ideal {}  excess {}",
            t.version,
            format_count(s.files),
            format_bytes(s.bytes),
            t.partitions.len(),
            format_bytes(t.thresholds.small_file_size),
            format_count(s.small_files),
            s.small_share() * 100.0,
            format_count(s.ideal_files),
            format_count(s.excess_files),
        )),
    ]);
    let line2 = Line::from(format!(
        " files min {}  median {}  mean {}  max {}   target {}{}   band {}–{}",
        format_bytes(s.min_file_size),
        format_bytes(s.median_file_size),
        format_bytes(s.mean_file_size),
        format_bytes(s.max_file_size),
        format_bytes(t.thresholds.target_file_size),
        if t.table_target_file_size.is_some() {
            " (table)"
        } else {
            ""
        },
        format_bytes(t.thresholds.small_file_size),
        format_bytes(t.thresholds.max_file_size),
    ));
    let ckpt_style = if l.checkpoint_overdue {
        style::score(0)
    } else {
        style::dim()
    };
    let line3 = Line::from(vec![
        Span::styled(
            format!(
                " log: checkpoint {} (+{} commits, {} JSON)",
                l.checkpoint_version
                    .map_or("none".into(), |v| format!("v{v}")),
                l.commits_since_checkpoint,
                format_bytes(l.json_bytes_since_checkpoint)
            ),
            ckpt_style,
        ),
        Span::raw(format!(
            "  {} in {} files  rate {}   vacuum debt {} in {} files ({} vacuumable)",
            format_bytes(l.log_bytes),
            l.log_files,
            l.commits_per_minute
                .map_or("-".into(), |r| format!("{r:.1}/min")),
            format_bytes(t.vacuum.removed_bytes),
            format_count(t.vacuum.removed_files),
            format_bytes(t.vacuum.vacuumable_bytes),
        )),
    ]);
    let line3 = t.iceberg.as_ref().map_or(line3, |i| iceberg_line(i));
    let title = Line::from(vec![
        Span::styled(format!(" {} ", t.name), style::title()),
        Span::styled(format!("{} ", t.uri), style::dim()),
        Span::styled(
            match t.format {
                TableFormat::Delta => String::new(),
                f if f.can_convert() => {
                    format!(
                        "[{}: not compacted in place; C converts it to Delta] ",
                        f.label()
                    )
                }
                f => format!("[{}: read-only] ", f.label()),
            },
            style::dim(),
        ),
    ]);
    let p = Paragraph::new(vec![line1, line2, line3])
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(p, area);
}

/// Iceberg has no checkpoints or vacuum debt: its snapshot, delete files and what
/// rewrite_data_files would do take the log line.
fn iceberg_line(i: &IcebergDetails) -> Line<'static> {
    let d = &i.delete_files;
    let r = &i.rewrite_preview;
    let deletes = format!(
        "  delete files {} ({})",
        format_count(d.files()),
        format_bytes(d.bytes())
    );
    Line::from(vec![
        Span::styled(
            format!(
                " iceberg v{}  snapshot {}  {} snapshots",
                i.format_version,
                i.snapshot_id.map_or("none".into(), |s| s.to_string()),
                i.snapshots
            ),
            style::dim(),
        ),
        if d.files() > 0 {
            Span::styled(deletes, style::score(50))
        } else {
            Span::raw(deletes)
        },
        Span::raw(format!(
            "  rewrite_data_files would rewrite {} → ~{} files (read-only)",
            format_count(r.files_in),
            format_count(r.files_out),
        )),
    ])
}
