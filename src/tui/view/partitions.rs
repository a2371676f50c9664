//! The partitions table. Only the visible rows are built, so 100,000 partitions draw as fast as 10.
//!
//! Columns are sized by their widest visible cell, so no number is ever cut: when the panel is
//! narrow the least useful columns go first (median, small share, excess, files), then the
//! partition column shows only the values, with the column names once in its header.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::fit;
use super::style;
use crate::engine::model::partition::PartitionValues;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::table_report::{PartitionReport, TableReport};
use crate::tui::app::App;

/// The number columns, in display order.
const HEADERS: [&str; 6] = ["files", "bytes", "small", "excess", "median", "health"];
/// Indices into `HEADERS`, least useful first: dropped in this order when the panel is narrow.
const DROP: [usize; 4] = [4, 2, 3, 0];
/// What the mark column takes ("● ").
const MARK: usize = 2;

/// How the partition column names a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelForm {
    /// `ingestion_date=2026-11-30/hour=3`.
    Full,
    /// `2026-11-30/3`; the header names the columns.
    Values,
}

fn values_label(v: &PartitionValues) -> String {
    if v.0.is_empty() {
        return v.label();
    }
    v.0.iter()
        .map(|(_, v)| v.as_deref().unwrap_or("null"))
        .collect::<Vec<_>>()
        .join("/")
}

fn label(v: &PartitionValues, form: LabelForm) -> String {
    match form {
        LabelForm::Full => v.label(),
        LabelForm::Values => values_label(v),
    }
}

/// The partition column's header: "partition", or the partition column names when rows show
/// only values.
fn label_header(t: &TableReport, form: LabelForm) -> String {
    match (form, t.partitions.first()) {
        (LabelForm::Values, Some(p)) if !p.values.0.is_empty() => p
            .values
            .0
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join("/"),
        _ => "partition".into(),
    }
}

fn numbers(p: &PartitionReport) -> [String; 6] {
    let s = &p.stats;
    [
        format_count(s.files),
        format_bytes(s.bytes),
        format!("{:.0}%", s.small_share() * 100.0),
        format_count(s.excess_files),
        format_bytes(s.median_file_size),
        s.health_score.to_string(),
    ]
}

/// Each number column's width: its widest visible cell or its header.
fn number_widths(cells: &[[String; 6]]) -> Vec<usize> {
    (0..HEADERS.len())
        .map(|i| fit::column_width(HEADERS[i], cells.iter().map(|c| c[i].as_str())))
        .collect()
}

/// The partition form and the number columns shown for `rows` in `avail` cells. When nothing
/// fits (a very narrow terminal), values only and the fewest columns; the label is then cut.
fn choose(avail: usize, rows: &[&PartitionReport], widths: &[usize]) -> (LabelForm, Vec<bool>) {
    let label_w = |form: LabelForm| {
        rows.iter()
            .map(|p| MARK + fit::width(&label(&p.values, form)))
            .fold(MARK + fit::width("partition"), usize::max)
    };
    if let Some(shown) = fit::columns(avail, label_w(LabelForm::Full), widths, &DROP[..1]) {
        return (LabelForm::Full, shown);
    }
    if let Some(shown) = fit::columns(avail, label_w(LabelForm::Values), widths, &DROP) {
        return (LabelForm::Values, shown);
    }
    let mut shown = vec![true; HEADERS.len()];
    for d in DROP {
        shown[d] = false;
    }
    (LabelForm::Values, shown)
}

/// The janitor's flag after the label, in the room left (its reason is in full in the janitor
/// panel for the selected partition).
fn flag_text(app: &App, p: &PartitionReport) -> String {
    app.janitor
        .flag(&p.values)
        .map_or(String::new(), |(_, why)| {
            format!("  ⚑ {}", why.trim_start_matches("due: "))
        })
}

