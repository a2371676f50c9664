//! A scrollable, sortable, filterable list over rows it does not own (the tables of a root, the
//! partitions of a table): the display order, the selection, the scroll offset, the filter and
//! the sort, and the selected row kept across a rebuild by its identity.
//!
//! The rows stay in the report they came from; the list holds indices into them, so every
//! method that needs the rows takes them. Only the rows in view are ever drawn.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::marker::PhantomData;

use crate::engine::janitor::fleet::FleetRow;
use crate::engine::stats::file_sizes::SizeStats;
use crate::engine::stats::table_report::{PartitionReport, TableReport};

/// A row a `SortedList` can show.
pub trait ListRow {
    /// What the row is, whatever it prints as: keeps the selection across rebuilds and breaks
    /// sort ties (a partition's typed values: NULL and the string "null" print alike).
    type Id: Ord + Clone + std::fmt::Debug;
    fn id(&self) -> &Self::Id;
    /// What the filter matches and the name sort orders by.
    fn name(&self) -> Cow<'_, str>;
    fn stats(&self) -> &SizeStats;
    /// What the lakehouse janitor does with it, while it runs (the fleet sort keys).
    fn fleet(&self) -> Option<&FleetRow> {
        None
    }
}

impl ListRow for TableReport {
    type Id = String;
    fn id(&self) -> &String {
        &self.uri
    }
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
    fn stats(&self) -> &SizeStats {
        &self.stats
    }
}

impl ListRow for PartitionReport {
    type Id = crate::engine::model::partition::PartitionValues;
    fn id(&self) -> &Self::Id {
        &self.values
    }
    fn name(&self) -> Cow<'_, str> {
        Cow::Owned(self.values.label())
    }
    fn stats(&self) -> &SizeStats {
        &self.stats
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Health score, worst first by default.
    Health,
    Excess,
    SmallShare,
    Bytes,
    Files,
    Name,
    /// The janitor's state, what needs a look first (broken, suspended, backing off, running,
    /// queued, idle). The four fleet keys sort only while the janitor runs over the root.
    State,
    /// Small bytes waiting for a compaction.
    Debt,
    /// When its last janitor job ended.
    LastJob,
    /// The month's estimated spend on it.
    Spend,
}

impl SortKey {
    /// The next sort column; the fleet's columns are in the cycle when `fleet`.
    pub fn next(self, fleet: bool) -> Self {
        match self {
            SortKey::Excess => SortKey::SmallShare,
            SortKey::SmallShare => SortKey::Bytes,
            SortKey::Bytes => SortKey::Files,
            SortKey::Files => SortKey::Name,
            SortKey::Name if fleet => SortKey::State,
            SortKey::State if fleet => SortKey::Debt,
            SortKey::Debt if fleet => SortKey::LastJob,
            SortKey::LastJob if fleet => SortKey::Spend,
            SortKey::Name | SortKey::State | SortKey::Debt | SortKey::LastJob | SortKey::Spend => {
                SortKey::Health
            }
            SortKey::Health => SortKey::Excess,
        }
    }

    pub fn is_fleet(self) -> bool {
        matches!(
            self,
            SortKey::State | SortKey::Debt | SortKey::LastJob | SortKey::Spend
        )
    }

    pub fn label(self) -> &'static str {
        match self {
            SortKey::Excess => "excess files",
            SortKey::SmallShare => "small share",
            SortKey::Bytes => "bytes",
            SortKey::Files => "files",
            SortKey::Name => "name",
            SortKey::Health => "health",
            SortKey::State => "janitor state",
            SortKey::Debt => "debt",
            SortKey::LastJob => "last job",
            SortKey::Spend => "spend",
        }
    }

    /// Names read best ascending, health worst-first (ascending), other numbers worst-first.
    pub fn default_desc(self) -> bool {
        !matches!(self, SortKey::Name | SortKey::Health | SortKey::State)
    }

    fn compare<R: ListRow>(self, ra: &R, rb: &R, names: (&str, &str)) -> Ordering {
        let (a, b) = (ra.stats(), rb.stats());
        let (fa, fb) = (ra.fleet(), rb.fleet());
        match self {
            // A row the janitor does not know sorts after those it does, either way up.
            SortKey::State => {
                let urgency = |f: Option<&FleetRow>| f.map_or(u8::MAX, |f| f.state.urgency());
                urgency(fa).cmp(&urgency(fb))
            }
            SortKey::Debt => {
                let debt = |f: Option<&FleetRow>| f.and_then(|f| f.debt).map(|d| d.small_bytes);
                debt(fa).cmp(&debt(fb))
            }
            SortKey::LastJob => {
                let ended =
                    |f: Option<&FleetRow>| f.and_then(|f| f.last_job.as_ref()).map(|j| j.ended_ms);
                ended(fa).cmp(&ended(fb))
            }
            SortKey::Spend => {
                let usd = |f: Option<&FleetRow>| f.map_or(-1.0, |f| f.month_usd);
                usd(fa).total_cmp(&usd(fb))
            }
            SortKey::Excess => a.excess_files.cmp(&b.excess_files),
            SortKey::SmallShare => a.small_share().total_cmp(&b.small_share()),
            SortKey::Bytes => a.bytes.cmp(&b.bytes),
            SortKey::Files => a.files.cmp(&b.files),
            SortKey::Name => names.0.cmp(names.1),
            SortKey::Health => a.health_score.cmp(&b.health_score),
        }
    }
}

