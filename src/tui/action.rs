//! Every state change of the TUI is one of these messages, handled in `App::update`.

use crate::engine::compact::events::JobEvent;
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::formats::convert::{ConvertOutcome, ConvertPlan};
use crate::engine::open::Opened;
use crate::engine::progress::LoadProgress;
use crate::engine::stats::table_report::PartitionValues;

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
}

/// What a background task reports while it runs. Loads and compaction jobs both report through
/// `Action::Progress`; a job's last report is always `JobEvent::Finished`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskProgress {
    Load(LoadProgress),
    /// Boxed: a final event carries the whole summary.
    Job(Box<JobEvent>),
}

#[derive(Debug)]
pub enum Action {
    Command(Command),
    /// A character typed into the filter.
    FilterInput(char),
    Tick,
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
        result: Result<Opened, String>,
    },
    PlanReady {
        id: u64,
        result: Result<Box<CompactionPlan>, String>,
    },
    /// The conversion preview of `Effect::PlanConvert`.
    ConvertPlanReady {
        id: u64,
        result: Result<Box<ConvertPlan>, String>,
    },
    /// The conversion `Effect::StartConvert` ran.
    Converted {
        id: u64,
        result: Result<ConvertOutcome, String>,
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
    },
    /// Run the plan `id` previewed; its events come back as `Action::Progress { task: id }`.
    StartJob {
        id: u64,
    },
    /// Forget a previewed plan that will not run.
    DiscardPlan {
        id: u64,
    },
    CancelJob {
        id: u64,
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
}
