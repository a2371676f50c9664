//! The live panel above the commit feed, while the table follows its log: the watcher's status,
//! a sparkline of commits per 10 seconds, and forecasts from the arrival rate of small files
//! (for the selected partition, and the partitions the policy will make due soonest).

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};

use super::inert;
use super::writers::truncate;
use super::{fit, style};
use crate::engine::janitor::forecast::{DueIn, Forecast};
use crate::engine::model::duration::whole_units;
use crate::engine::model::partition::PartitionValues;
use crate::engine::size::{format_count, plural};
use crate::engine::stats::table_report::{PartitionReport, TableReport};
use crate::tui::app::App;
use crate::tui::live::{Live, LiveStatus};

/// Width of one sparkline bar.
pub const BUCKET: Duration = Duration::from_secs(10);
/// Partitions listed as due soonest.
const SOONEST: usize = 3;

fn status_line(live: &Live) -> Line<'static> {
    let poll = whole_units(live.poll);
    match &live.status {
        LiveStatus::Starting => Line::from(Span::styled(
            format!(" reading the log… then polling every {poll}"),
            style::dim(),
        )),
        LiveStatus::Following { version } => {
            // The newest compaction first: on a narrow panel it is what a user watching a job
            // wants to see land.
            let compacted = live.last_compaction.map_or(String::new(), |c| {
                format!(
                    "compacted v{} (-{} +{} files) · ",
                    c.version,
                    format_count(c.files_removed),
                    format_count(c.files_added)
                )
            });
            Line::from(vec![
                Span::styled(" ● ", Style::default().fg(Color::Green)),
                Span::raw(format!(
                    "{compacted}following v{version} · {} since opened, polling every {poll}",
                    plural(live.commits_seen, "commit"),
                )),
            ])
        }
        LiveStatus::Failing { message, retry_in } => Line::from(Span::styled(
            format!(
                " ✗ {} (retrying in {})",
                inert::text(message),
                whole_units(*retry_in)
            ),
            Style::default().fg(Color::Red),
        )),
    }
}

fn due_text(f: &Forecast) -> String {
    let rate = f
        .small_files_per_hour
        .map_or("rate: measuring".to_string(), |r| {
            format!("{r:.1} small files/h")
        });
    let due = match &f.due {
        DueIn::Now { reason } => reason.clone(),
        DueIn::In { seconds } => format!(
            "due in ~{}",
            whole_units(Duration::from_secs((*seconds).max(1)))
        ),
        DueIn::NotByArrivals => "not due by arrivals".into(),
        DueIn::Unknown => "due: not known yet".into(),
    };
    format!("{rate} · {due}")
}

/// Why no partition is listed as due soonest, as true as the forecasts allow.
fn nothing_due(live: &Live, t: &TableReport, now: i64) -> &'static str {
    let arriving: Vec<&PartitionReport> = live
        .arrivals
        .arriving()
        .filter_map(|values| find(t, values))
        .collect();
    if arriving.is_empty() {
        return "none: no partition is receiving small files";
    }
    let measuring = arriving.iter().any(|p| {
        live.forecast(t, p, now)
            .is_none_or(|f| matches!(f.due, DueIn::Unknown))
    });
    if measuring {
        "none yet: arrival rates are still being measured"
    } else {
        "none: small files arrive too slowly to make a partition due"
    }
}

fn find<'t>(t: &'t TableReport, v: &PartitionValues) -> Option<&'t PartitionReport> {
    // The report's partitions are sorted by (label, values).
    let key = (v.label(), v);
    t.partitions
        .binary_search_by(|p| (p.values.label(), &p.values).cmp(&key))
        .ok()
        .and_then(|i| t.partitions.get(i))
}

/// Partitions with arrivals that the policy makes due next, soonest first.
fn soonest<'t>(
    live: &Live,
    t: &'t TableReport,
    now: i64,
) -> Vec<(&'t PartitionReport, u64, Forecast)> {
    let mut v: Vec<(&PartitionReport, u64, Forecast)> = live
        .arrivals
        .arriving()
        .filter_map(|values| find(t, values))
        .filter_map(|p| {
            let f = live.forecast(t, p, now)?;
            // Due already comes first: the list agrees with the selected partition's line.
            match f.due {
                DueIn::Now { .. } => Some((p, 0, f)),
                DueIn::In { seconds } => Some((p, seconds.max(1), f)),
                _ => None,
            }
        })
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.values.cmp(&b.0.values)));
    v.truncate(SOONEST);
    v
}

