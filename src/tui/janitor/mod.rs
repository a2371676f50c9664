//! The janitor in the TUI (`a`): the same engine janitor, policy and pipeline as
//! `lakehealth watch` (read, decide, run, record; one back-off rule per table) decides for the
//! open table every `interval`. Its due partitions are flagged in the list with their reason,
//! and the table's job runs through the TUI's own job runner, so it shows in the jobs panel and
//! cancels (`x`) like a manual one; its end is recorded by the engine janitor as `watch`
//! records its own (result lines, back-off, "running: ..." decisions meanwhile). The "why"
//! view (`w`) lists the last decisions.
//!
//! - `state`: what the app keeps (flags, the why list, the job in flight), pure transitions.
//! - `handlers`: the `App`'s side (keys and actions in, effects out).
//! - `runner`: the loader's side (the engine janitor, its jobs' planning and recording).

mod handlers;
mod runner;
mod state;

pub use runner::JanitorRunner;
pub use state::{Round, TuiJanitor, WhyEntry};
