//! The Iceberg compaction preview: the dry run through the table's catalog (the same plan
//! `lakehealth compact --catalog` prints), then, confirmed, the outcome of the commits.

use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::Wrap;

use super::preview_dialog::{Body, PreviewView, failed};
use super::style;
use crate::tui::app::IcebergDialog;

pub fn view(d: &IcebergDialog) -> PreviewView<'_> {
    let lines = match (&d.result, &d.outcome) {
        (None, _) => vec![Line::from(format!("planning {} ...", d.table_uri))],
        (Some(Err(e)), _) => failed(format!("cannot compact: {e}"), "Esc close"),
        (Some(Ok(s)), outcome) => {
            let mut lines = vec![Line::from(format!("table {}", s.table))];
            lines.extend(
                crate::engine::iceberg::compact::job::plan_text(&s.plan)
                    .lines()
                    .map(|l| Line::from(super::inert::text(l).into_owned())),
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
            lines
        }
    };
    PreviewView {
        title: " Compact (Iceberg, through the catalog) ",
        border: Color::Cyan,
        width: 100,
        height: 20,
        body: Body::Lines(lines, Some(Wrap { trim: false })),
    }
}
