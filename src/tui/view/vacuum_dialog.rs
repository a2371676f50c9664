//! The vacuum preview (its dry run: files and bytes it deletes, a few paths, the retention and
//! the cutoff; confirm to run) and the maintenance jobs' rows in the jobs panel.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::preview_dialog::{Body, PreviewView, failed};
use super::style;
use crate::engine::maintenance::vacuum::VacuumPlan;
use crate::engine::model::duration::exact_secs;
use crate::engine::size::{format_bytes, format_count};
use crate::tui::app::App;
use crate::tui::maintenance::{MaintenanceJob, MaintenanceStatus, VacuumDialog};

/// Paths shown in the preview.
const SHOWN: usize = 5;

fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

fn plan_lines(p: &VacuumPlan) -> Vec<Line<'static>> {
    let ret = exact_secs(std::time::Duration::from_millis(p.retention_ms));
    let mut lines = vec![
        Line::from(vec![
            Span::raw(" deletes "),
            Span::styled(
                format!(
                    "{} files ({})",
                    format_count(p.files_to_delete),
                    format_bytes(p.bytes_to_delete)
                ),
                style::score(if p.files_to_delete > 0 { 50 } else { 100 }),
            ),
            Span::raw(format!(" of table version {}", p.version)),
        ]),
        Line::from(format!(
            " retention {ret} (the table's delta.deletedFileRetentionDuration): files removed before {}",
            utc(p.cutoff_ms)
        )),
        Line::from(Span::styled(
            format!(
                " removed files in the log: {} ({}), {} still inside the retention; active files are never deleted",
                format_count(p.debt.removed_files),
                format_bytes(p.debt.removed_bytes),
                format_count(p.debt.removed_files.saturating_sub(p.debt.vacuumable_files))
            ),
            style::dim(),
        )),
        Line::from(""),
    ];
    for f in p.files.iter().take(SHOWN) {
        lines.push(Line::from(format!(
            "   {}  {}  removed {}",
            super::inert::text(&f.path),
            format_bytes(f.bytes),
            utc(f.removed_at_ms)
        )));
    }
    if p.files.len() > SHOWN {
        lines.push(Line::from(Span::styled(
            format!("   ... and {} more", p.files.len() - SHOWN),
            style::dim(),
        )));
    }
    if !p.already_gone.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " {} files past the retention are already gone from storage",
                p.already_gone.len()
            ),
            style::dim(),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        if p.files_to_delete > 0 {
            " y / Enter delete them (cannot be undone; time travel before the cutoff ends) · n / Esc close"
        } else {
            " nothing to delete · Esc close"
        },
        style::dim(),
    )));
    lines
}

pub fn view(d: &VacuumDialog) -> PreviewView<'_> {
    let lines = match &d.result {
        None => vec![
            Line::from(format!(" dry run of a VACUUM of {} ...", d.table_uri)),
            Line::from(""),
            Line::from(Span::styled(" Esc cancels", style::dim())),
        ],
        Some(Err(e)) => failed(format!(" cannot vacuum: {e}"), " Esc close"),
        Some(Ok(p)) => plan_lines(p),
    };
    PreviewView {
        title: " VACUUM preview (dry run) ",
        border: Color::Yellow,
        width: 100,
        height: lines.len() as u16 + 4,
        body: Body::Lines(lines, Some(Wrap { trim: false })),
    }
}

fn job_line(j: &MaintenanceJob) -> Line<'static> {
    let status = j.status();
    let color = match status {
        MaintenanceStatus::Running => Color::Cyan,
        MaintenanceStatus::Done => Color::Green,
        MaintenanceStatus::Failed => Color::Red,
    };
    Line::from(vec![
        Span::styled(
            format!(
                " {} {:<10} {:<10}",
                j.number,
                status.label(),
                j.kind.label()
            ),
            Style::default().fg(color),
        ),
        Span::raw(format!(" {}", j.detail())),
    ])
}

/// Rows for the maintenance jobs, newest first, from `y`; returns the next free row.
pub fn draw_jobs(f: &mut Frame, inner: Rect, mut y: u16, app: &App) -> u16 {
    for j in app.maintenance.iter().rev() {
        if y >= inner.y + inner.height {
            break;
        }
        f.render_widget(
            Paragraph::new(job_line(j)),
            Rect::new(inner.x, y, inner.width, 1),
        );
        y += 1;
    }
    y
}
