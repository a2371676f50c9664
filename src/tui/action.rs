//! Every state change of the TUI is one of these messages, handled in `App::update`.

use crate::engine::compact::events::JobEvent;
use crate::engine::delta::watch::LogEvent;
use crate::engine::maintenance::vacuum::VacuumPlan;
use crate::engine::model::partition::PartitionValues;
use crate::engine::open::Opened;
use crate::engine::parquet_folder::convert::{ConvertOutcome, ConvertPlan};
use crate::engine::progress::LoadProgress;
use crate::engine::stats::skipping::SkippingHealth;
use crate::tui::janitor::Round;
use crate::tui::maintenance::MaintenanceEvent;
use crate::tui::preview::PlannedJob;
use crate::tui::task_error::TaskError;

/// What a key can do (keybindings map keys to these; the help screen lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Enter,
    Back,
    Refresh,
    CycleSort,
    ReverseSort,
    Filter,
    ToggleTableHistogram,
    Help,
    /// Mark / unmark the selected partition for compaction.
    ToggleMark,
    /// Plan a compaction of the marked (or selected) partitions and preview it.
    Compact,
    /// Preview rewriting every file with a deletion vector in the marked (or selected)
    /// partitions, without its deleted rows (REORG TABLE ... APPLY (PURGE)).
    Purge,
    /// Cancel the newest running job (asks first).
    CancelJob,
    /// Preview converting the Parquet folder shown to a Delta table (then confirm).
    Convert,
    /// Yes, in the modal on top (start the job, cancel the job, keep the filter).
    Confirm,
    /// Close the modal on top without doing anything (or clearing the filter).
    Dismiss,
    /// Delete the last character of the filter being typed.
    Erase,
    /// The compaction preview's order: type it, then plan again.
    Order,
    /// Write a checkpoint of the open table.
    Checkpoint,
    /// Preview a VACUUM of the open table (a dry run to confirm).
    Vacuum,
    /// Switch the janitor on / off for the open table (`tui::janitor`).
    Janitor,
    /// Switch the lakehouse janitor on / off for every table of the root (`tui::fleet`).
    Fleet,
    /// Show the janitor's last decisions and why.
    Why,
    /// Measure how well the open Delta table's files skip, per column (`skipping`).
    Skipping,
    /// Full speed (as `--no-throttle`): in the compaction preview, start without the writers'
    /// throttle (again: with it); on the table view, lift the pace of the running jobs.
    FullSpeed,
}

/// What a background task reports while it runs. Loads and compaction jobs both report through
/// `Action::Progress`; a job's last report is always `JobEvent::Finished`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskProgress {
    Load(LoadProgress),
    /// Boxed: a final event carries the whole summary.
    Job(Box<JobEvent>),
}

/// What the mouse did (crossterm's events, reduced to what the TUI uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pointer {
    /// Left button pressed: selects the row under it (the selected table's row opens it).
    Click,
    WheelUp,
    WheelDown,
}

#[derive(Debug)]
pub enum Action {
    Command(Command),
    /// The mouse at a cell of the screen.
    Mouse {
        pointer: Pointer,
        column: u16,
        row: u16,
    },
    /// A character typed into the filter.
    FilterInput(char),
    Tick,
    /// The terminal went away or SIGTERM came: quit now, cancelling what runs (no question:
    /// nobody can answer it).
    Shutdown,
    Resize {
        width: u16,
        height: u16,
    },
    /// Progress of the background task started by the effect with this id.
    Progress {
        task: u64,
        progress: TaskProgress,
    },
    Loaded {
        load: u64,
        result: Result<Opened, TaskError>,
    },
    PlanReady {
        id: u64,
        result: Result<Box<PlannedJob>, TaskError>,
    },
    /// An event of the log watcher started by `Effect::Watch { id: watch }`.
    Log {
        watch: u64,
        event: LogEvent,
    },
    /// The skipping health of `Effect::MeasureSkipping { id }`.
    SkippingReady {
        id: u64,
        result: Result<Box<SkippingHealth>, TaskError>,
    },
    /// The vacuum dry run of `Effect::PlanVacuum { id }`.
    VacuumPlanReady {
        id: u64,
        result: Result<Box<VacuumPlan>, TaskError>,
    },
    /// Progress of the checkpoint or vacuum job `id`.
    Maintenance {
        id: u64,
        event: MaintenanceEvent,
    },
    /// The lakehouse janitor `id` over the root: every table's state, debt, last job, spend.
    FleetUpdated {
        id: u64,
        snapshot: std::sync::Arc<crate::engine::janitor::fleet::FleetSnapshot>,
    },
    /// The lakehouse janitor `id` stopped (switched off: Ok), or could not start.
    FleetStopped {
        id: u64,
        result: Result<(), TaskError>,
    },
    /// The janitor's decisions for the open table (every partition), and its job if due.
    JanitorDecided {
        id: u64,
        result: Result<Round, TaskError>,
    },
    /// The Iceberg compaction dry run of `Effect::PlanIceberg`.
    IcebergPlanReady {
        id: u64,
        result: Result<Box<crate::engine::iceberg::compact::job::IceSummary>, TaskError>,
    },
    /// The Iceberg compaction `Effect::StartIceberg` ran: its summary line, or why not.
    IcebergCompacted {
        id: u64,
        result: Result<String, TaskError>,
    },
    /// The conversion preview of `Effect::PlanConvert`.
    ConvertPlanReady {
        id: u64,
        result: Result<Box<ConvertPlan>, TaskError>,
    },
    /// The conversion `Effect::StartConvert` ran.
    Converted {
        id: u64,
        result: Result<ConvertOutcome, TaskError>,
    },
}

