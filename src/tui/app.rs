//! TUI state and the single place it changes: `App::update(Action) -> Vec<Effect>`.
//!
//! A key reaches exactly one handler: the error if one is shown, else the open modal, else the
//! screen (see `App::context`, which the keymap also uses).

use crate::engine::compact::ordering::LayoutRequest;
use crate::tui::task_error::TaskError;
use std::time::{Duration, Instant};

use super::action::{Action, Command, Effect, Pointer, TaskProgress};
use super::clock::Clock;
use super::janitor::TuiJanitor;
use super::jobs::{JobNumber, JobView};
use super::keymap::Context;
use super::layout;
use super::list::{ListOp, Move, Sort, SortedList};
use super::live::{Follow, Live, Shown};
use super::maintenance::{MaintenanceEvent, MaintenanceJob, MaintenanceKind, VacuumDialog};
use super::preview::{
    AnyPreview, Compaction, CompactionRequest, Conversion, IcebergCompaction, OnConfirm,
    PlannedJob, Preview, PreviewKind,
};
use super::root::{RootEntry, RootRow, RootView};
use super::view;
use crate::engine::compact::events::JobEvent;
use crate::engine::compact::executor::Executor;
use crate::engine::delta::watch::LogEvent;
use crate::engine::janitor::policy::Policy;
use crate::engine::maintenance::vacuum::VacuumPlan;
use crate::engine::model::partition::PartitionValues;
use crate::engine::open::{Opened, RootReport};
use crate::engine::parquet_folder::convert::ConvertOutcome;
use crate::engine::progress::LoadProgress;
use crate::engine::stats::table_report::{PartitionReport, TableReport};

/// Why-view rows a page key scrolls.
const WHY_PAGE: usize = 10;

pub use super::list::SortKey;

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
    /// A commit landed after this load began: load again when it ends.
    pub stale: bool,
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
pub type PlanDialog = Preview<Compaction>;

/// The preview of converting a Parquet folder to Delta: planning, then the plan (or why not).
pub type ConvertDialog = Preview<Conversion>;

/// The Iceberg compaction preview (`tui::iceberg`): the dry run through the catalog, then the
/// outcome.
pub type IcebergDialog = Preview<IcebergCompaction>;

/// The skipping panel (`tui::preview::Skipping`), opened on the partition then selected.
pub type SkippingDialog = Preview<super::preview::Skipping>;

/// A dialog over the screen that takes the keys.
#[derive(Debug)]
pub enum Modal {
    /// The key list, scrolled down by `scroll` rows; keys other than scrolling close it.
    Help {
        scroll: usize,
    },
    /// Typing the filter of the list on screen (applied as it is typed; the list holds it).
    Filter,
    Plan(PlanDialog),
    /// Asking whether to cancel this job (its task id, and the number the user sees).
    ConfirmCancel {
        job: u64,
        number: JobNumber,
    },
    /// Asking whether to quit while `running` jobs run (quitting cancels them).
    ConfirmQuit {
        running: usize,
    },
    /// The vacuum dry run, to confirm.
    Vacuum(VacuumDialog),
    /// The janitor's last decisions (`tui::janitor`), scrolled down by `scroll` rows.
    Why {
        scroll: usize,
    },
    Convert(ConvertDialog),
    Iceberg(IcebergDialog),
    Skipping(SkippingDialog),
}

/// What covers the screen: at most one modal, and over it at most one error (errors come from
/// background loads, so one can arrive while a modal is open). The top one takes the keys.
#[derive(Debug, Default)]
pub struct Modals {
    pub(super) modal: Option<Modal>,
    error: Option<String>,
}

impl Modals {
    pub fn modal(&self) -> Option<&Modal> {
        self.modal.as_ref()
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn plan(&self) -> Option<&PlanDialog> {
        match &self.modal {
            Some(Modal::Plan(p)) => Some(p),
            _ => None,
        }
    }

    /// The context of the top layer, None when the screen has the keys.
    pub fn context(&self) -> Option<Context> {
        if self.error.is_some() {
            return Some(Context::Error);
        }
        self.modal.as_ref().map(|m| match m {
            Modal::Help { .. } => Context::Help,
            Modal::Filter => Context::Filter,
            Modal::Plan(p) if p.request.order_text.is_some() => Context::OrderInput,
            // The previews, the cancel question and the why view.
            _ => Context::Dialog,
        })
    }

    /// Opens `m` unless a modal is open (only the screen's keys open modals, so none is).
    pub(super) fn open(&mut self, m: Modal) {
        if self.modal.is_none() {
            self.modal = Some(m);
        }
    }

    fn close(&mut self) -> Option<Modal> {
        self.modal.take()
    }

    pub(super) fn show_error(&mut self, e: String) {
        self.error = Some(crate::engine::secrets::scrub(&e).into_owned());
    }

    fn clear_error(&mut self) {
        self.error = None;
    }
}

pub struct App {
    /// What the user opened (a table or a root).
    pub uri: String,
    pub screen: Screen,
    pub root: Option<RootView>,
    /// The root's tables (and the ones that could not be read), ranked by health, worst first,
    /// until sorted otherwise.
    pub tables: SortedList<RootRow>,
    pub table: Option<TableReport>,
    pub partitions: SortedList<PartitionReport>,
    pub table_histogram: bool,
    pub loading: Option<Loading>,
    pub modals: Modals,
    pub should_quit: bool,
    pub size: (u16, u16),
    pub spinner: usize,
    pub refresh_every: Duration,
    pub last_loaded: Option<Instant>,
    /// Partitions marked for compaction (of the table shown), by their typed values.
    pub marks: Marks,
    pub jobs: Vec<JobView>,
    /// Checkpoint and vacuum jobs, oldest first.
    pub maintenance: Vec<MaintenanceJob>,
    pub clock: Clock,
    /// Whether the open table follows its log (the TUI does; `App::new` leaves it off).
    pub follow: Follow,
    /// The watcher of the open table, while it is followed.
    pub live: Option<Live>,
    /// The policy the live forecasts use.
    pub policy: Option<Policy>,
    /// The janitor, when switched on for the open table (`a`).
    pub janitor: TuiJanitor,
    /// The janitor over the root (`a` on the tables list).
    pub fleet: super::fleet::Fleet,
    next_id: u64,
    /// The number the next job gets (jobs are numbered 1, 2, 3, … as the user sees them; their
    /// task ids are the effects' and skip).
    next_job_number: u32,
    /// A one-line answer to the last key (e.g. why nothing was cancelled), in the status bar
    /// until the next key.
    pub notice: Option<String>,
    /// Which executor compaction jobs use (shown in the preview).
    pub executor: String,
    /// The catalog Iceberg tables are compacted through (`--catalog`); None: `c` says how.
    pub iceberg_catalog: Option<String>,
}

fn as_move(c: Command) -> Option<Move> {
    Some(match c {
        Command::Up => Move::Up,
        Command::Down => Move::Down,
        Command::PageUp => Move::PageUp,
        Command::PageDown => Move::PageDown,
        Command::Top => Move::Top,
        Command::Bottom => Move::Bottom,
        _ => return None,
    })
}

impl App {
    pub fn new(uri: String, refresh_every: Duration, size: (u16, u16)) -> Self {
        Self {
            uri,
            screen: Screen::Table,
            root: None,
            tables: SortedList::new(Sort::by(SortKey::Health)),
            table: None,
            partitions: SortedList::new(Sort::by(SortKey::Excess)),
            table_histogram: false,
            loading: None,
            modals: Modals::default(),
            should_quit: false,
            size,
            spinner: 0,
            refresh_every,
            last_loaded: None,
            marks: Marks::default(),
            jobs: Vec::new(),
            maintenance: Vec::new(),
            clock: Clock::System,
            follow: Follow::Off,
            live: None,
            policy: None,
            janitor: TuiJanitor::new(&Policy::builtin(
                crate::engine::options::OpenOptions::default().thresholds,
            )),
            fleet: Default::default(),
            next_id: 1,
            next_job_number: 1,
            notice: None,
            executor: Executor::Local.describe(),
            iceberg_catalog: None,
        }
    }

