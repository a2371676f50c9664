//! The bottom line: loading progress, or the most useful keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::style;
use crate::tui::app::App;

const SPINNER: [&str; 4] = ["|", "/", "-", "\\"];

pub fn loading_text(app: &App) -> Option<String> {
    let l = app.loading.as_ref()?;
    let what = l
        .progress
        .as_ref()
        .map_or("starting".to_string(), |p| p.describe());
    let pct = l
        .progress
        .as_ref()
        .and_then(|p| p.ratio())
        .map_or(String::new(), |r| format!(" {:.0}%", r * 100.0));
    Some(format!(
        "{} loading {}: {what}{pct} ({:.1}s)",
        SPINNER[app.spinner % SPINNER.len()],
        l.uri,
        l.started.elapsed().as_secs_f64()
    ))
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let line = if let Some(text) = loading_text(app) {
        Line::from(Span::styled(text, style::title()))
    } else if app.filter_input.is_some() {
        Line::from(" type to filter · Enter keep · Esc clear")
    } else {
        let back = if app.root.is_some() {
            " · Esc back"
        } else {
            ""
        };
        Line::from(Span::styled(
            format!(
                " j/k move · s sort · / filter · Space mark · c compact · x cancel job · t whole-table histogram · r reload{back} · ? help · q quit"
            ),
            style::dim(),
        ))
    };
    f.render_widget(Paragraph::new(line), area);
}
