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
        DecisionKind::Due | DecisionKind::Recluster => style::score(0),
        DecisionKind::NotDue => style::score(100),
        DecisionKind::Skipped => style::dim(),
        DecisionKind::BackingOff | DecisionKind::Suspended => style::score(50),
        DecisionKind::Running => style::score(75),
    }
}

fn label(k: DecisionKind) -> &'static str {
    match k {
        DecisionKind::Due => "due",
        DecisionKind::Recluster => "re-cluster",
        DecisionKind::NotDue => "not due",
        DecisionKind::Skipped => "skipped",
        DecisionKind::BackingOff => "backing off",
        DecisionKind::Suspended => "suspended",
        DecisionKind::Running => "running",
    }
}

/// `scroll`: rows scrolled down (clamped here so the last page stays full).
pub fn draw(f: &mut Frame, area: Rect, j: &TuiJanitor, scroll: usize) {
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
    let top_lines = top_lines(j, inner.width);
    let [top, list, foot] = Layout::vertical([
        Constraint::Length(top_lines.len() as u16),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(top_lines).wrap(Wrap { trim: true }), top);
    let first = scroll.min(j.why.len().saturating_sub(1));
    let page = draw_decisions(f, list, j, first);
    let shown = if j.why.is_empty() {
        "no decisions yet".to_string()
    } else {
        format!(
            "{}–{} of {}",
            first + 1,
            (first + page).min(j.why.len()),
            j.why.len()
        )
    };
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(
            format!("{shown} · j/k scroll · Esc close"),
            style::dim(),
        ))),
        foot,
    );
}

/// The janitor's state and policy, wrapped to `width`.
fn top_lines(j: &TuiJanitor, width: u16) -> Vec<Line<'static>> {
    let state = match (&j.table, j.why.is_empty()) {
        (Some(_), true) => "on, deciding",
        (Some(_), false) => "on",
        (None, _) => "off (a switches it on)",
    };
    super::fit::words(
        &format!(
            "janitor {state} · policy: {} · a decision repeated shows once, at its newest time; partitions without small files are left out",
            j.policy
        ),
        Style::default(),
        usize::from(width),
    )
}

/// The decisions from `first` on that fit `list`; returns how many were drawn.
fn draw_decisions(f: &mut Frame, list: Rect, j: &TuiJanitor, first: usize) -> usize {
    // The time of day (the date is today's, or in the history file); the partition column as
    // wide as its widest label; the reason takes the rest and wraps, never cut.
    let time = |ts: &str| ts.get(11..19).unwrap_or(ts).to_string();
    let part_w = j
        .why
        .iter()
        .map(|w| super::fit::width(&w.partition.label()))
        .fold(9, usize::max)
        .min(usize::from(list.width) / 3);
    let fixed = [8, part_w, 12, 11];
    let reason_w = usize::from(list.width)
        .saturating_sub(fixed.iter().sum::<usize>() + fixed.len())
        .max(12);
    let rows_room = usize::from(list.height.saturating_sub(1));
    let mut used = 0;
    let mut rows: Vec<Row> = Vec::new();
    for w in j.why.iter().skip(first) {
        let reason = super::fit::words(&w.reason, Style::default(), reason_w);
        let h = reason.len().max(1);
        if used + h > rows_room {
            break;
        }
        used += h;
        rows.push(
            Row::new(vec![
                Cell::from(time(&w.ts)),
                Cell::from(super::inert::text(&w.partition.label()).into_owned()),
                Cell::from(w.rule.clone()),
                Cell::from(Span::styled(label(w.decision), decision_style(w.decision))),
                Cell::from(ratatui::text::Text::from(reason)),
            ])
            .height(h as u16),
        );
    }
    let page = rows.len();
    let header = Row::new(["time", "partition", "rule", "decision", "reason"]).style(style::dim());
    let table = Table::new(
        rows,
        [
            Constraint::Length(fixed[0] as u16),
            Constraint::Length(fixed[1] as u16),
            Constraint::Length(fixed[2] as u16),
            Constraint::Length(fixed[3] as u16),
            Constraint::Fill(1),
        ],
    )
    .header(header);
    f.render_widget(table, list);
    page
}
