//! The file-size histogram panel: one row per bucket, bars scaled to the largest bucket, the
//! target band marked in green.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::{fit, style};
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

/// The buckets a panel of `rows` rows shows: all when they fit; else the ones holding files
/// and the target band (empty ones say nothing a row must show).
pub fn shown(h: &Histogram, rows: usize) -> Vec<&Bucket> {
    // Only as many empty buckets go as the rows need, the largest sizes first.
    let mut to_drop = h.buckets.len().saturating_sub(rows);
    let mut keep = vec![true; h.buckets.len()];
    for (i, b) in h.buckets.iter().enumerate().rev() {
        if to_drop == 0 {
            break;
        }
        if b.files == 0 && b.band != Band::Target {
            keep[i] = false;
            to_drop -= 1;
        }
    }
    h.buckets
        .iter()
        .zip(keep)
        .filter_map(|(b, k)| k.then_some(b))
        .collect()
}

/// The rows `shown` needs when empty buckets are left out.
pub fn compact_rows(h: &Histogram) -> usize {
    h.buckets
        .iter()
        .filter(|b| b.files > 0 || b.band == Band::Target)
        .count()
}

/// One row per bucket of `buckets`: label, bar, count, bytes. Numbers and units are never cut:
/// the columns are as wide as their widest value and the bar takes what is left (none on a
/// narrow panel).
pub fn lines(buckets: &[&Bucket], width: u16) -> Vec<Line<'static>> {
    let max = buckets.iter().map(|b| b.files).max().unwrap_or(0);
    let labels: Vec<String> = buckets.iter().map(|b| bucket_label(b)).collect();
    let counts: Vec<String> = buckets.iter().map(|b| format_count(b.files)).collect();
    let bytes: Vec<String> = buckets.iter().map(|b| format_bytes(b.bytes)).collect();
    let label_w = fit::column_width("", labels.iter().map(String::as_str));
    let count_w = fit::column_width("", counts.iter().map(String::as_str));
    let bytes_w = fit::column_width("", bytes.iter().map(String::as_str));
    // label, space, bar, space, count, space, bytes, band mark
    let fixed = label_w + 1 + 1 + count_w + 1 + bytes_w + 1;
    let bar_w = usize::from(width).saturating_sub(fixed);
    buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mark = if b.band == Band::Target { "◀" } else { " " };
            Line::from(vec![
                Span::styled(format!("{:>label_w$} ", labels[i]), band_style(b.band)),
                Span::styled(
                    format!("{:<bar_w$}", bar(b.files, max, bar_w)),
                    band_style(b.band),
                ),
                Span::raw(format!(" {:>count_w$} {:>bytes_w$}", counts[i], bytes[i])),
                Span::styled(mark, style::target_band()),
            ])
        })
        .collect()
}

/// The histogram the panel shows: the selected partition's, or the whole table's (`t`).
pub fn shown_histogram<'a>(app: &'a App, t: &'a TableReport) -> &'a Histogram {
    match (app.table_histogram, app.selected_partition()) {
        (false, Some(p)) => &p.stats.histogram,
        _ => &t.stats.histogram,
    }
}

pub fn draw_panel(f: &mut Frame, area: Rect, app: &App, t: &TableReport) {
    if area.height == 0 {
        return;
    }
    let (what, short, hist, files) = match (app.table_histogram, app.selected_partition()) {
        (false, Some(p)) => (
            super::inert::text(&p.values.label()).into_owned(),
            super::inert::text(&p.values.values_label()).into_owned(),
            &p.stats.histogram,
            p.stats.files,
        ),
        _ => (
            "whole table".to_string(),
            "table".to_string(),
            &t.stats.histogram,
            t.stats.files,
        ),
    };
    // Borders and the footer line take 3 rows.
    let buckets = shown(hist, usize::from(area.height.saturating_sub(3)));
    let hidden = hist.buckets.len() - buckets.len();
    let mut body = lines(&buckets, area.width.saturating_sub(2));
    let in_band: u64 = hist
        .buckets
        .iter()
        .filter(|b| b.band == Band::Target)
        .map(|b| b.files)
        .sum();
    // The count first (short on a narrow panel), then what is hidden; the colour and the `t`
    // hint only when they fit whole.
    let width = usize::from(area.width.saturating_sub(2));
    let foot_long = format!(
        " {} of {} files in the target band ◀",
        format_count(in_band),
        format_count(files)
    );
    let foot_short = format!(
        " {}/{} files in band ◀",
        format_count(in_band),
        format_count(files)
    );
    let mut foot = fit::first_fitting(&[&foot_long, &foot_short], width);
    let toggle = format!(
        "   t: {}",
        if app.table_histogram {
            "selected partition"
        } else {
            "whole table"
        }
    );
    let hidden = match hidden {
        0 => String::new(),
        n => format!(" · {n} empty not shown"),
    };
    for extra in [hidden, " (green)".to_string(), toggle] {
        if fit::width(&foot) + fit::width(&extra) <= width {
            foot.push_str(&extra);
        }
    }
    body.push(Line::from(Span::styled(foot, style::dim())));
    // The partition is named whole: its columns go first, then the panel's name.
    let room = usize::from(area.width.saturating_sub(2));
    let title = match [
        (" File sizes ", &what),
        (" File sizes ", &short),
        (" Sizes ", &short),
    ]
    .into_iter()
    .find(|(name, what)| fit::width(name) + fit::width(what) < room)
    {
        Some((name, what)) => Line::from(vec![
            Span::styled(name, style::title()),
            Span::raw(format!("{what} ")),
        ]),
        None => Line::from(Span::raw(fit::truncate(&format!(" {short} "), room))),
    };
    f.render_widget(
        Paragraph::new(body).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_panel_leaves_out_only_as_many_empty_buckets_as_it_must() {
        use crate::engine::stats::histogram::BucketEdges;
        const MIB: u64 = 1024 * 1024;
        let edges = BucketEdges::new(128 * MIB, 1024 * MIB);
        // Files below 1 MiB and in 8-32 MiB; the others empty (7 buckets in all).
        let h = edges.histogram(&[1000, 2000, 10 * MIB]);
        assert_eq!(shown(&h, 7).len(), 7, "all fit");
        let five = shown(&h, 5);
        assert_eq!(five.len(), 5);
        assert!(
            five.iter()
                .all(|b| b.files > 0 || b.band == Band::Target || b.max_bytes.is_some())
        );
        assert!(
            !five.iter().any(|b| b.max_bytes.is_none()),
            "the largest empty bucket goes first"
        );
        let least = shown(&h, 0);
        assert_eq!(least.len(), compact_rows(&h));
        assert!(least.iter().all(|b| b.files > 0 || b.band == Band::Target));
        assert_eq!(
            least.iter().map(|b| b.files).sum::<u64>(),
            3,
            "no file hidden"
        );
    }

    #[test]
    fn bars_scale_with_eighths() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 16, 2), "▏");
        assert_eq!(bar(1, 1000, 4), "▏");
        assert_eq!(bar(0, 10, 4), "");
    }
}
