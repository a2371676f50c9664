//! The compaction preview: per partition bins, files in → out, bytes to rewrite, and the
//! histogram predicted after (small files and files in the target band, before → after).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::preview_dialog::{Body, PreviewView, failed};
use super::style;
use crate::engine::compact::plan::{CompactionPlan, PartitionPlan};
use crate::engine::size::{format_bytes, format_count, plural};
use crate::engine::stats::histogram::{Band, Histogram};
use crate::tui::app::PlanDialog;
use crate::tui::layout::centered;

fn band_files(h: &Histogram, band: Band) -> u64 {
    h.buckets
        .iter()
        .filter(|b| b.band == band)
        .map(|b| b.files)
        .sum()
}

pub fn view(d: &PlanDialog) -> PreviewView<'_> {
    let height = match &d.result {
        Some(Ok(p)) => p.partitions.len().min(12) as u16 + 11,
        _ => 8,
    };
    let purge = d.request.purge;
    let body = match &d.result {
        // Cut at the edge, not wrapped: a long location stays on its line.
        None => Body::Lines(
            vec![
                Line::from(format!(
                    "planning a {} of {} partition(s) of {} ...",
                    if purge { "purge" } else { "compaction" },
                    d.request.partitions.len(),
                    d.table_uri
                )),
                Line::from(""),
                Line::from("Esc cancels"),
            ],
            None,
        ),
        Some(Err(e)) => Body::Lines(
            failed(format!("cannot plan: {e}"), "Esc close"),
            Some(Wrap { trim: true }),
        ),
        Some(Ok(p)) => {
            let executor = d.request.executor.as_str();
            let command = crate::tui::command_line::compaction(
                &d.table_uri,
                p.target_file_size,
                p.min_file_size,
                &d.request,
            );
            Body::Custom(Box::new(move |f, inner| {
                draw_plan(f, inner, p, executor, &command)
            }))
        }
    };
    PreviewView {
        title: if purge {
            " Purge preview: files with deletion vectors, rewritten without their deleted rows "
        } else {
            " Compaction preview "
        },
        border: Color::Cyan,
        width: 90,
        height,
        body,
    }
}

fn draw_plan(f: &mut Frame, area: Rect, p: &CompactionPlan, executor: &str, command: &str) {
    let head = Line::from(format!(
        "v{}: {}, {} files ({}) → ~{} {}. Target {}; files ≥ {} are left alone. Each bin commits on its own (OPTIMIZE, dataChange=false).",
        p.table_version,
        plural(p.bins, "bin"),
        format_count(p.files_in),
        format_bytes(p.bytes_in),
        format_count(p.predicted_files_out),
        if p.predicted_files_out == 1 {
            "file"
        } else {
            "files"
        },
        format_bytes(p.target_file_size),
        format_bytes(p.min_file_size),
    ));
    let notes: String = p.notes.iter().map(|n| format!(" {}.", n.text())).collect();
    let runs_on = Line::from(Span::styled(
        format!("Bins run on: {executor}; commits happen here.{notes}"),
        style::dim(),
    ));
    // The same job headless (for cron or a janitor policy), whole: it wraps, never cut.
    let headless = Line::from(vec![
        Span::styled("headless: ", style::dim()),
        // A location typed with user info shows scrubbed, as everywhere else.
        Span::raw(crate::engine::secrets::scrub(command).into_owned()),
    ]);
    let [h, t, cmd, foot] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(2),
        Constraint::Length(2),
        Constraint::Length(1),
    ])
    .areas(area);
    let [h, r] = Layout::vertical([Constraint::Length(2), Constraint::Length(1)]).areas(h);
    f.render_widget(Paragraph::new(head).wrap(Wrap { trim: true }), h);
    f.render_widget(Paragraph::new(runs_on), r);
    f.render_widget(partitions_table(p), t);
    f.render_widget(Paragraph::new(headless).wrap(Wrap { trim: false }), cmd);
    let footer = if p.bins == 0 {
        "nothing to compact: no partition has two or more files below the minimum size · Esc close"
    } else {
        "Enter / y start in the background · Esc / n cancel"
    };
    f.render_widget(Paragraph::new(Span::styled(footer, style::dim())), foot);
}

/// Per partition: bins, files in → out, bytes to rewrite, and the predicted histogram.
fn partitions_table(p: &CompactionPlan) -> Table<'static> {
    let rows: Vec<Row> = p.partitions.iter().map(partition_row).collect();
    Table::new(
        rows,
        [
            Constraint::Min(18),
            Constraint::Length(5),
            Constraint::Length(14),
            Constraint::Length(10),
            Constraint::Length(19),
            Constraint::Length(13),
            Constraint::Length(13),
        ],
    )
    .header(
        Row::new([
            "partition",
            "bins",
            "files in→out",
            "rewrite",
            "files before→after",
            "small",
            "in band ◀",
        ])
        .style(style::dim()),
    )
}

fn partition_row(pp: &PartitionPlan) -> Row<'static> {
    let (sb, sa) = (
        band_files(&pp.histogram_before, Band::Small),
        band_files(&pp.predicted_histogram_after, Band::Small),
    );
    let (tb, ta) = (
        band_files(&pp.histogram_before, Band::Target),
        band_files(&pp.predicted_histogram_after, Band::Target),
    );
    Row::new(vec![
        Cell::from(pp.values.label()),
        Cell::from(pp.bins.len().to_string()),
        Cell::from(format!(
            "{} → ~{}",
            format_count(pp.files_in),
            pp.predicted_files_out
        )),
        Cell::from(format_bytes(pp.bytes_in)),
        Cell::from(format!(
            "{} → ~{}",
            format_count(pp.files_before),
            pp.predicted_files_after
        )),
        Cell::from(Span::styled(format!("{sb} → {sa}"), style::small_band())),
        Cell::from(Span::styled(format!("{tb} → {ta}"), style::target_band())),
    ])
}

pub fn draw_confirm_quit(f: &mut Frame, area: Rect, running: usize) {
    let b = centered(area, 60, 5);
    f.render_widget(Clear, b);
    f.render_widget(
        Paragraph::new(vec![
            Line::from(if running == 1 {
                "Quit? 1 job is running: quitting cancels it before its next commit;".to_string()
            } else {
                format!("Quit? {running} jobs are running: quitting cancels them before their next commit;")
            }),
            Line::from("committed bins stay, uncommitted output is removed."),
            Line::from(Span::styled(
                "y / Enter / q quit · n / Esc keep running",
                style::dim(),
            )),
        ])
        .wrap(Wrap { trim: true })
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::Yellow))
                .title(" Quit "),
        ),
        b,
    );
}

pub fn draw_confirm_cancel(f: &mut Frame, area: Rect, job: crate::tui::jobs::JobNumber) {
    // 60 %: its lines stay whole down to 100 columns.
    let b = centered(area, 60, 5);
    f.render_widget(Clear, b);
    f.render_widget(
        Paragraph::new(vec![
            Line::from(format!(
                "Cancel job {job}? It stops before its next commit;"
            )),
            Line::from("committed bins stay, uncommitted output is removed."),
            Line::from(Span::styled(
                "y / Enter cancel it · n / Esc keep running",
                style::dim(),
            )),
        ])
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::Yellow))
                .title(" Cancel job "),
        ),
        b,
    );
}
