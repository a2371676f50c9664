//! Who rewrites a bin: "rewrite this bin, give me its add/remove actions and metrics". The
//! coordinator (`execute`) keeps planning, validation and commits; an executor only turns bins
//! into proven outputs (`BinOutput`) or failures (`BinError`, listing every output written).
//!
//! - `local`: the bins run on this machine's runtime (the default).
//! - `ray`: the bins run as tasks of a Ray job, each task running `lakehealth worker` on one
//!   bin `spec` (the same `rewrite_bin`); the worker's `result` is durable under the table's
//!   `_lakehealth/jobs/<job>/`, where the coordinator reads it and where `pickup` finds results
//!   a coordinator never committed.

pub mod ledger;
pub mod local;
pub mod package;
pub mod pickup;
pub mod ray;
pub mod ray_api;
pub mod spec;
pub mod trust;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use deltalake::DeltaTable;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::compact::counting_store::ByteCounters;
use crate::compact::execute::ExecOptions;
use crate::compact::plan::Bin;
use crate::compact::rewrite::{BinError, BinOutput, Counters};
use crate::model::partition::PartitionValues;

/// One bin to run, with its partition.
pub type Work = (PartitionValues, Bin);
pub type BinResult = Result<BinOutput, BinError>;

/// Where bins are rewritten.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Executor {
    /// On this machine, `parallelism` bins at once.
    #[default]
    Local,
    /// As tasks of one Ray job per batch of bins, on the cluster at `address`.
    Ray(RayOptions),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RayOptions {
    /// The dashboard's HTTP address, e.g. http://127.0.0.1:8265.
    pub address: String,
    /// The `lakehealth` binary the cluster runs (None: the running executable, which only
    /// works when the cluster's nodes share this machine's platform).
    pub worker_binary: Option<PathBuf>,
    /// Times Ray runs a failed bin task again.
    pub max_retries: u32,
}

impl RayOptions {
    /// Registers the address's credentials as secrets, and the address itself when it is no
    /// well-formed URL (`engine::secrets::register_address`): errors of the Ray API quote it.
    pub fn new(address: &str) -> Self {
        crate::secrets::register_address(address);
        Self {
            address: address.trim_end_matches('/').to_string(),
            worker_binary: None,
            max_retries: 2,
        }
    }
}

impl Executor {
    /// One line for previews and plans: which executor runs the job.
    pub fn describe(&self) -> String {
        match self {
            Executor::Local => "local (this machine)".into(),
            // Without user info: `http://user:pw@head:8265` must not show.
            Executor::Ray(r) => format!(
                "Ray cluster at {}",
                crate::secrets::redact_url(&r.address).trim_end_matches('/')
            ),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Executor::Local => "local",
            Executor::Ray(_) => "ray",
        }
    }

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

/// What an executor needs from the coordinator's job.
#[derive(Clone)]
pub(crate) struct RunContext {
    pub table: DeltaTable,
    pub uri: String,
    /// The table's file schema (partition columns are not in data files).
    pub schema: SchemaRef,
    pub opts: ExecOptions,
    pub cancel: CancellationToken,
    pub counters: Arc<Counters>,
    /// The job's byte counters (remote bins add what their workers measured).
    pub bytes: Arc<ByteCounters>,
    /// The version the plan was made on.
    pub table_version: u64,
}
