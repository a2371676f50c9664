//! Screen geometry, shared by drawing and by scrolling and the mouse (so the selection stays
//! visible, and a click finds its row, without the draw function mutating state).

use ratatui::layout::{Constraint, Direction, Layout, Rect};

pub const STATUS_ROWS: u16 = 1;
/// The live panel in full: borders, status, sparkline (2), last replay, selected partition,
/// "due soonest" and its 3 rows.
pub const LIVE_ROWS: u16 = 2 + 1 + 2 + 1 + 1 + 1 + 3;
/// The live panel when rows are short: borders, status, sparkline, selected, soonest.
pub const LIVE_COMPACT_ROWS: u16 = 2 + 4;
/// A job in full (head, gauge, counters, sparkline, two events), and compact (the first three).
pub const JOB_ROWS: u16 = 6;
pub const JOB_COMPACT_ROWS: u16 = 3;
/// Rows the commit feed keeps at least (borders, header, one commit).
const FEED_MIN_ROWS: u16 = 4;

/// What the table screen shows beyond its fixed panels, from the app's state
/// (`view::table_shape`); row counts include borders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    pub header_rows: u16,
    pub buckets: usize,
    /// Buckets the histogram shows when empty ones are left out (`histogram::compact_rows`).
    pub buckets_compact: usize,
    pub writers: usize,
    pub marks: bool,
    /// The janitor panel (0: off).
    pub janitor_rows: u16,
    pub jobs: usize,
    /// The table follows its log: the live panel wants room.
    pub live: bool,
}

pub struct TableAreas {
    pub header: Rect,
    pub partitions: Rect,
    /// Zero-height when the janitor is off.
    pub janitor: Rect,
    /// Zero-height when nothing is marked.
    pub marks: Rect,
    /// Zero-height when there are no jobs.
    pub jobs: Rect,
    pub histogram: Rect,
    pub writers: Rect,
    /// Findings, the live panel and the commit feed.
    pub commits: Rect,
    pub status: Rect,
}

/// The jobs panel's rows: what its jobs want, but never so many that the live panel (or the
/// commit feed) loses its room; then at least one compact job.
fn job_rows(jobs: usize, room: u16, live: bool) -> u16 {
    if jobs == 0 {
        return 0;
    }
    let wanted = jobs.min(2) as u16 * JOB_ROWS + 2;
    let reserve = if live {
        LIVE_COMPACT_ROWS + FEED_MIN_ROWS
    } else {
        FEED_MIN_ROWS
    };
    wanted.min(room.saturating_sub(reserve).max(JOB_COMPACT_ROWS + 2))
}

/// The histogram's and the writers' rows in a right column of `height` rows. A job's compact
/// progress and the live panel's compact form (with the feed's minimum) come first, so they
/// show at any size from 80×24 up: the histogram's empty buckets give way first, then the
/// writers panel, then the histogram's rows.
fn side_panel_rows(height: u16, s: &Shape) -> (u16, u16) {
    // Borders and the footer line.
    let hist_full = s.buckets as u16 + 3;
    let hist_compact = (s.buckets_compact as u16 + 3).min(hist_full);
    let writers = (s.writers.clamp(1, 3) + 2) as u16;
    let jobs = if s.jobs > 0 { JOB_COMPACT_ROWS + 2 } else { 0 };
    let bottom = if s.live {
        LIVE_COMPACT_ROWS + FEED_MIN_ROWS
    } else {
        FEED_MIN_ROWS
    };
    let spare = height.saturating_sub(jobs + bottom);
    if spare >= hist_full + writers {
        (hist_full, writers)
    } else if spare >= hist_compact + writers {
        (spare - writers, writers)
    } else if spare >= hist_compact {
        (spare.min(hist_full), 0)
    } else {
        // Below its compact form the histogram would only be cut: the room goes to the rest.
        (0, 0)
    }
}

