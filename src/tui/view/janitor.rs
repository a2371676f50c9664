//! The janitor panel under the partitions, while the janitor is on: its state and policy, and
//! the selected partition's flag with its reason, in full (they wrap, never cut).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::{fit, style};
use crate::tui::app::App;

/// The panel's lines at `width` (its outer width); empty while the janitor is off.
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let Some(status) = app.janitor.status() else {
        return Vec::new();
    };
    let inner = usize::from(width.saturating_sub(2));
    let items: Vec<Vec<Span<'static>>> = status
        .split(" · ")
        .map(|s| vec![Span::raw(s.to_string())])
        .collect();
    // Items flow at " · "; one wider than the panel (the policy) wraps at its words, so the
    // rows counted are the rows drawn.
    let mut lines: Vec<Line<'static>> = fit::flow(items, " · ", inner)
        .into_iter()
        .flat_map(|l| {
            if l.width() > inner {
                fit::words(&l.to_string(), ratatui::style::Style::default(), inner)
            } else {
                vec![l]
            }
        })
        .collect();
    let flag = app
        .table
        .as_ref()
        .and_then(|t| app.partitions.selected(&t.partitions))
        .and_then(|p| Some((p.values.label(), app.janitor.flag(&p.values)?)))
        .map(|(label, (_, why))| format!("⚑ {label}: {why}"));
    if let Some(flag) = flag {
        lines.extend(fit::words(&flag, style::small_band(), inner));
    }
    lines
}

/// Rows the panel takes at `width`, borders included (0: off).
pub fn rows(app: &App, width: u16) -> u16 {
    let l = lines(app, width);
    if l.is_empty() {
        return 0;
    }
    let n = fit::wrapped_rows(&l, usize::from(width.saturating_sub(2)));
    u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2)
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    f.render_widget(
        Paragraph::new(super::scrubbed(lines(app, area.width)))
            .wrap(Wrap { trim: true })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(" Janitor ", style::title())),
            ),
        area,
    );
}
