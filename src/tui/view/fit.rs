//! Fitting text to a width without cutting values: tables drop their least useful columns
//! before a number would be cut, and long lines flow onto more rows at item boundaries.

use ratatui::text::{Line, Span};

use super::inert;

/// Display width of `s` in terminal cells, as `truncate` shows it (a table's controls
/// escaped, `super::inert`).
pub fn width(s: &str) -> usize {
    Span::raw(inert::text(s)).width()
}

/// The widest of `header` and `cells`.
pub fn column_width<'a>(header: &str, cells: impl Iterator<Item = &'a str>) -> usize {
    cells.map(width).fold(width(header), usize::max)
}

/// Which of the columns of `widths` to show next to a label column of at least `label` cells so
/// that everything fits `avail` cells (one cell between columns): none dropped if all fit, else
/// the columns of `drop`, in its order, until the rest fits. None: even dropping all of `drop`
/// does not fit.
pub fn columns(avail: usize, label: usize, widths: &[usize], drop: &[usize]) -> Option<Vec<bool>> {
    let mut shown = vec![true; widths.len()];
    let need = |shown: &[bool]| {
        label
            + widths
                .iter()
                .zip(shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| w + 1)
                .sum::<usize>()
    };
    if need(&shown) <= avail {
        return Some(shown);
    }
    for &d in drop {
        if let Some(s) = shown.get_mut(d) {
            *s = false;
        }
        if need(&shown) <= avail {
            return Some(shown);
        }
    }
    None
}

/// Items laid out in rows of at most `width` cells, `sep` between items on a row; an item never
/// breaks (one longer than the width gets a row of its own, wrapped by the caller's widget).
pub fn flow(items: Vec<Vec<Span<'static>>>, sep: &'static str, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for item in items {
        let w: usize = item.iter().map(Span::width).sum();
        if !current.is_empty() && used + width_of(sep) + w > width {
            lines.push(Line::from(std::mem::take(&mut current)));
            used = 0;
        }
        if !current.is_empty() {
            current.push(Span::raw(sep));
            used += width_of(sep);
        }
        used += w;
        current.extend(item);
    }
    if !current.is_empty() {
        lines.push(Line::from(current));
    }
    lines
}

fn width_of(s: &str) -> usize {
    width(s)
}

/// `text` wrapped at word boundaries into lines of at most `width` cells, in `style`: the rows it
/// takes are then exactly the lines (a word wider than the width is left to the widget).
pub fn words(text: &str, style: ratatui::style::Style, width: usize) -> Vec<Line<'static>> {
    let items = text
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| vec![Span::styled(inert::text(w).into_owned(), style)])
        .collect();
    flow(items, " ", width)
}

/// `text` wrapped as `words` does into at most `rows` lines; the last ends in "…" where the
/// rest was cut.
pub fn words_in_rows(
    text: &str,
    style: ratatui::style::Style,
    width: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    let mut lines = words(text, style, width);
    if lines.len() <= rows || rows == 0 {
        lines.truncate(rows);
        return lines;
    }
    let rest: Vec<String> = lines[rows - 1..].iter().map(|l| l.to_string()).collect();
    lines.truncate(rows - 1);
    lines.push(clip(Line::styled(rest.join(" "), style), width));
    lines
}

/// The first of `lines` that fit `rows` rows wrapped at `width`; when some are left out, the
/// last row shown ends in "…" (more follows).
pub fn rows_or_ellipsis(
    lines: Vec<Line<'static>>,
    width: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    if wrapped_rows(&lines, width) <= rows {
        return lines;
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut used = 0;
    for l in lines {
        let r = wrapped_rows(std::slice::from_ref(&l), width);
        if used + r >= rows {
            // The last row: this line cut to one row, and "…" for what follows.
            if used < rows {
                let mut l = l;
                l.spans.push(Span::raw(" …"));
                if l.width() > width {
                    l = clip(l, width);
                }
                out.push(l);
            }
            break;
        }
        used += r;
        out.push(l);
    }
    out
}

/// Rows `lines` take when wrapped at `width` (a line wider than the width wraps).
pub fn wrapped_rows(lines: &[Line], width: usize) -> usize {
    let w = width.max(1);
    lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum()
}

/// `s` cut to `n` cells with a trailing "…" (for text, never for a number); a table's
/// controls in it shown escaped (`super::inert`).
pub fn truncate(s: &str, n: usize) -> String {
    let s = inert::text(s);
    if width(&s) <= n {
        return s.into_owned();
    }
    cut(&s, n)
}

/// The start of `s` that fits `n` cells with a "…" after it (the "…" even when `s` would fit:
/// more follows).
fn cut(s: &str, n: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > n {
            break;
        }
        out.push(c);
        used += w;
    }
    if n > 0 {
        out.push('…');
    }
    out
}