    /// The first effect: load what the user opened.
    pub fn start(&mut self) -> Vec<Effect> {
        let uri = self.uri.clone();
        self.load(uri, false)
    }

    /// Who takes the keys: the error, the modal, or the screen.
    pub fn context(&self) -> Context {
        self.modals.context().unwrap_or(match self.screen {
            Screen::Tables => Context::Tables,
            Screen::Table => Context::Table,
        })
    }

    /// The error shown, if any.
    pub fn error(&self) -> Option<&str> {
        self.modals.error()
    }

    /// The compaction preview, when open.
    pub fn plan(&self) -> Option<&PlanDialog> {
        self.modals.plan()
    }

    /// Whether `c` would do something now (the hint bar shows only those).
    pub fn can(&self, c: Command) -> bool {
        let why_open = matches!(self.modals.modal(), Some(Modal::Why { .. }));
        match c {
            // In a dialog the moves scroll, and only the why view scrolls.
            Command::Up | Command::Down | Command::PageUp | Command::PageDown
                if self.context() == Context::Dialog =>
            {
                why_open
            }
            Command::CancelJob => self.jobs.iter().any(|j| j.status().is_active()),
            Command::FullSpeed => match self.modals.modal() {
                Some(Modal::Plan(p)) => p.startable(),
                Some(_) => false,
                None => self.has_paced_jobs(),
            },
            // A compaction preview (not a purge's) whose plan came: its order can be typed.
            Command::Order => matches!(
                self.modals.modal(),
                Some(Modal::Plan(p)) if p.result.is_some() && !p.running && !p.request.purge
            ),
            Command::Back => {
                !self.active_filter().is_empty()
                    || (self.screen == Screen::Table && self.root.is_some())
            }
            Command::Enter => !self.tables.is_empty(),
            Command::Confirm => self
                .modals
                .modal()
                .and_then(Modal::preview)
                .is_none_or(AnyPreview::startable),
            Command::Checkpoint | Command::Vacuum => self.table.is_some(),
            Command::ToggleMark | Command::Compact => self.selected_partition().is_some(),
            Command::Purge => {
                self.selected_partition().is_some()
                    && self.table.as_ref().is_some_and(|t| {
                        t.format.can_compact()
                            && t.deleted_rows
                                .as_ref()
                                .is_some_and(|d| d.files_with_deletion_vectors > 0)
                    })
            }
            Command::Janitor => self.table.as_ref().is_some_and(|t| t.format.can_compact()),
            Command::Fleet => self.root.is_some(),
            Command::Why => self.janitor.is_on() || !self.janitor.why.is_empty(),
            Command::Convert => self.table.as_ref().is_some_and(|t| t.format.can_convert()),
            Command::Skipping => self.table.as_ref().is_some_and(|t| {
                use crate::engine::model::format::TableFormat;
                matches!(t.format, TableFormat::Delta | TableFormat::Iceberg)
            }),
            _ => true,
        }
    }

    pub fn selected_partition(&self) -> Option<&PartitionReport> {
        self.partitions.selected(&self.table.as_ref()?.partitions)
    }

    /// The filter of the list on screen.
    pub fn active_filter(&self) -> &str {
        match self.screen {
            Screen::Tables => self.tables.filter(),
            Screen::Table => self.partitions.filter(),
        }
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        let mut effects = self.handle(action);
        effects.extend(self.sync_live());
        effects
    }

