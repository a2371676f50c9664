//! The compaction preview: per partition bins, files in → out, bytes to rewrite, and the
//! histogram predicted after (small files and files in the target band, before → after).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::preview_dialog::{Body, PreviewView, failed};
use super::{fit, inert, style};
use crate::engine::compact::ordering::LayoutRequest;
use crate::engine::compact::plan::{CompactionPlan, PartitionPlan};
use crate::engine::size::{format_bytes, format_count, plural};
use crate::engine::stats::histogram::{Band, Histogram};
use crate::tui::app::PlanDialog;
use crate::tui::preview::PlannedJob;

fn band_files(h: &Histogram, band: Band) -> u64 {
    h.buckets
        .iter()
        .filter(|b| b.band == band)
        .map(|b| b.files)
        .sum()
}

pub fn view(d: &PlanDialog) -> PreviewView<'_> {
    let height = match &d.result {
        // The order's lines and the longer command an order makes take rows of their own.
        Some(Ok(p)) => {
            let order_rows = if p.plan.order.is_some() || d.request.order_text.is_some() {
                ORDER_ROWS + 1
            } else {
                0
            };
            p.plan.partitions.len().min(12) as u16 + 13 + order_rows
        }
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
        Some(Err(e)) => {
            // An order typed in the preview that the table refuses: type another (`o`).
            let mut lines = failed(
                format!("cannot plan: {e}"),
                if d.request.layout == LayoutRequest::Auto {
                    "Esc close"
                } else {
                    "o another order · Esc close"
                },
            );
            if let Some(text) = &d.request.order_text {
                lines.push(Line::from(order_input_text(text)));
            }
            Body::Lines(lines, Some(Wrap { trim: true }))
        }
        Some(Ok(planned)) => {
            let p = &planned.plan;
            let executor = d.request.executor.as_str();
            let command = crate::tui::command_line::compaction(
                &d.table_uri,
                p.target_file_size,
                p.min_file_size,
                &d.request,
            );
            let pace = pace_text(planned, d.request.full_speed);
            let typing = d.request.order_text.as_deref();
            Body::Custom(Box::new(move |f, inner| {
                draw_plan(f, inner, p, executor, &pace, &command, typing)
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

/// The pace the job would start at and why, with the key that changes it.
fn pace_text(planned: &PlannedJob, full_speed: bool) -> String {
    if full_speed {
        return "Pace: full speed as asked: every core, unbounded, whatever the writers do (f: follow the writers again)".into();
    }
    match &planned.throttle {
        Some(t) if t.budget.read_bytes_per_second.is_some() => {
            format!("Pace (f: full speed): {}", t.pace_note().text())
        }
        Some(t) => format!("Pace: full speed, every core: {}", t.writers),
        None => "Pace: full speed, every core".into(),
    }
}

/// Rows for the order, its what-if, or the order being typed.
const ORDER_ROWS: u16 = 3;

/// The order input's line: what is typed, with a cursor, and what it takes.
fn order_input_text(text: &str) -> String {
    format!(
        "Order: {text}▏ (zorder a,b · sort a · binpack · empty: the table's default; Enter plans again, Esc keeps)"
    )
}

fn draw_plan(
    f: &mut Frame,
    area: Rect,
    p: &CompactionPlan,
    executor: &str,
    pace: &str,
    command: &str,
    typing: Option<&str>,
) {
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
    let estimate = Line::from(Span::styled(
        format!("Estimate: {}", p.estimate.describe(format_bytes)),
        style::dim(),
    ));
    // The same job headless (for cron or a janitor policy), whole: it wraps, never cut.
    let headless = Line::from(vec![
        Span::styled("headless: ", style::dim()),
        // A location typed with user info shows scrubbed, as everywhere else.
        Span::raw(crate::engine::secrets::scrub(command).into_owned()),
    ]);
    // The command wraps whole: as many rows as it takes (2 to 4), an order's flags included.
    let command_chars = "headless: ".chars().count() + command.chars().count();
    let command_rows = command_chars
        .div_ceil(usize::from(area.width).max(1))
        .clamp(2, 4) as u16;
    let [h, pace_area, t, cmd, foot] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(2),
        Constraint::Min(2),
        Constraint::Length(command_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    let pace_lines = fit::words_in_rows(
        pace,
        style::dim(),
        usize::from(pace_area.width),
        usize::from(pace_area.height),
    );
    f.render_widget(Paragraph::new(pace_lines), pace_area);
    let [h, r, e] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(h);
    // The order the rows are written in, and what it is expected to do to lookups (or the
    // order being typed).
    let text = match (typing, &p.order) {
        (Some(typed), _) => Some(order_input_text(typed)),
        (None, Some(o)) => Some(match o.depths_text() {
            Some(d) => format!("Order: {}. {d}", o.describe()),
            None => format!("Order: {}.", o.describe()),
        }),
        (None, None) => None,
    };
    let (order, t) = match text {
        Some(text) => {
            let [order, t] =
                Layout::vertical([Constraint::Length(ORDER_ROWS), Constraint::Min(2)]).areas(t);
            (Some((order, text)), t)
        }
        None => (None, t),
    };
    if let Some((area, text)) = order {
        let lines = fit::words_in_rows(
            &text,
            style::dim(),
            usize::from(area.width),
            usize::from(area.height),
        );
        f.render_widget(Paragraph::new(lines), area);
    }
    f.render_widget(Paragraph::new(head).wrap(Wrap { trim: true }), h);
    f.render_widget(Paragraph::new(runs_on), r);
    f.render_widget(Paragraph::new(fit::clip(estimate, usize::from(e.width))), e);
    f.render_widget(partitions_table(p, t.width), t);
    f.render_widget(Paragraph::new(headless).wrap(Wrap { trim: false }), cmd);
    let footer = if typing.is_some() {
        "Enter plans again in this order · Esc keeps the order planned"
    } else if p.bins == 0 {
        "nothing to compact: no partition has two or more files below the minimum size · Esc close"
    } else {
        "Enter / y start in the background · Esc / n cancel"
    };
    f.render_widget(Paragraph::new(Span::styled(footer, style::dim())), foot);
}

/// The table's columns after the partition's; `DROP` is the order they give way in.
const HEADERS: [&str; 6] = [
    "bins",
    "files in→out",
    "rewrite",
    "files before→after",
    "small",
    "in band ◀",
];
const DROP: [usize; 4] = [5, 4, 3, 0];

/// Per partition: bins, files in → out, bytes to rewrite, and the predicted histogram, in
/// `width` cells. The partition is never cut: its column names give way first (values only),
/// then the least useful columns.
fn partitions_table(p: &CompactionPlan, width: u16) -> Table<'static> {
    let avail = usize::from(width);
    let cells: Vec<[String; 6]> = p.partitions.iter().map(cells).collect();
    let widths: Vec<usize> = (0..HEADERS.len())
        .map(|i| fit::column_width(HEADERS[i], cells.iter().map(|c| c[i].as_str())))
        .collect();
    let full: Vec<String> = p
        .partitions
        .iter()
        .map(|pp| inert::text(&pp.values.label()).into_owned())
        .collect();
    let short: Vec<String> = p
        .partitions
        .iter()
        .map(|pp| inert::text(&pp.values.values_label()).into_owned())
        .collect();
    let full_w = fit::column_width("partition", full.iter().map(String::as_str));
    let short_w = fit::column_width("", short.iter().map(String::as_str));
    let columns_named: String = p.partitions.first().map_or(String::new(), |pp| {
        pp.values
            .0
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join("/")
    });
    let (labels, header, label_w, shown) = match fit::columns(avail, full_w + 1, &widths, &[]) {
        Some(shown) => (full, "partition".to_string(), full_w, shown),
        None => {
            let shown = fit::columns(avail, short_w + 1, &widths, &DROP).unwrap_or_else(|| {
                let mut s = vec![true; HEADERS.len()];
                for d in DROP {
                    s[d] = false;
                }
                s
            });
            let header = fit::truncate(&columns_named, short_w);
            (short, header, short_w, shown)
        }
    };
    let styles = [
        Style::default(),
        Style::default(),
        Style::default(),
        Style::default(),
        style::small_band(),
        style::target_band(),
    ];
    let rows: Vec<Row> = labels
        .into_iter()
        .zip(&cells)
        .map(|(label, c)| {
            let mut row = vec![Cell::from(fit::truncate(&label, label_w))];
            row.extend(
                (0..HEADERS.len())
                    .filter(|&i| shown[i])
                    .map(|i| Cell::from(Span::styled(c[i].clone(), styles[i]))),
            );
            Row::new(row)
        })
        .collect();
    let mut constraints = vec![Constraint::Length(label_w as u16)];
    constraints.extend(
        (0..HEADERS.len())
            .filter(|&i| shown[i])
            .map(|i| Constraint::Length(widths[i] as u16)),
    );
    let mut head = vec![header];
    head.extend(
        (0..HEADERS.len())
            .filter(|&i| shown[i])
            .map(|i| HEADERS[i].to_string()),
    );
    Table::new(rows, constraints).header(Row::new(head).style(style::dim()))
}

/// A partition's cells after its label, in `HEADERS` order.
fn cells(pp: &PartitionPlan) -> [String; 6] {
    let (sb, sa) = (
        band_files(&pp.histogram_before, Band::Small),
        band_files(&pp.predicted_histogram_after, Band::Small),
    );
    let (tb, ta) = (
        band_files(&pp.histogram_before, Band::Target),
        band_files(&pp.predicted_histogram_after, Band::Target),
    );
    [
        pp.bins.len().to_string(),
        format!(
            "{} → ~{}",
            format_count(pp.files_in),
            pp.predicted_files_out
        ),
        format_bytes(pp.bytes_in),
        format!(
            "{} → ~{}",
            format_count(pp.files_before),
            pp.predicted_files_after
        ),
        format!("{sb} → {sa}"),
        format!("{tb} → {ta}"),
    ]
}

pub fn draw_confirm_quit(f: &mut Frame, area: Rect, running: usize) {
    let question = if running == 1 {
        "Quit? 1 job is running: quitting cancels it before its next commit;".to_string()
    } else {
        format!("Quit? {running} jobs are running: quitting cancels them before their next commit;")
    };
    confirm(
        f,
        area,
        " Quit ",
        &[
            &question,
            "committed bins stay, uncommitted output is removed.",
        ],
        "y / Enter / q quit · n / Esc keep running",
    );
}

pub fn draw_confirm_cancel(f: &mut Frame, area: Rect, job: crate::tui::jobs::JobNumber) {
    confirm(
        f,
        area,
        " Cancel job ",
        &[
            &format!("Cancel job {job}? It stops before its next commit;"),
            "committed bins stay, uncommitted output is removed.",
        ],
        "y / Enter cancel it · n / Esc keep running",
    );
}

/// A yes/no question over the screen: `body` and then its `keys`, wrapped at words, the box as
/// tall as they are (its keys always show).
fn confirm(f: &mut Frame, area: Rect, title: &'static str, body: &[&str], keys: &str) {
    let sixty_percent = u16::try_from(u32::from(area.width) * 60 / 100).unwrap_or(u16::MAX);
    let width = sixty_percent.max(64).min(area.width);
    let inner = usize::from(width.saturating_sub(2));
    let mut lines: Vec<Line<'static>> = body
        .iter()
        .flat_map(|p| fit::words(p, Style::default(), inner))
        .collect();
    lines.extend(fit::words(keys, style::dim(), inner));
    let height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let b = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + area.height.saturating_sub(height) / 2,
        width,
        height.min(area.height),
    );
    f.render_widget(Clear, b);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::Yellow))
                .title(title),
        ),
        b,
    );
}