/// The right column's least rows: a running job's compact progress, the live panel's compact
/// form and the feed's minimum. The header gives way to them (it ends in "…" when cut).
fn right_column_min(s: &Shape) -> u16 {
    let jobs = if s.jobs > 0 { JOB_COMPACT_ROWS + 2 } else { 0 };
    let live = if s.live { LIVE_COMPACT_ROWS } else { 0 };
    jobs + live + FEED_MIN_ROWS
}

/// The header's rows: what it wants, but never the room the right column's least needs (at
/// least its borders and one line).
pub fn header_rows(height: u16, s: &Shape) -> u16 {
    let max = height.saturating_sub(STATUS_ROWS + right_column_min(s));
    s.header_rows.min(max.max(3))
}

pub fn table_areas(area: Rect, s: &Shape) -> TableAreas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(header_rows(area.height, s)),
        Constraint::Min(3),
        Constraint::Length(STATUS_ROWS),
    ])
    .areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(56), Constraint::Percentage(44)]).areas(body);
    let [partitions, janitor, marks_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(s.janitor_rows),
        Constraint::Length(if s.marks { 4 } else { 0 }),
    ])
    .areas(left);
    let (hist_rows, writer_rows) = side_panel_rows(right.height, s);
    let room = right.height.saturating_sub(hist_rows + writer_rows);
    let [histogram, jobs_area, writers_area, commits] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(hist_rows),
            Constraint::Length(job_rows(s.jobs, room, s.live)),
            Constraint::Length(writer_rows),
            Constraint::Min(3),
        ])
        .areas(right);
    TableAreas {
        header,
        partitions,
        janitor,
        marks: marks_area,
        jobs: jobs_area,
        histogram,
        writers: writers_area,
        commits,
        status,
    }
}

/// The live panel's rows in an area of `height` rows: in full when the feed keeps 5 rows, else
/// compact when it keeps its minimum, else none.
pub fn live_rows(height: u16) -> u16 {
    if height >= LIVE_ROWS + 5 {
        LIVE_ROWS
    } else if height >= LIVE_COMPACT_ROWS + FEED_MIN_ROWS {
        LIVE_COMPACT_ROWS
    } else {
        0
    }
}

/// The bottom of the right column: findings, the live panel and the commit feed, top to bottom.
/// The live panel's rows are decided first (`live_rows` of the whole area), so findings never
/// take its room; findings then get what they want of the rest, keeping the feed's minimum.
pub fn bottom_areas(area: Rect, live: bool, findings_wanted: u16) -> [Rect; 3] {
    let live_h = if live { live_rows(area.height) } else { 0 };
    let rest = area.height - live_h;
    // Findings take what the feed's minimum leaves, and at least their border and one line.
    let findings_h = match findings_wanted {
        0 => 0,
        _ if rest < FEED_MIN_ROWS + 3 => 0,
        w => w.min(rest - FEED_MIN_ROWS).max(3),
    };
    Layout::vertical([
        Constraint::Length(findings_h),
        Constraint::Length(live_h),
        Constraint::Min(0),
    ])
    .areas(area)
}

/// What the tables screen shows beyond the list (`view::tables_shape`); rows include borders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TablesShape {
    pub header_rows: u16,
    /// The selected broken table's error (0: the selected row is a table).
    pub detail_rows: u16,
}

pub struct TablesAreas {
    pub header: Rect,
    pub list: Rect,
    /// Zero-height unless the selected row is a table that could not be read.
    pub detail: Rect,
    pub status: Rect,
}

pub fn tables_areas(area: Rect, s: &TablesShape) -> TablesAreas {
    let [header, list, detail, status] = Layout::vertical([
        Constraint::Length(s.header_rows),
        Constraint::Min(3),
        Constraint::Length(s.detail_rows),
        Constraint::Length(STATUS_ROWS),
    ])
    .areas(area);
    TablesAreas {
        header,
        list,
        detail,
        status,
    }
}

