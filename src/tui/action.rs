//! Every state change of the TUI is one of these messages, handled in `App::update`.

use crate::engine::open::Opened;
use crate::engine::progress::LoadProgress;

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
    Resize { width: u16, height: u16 },
    Progress { load: u64, progress: LoadProgress },
    Loaded { load: u64, result: Result<Opened, String> },
}

/// Work the event loop must start on the app's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the location (a table or a root); results come back as `Action::Loaded { load: id }`.
    Load { id: u64, uri: String },
    /// Stop a load whose result is no longer wanted.
    CancelLoad { id: u64 },
}