/// The first of `forms` (longest first: a label, then its short form) that fits `n` cells whole;
/// else the last, cut with "…".
pub fn first_fitting(forms: &[&str], n: usize) -> String {
    forms
        .iter()
        .find(|f| width(f) <= n)
        .map(|f| inert::text(f).into_owned())
        .unwrap_or_else(|| truncate(forms.last().copied().unwrap_or(""), n))
}

/// `line` cut to `n` cells, ending in "…" where it was cut (a widget would cut it silently).
pub fn clip(line: Line<'static>, n: usize) -> Line<'static> {
    let line = inert::line(line);
    if line.width() <= n {
        return line;
    }
    let mut spans = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let w = span.width();
        if used + w < n {
            used += w;
            spans.push(span);
            continue;
        }
        // This span reaches the edge and more follows: keep what fits before the "…".
        spans.push(Span::styled(cut(&span.content, n - used), span.style));
        break;
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_cut_to_fewer_rows_end_in_an_ellipsis_on_the_last_row_shown() {
        let lines: Vec<Line<'static>> = ["one line", "two line", "three line"]
            .iter()
            .map(|s| Line::from(s.to_string()))
            .collect();
        let kept = rows_or_ellipsis(lines.clone(), 20, 2);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1].to_string(), "two line …");
        assert_eq!(rows_or_ellipsis(lines, 20, 3).len(), 3, "all fit: none cut");
    }

    #[test]
    fn text_in_fewer_rows_than_it_needs_ends_in_an_ellipsis_on_its_last_row() {
        let style = ratatui::style::Style::default();
        let text = "pace 24 MiB/s: writer active: 17.4 data commits/s, one every 0.1 s";
        let lines = words_in_rows(text, style, 20, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.width() <= 20));
        assert!(lines[1].to_string().ends_with('…'), "{lines:?}");
        let whole = words_in_rows("short text", style, 20, 2);
        assert_eq!(whole.len(), 1);
        assert!(!whole[0].to_string().contains('…'));
    }

    #[test]
    fn a_clipped_line_ends_in_an_ellipsis_at_the_width() {
        let l = Line::from(vec![
            Span::raw("due soonest: "),
            Span::raw("no partition is filling"),
        ]);
        let c = clip(l.clone(), 20);
        assert_eq!(c.width(), 20);
        assert!(c.to_string().ends_with('…'), "{c}");
        assert_eq!(
            clip(l.clone(), 36).to_string(),
            l.to_string(),
            "fits: unchanged"
        );
        assert_eq!(clip(l, 13).to_string(), "due soonest:…");
    }

    #[test]
    fn the_first_form_that_fits_is_taken_whole() {
        let forms = ["ingestion_date=2026-11-30", "2026-11-30"];
        assert_eq!(first_fitting(&forms, 30), "ingestion_date=2026-11-30");
        assert_eq!(first_fitting(&forms, 12), "2026-11-30");
        assert_eq!(first_fitting(&forms, 6), "2026-…");
    }

    #[test]
    fn columns_are_dropped_in_order_until_the_rest_fits() {
        // label 10, columns 5, 6, 7: 10 + 6 + 7 + 8 = 31.
        assert_eq!(
            columns(31, 10, &[5, 6, 7], &[2, 0]),
            Some(vec![true, true, true])
        );
        assert_eq!(
            columns(30, 10, &[5, 6, 7], &[2, 0]),
            Some(vec![true, true, false])
        );
        assert_eq!(
            columns(17, 10, &[5, 6, 7], &[2, 0]),
            Some(vec![false, true, false])
        );
        assert_eq!(columns(16, 10, &[5, 6, 7], &[2, 0]), None);
    }

    #[test]
    fn flow_never_breaks_an_item() {
        let items = vec![
            vec![Span::raw("aaaa")],
            vec![Span::raw("bbbb")],
            vec![Span::raw("cc")],
        ];
        let lines = flow(items, " · ", 12);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, vec!["aaaa · bbbb", "cc"]);
    }

    #[test]
    fn fitted_table_text_shows_its_controls_escaped_and_is_measured_so() {
        assert_eq!(truncate("p=\x1b[31m", 20), "p=\\x1b[31m");
        assert_eq!(truncate("p=\x1b[31m", 6), "p=\\x1…");
        assert_eq!(width("\x1b"), 4);
        assert_eq!(first_fitting(&["\u{202e}abc"], 20), "\\u202eabc");
        let w = words("a\x07 b", ratatui::style::Style::default(), 20);
        assert_eq!(w[0].to_string(), "a\\x07 b");
        let c = clip(Line::raw("x\ry"), 20);
        assert_eq!(c.to_string(), "x\\x0dy");
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 6), "abcdef");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
