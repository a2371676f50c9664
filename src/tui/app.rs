//! TUI state and the single place it changes: `App::update(Action) -> Vec<Effect>`.

use std::time::{Duration, Instant};

use super::action::{Action, Command, Effect};
use super::jobs::{JobStatus, JobView};
use super::keymap::Context;
use super::layout;
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::open::{Opened, RootReport};
use crate::engine::progress::LoadProgress;
use crate::engine::stats::file_sizes::SizeStats;
use crate::engine::stats::table_report::{PartitionValues, TableReport};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Health score, worst first by default.
    Health,
    Excess,
    SmallShare,
    Bytes,
    Files,
    Name,
}

impl SortKey {
    pub fn next(self) -> Self {
        match self {
            SortKey::Excess => SortKey::SmallShare,
            SortKey::SmallShare => SortKey::Bytes,
            SortKey::Bytes => SortKey::Files,
            SortKey::Files => SortKey::Name,
            SortKey::Name => SortKey::Health,
            SortKey::Health => SortKey::Excess,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Excess => "excess files",
            SortKey::SmallShare => "small share",
            SortKey::Bytes => "bytes",
            SortKey::Files => "files",
            SortKey::Name => "name",
            SortKey::Health => "health",
        }
    }
    /// Names read best ascending, numbers worst-first.
    fn default_desc(self) -> bool {
        !matches!(self, SortKey::Name | SortKey::Health)
    }
}

/// A scrollable, sortable, filterable list of row indices.
#[derive(Debug, Clone, Default)]
pub struct ListState {
    /// Indices into the underlying rows, in display order (after filter and sort).
    pub view: Vec<usize>,
    pub selected: usize,
    pub offset: usize,
    pub filter: String,
}