pub fn draw(f: &mut Frame, area: Rect, app: &App, t: &TableReport) {
    let list = &app.partitions;
    let height = area.height.saturating_sub(3) as usize;
    let visible: Vec<(usize, &PartitionReport)> = list
        .visible(height)
        .filter_map(|(pos, idx)| Some((pos, t.partitions.get(idx)?)))
        .collect();
    let avail = usize::from(area.width.saturating_sub(2));
    let reports: Vec<&PartitionReport> = visible.iter().map(|(_, p)| *p).collect();
    let cells: Vec<[String; 6]> = reports.iter().map(|p| numbers(p)).collect();
    let nums_w = number_widths(&cells);
    let (form, shown) = choose(avail, &reports, &nums_w);
    let used: usize = nums_w
        .iter()
        .zip(&shown)
        .filter(|(_, s)| **s)
        .map(|(w, _)| w + 1)
        .sum();
    let label_room = avail.saturating_sub(used);
    let layout = RowLayout {
        form,
        shown: &shown,
        label_room,
    };
    let rows: Vec<Row> = visible
        .iter()
        .zip(cells)
        .map(|((pos, p), numbers)| super::mark_selected(layout.row(app, p, numbers), *pos, list))
        .collect();
    let title = Line::from(vec![
        Span::styled(" Partitions ", style::title()),
        Span::raw(format!(
            "{}/{}  {} ",
            list.len(),
            t.partitions.len(),
            super::list_state_text(app, list)
        )),
    ]);
    let head_label = fit::truncate(&format!("  {}", label_header(t, form)), label_room);
    let header = Row::new(
        std::iter::once(head_label).chain(
            HEADERS
                .iter()
                .zip(&shown)
                .filter(|(_, s)| **s)
                .map(|(h, _)| h.to_string()),
        ),
    )
    .style(style::dim());
    let widths: Vec<Constraint> = std::iter::once(Constraint::Fill(1))
        .chain(
            nums_w
                .iter()
                .zip(&shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| Constraint::Length(*w as u16)),
        )
        .collect();
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(table, area);
}

/// How a row is laid out: the label's form and room, and the number columns shown.
struct RowLayout<'a> {
    form: LabelForm,
    shown: &'a [bool],
    label_room: usize,
}

impl RowLayout<'_> {
    /// A partition's row: its mark, label and janitor flag (cut to the room), then its numbers.
    fn row(&self, app: &App, p: &PartitionReport, numbers: [String; 6]) -> Row<'static> {
        let mark = if app.marks.contains(&p.values) {
            "● "
        } else {
            "  "
        };
        let name = format!("{mark}{}", label(&p.values, self.form));
        let spare = self.label_room.saturating_sub(fit::width(&name));
        let flag = fit::truncate(&flag_text(app, p), spare);
        let flag = if fit::width(&flag) <= 3 {
            String::new()
        } else {
            flag
        };
        let mut cells = vec![Cell::from(fit::truncate(
            &format!("{name}{flag}"),
            self.label_room,
        ))];
        for (i, text) in numbers.into_iter().enumerate() {
            if !self.shown[i] {
                continue;
            }
            cells.push(if i == 5 {
                Cell::from(Span::styled(text, style::score(p.stats.health_score)))
            } else {
                Cell::from(text)
            });
        }
        Row::new(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::thresholds::Thresholds;
    use crate::engine::stats::file_sizes::SizeStats;

    fn report(date: &str, bytes: u64) -> PartitionReport {
        let t = Thresholds {
            target_file_size: 128 << 20,
            small_file_size: 128 << 20,
            max_file_size: 1 << 30,
        };
        let mut sizes = vec![bytes / 4; 4];
        PartitionReport {
            values: PartitionValues(vec![("ingestion_date".into(), Some(date.into()))]),
            stats: SizeStats::from_sizes(&mut sizes, &t, &t.edges()),
        }
    }

    #[test]
    fn a_narrow_panel_drops_columns_then_names_before_it_cuts_a_value() {
        let p = report("2026-11-30", 146_000_000);
        let rows = [&p];
        let widths = number_widths(&[numbers(&p)]);
        let (form, shown) = choose(120, &rows, &widths);
        assert_eq!((form, shown), (LabelForm::Full, vec![true; 6]));
        // 54 cells: the 100-column terminal's partitions panel.
        let (form, shown) = choose(54, &rows, &widths);
        assert_eq!(form, LabelForm::Values, "{shown:?}");
        assert!(shown[1] && shown[5], "bytes and health stay: {shown:?}");
    }
}
