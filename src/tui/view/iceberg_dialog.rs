//! The Iceberg compaction preview: the dry run through the table's catalog (the same plan
//! `lakehealth compact --catalog` prints), then, confirmed, the outcome of the commits.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::style;
use crate::tui::app::IcebergDialog;
use crate::tui::layout::centered;

pub fn draw(f: &mut Frame, area: Rect, d: &IcebergDialog) {
    let b = centered(area, 100, 20);
    f.render_widget(Clear, b);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(
            " Compact (Iceberg, through the catalog) ",
            style::title(),
        ));
    let inner = block.inner(b);
    f.render_widget(block, b);
    let mut lines: Vec<Line> = Vec::new();
    match (&d.result, &d.outcome) {
        (None, _) => lines.push(Line::from(format!("planning {} ...", d.table_uri))),
        (Some(Err(e)), _) => {
            lines.push(Line::from(Span::styled(
                format!("cannot compact: {e}"),
                style::score(0),
            )));
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled("Esc close", style::dim())));
        }
        (Some(Ok(s)), outcome) => {
            lines.push(Line::from(format!("table {}", s.table)));
            lines.extend(
                crate::engine::compact::iceberg::job::plan_text(&s.plan)
                    .lines()
                    .map(|l| Line::from(l.to_string())),
            );
            lines.push(Line::from(""));
            let (text, st) = match outcome {
                Some(Ok(done)) => (format!("{done}    Esc close"), style::dim()),
                Some(Err(e)) => (format!("failed: {e}    Esc close"), style::score(0)),
                None if d.running => ("compacting ...".to_string(), style::dim()),
                None if s.plan.bins.is_empty() => {
                    ("nothing to compact    Esc close".to_string(), style::dim())
                }
                None => (
                    "Enter / y: compact and commit through the catalog    Esc / n: close".into(),
                    style::dim(),
                ),
            };
            lines.push(Line::from(Span::styled(text, st)));
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
