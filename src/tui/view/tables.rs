//! The tables list of a root, worst health first. A table that could not be read is a row of its
//! own (in red, first by health); selected, its error shows in full below the list.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};

use super::{ago, fit, style};
use crate::engine::model::format::TableFormat;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::TableReport;
use crate::tui::app::App;
use crate::tui::layout::TablesAreas;
use crate::tui::root::{BrokenTable, RootRow, RootView};

/// The number columns, in display order, after the name.
const HEADERS: [&str; 8] = [
    "version",
    "files",
    "bytes",
    "small",
    "excess",
    "ckpt lag",
    "last commit",
    "health",
];
/// Least useful first.
const DROP: [usize; 5] = [5, 0, 3, 6, 4];
/// What the name column keeps at least.
const NAME_MIN: usize = 12;

pub fn draw(f: &mut Frame, a: &TablesAreas, app: &App) {
    let Some(r) = &app.root else { return };
    draw_totals(f, a.header, r);
    draw_list(f, a.list, app, r);
    draw_detail(f, a.detail, app);
}

/// Totals over the root's tables, how many could not be read, and what the health colours mean.
pub fn header_lines(r: &RootView, width: u16) -> Vec<Line<'static>> {
    let tables: Vec<&TableReport> = r.tables().collect();
    let files: u64 = tables.iter().map(|t| t.stats.files).sum();
    let bytes: u64 = tables.iter().map(|t| t.stats.bytes).sum();
    let excess: u64 = tables.iter().map(|t| t.stats.excess_files).sum();
    let unhealthy = tables.iter().filter(|t| t.stats.health_score < 50).count();
    let raw = |s: String| vec![Span::raw(s)];
    let mut items = vec![
        raw(format!("{} tables", tables.len())),
        raw(format!("{} files", format_count(files))),
        raw(format_bytes(bytes)),
        raw(format!("excess files {}", format_count(excess))),
        raw(format!("unhealthy (<50) {unhealthy}")),
    ];
    let broken = r.broken().count();
    if broken > 0 {
        items.push(vec![Span::styled(
            format!("{broken} unreadable (rows in red; select one for its error)"),
            style::score(0),
        )]);
    }
    items.push(super::health_legend());
    let inner = usize::from(width.saturating_sub(2));
    let mut lines = fit::flow(items, "  ", inner.saturating_sub(1));
    for l in &mut lines {
        l.spans.insert(0, Span::raw(" "));
    }
    lines
}

fn draw_totals(f: &mut Frame, area: Rect, r: &RootView) {
    f.render_widget(
        Paragraph::new(header_lines(r, area.width))
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(format!(" {} ", r.root), style::title())),
            ),
        area,
    );
}

fn table_cells(t: &TableReport, now_ms: i64) -> [String; 8] {
    let s = &t.stats;
    [
        match t.format {
            TableFormat::ParquetFolder => "-".to_string(),
            _ => format!("v{}", t.version),
        },
        format_count(s.files),
        format_bytes(s.bytes),
        format!("{:.0}%", s.small_share() * 100.0),
        format_count(s.excess_files),
        format!("+{}", t.log.commits_since_checkpoint),
        ago(t.log.last_commit_ms, now_ms),
        s.health_score.to_string(),
    ]
}

fn name(row: &RootRow) -> String {
    match row {
        // Delta is the default: other formats are labelled.
        RootRow::Table(t) => match t.format {
            TableFormat::Delta => t.name.clone(),
            other => format!("{} [{}]", t.name, other.label()),
        },
        RootRow::Broken(b) => format!("{} [unreadable]", b.name),
    }
}

