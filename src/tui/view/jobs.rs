//! The jobs panel: per job a gauge of bytes done, files/rows, throughput with a sparkline, ETA,
//! the commits as they land, and errors.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline};

use super::style;
use crate::engine::size::{format_bytes, format_count};
use crate::tui::app::App;
use crate::tui::jobs::{JobStatus, JobView};

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
    format!(
        "bins {}/{}  files {}/{}  rows {}  {}/s  ETA {eta}",
        p.bins_done,
        j.plan_bins,
        format_count(p.files_read),
        format_count(j.plan_files),
        format_count(p.rows),
        format_bytes(j.bytes_per_second(now) as u64),
    )
}

fn draw_job(f: &mut Frame, area: Rect, j: &JobView, now: Instant) {
    let [head, gauge, stats, spark, commits] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(area);
    let parts = match j.partitions.len() {
        1 => j.partitions[0].clone(),
        n => format!("{} (+{} more)", j.partitions[0], n - 1),
    };
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(
                format!(" #{} {:<10}", j.id, j.status.label()),
                status_style(j.status),
            ),
            Span::raw(format!(" {parts}  commits {}", j.commits.len())),
            Span::styled(
                if j.orphaned > 0 {
                    format!("  {} orphaned", j.orphaned)
                } else {
                    String::new()
                },
                style::score(0),
            ),
        ])),
        head,
    );
    f.render_widget(
        Gauge::default()
            .gauge_style(status_style(j.status))
            .ratio(j.ratio())
            .label(format!(
                "{} / {} read · {} written",
                format_bytes(j.progress.bytes_read),
                format_bytes(j.plan_bytes),
                format_bytes(j.progress.bytes_written)
            )),
        gauge,
    );
    f.render_widget(Paragraph::new(format!(" {}", summary_line(j, now))), stats);
    f.render_widget(
        Sparkline::default()
            .data(j.throughput.iter().copied())
            .style(Style::default().fg(Color::Cyan)),
        spark,
    );
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
                c.partition.label(),
                c.conflict,
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
        lines.push(Line::from(format!(
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
                .map(|p| p.label())
                .collect::<Vec<_>>()
                .join(","),
        )));
    }
    f.render_widget(Paragraph::new(lines), commits);
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let active = app.jobs.iter().filter(|j| j.status.is_active()).count();
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(
            " Jobs ({active} active, {} total) · x cancel ",
            app.jobs.len()
        ),
        style::title(),
    ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let now = Instant::now();
    let mut y = inner.y;
    for j in app.jobs.iter().rev() {
        if y + 6 > inner.y + inner.height {
            break;
        }
        draw_job(f, Rect::new(inner.x, y, inner.width, 6), j, now);
        y += 6;
    }
}

pub fn draw_marks(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let list: Vec<String> = app.marks.iter().map(|p| p.label()).collect();
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
