//! The bottom line: loading progress, or the keys of whoever has them, from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::style;
use crate::tui::app::App;
use crate::tui::keymap::hint_line;

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
        app.clock.now().duration_since(l.started).as_secs_f64()
    ))
}

/// The keys that do something now, in the context that has them.
pub fn hints(app: &App) -> String {
    hint_line(app.context(), |c| app.can(c))
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let line = match loading_text(app) {
        Some(text) => Line::from(Span::styled(text, style::title())),
        None => Line::from(Span::styled(format!(" {}", hints(app)), style::dim())),
    };
    f.render_widget(Paragraph::new(line), area);
}