fn draw_list(f: &mut Frame, area: Rect, app: &App, r: &RootView) {
    let list = &app.tables;
    let height = area.height.saturating_sub(3) as usize;
    let now_ms = app.clock.wall_ms();
    let visible: Vec<(usize, &RootRow)> = list
        .visible(height)
        .filter_map(|(pos, idx)| Some((pos, r.rows.get(idx)?)))
        .collect();
    let cells: Vec<Option<[String; 8]>> = visible
        .iter()
        .map(|(_, row)| row.table().map(|t| table_cells(t, now_ms)))
        .collect();
    let widths: Vec<usize> = (0..HEADERS.len())
        .map(|i| fit::column_width(HEADERS[i], cells.iter().flatten().map(|c| c[i].as_str())))
        .collect();
    let shown = shown_columns(area, &visible, &widths);
    let rows: Vec<Row> = visible
        .iter()
        .zip(&cells)
        .map(|((pos, row), c)| super::mark_selected(list_row(row, c.as_ref(), &shown), *pos, list))
        .collect();
    let title = Line::from(vec![
        Span::styled(" Tables ", style::title()),
        Span::raw(format!(
            "{}  Enter opens ",
            super::list_state_text(app, list)
        )),
    ]);
    let header = Row::new(
        std::iter::once("table".to_string()).chain(
            HEADERS
                .iter()
                .zip(&shown)
                .filter(|(_, s)| **s)
                .map(|(h, _)| h.to_string()),
        ),
    )
    .style(style::dim());
    let constraints: Vec<Constraint> = std::iter::once(Constraint::Fill(1))
        .chain(
            widths
                .iter()
                .zip(&shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| Constraint::Length(*w as u16)),
        )
        .collect();
    f.render_widget(
        Table::new(rows, constraints)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// The number columns that fit beside the names; when none do, the fewest.
fn shown_columns(area: Rect, visible: &[(usize, &RootRow)], widths: &[usize]) -> Vec<bool> {
    let avail = usize::from(area.width.saturating_sub(2));
    let name_w = visible
        .iter()
        .map(|(_, row)| fit::width(&name(row)))
        .fold(NAME_MIN, usize::max);
    fit::columns(avail, name_w.min(avail / 2).max(NAME_MIN), widths, &DROP).unwrap_or_else(|| {
        let mut s = vec![true; HEADERS.len()];
        for d in DROP {
            s[d] = false;
        }
        s
    })
}

/// A table's row (its name and shown numbers), or an unreadable one's (dashes, "error").
fn list_row(row: &RootRow, cells: Option<&[String; 8]>, shown: &[bool]) -> Row<'static> {
    let mut out = vec![match row {
        RootRow::Table(_) => Cell::from(name(row)),
        RootRow::Broken(_) => Cell::from(Span::styled(name(row), style::score(0))),
    }];
    match cells {
        Some(c) => {
            for (i, text) in c.iter().enumerate().filter(|(i, _)| shown[*i]) {
                out.push(if i == 7 {
                    let score = row.table().map_or(0, |t| t.stats.health_score);
                    Cell::from(Span::styled(text.clone(), style::score(score)))
                } else {
                    Cell::from(text.clone())
                });
            }
        }
        None => {
            for _ in shown.iter().filter(|s| **s).skip(1) {
                out.push(Cell::from("-"));
            }
            out.push(Cell::from(Span::styled("error", style::score(0))));
        }
    }
    Row::new(out)
}

/// The selected row's error, when it is a table that could not be read.
pub fn selected_broken(app: &App) -> Option<&BrokenTable> {
    let r = app.root.as_ref()?;
    app.tables.selected(&r.rows)?.broken()
}

/// The error panel's lines at `width` (its outer width).
pub fn detail_lines(b: &BrokenTable, width: u16) -> Vec<Line<'static>> {
    let inner = usize::from(width.saturating_sub(2));
    let mut lines = fit::words(&b.uri, style::dim(), inner);
    lines.extend(fit::words(&b.error, style::score(0), inner));
    lines
}

/// Rows the error panel takes (0: the selected row is a table).
pub fn detail_rows(app: &App, width: u16) -> u16 {
    selected_broken(app).map_or(0, |b| {
        let n = fit::wrapped_rows(
            &detail_lines(b, width),
            usize::from(width.saturating_sub(2)),
        );
        u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2)
    })
}

fn draw_detail(f: &mut Frame, area: Rect, app: &App) {
    let Some(b) = selected_broken(app).filter(|_| area.height > 0) else {
        return;
    };
    f.render_widget(
        Paragraph::new(detail_lines(b, area.width))
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(style::score(0))
                    .title(Span::styled(
                        format!(" {} could not be read ", b.name),
                        style::score(0),
                    )),
            ),
        area,
    );
}
