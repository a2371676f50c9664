//! The table header: totals, health, log and vacuum summary. Its items flow onto as many rows as
//! the width needs (`header_lines`), so no number is cut at any width.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::inert;
use super::{ago, fit, style};
use crate::engine::model::format::TableFormat;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::details::IcebergDetails;
use crate::engine::stats::table_report::TableReport;

type Item = Vec<Span<'static>>;

fn raw(s: String) -> Item {
    vec![Span::raw(s)]
}

/// How something that commits now and then is doing: at its rate, or stopped (its last commit
/// is older than a few of its usual intervals, so a rate would be a stale number).
#[derive(Debug, Clone, PartialEq)]
pub enum Activity {
    Rate(f64),
    Stopped { last_ms: i64 },
    Unknown,
}

/// Usual intervals without a commit after which a writer (or a table) counts as stopped.
const STOPPED_AFTER_INTERVALS: f64 = 3.0;
/// Never stopped sooner than this, whatever the rate (a fast writer's pause is not a stop).
const STOPPED_AFTER_AT_LEAST_MS: f64 = 30_000.0;

pub fn activity(per_minute: Option<f64>, last_ms: Option<i64>, now_ms: i64) -> Activity {
    match (per_minute, last_ms) {
        (Some(r), Some(last)) if r > 0.0 => {
            let interval_ms = 60_000.0 / r;
            let quiet = (now_ms - last) as f64;
            if quiet > (interval_ms * STOPPED_AFTER_INTERVALS).max(STOPPED_AFTER_AT_LEAST_MS) {
                Activity::Stopped { last_ms: last }
            } else {
                Activity::Rate(r)
            }
        }
        (_, Some(last)) => Activity::Stopped { last_ms: last },
        _ => Activity::Unknown,
    }
}

/// "4.0/min", or "stopped, last 5m ago".
pub fn activity_text(a: &Activity, now_ms: i64) -> String {
    match a {
        Activity::Rate(r) => format!("{r:.1}/min"),
        Activity::Stopped { last_ms } => format!("idle, last {}", ago(Some(*last_ms), now_ms)),
        Activity::Unknown => "-".into(),
    }
}

/// "health 3/100 (3 of 4 partitions ok)": the table's score is the share of its files it needs
/// (`ideal / files`), so one partition of a thousand small files sinks it however many others
/// are compacted; the count of healthy partitions says that part of the story.
fn health(t: &TableReport) -> Item {
    let s = &t.stats;
    let ok = t
        .partitions
        .iter()
        .filter(|p| p.stats.health_score >= super::HEALTH_OK)
        .count();
    let mut item = vec![Span::styled(
        format!("health {:>3}/100", s.health_score),
        style::score(s.health_score),
    )];
    if t.partitions.len() > 1 {
        item.push(Span::raw(format!(
            " ({ok} of {} partitions ok)",
            t.partitions.len()
        )));
    }
    item
}

fn totals(t: &TableReport) -> Vec<Item> {
    let s = &t.stats;
    vec![
        health(t),
        raw(format!("v{}", t.version)),
        raw(format!("{} files", format_count(s.files))),
        raw(format_bytes(s.bytes)),
        raw(format!("{} partitions", t.partitions.len())),
        raw(format!(
            "small (<{}) {} ({:.0}%)",
            format_bytes(t.thresholds.small_file_size),
            format_count(s.small_files),
            s.small_share() * 100.0
        )),
        raw(format!("ideal {}", format_count(s.ideal_files))),
        raw(format!("excess {}", format_count(s.excess_files))),
    ]
}

fn sizes(t: &TableReport) -> Vec<Item> {
    let s = &t.stats;
    vec![
        raw(format!("files min {}", format_bytes(s.min_file_size))),
        raw(format!("median {}", format_bytes(s.median_file_size))),
        raw(format!("mean {}", format_bytes(s.mean_file_size))),
        raw(format!("max {}", format_bytes(s.max_file_size))),
        raw(format!(
            "target {}{}",
            format_bytes(t.thresholds.target_file_size),
            if t.table_target_file_size.is_some() {
                " (table)"
            } else {
                ""
            }
        )),
        raw(format!(
            "band {}–{}",
            format_bytes(t.thresholds.small_file_size),
            format_bytes(t.thresholds.max_file_size)
        )),
    ]
}

fn log(t: &TableReport, now_ms: i64) -> Vec<Item> {
    let l = &t.log;
    let ckpt_style = if l.checkpoint_overdue {
        style::score(0)
    } else {
        style::dim()
    };
    let rate = activity(l.commits_per_minute, l.last_commit_ms, now_ms);
    // Write amplification once the janitor rewrote anything in the recent log; other
    // compactions (by hand, other engines) apart, never in the ratio.
    let r = &l.rewrite;
    let janitor = match r.write_amplification {
        _ if r.janitor_bytes == 0 => None,
        Some(wa) => Some(format!(
            "janitor rewrote {wa:.2}x of ingested ({} for {})",
            format_bytes(r.janitor_bytes),
            format_bytes(r.writer_bytes)
        )),
        None => Some(format!(
            "janitor rewrote {} (nothing ingested)",
            format_bytes(r.janitor_bytes)
        )),
    };
    let other = (r.other_bytes() > 0).then(|| {
        format!(
            "other compactions rewrote {}",
            format_bytes(r.other_bytes())
        )
    });
    let rewritten = match (janitor, other) {
        (None, None) => None,
        (Some(j), None) => Some(raw(j)),
        (None, Some(o)) => Some(raw(o)),
        (Some(j), Some(o)) => Some(raw(format!("{j}; {o}"))),
    };
    let mut items = vec![
        vec![Span::styled(
            format!(
                "log: checkpoint {} (+{} commits, {} JSON)",
                l.checkpoint_version
                    .map_or("none".into(), |v| format!("v{v}")),
                l.commits_since_checkpoint,
                format_bytes(l.json_bytes_since_checkpoint)
            ),
            ckpt_style,
        )],
        raw(format!(
            "{} in {} files",
            format_bytes(l.log_bytes),
            l.log_files
        )),
        raw(format!("commits {}", activity_text(&rate, now_ms))),
        raw(format!(
            "vacuum debt {} in {} files ({} vacuumable)",
            format_bytes(t.vacuum.removed_bytes),
            format_count(t.vacuum.removed_files),
            format_bytes(t.vacuum.vacuumable_bytes),
        )),
    ];
    items.extend(rewritten);
    items
}

