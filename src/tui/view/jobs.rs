//! The jobs panel: per job a gauge of bytes done, files/rows, throughput with a sparkline, ETA,
//! the commits as they land, and errors.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline};

use super::{fit, inert, style};
use crate::engine::compact::events::CommitRecord;
use crate::engine::model::cost::usd_text;
use crate::engine::model::partition::PartitionValues;
use crate::engine::size::{format_bytes, format_count};
use crate::tui::app::App;
use crate::tui::jobs::{JobStatus, JobView};
use crate::tui::layout::{JOB_COMPACT_ROWS, JOB_ROWS};

fn status_style(s: JobStatus) -> Style {
    match s {
        JobStatus::Done => Style::default().fg(Color::Green),
        JobStatus::Failed => Style::default().fg(Color::Red),
        JobStatus::Cancelled | JobStatus::Cancelling => Style::default().fg(Color::Yellow),
        _ => Style::default().fg(Color::Cyan),
    }
}

pub fn summary_line(j: &JobView, now: Instant) -> String {
    let p = &j.progress;
    let eta = j
        .eta(now)
        .map_or("-".into(), |d| format!("{}s", d.as_secs()));
    let rate = j
        .bytes_per_second(now)
        .map_or("-".into(), |r| format_bytes(r as u64));
    format!(
        "bins {}/{}  rows {}  {rate}/s  ETA {eta}{}{}{}",
        j.bins_done(),
        p.bins_total.max(j.bins_done()),
        format_count(p.rows),
        p.commit_wait_text(),
        j.pace
            .as_ref()
            .filter(|_| j.status().is_active())
            .map(|n| format!("  {}", n.text()))
            .unwrap_or_default(),
        cost_text(j),
    )
}

/// A finished job's requests and price beside its plan's estimate.
fn cost_text(j: &JobView) -> String {
    let Some((_, s)) = &j.finished else {
        return String::new();
    };
    let Some(actual) = s.actual.as_deref() else {
        return String::new();
    };
    let estimated = s
        .estimate
        .as_deref()
        .map(|e| {
            format!(
                " (est. {}, {})",
                e.requests.total_requests(),
                usd_text(e.usd)
            )
        })
        .unwrap_or_default();
    format!(
        "  cost {} requests, {}{estimated}",
        actual.requests.total_requests(),
        usd_text(actual.usd)
    )
}

/// "#3 running   day=1 (+2 more)  commits 4  1 orphaned" in `width` cells. The partition is
/// never cut: its column names go first, then the status's padding, then the commit count.
fn head_line(j: &JobView, width: usize) -> Line<'static> {
    let status = j.status();
    let padded = format!(" {} {:<10}", j.number, status.label());
    let bare = format!(" {} {}", j.number, status.label());
    let commits = format!("  commits {}", j.commits.len());
    let orphaned = if j.orphaned > 0 {
        format!("  {} orphaned", j.orphaned)
    } else {
        String::new()
    };
    let (full, short) = partitions_text(&j.partitions);
    let forms = [
        (&padded, &full, true),
        (&padded, &short, true),
        (&bare, &short, true),
        (&bare, &short, false),
    ];
    let fits = |(head, parts, with_commits): &(&String, &String, bool)| {
        let tail = if *with_commits { commits.as_str() } else { "" };
        fit::width(head) + 1 + fit::width(parts) + fit::width(tail) + fit::width(&orphaned) <= width
    };
    let (head, parts, with_commits) = forms.iter().find(|f| fits(f)).copied().unwrap_or(forms[3]);
    let line = Line::from(vec![
        Span::styled(head.clone(), status_style(status)),
        Span::raw(format!(
            " {parts}{}",
            if with_commits { commits.as_str() } else { "" }
        )),
        Span::styled(orphaned, style::score(0)),
    ]);
    fit::clip(line, width)
}

/// The job's partitions: with their columns, and values only; the first, and how many more.
fn partitions_text(p: &[PartitionValues]) -> (String, String) {
    let (first, more) = match p {
        [] => return (String::new(), String::new()),
        [one] => (one, String::new()),
        [first, rest @ ..] => (first, format!(" (+{} more)", rest.len())),
    };
    (
        format!("{}{more}", inert::text(&first.label())),
        format!("{}{more}", inert::text(&first.values_label())),
    )
}

/// The gauge: files read of the files to read (see `JobView::ratio`), with the bytes moved.
fn gauge(j: &JobView) -> Gauge<'static> {
    let p = &j.progress;
    Gauge::default()
        .gauge_style(status_style(j.status()))
        .ratio(j.ratio())
        .label(format!(
            "files {}/{} · {} read · {} written",
            format_count(p.files_read),
            format_count(p.files_total),
            format_bytes(p.bytes_read),
            format_bytes(p.bytes_written)
        ))
}

