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

/// `hints` in `width` cells: entries are left out from the middle, so the first ones and the
/// last two (help, quit) stay whole.
pub fn fit_hints(hints: &str, width: usize) -> String {
    let mut entries: Vec<&str> = hints.split(" · ").collect();
    let fits = |e: &[&str]| super::fit::width(&e.join(" · ")) <= width;
    while !fits(&entries) && entries.len() > 3 {
        entries.remove(entries.len() - 3);
    }
    entries.join(" · ")
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let width = usize::from(area.width.saturating_sub(1));
    let line = match (loading_text(app), &app.notice) {
        (Some(text), _) => Line::from(Span::styled(text, style::title())),
        (None, Some(n)) => Line::from(Span::styled(format!(" {n}"), style::score(50))),
        (None, None) => Line::from(Span::styled(
            format!(" {}", fit_hints(&hints(app), width)),
            style::dim(),
        )),
    };
    // A location being loaded and a notice are engine text: they may quote a credential.
    f.render_widget(Paragraph::new(super::scrubbed([line])), area);
}

#[cfg(test)]
mod tests {
    use super::fit_hints;

    #[test]
    fn a_narrow_hint_bar_keeps_help_and_quit() {
        let h = "a one · b two · c three · ? help · q quit";
        assert_eq!(fit_hints(h, 80), h);
        assert_eq!(fit_hints(h, 30), "a one · ? help · q quit");
    }
}
