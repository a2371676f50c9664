//! Who rewrites a bin: "rewrite this bin, give me its add/remove actions and metrics". The
//! coordinator (`compact::execute`) keeps planning, validation and commits; an executor only turns bins
//! into proven outputs (`BinOutput`) or failures (`BinError`, listing every output written).
//!
//! - `local`: the bins run on this machine's runtime (the default).
//! - `ray`: the bins run as tasks of a Ray job, each task running `lakehealth worker` on one
//!   bin `spec` (the same `rewrite_bin`); the worker's `result` is durable under the table's
//!   `_lakehealth/jobs/<job>/`, where the coordinator reads it and where `pickup` finds results
//!   a coordinator never committed.
//!
//! The choice (`compact::executor::Executor`) and what an executor is handed (`RunContext`)
//! are the coordinator's vocabulary; `Executor::spawn`, here, is how each runs.

pub(crate) mod local;
pub(crate) mod package;
pub mod pickup;
pub(crate) mod ray;
pub(crate) mod ray_api;
pub mod spec;
pub(crate) mod trust;
pub mod worker;

use tokio::sync::mpsc;

use crate::compact::executor::{BinResult, Executor, RunContext, Work};

impl Executor {
    /// Starts running every bin `work` receives; each bin's result goes to `results`. The task
    /// ends once `work` is closed and every bin it received has a result.
    pub(crate) fn spawn(
        &self,
        ctx: RunContext,
        work: mpsc::UnboundedReceiver<Work>,
        results: mpsc::Sender<BinResult>,
    ) -> tokio::task::JoinHandle<()> {
        match self {
            Executor::Local => local::spawn_rewriters(ctx, work, results),
            Executor::Ray(r) => ray::spawn(r.clone(), ctx, work, results),
        }
    }
}
