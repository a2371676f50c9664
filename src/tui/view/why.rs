//! The "why" view (`w`): the janitor's policy and its last decisions, newest first: time,
//! partition, rule, decision and reason.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::style;
use crate::engine::janitor::decide::DecisionKind;
use crate::tui::janitor::TuiJanitor;
use crate::tui::layout::centered;

fn decision_style(k: DecisionKind) -> Style {
    match k {
        DecisionKind::Due => style::score(0),
        DecisionKind::NotDue => style::score(100),
        DecisionKind::Skipped => style::dim(),
        DecisionKind::BackingOff | DecisionKind::Suspended => style::score(50),
    }
}

fn label(k: DecisionKind) -> &'static str {
    match k {
        DecisionKind::Due => "due",
        DecisionKind::NotDue => "not due",
        DecisionKind::Skipped => "skipped",
        DecisionKind::BackingOff => "backing off",
        DecisionKind::Suspended => "suspended",
    }
}

pub fn draw(f: &mut Frame, area: Rect, j: &TuiJanitor) {
    let b = centered(area, 96, area.height.saturating_sub(4));
    f.render_widget(Clear, b);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(
            " Why: the janitor's last decisions ",
            style::title(),
        ));
    let inner = block.inner(b);
    f.render_widget(block, b);
    let [top, list, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    let state = match (&j.table, j.why.is_empty()) {
        (Some(_), true) => "on, deciding",
        (Some(_), false) => "on",
        (None, _) => "off (a switches it on)",
    };
    f.render_widget(
        Paragraph::new(format!("janitor {state} · policy: {}", j.policy)).wrap(Wrap { trim: true }),
        top,
    );
    let rows: Vec<Row> = j
        .why
        .iter()
        .take(list.height.saturating_sub(1) as usize)
        .map(|w| {
            Row::new(vec![
                Cell::from(w.ts.clone()),
                Cell::from(w.partition.label()),
                Cell::from(w.rule.clone()),
                Cell::from(Span::styled(label(w.decision), decision_style(w.decision))),
                Cell::from(w.reason.clone()),
            ])
        })
        .collect();
    let header = Row::new(["time", "partition", "rule", "decision", "reason"]).style(style::dim());
    let table = Table::new(
        rows,
        [
            Constraint::Length(24),
            Constraint::Length(26),
            Constraint::Length(14),
            Constraint::Length(11),
            Constraint::Min(20),
        ],
    )
    .header(header);
    f.render_widget(table, list);
    f.render_widget(
        Paragraph::new(Line::from(Span::styled("Esc close", style::dim()))),
        foot,
    );
}
