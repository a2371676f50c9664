//! Screen geometry, shared by drawing and by scrolling (so the selection stays visible without
//! the draw function mutating state).

use ratatui::layout::{Constraint, Direction, Layout, Rect};

pub const HEADER_ROWS: u16 = 5;
pub const STATUS_ROWS: u16 = 1;

pub struct TableAreas {
    pub header: Rect,
    pub partitions: Rect,
    /// Zero-height when nothing is marked.
    pub marks: Rect,
    /// Zero-height when there are no jobs.
    pub jobs: Rect,
    pub histogram: Rect,
    pub writers: Rect,
    pub commits: Rect,
    pub status: Rect,
}

pub fn table_areas(
    area: Rect,
    buckets: usize,
    writers: usize,
    marks: bool,
    jobs: usize,
) -> TableAreas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(HEADER_ROWS),
        Constraint::Min(3),
        Constraint::Length(STATUS_ROWS),
    ])
    .areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(56), Constraint::Percentage(44)]).areas(body);
    let [partitions, marks_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(if marks { 4 } else { 0 }),
    ])
    .areas(left);
    let hist_rows = buckets as u16 + 3;
    let writer_rows = (writers.clamp(1, 3) + 2) as u16;
    let job_rows = if jobs == 0 {
        0
    } else {
        (jobs.min(2) * 6 + 2) as u16
    };
    let [histogram, jobs_area, writers_area, commits] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(hist_rows),
            Constraint::Length(job_rows),
            Constraint::Length(writer_rows),
            Constraint::Min(3),
        ])
        .areas(right);
    TableAreas {
        header,
        partitions,
        marks: marks_area,
        jobs: jobs_area,
        histogram,
        writers: writers_area,
        commits,
        status,
    }
}

pub struct TablesAreas {
    pub header: Rect,
    pub list: Rect,
    pub status: Rect,
}

pub fn tables_areas(area: Rect) -> TablesAreas {
    let [header, list, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(3),
        Constraint::Length(STATUS_ROWS),
    ])
    .areas(area);
    TablesAreas {
        header,
        list,
        status,
    }
}

fn full(size: (u16, u16)) -> Rect {
    Rect::new(0, 0, size.0, size.1)
}

/// Visible partition rows (inside borders, below the column header).
pub fn partition_rows(size: (u16, u16), marks: bool) -> usize {
    table_areas(full(size), 7, 1, marks, 0)
        .partitions
        .height
        .saturating_sub(3) as usize
}

/// Visible table rows in the tables list.
pub fn tables_rows(size: (u16, u16)) -> usize {
    tables_areas(full(size)).list.height.saturating_sub(3) as usize
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
