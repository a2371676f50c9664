//! The file-size histogram panel: one row per bucket, bars scaled to the largest bucket, the
//! target band marked in green.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::style;
use crate::engine::size::{format_bytes, format_count};
use crate::engine::stats::histogram::{Band, Bucket, Histogram};
use crate::engine::stats::table_report::TableReport;
use crate::tui::app::App;

const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

/// A bar of `value/max` of `width` cells, with eighth-cell resolution.
pub fn bar(value: u64, max: u64, width: usize) -> String {
    if max == 0 || width == 0 {
        return String::new();
    }
    let eighths = ((value as u128 * width as u128 * 8) / max as u128) as usize;
    let mut s = "█".repeat(eighths / 8);
    s.push_str(EIGHTHS[eighths % 8]);
    if value > 0 && s.is_empty() {
        s.push('▏'); // never hide a non-empty bucket
    }
    s
}

pub fn bucket_label(b: &Bucket) -> String {
    match b.max_bytes {
        Some(hi) if b.min_bytes == 0 => format!("< {}", format_bytes(hi)),
        Some(hi) => format!("{}–{}", short(b.min_bytes), short(hi)),
        None => format!("> {}", format_bytes(b.min_bytes.saturating_sub(1))),
    }
}

fn short(n: u64) -> String {
    format_bytes(n).replace(' ', "")
}

pub fn band_style(b: Band) -> Style {
    match b {
        Band::Small => style::small_band(),
        Band::Target => style::target_band(),
        Band::Large => style::large_band(),
    }
}

pub fn lines(h: &Histogram, width: u16) -> Vec<Line<'static>> {
    let max = h.buckets.iter().map(|b| b.files).max().unwrap_or(0);
    let label_w = 15;
    let nums_w = 18;
    let bar_w = (width as usize).saturating_sub(label_w + nums_w + 4).max(4);
    h.buckets
        .iter()
        .map(|b| {
            let mark = if b.band == Band::Target { "◀" } else { " " };
            Line::from(vec![
                Span::styled(
                    format!("{:>label_w$} ", bucket_label(b)),
                    band_style(b.band),
                ),
                Span::styled(
                    format!("{:<bar_w$}", bar(b.files, max, bar_w)),
                    band_style(b.band),
                ),
                Span::raw(format!(
                    " {:>6} {:>10}",
                    format_count(b.files),
                    format_bytes(b.bytes)
                )),
                Span::styled(mark, style::target_band()),
            ])
        })
        .collect()
}

pub fn draw_panel(f: &mut Frame, area: Rect, app: &App, t: &TableReport) {
    let (what, hist, files) = match (app.table_histogram, app.selected_partition()) {
        (false, Some(p)) => (p.values.label(), &p.stats.histogram, p.stats.files),
        _ => ("whole table".to_string(), &t.stats.histogram, t.stats.files),
    };
    let mut body = lines(hist, area.width.saturating_sub(2));
    let in_band: u64 = hist
        .buckets
        .iter()
        .filter(|b| b.band == Band::Target)
        .map(|b| b.files)
        .sum();
    // The count first; the colour and the `t` hint only when they fit whole.
    let mut foot = format!(
        " {} of {} files in the target band ◀",
        format_count(in_band),
        format_count(files)
    );
    let width = usize::from(area.width.saturating_sub(2));
    let toggle = format!(
        "   t: {}",
        if app.table_histogram {
            "selected partition"
        } else {
            "whole table"
        }
    );
    for extra in [" (green)".to_string(), toggle] {
        if super::fit::width(&foot) + super::fit::width(&extra) <= width {
            foot.push_str(&extra);
        }
    }
    body.push(Line::from(Span::styled(foot, style::dim())));
    let title = Line::from(vec![
        Span::styled(" File sizes ", style::title()),
        Span::raw(format!("{what} ")),
    ]);
    f.render_widget(
        Paragraph::new(body).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_with_eighths() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 16, 2), "▏");
        assert_eq!(bar(1, 1000, 4), "▏");
        assert_eq!(bar(0, 10, 4), "");
    }
}