/// The newest error, else the newest conflict, then the newest commits: two lines.
fn event_lines(j: &JobView) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = j
        .errors
        .iter()
        .rev()
        .take(1)
        .map(|e| Line::from(Span::styled(format!(" ! {e}"), style::score(0))))
        .collect();
    // A refused bin is the safety check working: shown, in the warning colour, not as an error.
    if let Some(c) = j.conflicts.last().filter(|_| lines.len() < 2) {
        lines.push(Line::from(Span::styled(
            format!(
                " ⚠ {} conflict{}: {}: {}; not committed{}",
                j.conflicts.len(),
                if j.conflicts.len() == 1 { "" } else { "s" },
                inert::text(&c.partition.label()),
                inert::text(&c.conflict.to_string()),
                if c.replanned_bins > 0 {
                    format!(", {} bins planned again", c.replanned_bins)
                } else {
                    String::new()
                }
            ),
            style::score(50),
        )));
    }
    for c in j.commits.iter().rev().take(2 - lines.len()) {
        lines.push(Line::from(commit_text(c)));
    }
    lines
}

fn commit_text(c: &CommitRecord) -> String {
    format!(
        " v{} -{} +{} files {} → {}{} · {}",
        c.version,
        c.files_removed,
        c.files_added,
        format_bytes(c.bytes_removed),
        format_bytes(c.bytes_added),
        if c.retries > 0 {
            format!(" ({} retries)", c.retries)
        } else {
            String::new()
        },
        c.partitions
            .iter()
            .map(|p| inert::text(&p.label()).into_owned())
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// A job in `area`: in full (`layout::JOB_ROWS`), or its first three rows when short.
fn draw_job(f: &mut Frame, area: Rect, j: &JobView, now: Instant) {
    let [head, gauge_area, stats, spark, events] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(area);
    let [spark, events] = if area.height < JOB_ROWS {
        [Rect::default(), Rect::default()]
    } else {
        [spark, events]
    };
    let width = usize::from(area.width);
    f.render_widget(Paragraph::new(head_line(j, width)), head);
    f.render_widget(gauge(j), gauge_area);
    let summary = Line::from(format!(" {}", summary_line(j, now)));
    f.render_widget(Paragraph::new(fit::clip(summary, width)), stats);
    f.render_widget(
        Sparkline::default()
            .data(j.throughput.iter().copied())
            .style(Style::default().fg(Color::Cyan)),
        spark,
    );
    let events_text: Vec<Line> = super::scrubbed(event_lines(j))
        .into_iter()
        .map(|l| fit::clip(l, width))
        .collect();
    f.render_widget(Paragraph::new(events_text), events);
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let active = app.jobs.iter().filter(|j| j.status().is_active()).count();
    let total = app.jobs.len() + app.maintenance.len();
    let counts = format!(" Jobs ({active} active, {total} total) ");
    let with_key = format!(" Jobs ({active} active, {total} total) · x cancel ");
    let with_keys = format!(" Jobs ({active} active, {total} total) · x cancel · f lift pace ");
    let paced = app.has_paced_jobs();
    let forms = match active {
        0 => vec![counts.as_str()],
        _ if paced => vec![with_keys.as_str(), with_key.as_str(), counts.as_str()],
        _ => vec![with_key.as_str(), counts.as_str()],
    };
    let title = fit::first_fitting(&forms, usize::from(area.width.saturating_sub(2)));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, style::title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let now = app.clock.now();
    let mut y = super::vacuum_dialog::draw_jobs(f, inner, inner.y, app);
    // Running jobs first (newest first), then finished ones: a job in flight always shows.
    let (active, ended): (Vec<&JobView>, Vec<&JobView>) =
        app.jobs.iter().rev().partition(|j| j.status().is_active());
    for j in active.into_iter().chain(ended) {
        let left = (inner.y + inner.height).saturating_sub(y);
        let rows = if left >= JOB_ROWS {
            JOB_ROWS
        } else if left >= JOB_COMPACT_ROWS {
            JOB_COMPACT_ROWS
        } else {
            break;
        };
        draw_job(f, Rect::new(inner.x, y, inner.width, rows), j, now);
        y += rows;
    }
}

pub fn draw_marks(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let list: Vec<String> = app
        .marks
        .iter()
        .map(|p| inert::text(&p.label()).into_owned())
        .collect();
    f.render_widget(
        Paragraph::new(vec![Line::from(format!(" {}", list.join("  ")))])
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL).title(Span::styled(
                format!(
                    " Marked ({}) · c preview compaction · Space unmark ",
                    list.len()
                ),
                style::title(),
            ))),
        area,
    );
}