/// Iceberg has no checkpoints or vacuum debt: its snapshot, delete files and what
/// rewrite_data_files would do take the log's place.
fn iceberg(i: &IcebergDetails) -> Vec<Item> {
    let d = &i.delete_files;
    let r = &i.rewrite_preview;
    let deletes = format!(
        "delete files {} ({})",
        format_count(d.files()),
        format_bytes(d.bytes())
    );
    vec![
        vec![Span::styled(
            format!(
                "iceberg v{}  snapshot {}  {} snapshots",
                i.format_version,
                i.snapshot_id.map_or("none".into(), |s| s.to_string()),
                i.snapshots
            ),
            style::dim(),
        )],
        if d.files() > 0 {
            vec![Span::styled(deletes, style::score(50))]
        } else {
            raw(deletes)
        },
        raw(format!(
            "rewrite_data_files would rewrite {} → ~{} files",
            format_count(r.files_in),
            format_count(r.files_out),
        )),
    ]
}

fn format_note(t: &TableReport) -> String {
    match t.format {
        TableFormat::Delta => String::new(),
        f if f.can_convert() => format!(
            "[{}: not compacted in place; C converts it to Delta]",
            f.label()
        ),
        // Compacted through its catalog (`--catalog`), never in place.
        TableFormat::Iceberg => "[iceberg: c compacts through --catalog]".to_string(),
        f => format!("[{}: read-only]", f.label()),
    }
}

/// The title: the table's name, and its URI and format note when they fit (else they start the
/// body, see `header_lines`).
fn title(t: &TableReport, width: usize) -> (Line<'static>, Vec<Item>) {
    // The name and URI are the table's (its folder's): shown inert.
    let name = format!(" {} ", inert::text(&t.name));
    let rest = format!("{} {}", inert::text(&t.uri), format_note(t));
    let rest = rest.trim_end().to_string();
    if fit::width(&name) + fit::width(&rest) + 4 <= width {
        let title = Line::from(vec![
            Span::styled(name, style::title()),
            Span::styled(format!("{rest} "), style::dim()),
        ]);
        (title, Vec::new())
    } else {
        let title = Line::from(Span::styled(name, style::title()));
        (title, vec![vec![Span::styled(rest, style::dim())]])
    }
}

/// The header's title and body at `width` (the panel's outer width).
pub fn header_lines(
    t: &TableReport,
    width: u16,
    now_ms: i64,
) -> (Line<'static>, Vec<Line<'static>>) {
    let inner = usize::from(width.saturating_sub(2));
    let (title, first) = title(t, usize::from(width));
    let last = t
        .iceberg
        .as_ref()
        .map_or_else(|| log(t, now_ms), |i| iceberg(i));
    let mut lines = Vec::new();
    for group in [first, totals(t), sizes(t), last] {
        if group.is_empty() {
            continue;
        }
        let mut flowed = fit::flow(group, "  ", inner.saturating_sub(1));
        for l in &mut flowed {
            l.spans.insert(0, Span::raw(" "));
        }
        lines.extend(flowed);
    }
    (title, lines)
}

/// Rows the header takes at `width`, borders included.
pub fn header_rows(t: &TableReport, width: u16, now_ms: i64) -> u16 {
    let (_, lines) = header_lines(t, width, now_ms);
    let rows = fit::wrapped_rows(&lines, usize::from(width.saturating_sub(2)));
    u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(2)
}

pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now_ms: i64) {
    let (title, lines) = header_lines(t, area.width, now_ms);
    // On a short screen the header gives way to a running job and the live log
    // (`layout::header_rows`): what does not fit is cut, and says so.
    let lines = fit::rows_or_ellipsis(
        lines,
        usize::from(area.width.saturating_sub(2)),
        usize::from(area.height.saturating_sub(2)),
    );
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(p, area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_quiet_for_a_few_of_its_intervals_is_stopped_not_rated() {
        let now = 10_000_000;
        // 2 commits a minute: one every 30 s.
        assert_eq!(
            activity(Some(2.0), Some(now - 60_000), now),
            Activity::Rate(2.0)
        );
        assert_eq!(
            activity(Some(2.0), Some(now - 600_000), now),
            Activity::Stopped {
                last_ms: now - 600_000
            }
        );
        assert_eq!(
            activity_text(&activity(Some(2.0), Some(now - 600_000), now), now),
            "idle, last 10m ago"
        );
        assert_eq!(activity(None, None, now), Activity::Unknown);
    }
}