    fn handle(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Command(c) => {
                self.notice = None;
                self.command(c)
            }
            Action::Mouse {
                pointer,
                column,
                row,
            } => self.mouse(pointer, column, row),
            Action::FilterInput(ch) => {
                match self.context() {
                    Context::OrderInput => self.type_order(ch),
                    _ => self.type_filter(ch),
                }
                vec![]
            }
            Action::Shutdown => self.quit(),
            Action::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                let mut e = self.maybe_auto_refresh();
                e.extend(self.janitor_tick());
                e
            }
            Action::Resize { width, height } => {
                self.size = (width, height);
                self.on_list(ListOp::Fit);
                vec![]
            }
            Action::Progress { task, progress } => match progress {
                TaskProgress::Load(p) => {
                    if let Some(l) = self.loading.as_mut().filter(|l| l.id == task) {
                        l.progress = Some(p);
                    }
                    vec![]
                }
                TaskProgress::Job(ev) => self.job_event(task, *ev),
            },
            Action::Loaded { load, result } => self.loaded(load, result),
            Action::PlanReady { id, result } => self.plan_ready(id, result),
            Action::IcebergPlanReady { id, result } => self.iceberg_plan_ready(id, result),
            Action::IcebergCompacted { id, result } => self.iceberg_compacted(id, result),
            Action::ConvertPlanReady { id, result } => self.preview_ready::<Conversion>(id, result),
            Action::Converted { id, result } => self.converted(id, result),
            Action::JanitorDecided { id, result } => self.janitor_decided(id, result),
            Action::FleetUpdated { id, snapshot } => self.fleet_updated(id, snapshot),
            Action::FleetStopped { id, result } => self.fleet_stopped(id, result),
            Action::VacuumPlanReady { id, result } => self.vacuum_plan_ready(id, result),
            Action::SkippingReady { id, result } => {
                self.preview_ready::<super::preview::Skipping>(id, result)
            }
            Action::Maintenance { id, event } => self.maintenance_event(id, event),
            Action::Log { watch, event } => {
                self.log_event(watch, event);
                vec![]
            }
        }
    }

    /// Whether the table at `uri` is followed by a watcher.
    pub fn following(&self, uri: &str) -> bool {
        self.live.as_ref().is_some_and(|l| l.uri == uri)
    }

    /// Starts a watcher for the table shown, or stops one no longer wanted.
    fn sync_live(&mut self) -> Vec<Effect> {
        let wanted = match (&self.follow, &self.screen, &self.table) {
            // Only a Delta table has a log to follow.
            (Follow::On { poll }, Screen::Table, Some(t))
                if !self.should_quit
                    && t.format == crate::engine::model::format::TableFormat::Delta =>
            {
                Some((t.uri.clone(), t.name.clone(), *poll))
            }
            _ => None,
        };
        let mut effects = Vec::new();
        if let Some(l) = self
            .live
            .take_if(|l| wanted.as_ref().is_none_or(|(uri, ..)| *uri != l.uri))
        {
            effects.push(Effect::StopWatch { id: l.id });
        }
        if self.live.is_none()
            && let Some((uri, name, poll)) = wanted
        {
            let id = self.next_id();
            let policy = self.policy.clone().unwrap_or_else(|| {
                Policy::builtin(self.table.as_ref().map_or_else(
                    || crate::engine::options::OpenOptions::default().thresholds,
                    |t| t.thresholds,
                ))
            });
            let poll = super::live::resolve_poll(&uri, poll);
            let now = self.clock.wall_ms();
            self.live = Some(Live::new(id, uri.clone(), poll, policy, now));
            effects.push(Effect::Watch {
                id,
                uri,
                name,
                poll: Some(poll),
            });
        }
        effects
    }

    fn log_event(&mut self, watch: u64, event: LogEvent) {
        let now = self.clock.wall_ms();
        let Some(live) = self.live.as_mut().filter(|l| l.id == watch) else {
            return; // a watcher stopped meanwhile
        };
        if let Shown::Table(report) = live.apply(event, now)
            && self.table.as_ref().is_some_and(|t| t.uri == report.uri)
        {
            self.set_table(*report);
        }
    }

    fn command(&mut self, c: Command) -> Vec<Effect> {
        if c == Command::Quit {
            return self.ask_quit();
        }
        match self.context() {
            Context::Error => self.error_command(c),
            Context::Help => {
                // j/k scroll; any other key closes the help (the keymap sends Dismiss for it).
                match (&mut self.modals.modal, c) {
                    (Some(Modal::Help { scroll }), Command::Down) => {
                        *scroll = (*scroll + 1).min(view::help_len())
                    }
                    (Some(Modal::Help { scroll }), Command::Up) => {
                        *scroll = scroll.saturating_sub(1)
                    }
                    _ => {
                        self.modals.close();
                    }
                }
                vec![]
            }
            Context::Filter => {
                self.filter_command(c);
                vec![]
            }
            Context::OrderInput => self.order_command(c),
            Context::Dialog => self.dialog_command(c),
            Context::Tables | Context::Table | Context::Global => self.screen_command(c),
        }
    }

    /// Quits at once when nothing runs; else asks first, over whatever dialog was open (a
    /// second `q` answers yes).
    fn ask_quit(&mut self) -> Vec<Effect> {
        let running = self.jobs.iter().filter(|j| j.status().is_active()).count();
        if running == 0 || matches!(self.modals.modal(), Some(Modal::ConfirmQuit { .. })) {
            return self.quit();
        }
        let mut effects = Vec::new();
        if self.modals.modal().and_then(Modal::preview).is_some() {
            effects = self.dismiss_preview();
            if self.modals.modal().is_some() {
                // A preview running in place cannot be closed: quit as before.
                effects.extend(self.quit());
                return effects;
            }
        }
        self.modals.close();
        self.modals.open(Modal::ConfirmQuit { running });
        effects
    }

    fn quit(&mut self) -> Vec<Effect> {
        self.should_quit = true;
        let mut effects: Vec<Effect> = self
            .jobs
            .iter_mut()
            .filter_map(|j| j.request_cancel().then_some(Effect::CancelJob { id: j.id }))
            .collect();
        if let Some(l) = self.loading.take() {
            effects.push(Effect::CancelLoad { id: l.id });
        }
        effects
    }

    fn error_command(&mut self, c: Command) -> Vec<Effect> {
        match c {
            Command::Dismiss => {
                self.modals.clear_error();
                vec![]
            }
            Command::Refresh => self.refresh(),
            _ => vec![],
        }
    }

    fn filter_command(&mut self, c: Command) {
        match c {
            Command::Confirm => {
                self.modals.close();
            }
            Command::Dismiss => {
                self.modals.close();
                self.on_list(ListOp::SetFilter(String::new()));
            }
            Command::Erase => {
                let mut f = self.active_filter().to_string();
                f.pop();
                self.on_list(ListOp::SetFilter(f));
            }
            _ => {}
        }
    }

    fn type_filter(&mut self, ch: char) {
        if self.context() == Context::Filter {
            let f = format!("{}{ch}", self.active_filter());
            self.on_list(ListOp::SetFilter(f));
        }
    }

    fn dialog_command(&mut self, c: Command) -> Vec<Effect> {
        if let Some(Modal::Why { scroll }) = &mut self.modals.modal {
            let last = self.janitor.why.len().saturating_sub(1);
            *scroll = match c {
                Command::Down => *scroll + 1,
                Command::Up => scroll.saturating_sub(1),
                Command::PageDown => *scroll + WHY_PAGE,
                Command::PageUp => scroll.saturating_sub(WHY_PAGE),
                _ => *scroll,
            }
            .min(last);
        }
        if self.modals.modal().and_then(Modal::preview).is_some() {
            return match c {
                Command::Confirm => self.confirm_preview(),
                Command::Dismiss => self.dismiss_preview(),
                Command::FullSpeed => {
                    self.toggle_full_speed();
                    vec![]
                }
                Command::Order => {
                    self.start_order_input();
                    vec![]
                }
                _ => vec![],
            };
        }
        match (self.modals.modal(), c) {
            (Some(Modal::ConfirmCancel { job, .. }), Command::Confirm) => {
                let job = *job;
                self.modals.close();
                self.cancel_job(job)
            }
            (Some(Modal::ConfirmQuit { .. }), Command::Confirm) => {
                self.modals.close();
                self.quit()
            }
            (
                Some(Modal::ConfirmCancel { .. })
                | Some(Modal::ConfirmQuit { .. })
                | Some(Modal::Why { .. }),
                Command::Dismiss,
            ) => {
                self.modals.close();
                vec![]
            }
            _ => vec![],
        }
    }

    /// Confirming the open preview: what its kind does, if it has something to start.
    fn confirm_preview(&mut self) -> Vec<Effect> {
        let Some(p) = self.modals.modal.as_mut().and_then(Modal::preview_mut) else {
            return vec![];
        };
        if !p.startable() {
            return vec![];
        }
        match p.on_confirm() {
            OnConfirm::RunInPlace(effect) => {
                p.set_running();
                vec![effect]
            }
            OnConfirm::StartJob => self.start_job(),
            OnConfirm::StartVacuum => self.start_vacuum(),
        }
    }

    /// Dismissing the open preview closes it (not while it runs); the runner forgets its plan.
    fn dismiss_preview(&mut self) -> Vec<Effect> {
        let Some(discard) = self
            .modals
            .modal()
            .and_then(Modal::preview)
            .and_then(AnyPreview::on_dismiss)
        else {
            return vec![];
        };
        self.modals.close();
        discard.into_iter().collect()
    }

    /// A preview's plan came: shown if its dialog is still open, else the runner forgets it.
    pub(super) fn preview_ready<K: PreviewKind>(
        &mut self,
        id: u64,
        result: Result<Box<K::Plan>, TaskError>,
    ) -> Vec<Effect> {
        match self.modals.modal.as_mut().and_then(K::of) {
            Some(p) if p.id == id => {
                p.result = Some(result);
                vec![]
            }
            // The preview was closed before its plan came.
            _ => K::discard(id).into_iter().collect(),
        }
    }

    fn screen_command(&mut self, c: Command) -> Vec<Effect> {
        if let Some(m) = as_move(c) {
            self.on_list(ListOp::Move(m));
            return vec![];
        }
        match c {
            Command::Refresh => return self.refresh(),
            Command::Compact => return self.preview_compaction(false),
            Command::Purge => {
                if !self.can(Command::Purge) {
                    self.notice = Some(
                        "nothing to purge: no file of this table has a deletion vector".into(),
                    );
                    return vec![];
                }
                return self.preview_compaction(true);
            }
            Command::Vacuum => return self.preview_vacuum(),
            Command::Skipping => return self.measure_skipping(),
            Command::Checkpoint => return self.checkpoint(),
            Command::Convert => return self.preview_convert(),
            Command::Enter => self.open_selected_table(),
            Command::Back => self.back(),
            Command::CycleSort => self.on_list(ListOp::CycleSort),
            Command::ReverseSort => self.on_list(ListOp::ReverseSort),
            Command::Filter => self.modals.open(Modal::Filter),
            Command::Help => self.modals.open(Modal::Help { scroll: 0 }),
            Command::ToggleTableHistogram => self.table_histogram = !self.table_histogram,
            Command::ToggleMark => self.toggle_mark(),
            Command::CancelJob => self.ask_cancel(),
            Command::Janitor => return self.toggle_janitor(),
            Command::Fleet => return self.toggle_fleet(),
            Command::Why => self.modals.open(Modal::Why { scroll: 0 }),
            Command::FullSpeed => return self.lift_paces(),
            _ => {}
        }
        vec![]
    }

    /// Applies `op` to the list on screen, over its rows.
    fn on_list(&mut self, op: ListOp) {
        self.apply_list(op);
        // What is selected can change the panels below the list (a broken table's error, a
        // flagged partition's reason), so its height: keep the selection in view of the new one.
        self.apply_list(ListOp::Fit);
    }

    fn apply_list(&mut self, op: ListOp) {
        let h = self.list_height();
        match self.screen {
            Screen::Tables => {
                let rows = self.root.as_ref().map_or(&[][..], |r| &r.rows[..]);
                self.tables.apply(op, rows, h);
            }
            Screen::Table => {
                let rows = self.table.as_ref().map_or(&[][..], |t| &t.partitions[..]);
                self.partitions.apply(op, rows, h);
            }
        }
    }

    /// The panel of the list on screen, as drawn.
    fn list_panel(&self) -> ratatui::layout::Rect {
        let area = layout::full(self.size);
        match self.screen {
            Screen::Tables => layout::tables_areas(area, &view::tables_shape(self)).list,
            Screen::Table => layout::table_areas(area, &view::table_shape(self)).partitions,
        }
    }

    fn list_height(&self) -> usize {
        layout::list_rows(self.list_panel())
    }

    /// A click selects the row under it (on the selected table's row, opens it); the wheel moves
    /// the selection of the list under it, or scrolls the why view.
    fn mouse(&mut self, pointer: Pointer, column: u16, row: u16) -> Vec<Effect> {
        let step = match pointer {
            Pointer::WheelUp => Some(Command::Up),
            Pointer::WheelDown => Some(Command::Down),
            Pointer::Click => None,
        };
        match self.context() {
            Context::Dialog if matches!(self.modals.modal(), Some(Modal::Why { .. })) => {
                step.map_or_else(Vec::new, |c| self.dialog_command(c))
            }
            Context::Help => step.map_or_else(Vec::new, |c| self.command(c)),
            Context::Tables | Context::Table => {
                let panel = self.list_panel();
                let inside = panel.contains(ratatui::layout::Position::new(column, row));
                match (step, layout::list_row_at(panel, column, row)) {
                    (Some(c), _) if inside => self.screen_command(c),
                    (None, Some(i)) => self.click_row(i),
                    _ => vec![],
                }
            }
            _ => vec![],
        }
    }

    /// A click on the `i`-th visible row of the list on screen.
    fn click_row(&mut self, i: usize) -> Vec<Effect> {
        let (offset, selected, len) = match self.screen {
            Screen::Tables => (
                self.tables.offset(),
                self.tables.selected_position(),
                self.tables.len(),
            ),
            Screen::Table => (
                self.partitions.offset(),
                self.partitions.selected_position(),
                self.partitions.len(),
            ),
        };
        let pos = offset + i;
        if pos >= len {
            return vec![];
        }
        if pos == selected && self.screen == Screen::Tables {
            self.open_selected_table();
        } else {
            self.on_list(ListOp::Select(pos));
        }
        vec![]
    }

    pub(super) fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
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
            started: self.clock.now(),
            refresh,
            stale: false,
        });
        effects.push(Effect::Load { id, uri });
        effects
    }

    fn refresh(&mut self) -> Vec<Effect> {
        self.modals.clear_error();
        let uri = match (&self.screen, &self.table) {
            (Screen::Table, Some(t)) => t.uri.clone(),
            _ => self.uri.clone(),
        };
        let refresh = self.table.is_some() || self.root.is_some();
        self.load(uri, refresh)
    }

    fn maybe_auto_refresh(&mut self) -> Vec<Effect> {
        if self.refresh_every.is_zero() || self.loading.is_some() || self.error().is_some() {
            return vec![];
        }
        let now = self.clock.now();
        let due = self
            .last_loaded
            .is_some_and(|t| now.duration_since(t) >= self.refresh_every);
        match (&self.screen, &self.table) {
            // A followed table is kept current by its watcher.
            (Screen::Table, Some(t)) if due && !self.following(&t.uri) => {
                let uri = t.uri.clone();
                self.load(uri, true)
            }
            // The tables of a root are read again (each would need a watcher of its own).
            (Screen::Tables, _) if due && self.root.is_some() => {
                let uri = self.uri.clone();
                self.load(uri, true)
            }
            _ => vec![],
        }
    }

    fn loaded(&mut self, load: u64, result: Result<Opened, TaskError>) -> Vec<Effect> {
        // A superseded load's result is dropped.
        let Some(done) = self.loading.take_if(|l| l.id == load) else {
            return vec![];
        };
        self.last_loaded = Some(self.clock.now());
        match result {
            Ok(Opened::Table(t)) => {
                self.modals.clear_error();
                self.set_table(*t);
            }
            Ok(Opened::Root(r)) => {
                self.modals.clear_error();
                self.set_root(r);
            }
            Err(e) => self.modals.show_error(e.message),
        }
        if done.stale {
            return self.reload_table();
        }
        vec![]
    }

    /// Loads the table shown again (a commit changed it), or marks the running load stale.
    pub(super) fn reload_table(&mut self) -> Vec<Effect> {
        let Some(uri) = self.table.as_ref().map(|t| t.uri.clone()) else {
            return vec![];
        };
        match &mut self.loading {
            Some(l) => {
                l.stale = true;
                vec![]
            }
            None => self.load(uri, true),
        }
    }

    fn set_root(&mut self, r: RootReport) {
        let mut r = RootView::from(r);
        self.fleet.unlisted = r.apply_fleet(self.fleet.snapshot.as_deref());
        let keep = self
            .root
            .as_ref()
            .and_then(|old| self.tables.selected_id(&old.rows));
        let fresh = self
            .table
            .as_ref()
            .and_then(|t| r.tables().find(|x| x.uri == t.uri))
            .cloned();
        let area = layout::full(self.size);
        let h = layout::list_rows(layout::tables_areas(area, &view::tables_shape(self)).list);
        self.tables.rebuild(&r.rows, keep.as_ref(), h);
        self.root = Some(r);
        if self.screen == Screen::Tables {
            self.apply_list(ListOp::Fit);
        }
        if self.table.is_none() {
            self.screen = Screen::Tables;
        } else if let Some(f) = fresh {
            // A refresh of the root while a table is shown: keep the table in sync.
            self.set_table(f);
        }
    }

    fn set_table(&mut self, t: TableReport) {
        let same = self.table.as_ref().filter(|old| old.uri == t.uri);
        if same.is_none() {
            self.marks.clear();
        }
        let keep = same.and_then(|old| self.partitions.selected_id(&old.partitions));
        self.table = Some(t);
        let area = layout::full(self.size);
        let h = layout::list_rows(layout::table_areas(area, &view::table_shape(self)).partitions);
        if let Some(t) = &self.table {
            self.partitions.rebuild(&t.partitions, keep.as_ref(), h);
        }
    }

    /// Opens the selected table; a table that could not be read shows its error instead.
    fn open_selected_table(&mut self) {
        let picked = self
            .root
            .as_ref()
            .and_then(|r| self.tables.selected(&r.rows))
            .cloned();
        match picked.map(|r| r.entry) {
            Some(RootEntry::Table(t)) => {
                self.screen = Screen::Table;
                self.set_table(*t);
            }
            Some(RootEntry::Broken(b)) => self
                .modals
                .show_error(format!("{} could not be read: {}", b.uri, b.error)),
            None => {}
        }
    }

    /// Clears the filter, else goes back from a table to its root's list.
    fn back(&mut self) {
        if !self.active_filter().is_empty() {
            self.on_list(ListOp::SetFilter(String::new()));
        } else if self.screen == Screen::Table && self.root.is_some() {
            self.screen = Screen::Tables;
            self.table = None;
            // Marks belong to the table left; another table may have partitions of those values.
            self.marks.clear();
        }
    }

    fn toggle_mark(&mut self) {
        if let Some(values) = self.selected_partition().map(|p| p.values.clone()) {
            self.marks.toggle(values);
            self.on_list(ListOp::Move(Move::Down));
        }
    }

    fn preview_convert(&mut self) -> Vec<Effect> {
        let Some(t) = self.table.as_ref() else {
            return vec![];
        };
        if !t.format.can_convert() {
            let e = format!(
                "{} is a {} table: only Parquet folders and Spark sink folders are converted to Delta",
                t.name,
                t.format.label()
            );
            self.modals.show_error(e);
            return vec![];
        }
        let uri = t.uri.clone();
        let id = self.next_id();
        self.modals
            .open(Modal::Convert(ConvertDialog::new(id, uri.clone(), ())));
        vec![Effect::PlanConvert { id, uri }]
    }

    fn converted(&mut self, id: u64, result: Result<ConvertOutcome, TaskError>) -> Vec<Effect> {
        if matches!(&self.modals.modal, Some(Modal::Convert(d)) if d.id == id) {
            self.modals.close();
        }
        match result {
            Ok(_) => self.reload_table(),
            Err(e) => {
                self.modals.show_error(format!("conversion failed: {e}"));
                vec![]
            }
        }
    }

    /// The compaction (or, with `purge`, the purge) preview of the marked or selected partitions.
    fn preview_compaction(&mut self, purge: bool) -> Vec<Effect> {
        let Some(uri) = self.table.as_ref().map(|t| t.uri.clone()) else {
            return vec![];
        };
        if self
            .table
            .as_ref()
            .is_some_and(|t| t.format == crate::engine::model::format::TableFormat::Iceberg)
        {
            let labels = if self.marks.is_empty() {
                self.selected_partition()
                    .map(|p| p.values.label())
                    .into_iter()
                    .collect()
            } else {
                self.marks.iter().map(|p| p.label()).collect()
            };
            return self.preview_iceberg(uri, labels);
        }
        if let Some(t) = self.table.as_ref().filter(|t| !t.format.can_compact()) {
            let why = format!(
                "compaction is not available: {}",
                t.format.why_not_compactable().unwrap_or_default()
            );
            self.modals.show_error(why);
            return vec![];
        }
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
        let request = CompactionRequest {
            partitions,
            executor: self.executor.clone(),
            purge,
            full_speed: false,
            layout: LayoutRequest::Auto,
            order_text: None,
        };
        self.open_compaction_preview(uri, request)
    }

    /// Opens the preview of `request` and plans it.
    fn open_compaction_preview(&mut self, uri: String, request: CompactionRequest) -> Vec<Effect> {
        let id = self.next_id();
        let effect = Effect::PlanCompaction {
            id,
            uri: uri.clone(),
            partitions: request.partitions.clone(),
            purge: request.purge,
            layout: request.layout.clone(),
            now_ms: self.clock.wall_ms(),
        };
        self.modals
            .open(Modal::Plan(PlanDialog::new(id, uri, request)));
        vec![effect]
    }

    /// `o` in the compaction preview: type the order (it starts from the one planned).
    fn start_order_input(&mut self) {
        if let Some(Modal::Plan(p)) = &mut self.modals.modal
            && p.result.is_some()
            && !p.running
            && !p.request.purge
        {
            p.request.order_text = Some(p.request.layout.text());
        }
    }

    /// A key while the order is typed: Enter plans the compaction again in that order (a typo
    /// is an error over the input, which stays), Esc keeps the order planned.
    fn order_command(&mut self, c: Command) -> Vec<Effect> {
        let Some(Modal::Plan(p)) = &mut self.modals.modal else {
            return vec![];
        };
        let Some(text) = p.request.order_text.as_mut() else {
            return vec![];
        };
        match c {
            Command::Erase => {
                text.pop();
            }
            Command::Dismiss => p.request.order_text = None,
            Command::Confirm => match LayoutRequest::parse_text(text) {
                Ok(layout) => {
                    let Some(Modal::Plan(old)) = self.modals.close() else {
                        return vec![];
                    };
                    let mut request = old.request;
                    request.layout = layout;
                    request.order_text = None;
                    let mut effects: Vec<Effect> = <Compaction as PreviewKind>::discard(old.id)
                        .into_iter()
                        .collect();
                    effects.extend(self.open_compaction_preview(old.table_uri, request));
                    return effects;
                }
                Err(why) => self.modals.show_error(why),
            },
            _ => {}
        }
        vec![]
    }

    /// A character typed into the order input.
    fn type_order(&mut self, ch: char) {
        if let Some(Modal::Plan(p)) = &mut self.modals.modal
            && let Some(text) = p.request.order_text.as_mut()
        {
            text.push(ch);
        }
    }

    fn plan_ready(&mut self, id: u64, result: Result<Box<PlannedJob>, TaskError>) -> Vec<Effect> {
        if self.janitor.owns(id) {
            return self.janitor_planned(id, result);
        }
        self.preview_ready::<Compaction>(id, result)
    }

    /// Starts the previewed plan (confirmed, it has something to do).
    fn start_job(&mut self) -> Vec<Effect> {
        let Some(Modal::Plan(Preview {
            id,
            table_uri,
            request,
            result: Some(Ok(planned)),
            ..
        })) = self.modals.close()
        else {
            return vec![];
        };
        let job = JobView::new(id, self.job_number(), table_uri, &planned.plan);
        self.jobs.push(job);
        self.marks.clear();
        // The marks pane closed: more partition rows fit.
        self.on_list(ListOp::Fit);
        vec![Effect::StartJob {
            id,
            full_speed: request.full_speed,
        }]
    }

    /// `f` in the compaction preview: full speed, or back to the writers' throttle.
    fn toggle_full_speed(&mut self) {
        if let Some(Modal::Plan(p)) = &mut self.modals.modal
            && p.startable()
        {
            p.request.full_speed = !p.request.full_speed;
        }
    }

    /// Running jobs still held back by the writers' throttle (`f` lifts their pace).
    fn paced_jobs(&self) -> impl Iterator<Item = &JobView> {
        self.jobs
            .iter()
            .filter(|j| j.status().is_active() && j.paced())
    }

    /// Whether a running job is held back by a pace `f` can lift.
    pub fn has_paced_jobs(&self) -> bool {
        self.paced_jobs().next().is_some()
    }

    /// `f` on the table view: lifts the pace of every running job it holds back.
    fn lift_paces(&mut self) -> Vec<Effect> {
        self.paced_jobs()
            .map(|j| Effect::LiftPace { id: j.id })
            .collect()
    }

    fn preview_vacuum(&mut self) -> Vec<Effect> {
        let Some(uri) = self.table.as_ref().map(|t| t.uri.clone()) else {
            return vec![];
        };
        let id = self.next_id();
        self.modals
            .open(Modal::Vacuum(VacuumDialog::new(id, uri.clone(), ())));
        vec![Effect::PlanVacuum { id, uri }]
    }

    /// Opens the skipping panel and measures the open Delta or Iceberg table (other formats:
    /// a notice).
    fn measure_skipping(&mut self) -> Vec<Effect> {
        if !self.can(Command::Skipping) {
            self.notice = Some(
                "skipping health reads a Delta log's statistics or an Iceberg table's manifest bounds: this table has neither".into(),
            );
            return vec![];
        }
        let Some((uri, format)) = self.table.as_ref().map(|t| (t.uri.clone(), t.format)) else {
            return vec![];
        };
        let id = self.next_id();
        let partition = self.selected_partition().map(|p| p.values.clone());
        self.modals.open(Modal::Skipping(SkippingDialog::new(
            id,
            uri.clone(),
            crate::tui::preview::SkippingRequest { format, partition },
        )));
        vec![Effect::MeasureSkipping { id, uri, format }]
    }

    fn vacuum_plan_ready(
        &mut self,
        id: u64,
        result: Result<Box<VacuumPlan>, TaskError>,
    ) -> Vec<Effect> {
        self.preview_ready::<super::preview::Vacuum>(id, result)
    }

    /// Starts the previewed vacuum (confirmed, its dry run found something to delete).
    fn start_vacuum(&mut self) -> Vec<Effect> {
        let Some(Modal::Vacuum(v)) = self.modals.close() else {
            return vec![];
        };
        let number = self.job_number();
        self.maintenance.push(MaintenanceJob::new(
            v.id,
            number,
            MaintenanceKind::Vacuum,
            v.table_uri,
            "starting".into(),
        ));
        vec![Effect::StartVacuum { id: v.id }]
    }

    fn checkpoint(&mut self) -> Vec<Effect> {
        let Some(uri) = self.table.as_ref().map(|t| t.uri.clone()) else {
            return vec![];
        };
        let id = self.next_id();
        let number = self.job_number();
        self.maintenance.push(MaintenanceJob::new(
            id,
            number,
            MaintenanceKind::Checkpoint,
            uri.clone(),
            "writing a checkpoint".into(),
        ));
        vec![Effect::Checkpoint { id, uri }]
    }

    fn maintenance_event(&mut self, id: u64, event: MaintenanceEvent) -> Vec<Effect> {
        let Some(j) = self.maintenance.iter_mut().find(|j| j.id == id) else {
            return vec![];
        };
        let changed = j.apply(event);
        let uri = j.table_uri.clone();
        if changed && self.table.as_ref().is_some_and(|t| t.uri == uri) {
            return self.reload_table();
        }
        vec![]
    }

    /// The number the next job shows.
    pub(super) fn job_number(&mut self) -> JobNumber {
        let n = JobNumber(self.next_job_number);
        self.next_job_number += 1;
        n
    }

    /// Asks before cancelling the newest active job; with none running, says so (a finished
    /// job cannot be cancelled).
    fn ask_cancel(&mut self) {
        match self.jobs.iter().rev().find(|j| j.status().is_active()) {
            Some(j) => {
                let (job, number) = (j.id, j.number);
                self.modals.open(Modal::ConfirmCancel { job, number });
            }
            None => {
                self.notice =
                    Some("no compaction job is running: only a running job can be cancelled".into())
            }
        }
    }

    fn cancel_job(&mut self, job: u64) -> Vec<Effect> {
        let Some(j) = self.jobs.iter_mut().find(|j| j.id == job) else {
            return vec![];
        };
        if j.request_cancel() {
            vec![Effect::CancelJob { id: job }]
        } else {
            self.notice = Some(format!(
                "job {} already ended ({}): nothing to cancel",
                j.number,
                j.status().label()
            ));
            vec![]
        }
    }

    fn job_event(&mut self, job: u64, event: JobEvent) -> Vec<Effect> {
        let now = self.clock.now();
        let Some(j) = self.jobs.iter_mut().find(|j| j.id == job) else {
            return vec![];
        };
        let ended = matches!(&event, JobEvent::Finished(_));
        let landed = j.apply(event, now);
        let uri = j.table_uri.clone();
        if landed && let Some(c) = j.commits.last() {
            // Their flags said "due" for files this commit just compacted.
            self.janitor.compacted(&uri, &c.partitions);
        }
        if ended {
            let ended_text = format!(
                "job {} ended ({}) before it was cancelled",
                j.number,
                j.status().label()
            );
            self.janitor.job_ended(job);
            // The question no longer applies: the job it asks about ended.
            if matches!(self.modals.modal(), Some(Modal::ConfirmCancel { job: asked, .. }) if *asked == job)
            {
                self.modals.close();
                self.notice = Some(ended_text);
            }
        }
        // A commit changed the table: reload it so counts and histograms follow.
        // (A followed table's watcher reads the commit itself.)
        if landed && self.table.as_ref().is_some_and(|t| t.uri == uri) && !self.following(&uri) {
            return self.reload_table();
        }
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> App {
        App::new("x".into(), Duration::ZERO, (120, 40))
    }

    #[test]
    fn a_dismissed_or_late_conversion_preview_is_discarded_by_the_runner() {
        let mut app = app();
        app.modals
            .open(Modal::Convert(ConvertDialog::new(5, "x".into(), ())));
        let e = app.update(Action::Command(Command::Dismiss));
        assert!(
            matches!(e.as_slice(), [Effect::DiscardConvert { id: 5 }]),
            "{e:?}"
        );
        assert!(app.modals.modal().is_none());
        // Its plan arrives after the dialog closed.
        let e = app.update(Action::ConvertPlanReady {
            id: 5,
            result: Err("gone".into()),
        });
        assert!(
            matches!(e.as_slice(), [Effect::DiscardConvert { id: 5 }]),
            "{e:?}"
        );
    }

    #[test]
    fn a_roots_tables_list_reloads_every_refresh_interval() {
        let mut app = App::new("root".into(), Duration::from_secs(10), (120, 40));
        app.clock = Clock::frozen(0);
        app.root = Some(RootView::from(RootReport {
            root: "root".into(),
            tables: vec![],
            errors: vec![],
        }));
        app.screen = Screen::Tables;
        let now = app.clock.now();
        app.last_loaded = now.checked_sub(Duration::from_secs(9));
        assert!(app.update(Action::Tick).is_empty(), "not yet");
        app.last_loaded = now.checked_sub(Duration::from_secs(11));
        let e = app.update(Action::Tick);
        assert!(
            matches!(e.as_slice(), [Effect::Load { uri, .. }] if uri == "root"),
            "{e:?}"
        );
    }

    #[test]
    fn a_superseded_load_shows_nothing() {
        let mut app = app();
        let first = app.start();
        let refresh = app.update(Action::Command(Command::Refresh));
        assert!(matches!(first[0], Effect::Load { id: 1, .. }));
        assert!(refresh.contains(&Effect::CancelLoad { id: 1 }));
        app.update(Action::Loaded {
            load: 1,
            result: Err("old".into()),
        });
        assert!(
            app.error().is_none(),
            "a superseded load must not show its error"
        );
        app.update(Action::Loaded {
            load: 2,
            result: Err("new".into()),
        });
        assert_eq!(app.error(), Some("new"));
    }

    #[test]
    fn an_error_takes_the_keys_until_dismissed_even_over_a_modal() {
        let mut app = app();
        let e = app.start();
        let Effect::Load { id, .. } = e[0].clone() else {
            panic!("{e:?}")
        };
        app.update(Action::Command(Command::Help));
        assert_eq!(app.context(), Context::Help);
        app.update(Action::Loaded {
            load: id,
            result: Err("gone".into()),
        });
        assert_eq!(app.context(), Context::Error);
        // Keys of the screen or the help do nothing while the error is up.
        app.update(Action::Command(Command::Down));
        assert_eq!(app.context(), Context::Error);
        app.update(Action::Command(Command::Dismiss));
        assert_eq!(app.context(), Context::Help, "the modal below is back");
        app.update(Action::Command(Command::Dismiss));
        assert_eq!(app.context(), Context::Table);
    }

    #[test]
    fn retry_from_an_error_closes_it_and_loads_again() {
        let mut app = app();
        app.start();
        app.update(Action::Loaded {
            load: 1,
            result: Err("gone".into()),
        });
        let e = app.update(Action::Command(Command::Refresh));
        assert!(app.error().is_none());
        assert!(
            matches!(e.as_slice(), [Effect::Load { id: 2, .. }]),
            "{e:?}"
        );
    }

    #[test]
    fn x_without_a_running_job_says_so_instead_of_asking() {
        let mut app = app();
        app.update(Action::Command(Command::CancelJob));
        assert!(app.modals.modal().is_none());
        assert!(
            app.notice
                .as_deref()
                .is_some_and(|n| n.contains("only a running job can be cancelled")),
            "{:?}",
            app.notice
        );
        // The next key clears it.
        app.update(Action::Command(Command::Down));
        assert!(app.notice.is_none());
    }

    #[test]
    fn the_why_view_scrolls_with_keys_and_the_wheel_within_its_rows() {
        use crate::engine::janitor::decide::DecisionKind;
        let mut app = app();
        for i in 0..30 {
            app.janitor.why.push_back(super::super::janitor::WhyEntry {
                ts: "2026-11-30T00:00:00.000Z".into(),
                partition: PartitionValues(vec![("d".into(), Some(i.to_string()))]),
                rule: "default".into(),
                decision: DecisionKind::NotDue,
                reason: "not due: 3 small files < 50".into(),
            });
        }
        app.update(Action::Command(Command::Why));
        let scroll = |app: &App| match app.modals.modal() {
            Some(Modal::Why { scroll }) => *scroll,
            other => panic!("{other:?}"),
        };
        app.update(Action::Command(Command::Down));
        app.update(Action::Command(Command::PageDown));
        assert_eq!(scroll(&app), 1 + WHY_PAGE);
        app.update(Action::Mouse {
            pointer: Pointer::WheelUp,
            column: 10,
            row: 10,
        });
        assert_eq!(scroll(&app), WHY_PAGE);
        for _ in 0..10 {
            app.update(Action::Command(Command::PageDown));
        }
        assert_eq!(scroll(&app), 29, "not past the last row");
        assert!(app.can(Command::Down), "the hint bar offers scrolling");
    }

    #[test]
    fn typing_a_filter_applies_it_and_esc_clears_it() {
        let mut app = app();
        app.update(Action::Command(Command::Filter));
        assert_eq!(app.context(), Context::Filter);
        for ch in "ab".chars() {
            app.update(Action::FilterInput(ch));
        }
        app.update(Action::Command(Command::Erase));
        assert_eq!(app.active_filter(), "a");
        app.update(Action::Command(Command::Confirm));
        assert_eq!(app.context(), Context::Table);
        assert_eq!(app.active_filter(), "a", "Enter keeps the filter");
        // Typing outside the filter input does nothing.
        app.update(Action::FilterInput('z'));
        assert_eq!(app.active_filter(), "a");
        app.update(Action::Command(Command::Filter));
        app.update(Action::Command(Command::Dismiss));
        assert_eq!(app.active_filter(), "");
    }
}
