//! The commit feed, newest first: version, time, operation, files and bytes added and removed
//! (in the same KiB/MiB units as every other panel), and the engine that wrote it
//! (`commitInfo`). Commits that landed while the table is followed are marked `●`. Columns are
//! as wide as their widest cell; a narrow panel drops the least useful ones rather than cut a
//! number.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Row, Table};

use super::{ago, fit, style};
use crate::engine::delta::log::state::CommitSummary;
use crate::engine::size::format_bytes;
use crate::engine::stats::table_report::TableReport;

/// The number columns, in display order, after the operation.
const HEADERS: [&str; 5] = ["version", "when", "files", "added", "removed"];
/// Least useful first.
const DROP: [usize; 3] = [2, 4, 1];
/// What the operation column keeps at least (its header, "OPTIMIZE").
const OPERATION_MIN: usize = 9;

fn cells(c: &CommitSummary, now: i64, live: bool) -> [String; 5] {
    [
        format!("{}v{}", if live { "●" } else { " " }, c.version),
        ago(c.timestamp_ms, now),
        format!("+{} -{}", c.files_added, c.files_removed),
        format!("+{}", format_bytes(c.bytes_added)),
        format!("-{}", format_bytes(c.bytes_removed)),
    ]
}

/// `now` is the app clock's wall time, for the "ago" column; `live_from`: the first version the
/// watcher applied (rows from it on are marked).
pub fn draw(f: &mut Frame, area: Rect, t: &TableReport, now: i64, live_from: Option<u64>) {
    let shown_commits: Vec<&CommitSummary> = t
        .commits
        .iter()
        .take(area.height.saturating_sub(3) as usize)
        .collect();
    let texts: Vec<[String; 5]> = shown_commits
        .iter()
        .map(|c| cells(c, now, live_from.is_some_and(|v| c.version >= v)))
        .collect();
    let cols = Columns::fit(area, &shown_commits, &texts);
    // The engine takes what the other columns leave; a cut one ends in "…".
    let engine_w = cols.engine_width(area);
    let rows: Vec<Row> = shown_commits
        .iter()
        .zip(&texts)
        .map(|(c, text)| {
            let engine = c.engine.clone().unwrap_or_else(|| "-".into());
            let row = Row::new(cols.pick(
                text,
                fit::truncate(&c.operation, cols.operation),
                fit::truncate(&engine, engine_w),
            ));
            if c.data_change {
                row
            } else {
                // Compactions and other rewrites: no data changed.
                row.style(style::dim())
            }
        })
        .collect();
    let header_names = HEADERS.map(String::from);
    let header = Row::new(cols.pick(
        &header_names,
        fit::truncate("operation", cols.operation),
        fit::truncate("engine", engine_w),
    ))
    .style(style::dim());
    f.render_widget(
        Table::new(rows, cols.constraints()).header(header).block(
            Block::default()
                .borders(Borders::ALL)
                .title(title(t, area.width)),
        ),
        area,
    );
}

/// Display order: version, when, operation (`OPERATION`), files, added, removed; the engine
/// follows.
const ORDER: [usize; 6] = [0, 1, OPERATION, 2, 3, 4];
const OPERATION: usize = usize::MAX;

/// The columns that fit the panel and their widths.
struct Columns {
    shown: Vec<bool>,
    widths: Vec<usize>,
    operation: usize,
}

impl Columns {
    fn fit(area: Rect, commits: &[&CommitSummary], texts: &[[String; 5]]) -> Self {
        let widths: Vec<usize> = (0..HEADERS.len())
            .map(|i| fit::column_width(HEADERS[i], texts.iter().map(|c| c[i].as_str())))
            .collect();
        // The engine column's separator is taken first: the engine itself may be cut (text).
        let avail = usize::from(area.width.saturating_sub(3));
        let shown = fit::columns(avail, OPERATION_MIN, &widths, &DROP).unwrap_or_else(|| {
            let mut s = vec![true; HEADERS.len()];
            for d in DROP {
                s[d] = false;
            }
            s
        });
        let op_w = commits
            .iter()
            .map(|c| fit::width(&c.operation))
            .fold(OPERATION_MIN, usize::max);
        let used: usize = widths
            .iter()
            .zip(&shown)
            .filter(|(_, s)| **s)
            .map(|(w, _)| w + 1)
            .sum();
        let operation = op_w.min(avail.saturating_sub(used).max(OPERATION_MIN));
        Self {
            shown,
            widths,
            operation,
        }
    }

    /// The cells left to the engine column in `area` (after borders, columns and separators).
    fn engine_width(&self, area: Rect) -> usize {
        let used: usize = self
            .order()
            .map(|i| {
                if i == OPERATION {
                    self.operation + 1
                } else {
                    self.widths[i] + 1
                }
            })
            .sum();
        usize::from(area.width.saturating_sub(2)).saturating_sub(used)
    }

    /// The columns shown, in display order.
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        ORDER
            .into_iter()
            .filter(|&i| i == OPERATION || self.shown[i])
    }

    /// A row's cells in display order.
    fn pick(&self, row: &[String; 5], op: String, engine: String) -> Vec<String> {
        let mut v: Vec<String> = self
            .order()
            .map(|i| {
                if i == OPERATION {
                    op.clone()
                } else {
                    row[i].clone()
                }
            })
            .collect();
        v.push(engine);
        v
    }

    fn constraints(&self) -> Vec<Constraint> {
        self.order()
            .map(|i| {
                if i == OPERATION {
                    Constraint::Length(self.operation as u16)
                } else {
                    Constraint::Length(self.widths[i] as u16)
                }
            })
            .chain(std::iter::once(Constraint::Fill(1)))
            .collect()
    }
}

/// The title is the panel's name; the counts by operation follow only when they fit whole.
fn title(t: &TableReport, width: u16) -> ratatui::text::Line<'static> {
    let ops: Vec<String> = t
        .log
        .operations
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let summary = format!("last {}: {}", t.log.window_commits, ops.join(", "));
    let room = usize::from(width).saturating_sub(12);
    let mut title = vec![Span::styled(" Commits ", style::title())];
    if fit::width(&summary) < room {
        title.push(Span::raw(format!("{summary} ")));
    }
    ratatui::text::Line::from(title)
}