/// A sort column and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub key: SortKey,
    pub desc: bool,
}

impl Sort {
    /// `key` in its natural direction.
    pub fn by(key: SortKey) -> Self {
        Sort {
            key,
            desc: key.default_desc(),
        }
    }

    pub fn arrow(self) -> &'static str {
        if self.desc { "▼" } else { "▲" }
    }
}

/// A movement of the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
}

/// Something done to a list that may move its rows; see `SortedList::apply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListOp {
    Move(Move),
    SetFilter(String),
    /// The next sort column, in its natural direction.
    CycleSort,
    ReverseSort,
    /// The visible height changed: only scrolls.
    Fit,
    /// Select the row at this position in display order (a click).
    Select(usize),
}

/// See the module documentation. `R` ties the list to one kind of row.
#[derive(Debug, Clone)]
pub struct SortedList<R: ListRow> {
    /// Indices into the rows, in display order (after filter and sort).
    order: Vec<usize>,
    /// Position in `order`.
    selected: usize,
    /// First position in view.
    offset: usize,
    filter: String,
    sort: Sort,
    /// The fleet's sort keys are offered (the janitor runs over the root).
    fleet_keys: bool,
    rows: PhantomData<fn(&R)>,
}

impl<R: ListRow> SortedList<R> {
    pub fn new(sort: Sort) -> Self {
        Self {
            order: Vec::new(),
            selected: 0,
            offset: 0,
            filter: String::new(),
            sort,
            fleet_keys: false,
            rows: PhantomData,
        }
    }

    pub fn sort(&self) -> Sort {
        self.sort
    }