pub fn full(size: (u16, u16)) -> Rect {
    Rect::new(0, 0, size.0, size.1)
}

/// Rows of a list panel (inside borders, below the column header).
pub fn list_rows(panel: Rect) -> usize {
    panel.height.saturating_sub(3) as usize
}

/// The position in a list panel's visible rows that screen row `row` shows, if any.
pub fn list_row_at(panel: Rect, column: u16, row: u16) -> Option<usize> {
    let first = panel.y + 2;
    let inside = column > panel.x
        && column + 1 < panel.x + panel.width
        && row >= first
        && row + 1 < panel.y + panel.height;
    inside.then(|| usize::from(row - first))
}

/// A centered box for dialogs.
pub fn centered(area: Rect, width_pct: u16, height: u16) -> Rect {
    let w = area.width * width_pct / 100;
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width.saturating_sub(w)) / 2,
        area.y + (area.height.saturating_sub(h)) / 2,
        w,
        h,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_never_takes_the_live_panels_room() {
        // 100 x 40 with one job, following the log: the live panel keeps at least its compact
        // form above a commit feed.
        let s = Shape {
            header_rows: 6,
            buckets: 7,
            writers: 1,
            jobs: 1,
            live: true,
            ..Shape::default()
        };
        let a = table_areas(Rect::new(0, 0, 100, 40), &s);
        assert!(a.jobs.height >= JOB_COMPACT_ROWS + 2);
        assert!(
            live_rows(a.commits.height) >= LIVE_COMPACT_ROWS,
            "{}",
            a.commits.height
        );
    }

    #[test]
    fn at_80x24_a_tall_header_gives_way_to_the_running_job_and_the_live_panel() {
        // A long location and a log line make the header 9 rows: it keeps what leaves the
        // job's progress and the live panel their rows.
        let s = Shape {
            header_rows: 9,
            buckets: 7,
            writers: 1,
            jobs: 1,
            live: true,
            ..Shape::default()
        };
        let a = table_areas(Rect::new(0, 0, 80, 24), &s);
        assert!(a.header.height < 9, "{}", a.header.height);
        assert!(a.jobs.height >= JOB_COMPACT_ROWS + 2, "{}", a.jobs.height);
        assert!(
            live_rows(a.commits.height) >= LIVE_COMPACT_ROWS,
            "{}",
            a.commits.height
        );
        // Without a job or the live panel, the header keeps its rows.
        let idle = Shape {
            jobs: 0,
            live: false,
            ..s
        };
        assert_eq!(table_areas(Rect::new(0, 0, 80, 24), &idle).header.height, 9);
    }

    #[test]
    fn findings_never_take_the_live_panel_or_the_feeds_minimum() {
        let [found, live, feed] = bottom_areas(Rect::new(0, 0, 40, 20), true, 9);
        assert_eq!(live.height, LIVE_ROWS, "decided first, from the whole area");
        assert_eq!((found.height, feed.height), (5, FEED_MIN_ROWS));
        // Too little room for findings beside the feed's minimum: none.
        let [found, live, feed] = bottom_areas(Rect::new(0, 0, 40, 16), true, 9);
        assert_eq!(found.height, 0);
        assert_eq!(live.height + feed.height, 16);
        assert!(feed.height >= FEED_MIN_ROWS);
        let [found, live, _] = bottom_areas(Rect::new(0, 0, 40, 30), false, 5);
        assert_eq!((found.height, live.height), (5, 0));
    }

    #[test]
    fn a_click_maps_to_the_row_under_it() {
        let panel = Rect::new(0, 5, 40, 10);
        assert_eq!(list_row_at(panel, 3, 7), Some(0));
        assert_eq!(list_row_at(panel, 3, 6), None, "the column header");
        assert_eq!(list_row_at(panel, 3, 14), None, "the bottom border");
        assert_eq!(list_row_at(panel, 0, 8), None, "the left border");
    }
}
