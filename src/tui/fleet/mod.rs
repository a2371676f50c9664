//! The lakehouse janitor in the TUI (`a` on the tables list): the engine janitor runs over the
//! root as `lakehealth watch ROOT` does (one queue for every table, jobs up to the policy's
//! budget, its history file), and every row of the tables list shows what it does with that
//! table: its state (running with pace and progress, queued with its place and why, backing
//! off, suspended, broken, idle), its debt, its last job and the month's estimated spend,
//! sortable by each. Its jobs are the janitor's own (they show in their rows, not the jobs
//! panel); switched off, they stop before their next commit.
//!
//! - `state`: what the app keeps, pure transitions.
//! - `handlers`: the `App`'s side (the key and the actions in, effects out).
//! - `runner`: the loader's side (the engine janitor's task and its snapshots).

mod handlers;
pub mod runner;
mod state;

pub use state::Fleet;