    /// Offers the fleet's sort keys, or stops (a fleet sort goes back to health).
    pub fn set_fleet_keys(&mut self, on: bool) {
        self.fleet_keys = on;
        if !on && self.sort.key.is_fleet() {
            self.sort = Sort::by(SortKey::Health);
        }
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Rows shown (after the filter).
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The selected row's position in display order.
    pub fn selected_position(&self) -> usize {
        self.selected
    }

    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The selected row's index into the rows.
    pub fn selected_index(&self) -> Option<usize> {
        self.order.get(self.selected).copied()
    }

    pub fn selected<'r>(&self, rows: &'r [R]) -> Option<&'r R> {
        self.selected_index().and_then(|i| rows.get(i))
    }

    pub fn selected_id(&self, rows: &[R]) -> Option<R::Id> {
        self.selected(rows).map(|r| r.id().clone())
    }

    /// Indices of the rows in display order.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// The rows that fit `height`, as (position in display order, index into the rows).
    pub fn visible(&self, height: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let end = (self.offset + height).min(self.order.len());
        let start = self.offset.min(end);
        self.order[start..end]
            .iter()
            .enumerate()
            .map(move |(i, &idx)| (start + i, idx))
    }

    /// Recomputes the order for `rows` (new rows, or the same rows after a change of filter or
    /// sort). The row whose identity is `keep` stays selected when it is still shown; else the
    /// first row is.
    pub fn rebuild(&mut self, rows: &[R], keep: Option<&R::Id>, height: usize) {
        self.order = self.arrange(rows);
        self.selected = keep
            .and_then(|k| self.order.iter().position(|&i| rows[i].id() == k))
            .unwrap_or(0);
        self.fit(height);
    }

    /// Applies `op` to the list over `rows` (the rows it was built on), keeping the selected row
    /// when the order changes.
    pub fn apply(&mut self, op: ListOp, rows: &[R], height: usize) {
        let keep = self.selected_id(rows);
        match op {
            ListOp::Move(m) => return self.step(m, height),
            ListOp::Fit => return self.fit(height),
            ListOp::Select(pos) => {
                self.selected = pos;
                return self.fit(height);
            }
            ListOp::SetFilter(f) => self.filter = f,
            ListOp::CycleSort => self.sort = Sort::by(self.sort.key.next(self.fleet_keys)),
            ListOp::ReverseSort => self.sort.desc = !self.sort.desc,
        }
        self.rebuild(rows, keep.as_ref(), height);
    }

    /// Indices of the rows whose name contains the filter (case-insensitive), ordered by the sort
    /// key, then by name, then by identity: ties are broken the same way on every rebuild.
    fn arrange(&self, rows: &[R]) -> Vec<usize> {
        // Names are built once: a partition's is formatted from its values.
        let names: Vec<Cow<'_, str>> = rows.iter().map(R::name).collect();
        let needle = self.filter.to_lowercase();
        let mut order: Vec<usize> = (0..rows.len())
            .filter(|&i| needle.is_empty() || names[i].to_lowercase().contains(&needle))
            .collect();
        let Sort { key, desc } = self.sort;
        order.sort_by(|&a, &b| {
            let (na, nb) = (names[a].as_ref(), names[b].as_ref());
            let ord = key.compare(&rows[a], &rows[b], (na, nb));
            let ord = if desc { ord.reverse() } else { ord };
            ord.then_with(|| na.cmp(nb))
                .then_with(|| rows[a].id().cmp(rows[b].id()))
        });
        order
    }

    fn step(&mut self, m: Move, height: usize) {
        let last = self.order.len().saturating_sub(1);
        let page = height.max(1);
        self.selected = match m {
            Move::Up => self.selected.saturating_sub(1),
            Move::Down => (self.selected + 1).min(last),
            Move::PageUp => self.selected.saturating_sub(page),
            Move::PageDown => (self.selected + page).min(last),
            Move::Top => 0,
            Move::Bottom => last,
        };
        self.fit(height);
    }

    /// Keeps the selection in range and in view of `height` rows.
    fn fit(&mut self, height: usize) {
        let n = self.order.len();
        if n == 0 {
            self.selected = 0;
            self.offset = 0;
            return;
        }
        self.selected = self.selected.min(n - 1);
        let h = height.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + h {
            self.offset = self.selected + 1 - h;
        }
        self.offset = self.offset.min(n.saturating_sub(h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::thresholds::Thresholds;

    /// A row whose name need not be unique, like partitions NULL and "null".
    #[derive(Debug, Clone)]
    struct Row {
        id: u32,
        name: &'static str,
        stats: SizeStats,
    }

    impl ListRow for Row {
        type Id = u32;
        fn id(&self) -> &u32 {
            &self.id
        }
        fn name(&self) -> Cow<'_, str> {
            Cow::Borrowed(self.name)
        }
        fn stats(&self) -> &SizeStats {
            &self.stats
        }
    }

    fn row(id: u32, name: &'static str, files: u64) -> Row {
        let t = Thresholds {
            target_file_size: 1 << 27,
            small_file_size: 1 << 27,
            max_file_size: 1 << 30,
        };
        let mut sizes = vec![1024; files as usize];
        Row {
            id,
            name,
            stats: SizeStats::from_sizes(&mut sizes, &t, &t.edges()),
        }
    }

    fn ids(l: &SortedList<Row>, rows: &[Row]) -> Vec<u32> {
        l.order().iter().map(|&i| rows[i].id).collect()
    }

    fn numbered(n: u32) -> Vec<Row> {
        (0..n).map(|i| row(i, "r", 1)).collect()
    }

    #[test]
    fn moving_keeps_the_selection_in_view() {
        let rows = numbered(100);
        let mut l = SortedList::new(Sort::by(SortKey::Name));
        l.rebuild(&rows, None, 10);
        l.apply(ListOp::Move(Move::PageDown), &rows, 10);
        assert_eq!((l.selected_position(), l.offset()), (10, 1));
        l.apply(ListOp::Move(Move::Bottom), &rows, 10);
        assert_eq!((l.selected_position(), l.offset()), (99, 90));
        l.apply(ListOp::Move(Move::Up), &rows, 10);
        assert_eq!((l.selected_position(), l.offset()), (98, 90));
        l.apply(ListOp::Move(Move::Top), &rows, 10);
        assert_eq!((l.selected_position(), l.offset()), (0, 0));
        l.apply(ListOp::Move(Move::Up), &rows, 10);
        assert_eq!(l.selected_position(), 0);
        let shown: Vec<usize> = l.visible(10).map(|(pos, _)| pos).collect();
        assert_eq!(shown, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn an_empty_list_never_panics_and_selects_nothing() {
        let rows: Vec<Row> = Vec::new();
        let mut l = SortedList::new(Sort::by(SortKey::Excess));
        l.rebuild(&rows, Some(&3), 10);
        for m in [Move::Down, Move::Up, Move::Bottom, Move::PageDown] {
            l.apply(ListOp::Move(m), &rows, 10);
        }
        l.apply(ListOp::CycleSort, &rows, 0);
        assert_eq!((l.selected_position(), l.offset()), (0, 0));
        assert!(l.selected(&rows).is_none());
        assert_eq!(l.visible(10).count(), 0);
    }

    #[test]
    fn ties_are_broken_by_name_then_identity_whatever_the_input_order() {
        // Equal file counts; two rows share the name "b".
        let rows = vec![
            row(7, "b", 2),
            row(3, "c", 2),
            row(5, "b", 2),
            row(1, "a", 2),
            row(9, "z", 5),
        ];
        let mut l = SortedList::new(Sort::by(SortKey::Files));
        l.rebuild(&rows, None, 10);
        assert_eq!(ids(&l, &rows), vec![9, 1, 5, 7, 3]);
        // Reversing the sort reverses the key, not the tie-break.
        l.apply(ListOp::ReverseSort, &rows, 10);
        assert_eq!(ids(&l, &rows), vec![1, 5, 7, 3, 9]);
        let mut shuffled = rows.clone();
        shuffled.reverse();
        l.rebuild(&shuffled, None, 10);
        assert_eq!(ids(&l, &shuffled), vec![1, 5, 7, 3, 9]);
    }

    #[test]
    fn the_selected_row_is_kept_by_identity_not_by_name() {
        // Two rows print alike (a NULL and a "null" partition); the second is selected.
        let rows = vec![row(1, "k=null", 3), row(2, "k=null", 3), row(3, "k=a", 1)];
        let mut l = SortedList::new(Sort::by(SortKey::Files));
        l.rebuild(&rows, None, 10);
        l.apply(ListOp::Move(Move::Down), &rows, 10);
        assert_eq!(l.selected(&rows).map(|r| r.id), Some(2));
        // A reload brings the rows in another order, with other numbers.
        let reloaded = vec![row(3, "k=a", 9), row(2, "k=null", 1), row(1, "k=null", 5)];
        let keep = l.selected_id(&rows);
        l.rebuild(&reloaded, keep.as_ref(), 10);
        assert_eq!(l.selected(&reloaded).map(|r| r.id), Some(2));
        // Sorting again keeps it too.
        l.apply(ListOp::CycleSort, &reloaded, 10);
        assert_eq!(l.sort().key, SortKey::Name);
        assert_eq!(l.selected(&reloaded).map(|r| r.id), Some(2));
    }

    #[test]
    fn the_filter_matches_names_case_insensitively_and_keeps_the_selection() {
        let rows = vec![row(1, "Alpha", 1), row(2, "beta", 2), row(3, "ALPHAbet", 3)];
        let mut l = SortedList::new(Sort::by(SortKey::Name));
        l.rebuild(&rows, None, 10);
        l.apply(ListOp::Move(Move::Bottom), &rows, 10);
        assert_eq!(l.selected(&rows).map(|r| r.id), Some(2));
        l.apply(ListOp::SetFilter("alpha".into()), &rows, 10);
        assert_eq!(ids(&l, &rows), vec![3, 1]);
        // The selected row is filtered out: the first match is selected.
        assert_eq!(l.selected(&rows).map(|r| r.id), Some(3));
        l.apply(ListOp::Move(Move::Down), &rows, 10);
        l.apply(ListOp::SetFilter("al".into()), &rows, 10);
        assert_eq!(l.selected(&rows).map(|r| r.id), Some(1));
        l.apply(ListOp::SetFilter(String::new()), &rows, 10);
        assert_eq!(l.len(), 3);
        assert_eq!(l.selected(&rows).map(|r| r.id), Some(1));
    }

    #[test]
    fn a_shrinking_height_scrolls_the_selection_back_into_view() {
        let rows = numbered(50);
        let mut l = SortedList::new(Sort::by(SortKey::Name));
        l.rebuild(&rows, None, 40);
        l.apply(ListOp::Move(Move::PageDown), &rows, 40);
        assert_eq!((l.selected_position(), l.offset()), (40, 1));
        l.apply(ListOp::Fit, &rows, 10);
        assert_eq!((l.selected_position(), l.offset()), (40, 31));
    }
}
