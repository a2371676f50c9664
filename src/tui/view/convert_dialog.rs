//! The conversion preview: what converting the folder to Delta does, and what the user must do
//! first (the same text `lakehealth convert` prints).

use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::Wrap;

use super::preview_dialog::{Body, PreviewView, failed};
use super::style;
use crate::tui::app::ConvertDialog;

pub fn view(d: &ConvertDialog) -> PreviewView<'_> {
    let lines = match &d.result {
        None => vec![Line::from(format!("listing {} ...", d.table_uri))],
        Some(Err(e)) => failed(format!("cannot convert: {e}"), "Esc close"),
        Some(Ok(p)) => {
            let mut lines: Vec<Line> = p
                .text()
                .lines()
                .map(|l| Line::from(super::inert::text(l).into_owned()))
                .collect();
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                if d.running {
                    "converting ..."
                } else {
                    "Enter / y: the steps before are done, convert now    Esc / n: close"
                },
                style::dim(),
            )));
            lines
        }
    };
    PreviewView {
        title: " Convert to Delta ",
        border: Color::Cyan,
        width: 100,
        height: 24,
        body: Body::Lines(lines, Some(Wrap { trim: false })),
    }
}