impl ListState {
    fn clamp(&mut self, height: usize) {
        let n = self.view.len();
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

    fn step(&mut self, cmd: Command, height: usize) {
        let n = self.view.len();
        let page = height.max(1);
        match cmd {
            Command::Up => self.selected = self.selected.saturating_sub(1),
            Command::Down => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            Command::PageUp => self.selected = self.selected.saturating_sub(page),
            Command::PageDown => self.selected = (self.selected + page).min(n.saturating_sub(1)),
            Command::Top => self.selected = 0,
            Command::Bottom => self.selected = n.saturating_sub(1),
            _ => {}
        }
        self.clamp(height);
    }

    pub fn selected_index(&self) -> Option<usize> {
        self.view.get(self.selected).copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Tables,
    Table,
}

#[derive(Debug)]
pub struct Loading {
    pub id: u64,
    pub uri: String,
    pub progress: Option<LoadProgress>,
    pub started: Instant,
    /// A reload of what is shown (keeps showing it) rather than a new screen.
    pub refresh: bool,
}

/// Marked partitions, in the order they were marked. Identity is the typed values: NULL and the
/// string "null" are different partitions even though they print alike.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Marks(Vec<PartitionValues>);

impl Marks {
    pub fn toggle(&mut self, v: PartitionValues) {
        match self.0.iter().position(|m| *m == v) {
            Some(i) => {
                self.0.remove(i);
            }
            None => self.0.push(v),
        }
    }

    pub fn contains(&self, v: &PartitionValues) -> bool {
        self.0.contains(v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn clear(&mut self) {
        self.0.clear()
    }

    pub fn iter(&self) -> impl Iterator<Item = &PartitionValues> {
        self.0.iter()
    }
}

/// The compaction preview: planning, then the plan (or why there is none).
#[derive(Debug)]
pub struct PlanDialog {
    pub id: u64,
    pub table_uri: String,
    pub partitions: Vec<PartitionValues>,
    pub result: Option<Result<Box<CompactionPlan>, String>>,
}

pub struct App {
    /// What the user opened (a table or a root).
    pub uri: String,
    pub screen: Screen,
    pub root: Option<RootReport>,
    pub tables: ListState,
    pub table: Option<TableReport>,
    pub partitions: ListState,
    pub sort: SortKey,
    pub sort_desc: bool,
    pub table_histogram: bool,
    pub loading: Option<Loading>,
    pub error: Option<String>,
    pub show_help: bool,
    /// Some while the user types a filter.
    pub filter_input: Option<String>,
    pub should_quit: bool,
    pub size: (u16, u16),
    pub spinner: usize,
    pub refresh_every: Duration,
    pub last_loaded: Option<Instant>,
    /// Partitions marked for compaction (of the table shown), by their typed values.
    pub marks: Marks,
    pub plan: Option<PlanDialog>,
    pub jobs: Vec<JobView>,
    /// Asking whether to cancel this job.
    pub confirm_cancel: Option<u64>,
    next_load: u64,
}

impl App {
    pub fn new(uri: String, refresh_every: Duration, size: (u16, u16)) -> Self {
        Self {
            uri,
            screen: Screen::Table,
            root: None,
            tables: ListState::default(),
            table: None,
            partitions: ListState::default(),
            sort: SortKey::Excess,
            sort_desc: true,
            table_histogram: false,
            loading: None,
            error: None,
            show_help: false,
            filter_input: None,
            should_quit: false,
            size,
            spinner: 0,
            refresh_every,
            last_loaded: None,
            marks: Marks::default(),
            plan: None,
            jobs: Vec::new(),
            confirm_cancel: None,
            next_load: 1,
        }
    }

    /// The first effect: load what the user opened.
    pub fn start(&mut self) -> Vec<Effect> {
        let uri = self.uri.clone();
        self.load(uri, false)
    }

    pub fn context(&self) -> Context {
        if self.plan.is_some() || self.confirm_cancel.is_some() {
            return Context::Dialog;
        }
        match self.screen {
            Screen::Tables => Context::Tables,
            Screen::Table => Context::Table,
        }
    }

    fn list_height(&self) -> usize {
        match self.screen {
            Screen::Tables => layout::tables_rows(self.size),
            Screen::Table => layout::partition_rows(self.size, !self.marks.is_empty()),
        }
    }

    fn next_id(&mut self) -> u64 {
        let id = self.next_load;
        self.next_load += 1;
        id
    }

    fn load(&mut self, uri: String, refresh: bool) -> Vec<Effect> {
        let mut effects = Vec::new();
        if let Some(old) = self.loading.take() {
            effects.push(Effect::CancelLoad { id: old.id });
        }
        let id = self.next_id();
        self.loading = Some(Loading {
            id,
            uri: uri.clone(),
            progress: None,
            started: Instant::now(),
            refresh,
        });
        effects.push(Effect::Load { id, uri });
        effects
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Command(c) => return self.command(c),
            Action::FilterInput(ch) => {
                if let Some(f) = &mut self.filter_input {
                    f.push(ch);
                    let f = f.clone();
                    self.apply_filter(f);
                }
            }
            Action::FilterBackspace => {
                if let Some(f) = &mut self.filter_input {
                    f.pop();
                    let f = f.clone();
                    self.apply_filter(f);
                }
            }
            Action::FilterDone => self.filter_input = None,
            Action::FilterCancel => {
                self.filter_input = None;
                self.apply_filter(String::new());
            }
            Action::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                return self.maybe_auto_refresh();
            }
            Action::Resize { width, height } => {
                self.size = (width, height);
                let h = self.list_height();
                self.active_list().clamp(h);
            }
            Action::Progress { load, progress } => {
                if let Some(l) = self.loading.as_mut().filter(|l| l.id == load) {
                    l.progress = Some(progress);
                }
            }
            Action::PlanReady { id, result } => match &mut self.plan {
                Some(p) if p.id == id => p.result = Some(result),
                _ => return vec![Effect::DiscardPlan { id }],
            },
            Action::Job { job, event } => {
                let now = Instant::now();
                let landed = self
                    .jobs
                    .iter_mut()
                    .find(|j| j.id == job)
                    .is_some_and(|j| j.apply(event, now));
                // A commit changed the table: reload it so counts and histograms follow.
                let shown = self.table.as_ref().map(|t| t.uri.clone());
                let job_uri = self
                    .jobs
                    .iter()
                    .find(|j| j.id == job)
                    .map(|j| j.table_uri.clone());
                if landed
                    && shown.is_some()
                    && shown == job_uri
                    && self.loading.is_none()
                    && let Some(uri) = shown
                {
                    return self.load(uri, true);
                }
            }
            Action::Loaded { load, result } => {
                if self.loading.as_ref().is_none_or(|l| l.id != load) {
                    return vec![]; // a superseded load
                }
                self.loading = None;
                self.last_loaded = Some(Instant::now());
                match result {
                    Ok(Opened::Table(t)) => {
                        self.error = None;
                        self.set_table(*t);
                    }
                    Ok(Opened::Root(r)) => {
                        self.error = None;
                        self.set_root(r);
                    }
                    Err(e) => self.error = Some(e),
                }
            }
        }
        vec![]
    }

    fn maybe_auto_refresh(&mut self) -> Vec<Effect> {
        if self.refresh_every.is_zero() || self.loading.is_some() || self.error.is_some() {
            return vec![];
        }
        let due = self
            .last_loaded
            .is_some_and(|t| t.elapsed() >= self.refresh_every);
        match (&self.screen, &self.table) {
            (Screen::Table, Some(t)) if due => {
                let uri = t.uri.clone();
                self.load(uri, true)
            }
            _ => vec![],
        }
    }

    fn active_list(&mut self) -> &mut ListState {
        match self.screen {
            Screen::Tables => &mut self.tables,
            Screen::Table => &mut self.partitions,
        }
    }

    fn dialog_command(&mut self, c: Command) -> Vec<Effect> {
        if let Some(job) = self.confirm_cancel {
            match c {
                Command::Confirm => {
                    self.confirm_cancel = None;
                    if let Some(j) = self
                        .jobs
                        .iter_mut()
                        .find(|j| j.id == job && j.status.is_active())
                    {
                        j.status = JobStatus::Cancelling;
                        return vec![Effect::CancelJob { id: job }];
                    }
                }
                Command::Dismiss => self.confirm_cancel = None,
                _ => {}
            }
            return vec![];
        }
        let Some(p) = &self.plan else { return vec![] };
        match c {
            Command::Confirm => {
                let startable = matches!(&p.result, Some(Ok(plan)) if plan.bins > 0);
                if !startable {
                    return vec![];
                }
                let Some(PlanDialog {
                    id,
                    table_uri,
                    result: Some(Ok(plan)),
                    ..
                }) = self.plan.take()
                else {
                    return vec![];
                };
                self.jobs.push(JobView::new(id, table_uri, &plan));
                self.marks.clear();
                vec![Effect::StartJob { id }]
            }
            Command::Dismiss => {
                let id = p.id;
                self.plan = None;
                vec![Effect::DiscardPlan { id }]
            }
            _ => vec![],
        }
    }

    fn command(&mut self, c: Command) -> Vec<Effect> {
        if c != Command::Quit && (self.plan.is_some() || self.confirm_cancel.is_some()) {
            return self.dialog_command(c);
        }
        if self.show_help && c != Command::Quit {
            // Any key closes the help screen.
            self.show_help = false;
            return vec![];
        }
        match c {
            Command::Quit => {
                self.should_quit = true;
                let mut effects: Vec<Effect> = self
                    .jobs
                    .iter()
                    .filter(|j| j.status.is_active())
                    .map(|j| Effect::CancelJob { id: j.id })
                    .collect();
                if let Some(l) = self.loading.take() {
                    effects.push(Effect::CancelLoad { id: l.id });
                }
                return effects;
            }
            Command::Help => self.show_help = true,
            Command::Up
            | Command::Down
            | Command::PageUp
            | Command::PageDown
            | Command::Top
            | Command::Bottom => {
                let h = self.list_height();
                self.active_list().step(c, h);
            }
            Command::Enter => {
                if self.screen == Screen::Tables {
                    let picked = self
                        .tables
                        .selected_index()
                        .and_then(|i| self.root.as_ref().and_then(|r| r.tables.get(i)))
                        .cloned();
                    if let Some(t) = picked {
                        self.screen = Screen::Table;
                        self.set_table(t);
                    }
                }
            }
            Command::Back => {
                if self.error.is_some() {
                    self.error = None;
                } else if !self.partitions.filter.is_empty() {
                    self.apply_filter(String::new());
                } else if self.screen == Screen::Table && self.root.is_some() {
                    self.screen = Screen::Tables;
                    self.table = None;
                }
            }
            Command::Refresh => {
                self.error = None;
                let uri = match (&self.screen, &self.table) {
                    (Screen::Table, Some(t)) => t.uri.clone(),
                    _ => self.uri.clone(),
                };
                let refresh = self.table.is_some() || self.root.is_some();
                return self.load(uri, refresh);
            }
            Command::CycleSort => {
                self.sort = self.sort.next();
                self.sort_desc = self.sort.default_desc();
                self.resort();
            }
            Command::ReverseSort => {
                self.sort_desc = !self.sort_desc;
                self.resort();
            }
            Command::Filter => {
                let current = self.active_list().filter.clone();
                self.filter_input = Some(current);
            }
            Command::ToggleTableHistogram => self.table_histogram = !self.table_histogram,
            Command::ToggleMark => {
                if let Some(values) = self.selected_partition().map(|p| p.values.clone()) {
                    self.marks.toggle(values);
                    let h = self.list_height();
                    self.partitions.step(Command::Down, h);
                }
            }
            Command::Compact => {
                let Some(t) = &self.table else { return vec![] };
                let uri = t.uri.clone();
                let partitions: Vec<PartitionValues> = if self.marks.is_empty() {
                    self.selected_partition()
                        .map(|p| p.values.clone())
                        .into_iter()
                        .collect()
                } else {
                    self.marks.iter().cloned().collect()
                };
                if partitions.is_empty() {
                    return vec![];
                }
                let id = self.next_id();
                self.plan = Some(PlanDialog {
                    id,
                    table_uri: uri.clone(),
                    partitions: partitions.clone(),
                    result: None,
                });
                return vec![Effect::PlanCompaction {
                    id,
                    uri,
                    partitions,
                }];
            }
            Command::CancelJob => {
                if let Some(j) = self.jobs.iter().rev().find(|j| j.status.is_active()) {
                    self.confirm_cancel = Some(j.id);
                }
            }
            Command::Confirm | Command::Dismiss => {}
        }
        vec![]
    }

    fn set_root(&mut self, r: RootReport) {
        let keep = self
            .tables
            .selected_index()
            .and_then(|i| self.root.as_ref()?.tables.get(i).map(|t| t.uri.clone()));
        if self.root.is_none() && self.table.is_none() {
            // A root's tables are ranked by health, worst first.
            self.sort = SortKey::Health;
            self.sort_desc = false;
        }
        self.root = Some(r);
        if self.table.is_none() {
            self.screen = Screen::Tables;
        } else if let Some(t) = &self.table {
            // A refresh of the root while a table is shown: keep the table in sync.
            let fresh = self
                .root
                .as_ref()
                .and_then(|r| r.tables.iter().find(|x| x.uri == t.uri))
                .cloned();
            if let Some(f) = fresh {
                self.set_table(f);
            }
        }
        self.rebuild_tables(keep);
    }

    fn set_table(&mut self, t: TableReport) {
        if self.table.as_ref().is_some_and(|old| old.uri != t.uri) {
            self.marks.clear();
        }
        let keep = self.selected_partition().map(|p| p.values.clone());
        self.table = Some(t);
        self.rebuild_partitions(keep);
    }

    pub fn selected_partition(
        &self,
    ) -> Option<&crate::engine::stats::table_report::PartitionReport> {
        let t = self.table.as_ref()?;
        self.partitions
            .selected_index()
            .and_then(|i| t.partitions.get(i))
    }

    fn apply_filter(&mut self, f: String) {
        match self.screen {
            Screen::Tables => {
                let keep = self
                    .tables
                    .selected_index()
                    .and_then(|i| self.root.as_ref()?.tables.get(i).map(|t| t.uri.clone()));
                self.tables.filter = f;
                self.rebuild_tables(keep);
            }
            Screen::Table => {
                let keep = self.selected_partition().map(|p| p.values.clone());
                self.partitions.filter = f;
                self.rebuild_partitions(keep);
            }
        }
    }

    fn resort(&mut self) {
        match self.screen {
            Screen::Tables => {
                let keep = self
                    .tables
                    .selected_index()
                    .and_then(|i| self.root.as_ref()?.tables.get(i).map(|t| t.uri.clone()));
                self.rebuild_tables(keep);
            }
            Screen::Table => {
                let keep = self.selected_partition().map(|p| p.values.clone());
                self.rebuild_partitions(keep);
            }
        }
    }

    fn rebuild_partitions(&mut self, keep: Option<PartitionValues>) {
        let Some(t) = &self.table else {
            self.partitions.view.clear();
            return;
        };
        let labels: Vec<String> = t.partitions.iter().map(|p| p.values.label()).collect();
        let stats: Vec<&SizeStats> = t.partitions.iter().map(|p| &p.stats).collect();
        let view = filter_and_sort(
            &labels,
            &stats,
            &self.partitions.filter,
            self.sort,
            self.sort_desc,
        );
        // By typed values: NULL and the string "null" have the same label.
        let selected = keep
            .and_then(|k| view.iter().position(|&i| t.partitions[i].values == k))
            .unwrap_or(0);
        self.partitions.view = view;
        self.partitions.selected = selected;
        let h = layout::partition_rows(self.size, !self.marks.is_empty());
        self.partitions.clamp(h);
    }

    fn rebuild_tables(&mut self, keep: Option<String>) {
        let Some(r) = &self.root else {
            self.tables.view.clear();
            return;
        };
        let names: Vec<String> = r.tables.iter().map(|t| t.name.clone()).collect();
        let stats: Vec<&SizeStats> = r.tables.iter().map(|t| &t.stats).collect();
        let view = filter_and_sort(
            &names,
            &stats,
            &self.tables.filter,
            self.sort,
            self.sort_desc,
        );
        let selected = keep
            .and_then(|k| view.iter().position(|&i| r.tables[i].uri == k))
            .unwrap_or(0);
        self.tables.view = view;
        self.tables.selected = selected;
        let h = layout::tables_rows(self.size);
        self.tables.clamp(h);
    }
}

/// Indices of the rows whose name contains `filter` (case-insensitive), ordered by `key` and
/// then by name. Shared by the tables list and the partitions table.
fn filter_and_sort(
    names: &[String],
    stats: &[&SizeStats],
    filter: &str,
    key: SortKey,
    desc: bool,
) -> Vec<usize> {
    let needle = filter.to_lowercase();
    let mut view: Vec<usize> = (0..names.len())
        .filter(|&i| needle.is_empty() || names[i].to_lowercase().contains(&needle))
        .collect();
    view.sort_by(|&a, &b| {
        let (sa, sb) = (stats[a], stats[b]);
        let ord = match key {
            SortKey::Excess => sa.excess_files.cmp(&sb.excess_files),
            SortKey::SmallShare => sa.small_share().total_cmp(&sb.small_share()),
            SortKey::Bytes => sa.bytes.cmp(&sb.bytes),
            SortKey::Files => sa.files.cmp(&sb.files),
            SortKey::Name => names[a].cmp(&names[b]),
            SortKey::Health => sa.health_score.cmp(&sb.health_score),
        };
        let ord = if desc { ord.reverse() } else { ord };
        ord.then_with(|| names[a].cmp(&names[b]))
    });
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_scrolls_to_keep_selection_visible() {
        let mut l = ListState {
            view: (0..100).collect(),
            ..Default::default()
        };
        l.step(Command::PageDown, 10);
        assert_eq!((l.selected, l.offset), (10, 1));
        l.step(Command::Bottom, 10);
        assert_eq!((l.selected, l.offset), (99, 90));
        l.step(Command::Up, 10);
        assert_eq!((l.selected, l.offset), (98, 90));
        l.step(Command::Top, 10);
        assert_eq!((l.selected, l.offset), (0, 0));
        l.step(Command::Up, 10);
        assert_eq!(l.selected, 0);
    }

    #[test]
    fn empty_list_never_panics() {
        let mut l = ListState::default();
        for c in [
            Command::Down,
            Command::Up,
            Command::Bottom,
            Command::PageDown,
        ] {
            l.step(c, 10);
        }
        assert_eq!((l.selected, l.offset), (0, 0));
    }

    #[test]
    fn stale_loads_are_ignored() {
        let mut app = App::new("x".into(), Duration::ZERO, (120, 40));
        let first = app.start();
        let refresh = app.update(Action::Command(Command::Refresh));
        assert!(matches!(first[0], Effect::Load { id: 1, .. }));
        assert!(refresh.contains(&Effect::CancelLoad { id: 1 }));
        app.update(Action::Loaded {
            load: 1,
            result: Err("old".into()),
        });
        assert!(
            app.error.is_none(),
            "a superseded load must not show its error"
        );
        app.update(Action::Loaded {
            load: 2,
            result: Err("new".into()),
        });
        assert_eq!(app.error.as_deref(), Some("new"));
    }
}
