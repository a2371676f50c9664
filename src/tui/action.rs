//! Every state change of the TUI is one of these messages, handled in `App::update`.

use crate::engine::compact::events::JobEvent;
use crate::engine::compact::plan::CompactionPlan;
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
    Confirm,
    Dismiss,
}

#[derive(Debug)]
pub enum Action {
    Command(Command),
    /// Typing into the filter box.
    FilterInput(char),
    FilterBackspace,
    FilterDone,
    FilterCancel,
    Tick,
    Resize {
        width: u16,
        height: u16,
    },
    Progress {
        load: u64,
        progress: LoadProgress,
    },
    Loaded {
        load: u64,
        result: Result<Opened, String>,
    },
    PlanReady {
        id: u64,
        result: Result<Box<CompactionPlan>, String>,
    },
    Job {
        job: u64,
        event: JobEvent,
    },
}

/// Work the event loop must start on the app's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the location (a table or a root); results come back as `Action::Loaded { load: id }`.
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
    /// Run the plan `id` previewed; its events come back as `Action::Job { job: id }`.
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
}
