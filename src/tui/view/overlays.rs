//! The splash while the first load runs, and the error panel.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Gauge, Paragraph, Wrap};

use super::inert;
use super::status::loading_text;
use super::style;
use crate::tui::app::App;
use crate::tui::keymap::{Context, hint_line};
use crate::tui::layout::centered;

pub fn draw_splash(f: &mut Frame, area: Rect, app: &App) {
    let text = loading_text(app)
        .unwrap_or_else(|| format!("nothing loaded from {} (r to retry, q to quit)", app.uri));
    let b = centered(area, 70, 5);
    let ratio = app
        .loading
        .as_ref()
        .and_then(|l| l.progress.as_ref())
        .and_then(|p| p.ratio());
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" lakehealth ", style::title()));
    match ratio {
        Some(r) => f.render_widget(
            Gauge::default()
                .block(block)
                .gauge_style(Style::default().fg(Color::Cyan))
                .ratio(r.clamp(0.0, 1.0))
                .label(text),
            b,
        ),
        None => f.render_widget(Paragraph::new(text).block(block), b),
    }
}

pub fn draw_error(f: &mut Frame, area: Rect, message: &str) {
    let b = centered(area, 70, 10);
    f.render_widget(Clear, b);
    let body = vec![
        Line::from(inert::text(message).into_owned()),
        Line::from(""),
        Line::from(Span::styled(
            hint_line(Context::Error, |_| true),
            style::dim(),
        )),
    ];
    f.render_widget(
        Paragraph::new(body).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(Color::Red))
                .title(Span::styled(" Error ", Style::default().fg(Color::Red))),
        ),
        b,
    );
}
