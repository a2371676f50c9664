//! What the tables list shows of the janitor over the root (`tui::fleet`): each row's state,
//! debt, last job and spend as cells, the header's totals, and the selected row's detail.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{ago, fit, style};
use crate::engine::janitor::fleet::{FleetRow, FleetSnapshot, FleetState};
use crate::engine::janitor::history::Outcome;
use crate::engine::model::cost::usd_text;
use crate::engine::model::duration::whole_units_ms;
use crate::engine::size::{format_bytes, format_count};
use crate::tui::fleet::Fleet;

/// The janitor's columns, in display order, after the name.
pub const HEADERS: [&str; 7] = [
    "janitor",
    "small",
    "small bytes",
    "last job",
    "$/month",
    "files",
    "health",
];
/// Least useful first.
pub const DROP: [usize; 5] = [5, 1, 3, 4, 2];
/// The health column (coloured by score).
pub const HEALTH: usize = 6;
/// The state column (coloured by state).
pub const STATE: usize = 0;

/// "running 45% 24 MiB/s", "queued 3rd/12", "backing off 4m", ...
pub fn state_text(s: &FleetState) -> String {
    match s {
        FleetState::Running {
            done,
            pace_bytes_per_second,
            ..
        } => {
            let pct = (done * 100.0).clamp(0.0, 100.0);
            match pace_bytes_per_second {
                Some(p) => format!("running {pct:.0}% {}/s", format_bytes(*p)),
                None => format!("running {pct:.0}%"),
            }
        }
        FleetState::Queued { place, of, .. } => format!("queued {place}/{of}"),
        FleetState::BackingOff { retry_in_ms, .. } => {
            format!("backing off {}", whole_units_ms(*retry_in_ms))
        }
        other => other.label().to_string(),
    }
}

pub fn state_style(s: &FleetState) -> Style {
    let c = match s {
        FleetState::Running { .. } => Color::Cyan,
        FleetState::Queued { .. } | FleetState::BackingOff { .. } => Color::Yellow,
        FleetState::Suspended { .. } | FleetState::Broken { .. } => Color::Red,
        FleetState::Idle { .. } => return Style::default(),
    };
    Style::default().fg(c).add_modifier(Modifier::BOLD)
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Compacted => "compacted",
        Outcome::Conflict => "conflict",
        Outcome::NothingToCompact => "nothing",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "stopped",
    }
}

/// A row's cells for `HEADERS` (`-` where the janitor has not read it yet).
pub fn cells(row: Option<&FleetRow>, early: bool, health: u8, now_ms: i64) -> [String; 7] {
    let dash = || "-".to_string();
    let Some(r) = row else {
        return [
            "-".into(),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
            health.to_string(),
        ];
    };
    let debt = r.debt;
    // The janitor's read is newer than the list's.
    let health = debt.map_or(health, |d| d.health);
    [
        state_text(&r.state),
        debt.map_or_else(dash, |d| format_count(d.small_files)),
        debt.map_or_else(dash, |d| format_bytes(d.small_bytes)),
        r.last_job.as_ref().map_or_else(dash, |j| {
            format!(
                "{} {}",
                ago(Some(j.ended_ms), now_ms),
                outcome_word(j.outcome)
            )
        }),
        format!("{}{}", if early { "~" } else { "" }, usd_text(r.month_usd)),
        debt.map_or_else(dash, |d| format_count(d.files)),
        health.to_string(),
    ]
}

/// The health score a row shows: the janitor's latest read, else the list's.
pub fn health(row: Option<&FleetRow>, listed: u8) -> u8 {
    row.and_then(|r| r.debt).map_or(listed, |d| d.health)
}

/// The header's janitor item: what runs, waits and fails, the month's spend.
pub fn header_item(fleet: &Fleet) -> Vec<Span<'static>> {
    let Some(s) = fleet.snapshot.as_deref() else {
        let text = if fleet.stopping {
            "janitor stopping"
        } else {
            "janitor starting: reading every table"
        };
        return vec![Span::styled(text, style::title())];
    };
    let count = |f: fn(&FleetState) -> bool| s.rows.iter().filter(|r| f(&r.state)).count();
    let queued = count(|st| matches!(st, FleetState::Queued { .. }));
    let held = count(|st| {
        matches!(
            st,
            FleetState::BackingOff { .. } | FleetState::Suspended { .. }
        )
    });
    let broken = count(|st| matches!(st, FleetState::Broken { .. }));
    let mut text = format!(
        "janitor{}: {} table(s), {} running (at most {}), {queued} queued",
        if fleet.stopping { " stopping" } else { "" },
        s.rows.len(),
        s.running,
        s.max_jobs,
    );
    if held > 0 {
        text.push_str(&format!(", {held} held back"));
    }
    if broken > 0 {
        text.push_str(&format!(", {broken} broken"));
    }
    text.push_str(&format!(", {}", month_text(s)));
    if fleet.unlisted > 0 {
        text.push_str(&format!(
            "; {} more found since this list was read (r reloads)",
            fleet.unlisted
        ));
    }
    vec![Span::styled(text, style::title())]
}

/// "~$1.20/month" (from less than an hour: the run's pace so far, backlog included).
fn month_text(s: &FleetSnapshot) -> String {
    let usd = usd_text(s.month_usd());
    if s.early() {
        format!("~{usd}/month at this first hour's pace")
    } else {
        format!("{usd}/month at this run's pace")
    }
}

/// The selected row's detail: why it is in its state, and its last job.
pub fn detail_lines(r: &FleetRow, width: u16) -> Vec<Line<'static>> {
    let inner = usize::from(width.saturating_sub(2));
    let mut lines = fit::words(
        &format!("{}: {}", r.state.label(), r.state.why()),
        state_style(&r.state),
        inner,
    );
    if let Some(d) = r.debt {
        lines.extend(fit::words(
            &format!(
                "debt: {} small file(s), {} of {} file(s) ({}); {} beyond the target count",
                format_count(d.small_files),
                format_bytes(d.small_bytes),
                format_count(d.files),
                format_bytes(d.bytes),
                format_count(d.excess_files),
            ),
            Style::default(),
            inner,
        ));
    }
    if let Some(j) = &r.last_job {
        let cost = j
            .usd
            .map(|u| format!(" ({})", usd_text(u)))
            .unwrap_or_default();
        lines.extend(fit::words(
            &format!("last job: {}{cost}", j.summary),
            style::dim(),
            inner,
        ));
    }
    lines.extend(fit::words(
        &format!(
            "spent {} this run (reading its log and its jobs), {}/month at this pace",
            usd_text(r.spent_usd),
            usd_text(r.month_usd)
        ),
        style::dim(),
        inner,
    ));
    super::scrubbed(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_table_shows_its_progress_and_pace_and_a_queued_one_its_place() {
        let running = FleetState::Running {
            partitions: 2,
            done: 0.456,
            pace_bytes_per_second: Some(24 * 1024 * 1024),
            doing: "x".into(),
        };
        assert_eq!(state_text(&running), "running 46% 24 MiB/s");
        let queued = FleetState::Queued {
            place: 3,
            of: 12,
            why: "x".into(),
        };
        assert_eq!(state_text(&queued), "queued 3/12");
    }

    #[test]
    fn a_table_the_janitor_has_not_read_shows_dashes_but_its_health() {
        let c = cells(None, false, 40, 0);
        assert_eq!(c[STATE], "-");
        assert_eq!(c[HEALTH], "40");
    }
}