/// Work the event loop must start on the app's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the location (a table or a root); progress comes back as `Action::Progress` and the
    /// result as `Action::Loaded`, both with this id.
    Load {
        id: u64,
        uri: String,
    },
    /// Stop a load whose result is no longer wanted.
    CancelLoad {
        id: u64,
    },
    /// Plan a compaction of these partitions; the plan comes back as `Action::PlanReady`.
    PlanCompaction {
        id: u64,
        uri: String,
        partitions: Vec<PartitionValues>,
        /// Every file with a deletion vector is rewritten (`purge`), whatever its size.
        purge: bool,
        /// The order rows are written in (the preview's `o`).
        layout: crate::engine::compact::ordering::LayoutRequest,
        /// The app's clock (ms since the epoch): the writers the throttle sees are those of
        /// the minute before it.
        now_ms: i64,
    },
    /// Run the plan `id` previewed; its events come back as `Action::Progress { task: id }`,
    /// the first its pace.
    StartJob {
        id: u64,
        /// Without the writers' throttle: every core, unbounded (the preview's `f`).
        full_speed: bool,
    },
    /// Lift the running job's pace and commit spacing (`Brakes::lift`); the new pace comes back
    /// as its event.
    LiftPace {
        id: u64,
    },
    /// Forget a previewed plan that will not run.
    DiscardPlan {
        id: u64,
    },
    CancelJob {
        id: u64,
    },
    /// Follow the table's log (`engine::delta::watch`); its events come back as `Action::Log`.
    Watch {
        id: u64,
        uri: String,
        name: String,
        /// None: the default for the location.
        poll: Option<std::time::Duration>,
    },
    StopWatch {
        id: u64,
    },
    /// Read the table's file statistics for its skipping health; it comes back as
    /// `Action::SkippingReady`.
    MeasureSkipping {
        id: u64,
        uri: String,
        format: crate::engine::model::format::TableFormat,
    },
    /// Make a vacuum dry run; it comes back as `Action::VacuumPlanReady`.
    PlanVacuum {
        id: u64,
        uri: String,
    },
    /// Run the vacuum `id` previewed; events come back as `Action::Maintenance`.
    StartVacuum {
        id: u64,
    },
    DiscardVacuum {
        id: u64,
    },
    /// Write a checkpoint; the result comes back as `Action::Maintenance`.
    Checkpoint {
        id: u64,
        uri: String,
    },
    /// Run the lakehouse janitor over `root` (every table, as `watch ROOT`) until stopped; its
    /// fleet comes back as `Action::FleetUpdated`, its end as `Action::FleetStopped`.
    StartFleet {
        id: u64,
        root: String,
    },
    /// Stop it: running jobs stop before their next commit.
    StopFleet {
        id: u64,
    },
    /// Let the janitor decide for the table; comes back as `Action::JanitorDecided`.
    JanitorCycle {
        id: u64,
        uri: String,
    },
    /// Plan the job the janitor's last round decided for the table (its due partitions, the
    /// policy's sizes, the throttle's budget); comes back as `Action::PlanReady`, then runs as
    /// `StartJob`.
    JanitorJob {
        id: u64,
        uri: String,
    },
    /// Preview converting the folder to Delta; comes back as `Action::ConvertPlanReady`.
    PlanConvert {
        id: u64,
        uri: String,
    },
    /// Convert as previewed; comes back as `Action::Converted`.
    StartConvert {
        id: u64,
    },
    /// Forget a conversion preview that will not run (dismissed, or ready after it closed).
    DiscardConvert {
        id: u64,
    },
    /// Dry-run an Iceberg compaction through `catalog` (partition labels; empty: all); comes
    /// back as `Action::IcebergPlanReady`.
    PlanIceberg {
        id: u64,
        uri: String,
        catalog: String,
        partitions: Vec<String>,
    },
    /// Run it; comes back as `Action::IcebergCompacted`.
    StartIceberg {
        id: u64,
        uri: String,
        catalog: String,
        partitions: Vec<String>,
    },
}