pub fn draw(f: &mut Frame, area: Rect, app: &App, t: &TableReport, now: i64) {
    let Some(live) = app.live.as_ref().filter(|_| area.height > 0) else {
        return;
    };
    let forecast = format!("forecast by {} ", live.policy.rule());
    let mut title = vec![Span::styled(" Live log ", style::title())];
    if 10 + fit::width(&forecast) + 2 <= usize::from(area.width) {
        title.push(Span::styled(forecast, style::dim()));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Line::from(title));
    let inner = block.inner(area);
    let width = usize::from(inner.width);
    f.render_widget(block, area);
    // Compact: one sparkline row, no replay line, the soonest partition only.
    let compact = inner.height < crate::tui::layout::LIVE_ROWS - 2;
    let [status, spark, reload, selected, next] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(if compact { 1 } else { 2 }),
        Constraint::Length(if compact { 0 } else { 1 }),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(fit::clip(status_line(live), width)), status);
    draw_commit_rate(f, spark, live, now, compact);
    let reloaded = live.last_reload.as_ref().map_or(String::new(), |r| {
        format!(" last full replay: {}", r.describe())
    });
    let reloaded = Line::from(Span::styled(reloaded, style::dim()));
    f.render_widget(Paragraph::new(fit::clip(reloaded, width)), reload);
    let sel = app.selected_partition().map(|p| {
        let text = match live.forecast(t, p, now) {
            Some(fc) => due_text(&fc),
            None => "no forecast: the policy counts small files by another threshold".into(),
        };
        format!(" {}: {text}", partition_label(&p.values, width))
    });
    f.render_widget(
        Paragraph::new(Span::raw(truncate(&sel.unwrap_or_default(), width))),
        selected,
    );
    let soonest: Vec<Line> = super::scrubbed(soonest_lines(live, t, now, width))
        .into_iter()
        .map(|l| fit::clip(l, width))
        .collect();
    f.render_widget(Paragraph::new(soonest), next);
}

/// A partition's label where a line of `width` cells leaves it room (with some of its text),
/// else its values alone: an identifier is never cut.
fn partition_label(p: &PartitionValues, width: usize) -> String {
    let label = p.label();
    if fit::width(&label) + 12 <= width {
        label
    } else {
        p.values_label()
    }
}

/// Commits per bucket as a sparkline, labelled with the bucket and the peak.
fn draw_commit_rate(f: &mut Frame, spark: Rect, live: &Live, now: i64, compact: bool) {
    let label = format!(" commits/{}s ", BUCKET.as_secs());
    let label_w = label.len() as u16 + if compact { 7 } else { 0 };
    let [l, s] = Layout::horizontal([Constraint::Length(label_w), Constraint::Min(0)]).areas(spark);
    let counts = live
        .arrivals
        .commit_counts(now, BUCKET, usize::from(s.width));
    let peak = counts.iter().copied().max().unwrap_or(0);
    let label_lines = if compact {
        vec![Line::from(Span::styled(
            format!("{label}max {peak:<3}"),
            style::dim(),
        ))]
    } else {
        vec![
            Line::from(Span::styled(label, style::dim())),
            Line::from(Span::styled(format!(" max {peak}"), style::dim())),
        ]
    };
    f.render_widget(Paragraph::new(super::scrubbed(label_lines)), l);
    f.render_widget(
        Sparkline::default()
            .data(counts.iter().copied())
            .style(Style::default().fg(Color::Cyan)),
        s,
    );
}

/// "due soonest:" and the partitions the policy makes due next, cut to `width`.
fn soonest_lines(live: &Live, t: &TableReport, now: i64, width: usize) -> Vec<Line<'static>> {
    let soon = soonest(live, t, now);
    if soon.is_empty() {
        return vec![Line::from(Span::styled(
            format!(" due soonest: {}", nothing_due(live, t, now)),
            style::dim(),
        ))];
    }
    let mut lines = vec![Line::from(Span::styled(" due soonest:", style::dim()))];
    for (p, _, fc) in soon {
        lines.push(Line::from(truncate(
            &format!(
                "   {}: {}",
                partition_label(&p.values, width),
                due_text(&fc)
            ),
            width,
        )));
    }
    lines
}
