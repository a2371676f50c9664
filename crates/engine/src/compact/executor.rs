//! Where a job's bins run, as the coordinator sees it: the executor chosen and what it is
//! given. How each executor runs them is in `exec/` (`Executor::spawn`).

use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use deltalake::DeltaTable;
use tokio_util::sync::CancellationToken;

use super::counting_store::ByteCounters;
use super::plan::{Bin, PlanOptions};
use super::rewrite::{BinError, BinOutput, Counters, RewriteOptions};
use super::spacing::CommitSpacer;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::model::trigger::Trigger;

#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub rewrite: RewriteOptions,
    /// Bins rewritten at once (each is one reader and one writer).
    pub parallelism: usize,
    /// Recorded in the OPTIMIZE commit's operationParameters (SQL).
    pub predicate: Option<String>,
    /// For planning a partition again after a conflict.
    pub plan_options: PlanOptions,
    pub thresholds: Thresholds,
    /// Where bins are rewritten (commits always happen here).
    pub executor: Executor,
    /// The job's threads run at the lowest CPU priority (a writer is active).
    pub background: bool,
    /// Compaction commits spaced by this (a writer is active); shared by a janitor's jobs on
    /// one table.
    pub commit_spacing: Option<Arc<CommitSpacer>>,
    /// The writer's interval before the job: a paced job follows its cadence (`cadence`).
    pub writer_rhythm_ms: Option<u64>,
    /// Who started the job, recorded in its commits (`model::trigger`).
    pub trigger: Trigger,
}

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
