//! The tables list of a root, worst health first. A table that could not be read is a row of its
//! own (in red, first by health); selected, its error shows in full below the list.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};

use super::inert;
use super::{ago, fit, style};
use crate::engine::model::format::TableFormat;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::TableReport;
use crate::tui::app::App;
use crate::tui::fleet::Fleet;
use crate::tui::layout::TablesAreas;
use crate::tui::root::{BrokenTable, RootEntry, RootRow, RootView};

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
    draw_totals(f, a.header, r, &app.fleet);
    draw_list(f, a.list, app, r);
    draw_detail(f, a.detail, app);
}

/// Totals over the root's tables, how many could not be read, and what the health colours mean.
pub fn header_lines(r: &RootView, fleet: &Fleet, width: u16) -> Vec<Line<'static>> {
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
    if fleet.is_on() {
        items.push(super::fleet::header_item(fleet));
    }
    items.push(super::health_legend());
    let inner = usize::from(width.saturating_sub(2));
    let mut lines = fit::flow(items, "  ", inner.saturating_sub(1));
    for l in &mut lines {
        l.spans.insert(0, Span::raw(" "));
    }
    lines
}

fn draw_totals(f: &mut Frame, area: Rect, r: &RootView, fleet: &Fleet) {
    f.render_widget(
        Paragraph::new(header_lines(r, fleet, area.width))
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(format!(" {} ", r.root), style::title())),
            ),
        area,
    );
}

/// The columns of the list: the table's numbers, or the janitor's while it runs.
struct Columns {
    headers: &'static [&'static str],
    drop: &'static [usize],
    /// Coloured by the table's health score.
    health: usize,
    /// Coloured by the janitor's state.
    state: Option<usize>,
}

const TABLE_COLUMNS: Columns = Columns {
    headers: &HEADERS,
    drop: &DROP,
    health: 7,
    state: None,
};

const FLEET_COLUMNS: Columns = Columns {
    headers: &super::fleet::HEADERS,
    drop: &super::fleet::DROP,
    health: super::fleet::HEALTH,
    state: Some(super::fleet::STATE),
};

/// A row's cells for `cols` (None: a table that could not be read, unless the janitor has it).
fn row_cells(row: &RootRow, app: &App, now_ms: i64) -> Option<Vec<String>> {
    if app.fleet.is_on() {
        let early = app.fleet.snapshot.as_ref().is_some_and(|s| s.early());
        let health = row.table().map_or(0, |t| t.stats.health_score);
        if row.table().is_none() && row.fleet.is_none() {
            return None;
        }
        return Some(super::fleet::cells(row.fleet.as_ref(), early, health, now_ms).to_vec());
    }
    row.table().map(|t| table_cells(t, now_ms).to_vec())
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
        RootRow {
            entry: RootEntry::Table(t),
            ..
        } => match t.format {
            // A folder's name is the table writer's: shown inert.
            TableFormat::Delta => inert::text(&t.name).into_owned(),
            other => format!("{} [{}]", inert::text(&t.name), other.label()),
        },
        RootRow {
            entry: RootEntry::Broken(b),
            ..
        } => format!("{} [unreadable]", inert::text(&b.name)),
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
    let cols = if app.fleet.is_on() {
        &FLEET_COLUMNS
    } else {
        &TABLE_COLUMNS
    };
    let cells: Vec<Option<Vec<String>>> = visible
        .iter()
        .map(|(_, row)| row_cells(row, app, now_ms))
        .collect();
    let widths: Vec<usize> = (0..cols.headers.len())
        .map(|i| {
            fit::column_width(
                cols.headers[i],
                cells.iter().flatten().map(|c| c[i].as_str()),
            )
        })
        .collect();
    let shown = shown_columns(area, &visible, &widths, cols);
    let rows: Vec<Row> = visible
        .iter()
        .zip(&cells)
        .map(|((pos, row), c)| {
            super::mark_selected(list_row(row, c.as_deref(), &shown, cols), *pos, list)
        })
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
            cols.headers
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
fn shown_columns(
    area: Rect,
    visible: &[(usize, &RootRow)],
    widths: &[usize],
    cols: &Columns,
) -> Vec<bool> {
    let avail = usize::from(area.width.saturating_sub(2));
    let name_w = visible
        .iter()
        .map(|(_, row)| fit::width(&name(row)))
        .fold(NAME_MIN, usize::max);
    fit::columns(
        avail,
        name_w.min(avail / 2).max(NAME_MIN),
        widths,
        cols.drop,
    )
    .unwrap_or_else(|| {
        let mut s = vec![true; cols.headers.len()];
        for d in cols.drop {
            s[*d] = false;
        }
        s
    })
}

/// A table's row (its name and shown numbers), or an unreadable one's (dashes, "error").
fn list_row(
    row: &RootRow,
    cells: Option<&[String]>,
    shown: &[bool],
    cols: &Columns,
) -> Row<'static> {
    let mut out = vec![match row.entry {
        RootEntry::Table(_) => Cell::from(name(row)),
        RootEntry::Broken(_) => Cell::from(Span::styled(name(row), style::score(0))),
    }];
    match cells {
        Some(c) => {
            for (i, text) in c.iter().enumerate().filter(|(i, _)| shown[*i]) {
                out.push(if i == cols.health {
                    let listed = row.table().map_or(0, |t| t.stats.health_score);
                    let score = super::fleet::health(row.fleet.as_ref(), listed);
                    Cell::from(Span::styled(text.clone(), style::score(score)))
                } else if Some(i) == cols.state
                    && let Some(f) = &row.fleet
                {
                    Cell::from(Span::styled(
                        text.clone(),
                        super::fleet::state_style(&f.state),
                    ))
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

/// What the panel under the list shows of the selected row: a table that could not be read
/// (its error), or, while the janitor runs, why the janitor does what it does with it.
struct Detail {
    title: String,
    lines: Vec<Line<'static>>,
    border: ratatui::style::Style,
}

fn detail(app: &App, width: u16) -> Option<Detail> {
    let r = app.root.as_ref()?;
    let row = app.tables.selected(&r.rows)?;
    if let Some(f) = row.fleet.as_ref().filter(|_| app.fleet.is_on()) {
        return Some(Detail {
            title: format!(" {}: the janitor ", name(row)),
            lines: super::fleet::detail_lines(f, width),
            border: super::fleet::state_style(&f.state),
        });
    }
    let b = row.broken()?;
    Some(Detail {
        title: format!(" {} could not be read ", inert::text(&b.name)),
        lines: broken_lines(b, width),
        border: style::score(0),
    })
}

/// The error panel's lines at `width` (its outer width).
fn broken_lines(b: &BrokenTable, width: u16) -> Vec<Line<'static>> {
    let inner = usize::from(width.saturating_sub(2));
    let mut lines = fit::words(&b.uri, style::dim(), inner);
    lines.extend(fit::words(&b.error, style::score(0), inner));
    lines
}

/// Rows the panel under the list takes (0: nothing to say of the selected row).
pub fn detail_rows(app: &App, width: u16) -> u16 {
    detail(app, width).map_or(0, |d| {
        let n = fit::wrapped_rows(&d.lines, usize::from(width.saturating_sub(2)));
        u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2)
    })
}

fn draw_detail(f: &mut Frame, area: Rect, app: &App) {
    let Some(d) = detail(app, area.width).filter(|_| area.height > 0) else {
        return;
    };
    f.render_widget(
        Paragraph::new(d.lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(d.border)
                .title(Span::styled(d.title, d.border)),
        ),
        area,
    );
}
