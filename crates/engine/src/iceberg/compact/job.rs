//! An Iceberg compaction job: find the table in its catalog, plan, and for each bin rewrite its
//! files, prove the outputs (`rewrite`) and commit a `replace` snapshot through the catalog
//! (`commit`: a SQL catalog's compare-and-swap of `metadata_location`, or a REST catalog's
//! commit with `assert-table-uuid` and `assert-ref-snapshot-id`). Outputs of a bin that does
//! not commit are deleted.

use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::IcebergCompactError as E;
use super::catalog::{Catalog, TableId};
use super::commit::{Outcome, commit_bin};
use super::ledger::{self, Record, Sweep};
use super::order::{OrderRequest, resolve};
use super::plan::{IceBin, IcePlan, plan};
use super::rewrite::{RewriteSpec, delete_outputs, rewrite_bin};
use super::table_state::{TableState, file_path};
use super::where_filter::IceWhere;
use crate::clock::now_ms;
use crate::compact::counting_store::ByteCounters;
use crate::compact::fingerprint::Fingerprint;
use crate::compact::ordering::sorter::{DEFAULT_SORT_MEMORY, MIN_SORT_MEMORY};
use crate::iceberg::{DEFAULT_TARGET_FILE_SIZE, Stores, TARGET_FILE_SIZE_PROPERTY, is_under};
use crate::location::Location;
use crate::model::cost::Cost;
use crate::options::OpenOptions;
use crate::size::format_bytes;

/// Commit attempts of a bin after lost races (each rebuilds the commit on the new table).
pub const MAX_RETRIES: u32 = 10;

/// Called before each commit attempt of a bin (attempt 0, 1 ...): tests race writers there.
pub type BeforeCommit = Arc<dyn Fn(&IceBin, u32) + Send + Sync>;

#[derive(Clone, Default)]
pub struct IceRequest {
    /// `sqlite:///FILE` or `http(s)://…` (REST).
    pub catalog: String,
    /// `namespace.name`; else the table whose metadata is under the folder.
    pub table: Option<String>,
    /// Default: the table's `write.target-file-size-bytes`, else Iceberg's 512 MiB.
    pub target_file_size: Option<u64>,
    /// Only partitions with these labels (`category=a/ts_day=2026-11-30`).
    pub partitions: Vec<String>,
    /// Only partitions that may hold a row matching this SQL (`ts >= '2026-11-30'`).
    pub predicate: Option<String>,
    /// Rows written in this order, every file of each partition rewritten (None: bin-pack).
    pub order: Option<OrderRequest>,
    /// Bytes a sort holds before it spills (0: `DEFAULT_SORT_MEMORY`).
    pub sort_memory: usize,
    pub dry_run: bool,
    /// Commit attempts after a lost race, per bin.
    pub max_retries: u32,
    pub before_commit: Option<BeforeCommit>,
    /// Stops the job before its next bin (a bin being rewritten or committed finishes first).
    pub cancel: Option<CancellationToken>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IceCommit {
    pub partition: String,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub metadata_location: String,
    pub files_removed: u64,
    pub files_added: u64,
    pub bytes_removed: u64,
    pub bytes_added: u64,
    pub rows: u64,
    pub retries: u32,
    pub fingerprint: Fingerprint,
}

#[derive(Debug, Clone, Serialize)]
pub struct IceConflict {
    pub partition: String,
    pub reason: String,
    /// Outputs that could not be deleted (orphans to remove by hand).
    pub outputs_left: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IceFailure {
    pub partition: String,
    pub error: String,
    /// Files kept because the commit's outcome is unknown, or that could not be deleted.
    pub files_kept: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IceSummary {
    pub table: String,
    pub metadata_location: String,
    pub plan: IcePlan,
    pub commits: Vec<IceCommit>,
    pub conflicts: Vec<IceConflict>,
    pub failures: Vec<IceFailure>,
    pub dry_run: bool,
    /// Stopped by the request's cancel before its last bin (the bins before it are done).
    pub cancelled: bool,
    /// What killed jobs had left, removed before this one started (a dry run: to remove).
    pub sweep: Sweep,
    /// Every request the job made to the table's store, counted as made, priced (the catalog's
    /// traffic is not a store request). None for a dry run.
    pub actual: Option<Cost>,
}

impl IceSummary {
    /// The job's requests and price beside the plan's estimate (None for a dry run).
    pub fn cost_line(&self) -> Option<String> {
        let actual = self.actual.as_ref()?;
        Some(format!(
            "cost: {} (estimated {} requests, {})",
            actual.describe(format_bytes),
            self.plan.estimate.requests.total_requests(),
            crate::model::cost::usd_text(self.plan.estimate.usd)
        ))
    }

    /// One line: files removed and added, commits, conflicts, failures.
    pub fn summary_line(&self) -> String {
        let removed: u64 = self.commits.iter().map(|c| c.files_removed).sum();
        let added: u64 = self.commits.iter().map(|c| c.files_added).sum();
        format!(
            "done: -{removed} +{added} files, {} commits, {} conflicts, {} failures",
            self.commits.len(),
            self.conflicts.len(),
            self.failures.len()
        )
    }
}

/// The plan as the CLI prints it and the TUI shows it.
pub fn plan_text(p: &IcePlan) -> String {
    let mut o = format!(
        "plan at snapshot {}: {} bins, {} files ({}) (target {}, files >= {} untouched)\n",
        p.snapshot_id.map_or("none".into(), |s| s.to_string()),
        p.bins.len(),
        p.files_in(),
        format_bytes(p.bytes_in()),
        format_bytes(p.target_file_size),
        format_bytes(p.min_file_size),
    );
    if let Some(w) = &p.predicate {
        o.push_str(&format!(
            "  where: {w} (partitions that may hold a matching row, rewritten whole)\n"
        ));
    }
    if let Some(order) = &p.order {
        o.push_str(&format!("  order: {}\n", order.describe()));
        if let Some(d) = order.depths_text() {
            o.push_str(&format!("  {d}\n"));
        }
    }
    for b in &p.bins {
        o.push_str(&format!(
            "  {:<40} {:>6} files  {:>10}\n",
            b.label,
            b.files.len(),
            format_bytes(b.bytes())
        ));
    }
    if p.partitions_with_deletes > 0 {
        o.push_str(&format!(
            "  {} partitions with delete files are left alone ({} data files)\n",
            p.partitions_with_deletes, p.files_under_deletes
        ));
    }
    if !p.bins.is_empty() {
        o.push_str(&format!(
            "  estimate: {}\n",
            p.estimate.describe(format_bytes)
        ));
    }
    o
}

#[derive(Debug, Clone)]
pub enum IceEvent {
    Planned(IcePlan),
    BinStarted {
        partition: String,
        files: usize,
    },
    Committed(IceCommit),
    Retrying {
        partition: String,
        attempt: u32,
    },
    Conflict(IceConflict),
    Failed(IceFailure),
    /// Leftovers of killed jobs were found (and, unless a dry run, deleted).
    Swept(Sweep),
}

/// An event as one line for humans (the plan: several).
pub fn event_text(e: &IceEvent) -> String {
    match e {
        IceEvent::Planned(p) => plan_text(p).trim_end().to_string(),
        IceEvent::BinStarted { partition, files } => {
            format!("rewriting {partition}: {files} files")
        }
        IceEvent::Committed(c) => format!(
            "committed snapshot {} (sequence {}): {} -{} +{} files ({} -> {}), {} rows, {} retries",
            c.snapshot_id,
            c.sequence_number,
            c.partition,
            c.files_removed,
            c.files_added,
            format_bytes(c.bytes_removed),
            format_bytes(c.bytes_added),
            c.rows,
            c.retries
        ),
        IceEvent::Retrying { partition, attempt } => {
            format!("lost a commit race in {partition}: attempt {attempt}")
        }
        IceEvent::Conflict(c) => format!(
            "conflict in {}: {}; bin not committed, outputs deleted",
            c.partition, c.reason
        ),
        IceEvent::Failed(f) => format!("bin failed in {}: {}", f.partition, f.error),
        IceEvent::Swept(s) => sweep_text(s),
    }
}

/// What a sweep did, for humans.
pub fn sweep_text(s: &Sweep) -> String {
    let mut t = format!(
        "{} killed job(s) left {} unreferenced output(s): {}",
        s.dead_jobs.len(),
        s.deleted.len(),
        if s.dry_run {
            "would delete them"
        } else {
            "deleted"
        }
    );
    if s.kept > 0 {
        t.push_str(&format!("; {} committed output(s) kept", s.kept));
    }
    if !s.left.is_empty() {
        t.push_str(&format!(
            "; could not delete {} (left for remove_orphan_files): {}",
            s.left.len(),
            s.left.join(", ")
        ));
    }
    if !s.refused.is_empty() {
        t.push_str(&format!(
            "; refused {} (never deleted; the records are kept for you to look at): {}",
            s.refused.len(),
            s.refused.join("; ")
        ));
    }
    t
}

/// The catalog's table must live at the folder given, and (as for reading) its manifests and
/// data files under it: outputs are written beside the inputs, so metadata pointing elsewhere
/// would have lakehealth write there. `--trust-metadata-paths` lifts the second rule.
pub(crate) fn check_inside(
    folder: &Location,
    state: &TableState,
    opts: &OpenOptions,
) -> Result<(), E> {
    let root = format!("{}/", folder.url.as_str().trim_end_matches('/'));
    let table_root = format!("{}/", state.meta.location.trim_end_matches('/'));
    if !is_under(&root, &table_root) || !is_under(&table_root, &root) {
        return Err(E::Unsupported(format!(
            "the catalog's table lives at {}, not at {}",
            state.meta.location,
            folder.display()
        )));
    }
    if opts.trust_metadata_paths {
        return Ok(());
    }
    let paths = state.manifests.iter().flat_map(|m| {
        std::iter::once(m.path.clone()).chain(m.file.rows.iter().filter_map(file_path))
    });
    for p in paths {
        if !is_under(&root, &p) {
            return Err(E::Unsupported(format!(
                "the metadata points at {p}, outside the table's folder {root}; lakehealth reads and writes only under the table. If the table was copied or moved and you trust its metadata, pass --trust-metadata-paths"
            )));
        }
    }
    Ok(())
}

/// The target: the request's, else the table property, else Iceberg's default.
fn target(state: &TableState, req: &IceRequest) -> u64 {
    req.target_file_size
        .or_else(|| {
            state
                .meta
                .properties
                .get(TARGET_FILE_SIZE_PROPERTY)
                .and_then(|v| v.trim().parse().ok())
                .filter(|&n: &u64| n > 0)
        })
        .unwrap_or(DEFAULT_TARGET_FILE_SIZE)
}

/// What every commit of the job uses.
pub(super) struct Ctx<'a> {
    pub(super) uri: String,
    /// This job's id: in its outputs' names, its snapshots' summaries and its record.
    pub(super) job: String,
    pub(super) catalog: Catalog,
    pub(super) table: TableId,
    pub(super) stores: Stores<'a>,
    pub(super) req: &'a IceRequest,
}

/// Compacts the Iceberg table at `folder` through its catalog.
pub async fn compact_iceberg(
    folder: &Location,
    req: &IceRequest,
    opts: &OpenOptions,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Result<IceSummary, E> {
    // Outputs go beside the inputs and leftovers are deleted: never through a link out.
    crate::root_links::refuse_links_leaving(folder, "compact")?;
    // Its record and the sweep of dead jobs' records need the installation key.
    crate::sealed::keyring().map_err(crate::error::EngineError::NoKey)?;
    let catalog = Catalog::open(&req.catalog)?;
    let counters = Arc::new(ByteCounters::default());
    let rates = opts.prices.for_scheme(folder.url.scheme());
    let (table, metadata_location) = catalog
        .find(folder.url.as_str(), req.table.as_deref())
        .await?;
    let mut ctx = Ctx {
        uri: folder.display(),
        job: uuid::Uuid::new_v4().simple().to_string(),
        catalog,
        table,
        stores: Stores::beneath(opts, folder).counted(counters.clone()),
        req,
    };
    let mut state = TableState::load(&mut ctx.stores, &ctx.uri, &metadata_location).await?;
    check_inside(folder, &state, opts)?;
    let order = req
        .order
        .as_ref()
        .map(|o| resolve(&state.meta, o))
        .transpose()
        .map_err(|e| E::Unsupported(format!("{}: {e} (nothing was changed)", ctx.uri)))?;
    let filter = req
        .predicate
        .as_deref()
        .map(|w| IceWhere::parse(&state.meta, w))
        .transpose()
        .map_err(|e| E::Unsupported(format!("{}: {e} (nothing was changed)", ctx.uri)))?;
    let mut p = plan(
        &state,
        target(&state, req),
        &req.partitions,
        filter.as_ref(),
        order,
    );
    let root = folder.url.as_str().trim_end_matches('/').to_string();
    let refused = drop_bins_in_other_tables(&mut ctx.stores, &root, &mut p).await;
    p.estimate = rates.cost(super::price::estimate(&state, &p));
    let mut summary = IceSummary {
        table: ctx.table.to_string(),
        metadata_location,
        plan: p.clone(),
        commits: Vec::new(),
        conflicts: Vec::new(),
        failures: refused.clone(),
        dry_run: req.dry_run,
        cancelled: false,
        sweep: Sweep::default(),
        actual: None,
    };
    events(&IceEvent::Planned(p.clone()));
    for f in refused {
        events(&IceEvent::Failed(f));
    }
    summary.sweep = sweep_leftovers(&mut ctx, &state, &root, events).await;
    if req.dry_run || p.bins.is_empty() {
        if !req.dry_run {
            summary.actual = Some(rates.cost(counters.requests()));
        }
        return Ok(summary);
    }
    let mut record = Record::start(&mut ctx.stores, &root, ctx.job.clone(), now_ms()).await?;
    run_bins(&mut ctx, &mut record, &mut state, &p, &mut summary, events).await;
    // Files kept because a commit's outcome is unknown stay on record: a later job's sweep
    // tells whether they were committed (this job's snapshots say) once this process is gone.
    if summary.failures.iter().all(|f| f.files_kept.is_empty()) {
        ledger::remove(&mut ctx.stores, &root, &ctx.job).await;
    }
    summary.metadata_location = state.metadata_location.clone();
    summary.actual = Some(rates.cost(counters.requests()));
    Ok(summary)
}

/// Leaves out of the plan every bin with a file inside another table nested in this one's
/// folder (a folder between the root and the file holds that table's `metadata/` or
/// `_delta_log/`): the outputs would be written beside it, into the other table, whose own
/// maintenance would then delete rows of this one. Each is a failure naming the file.
async fn drop_bins_in_other_tables(
    stores: &mut Stores<'_>,
    root: &str,
    p: &mut IcePlan,
) -> Vec<IceFailure> {
    let mut nested = super::confine::NestedTables::default();
    let mut refused = Vec::new();
    let mut kept = Vec::new();
    for bin in std::mem::take(&mut p.bins) {
        let mut why = None;
        for f in &bin.files {
            if let Err(e) = nested.refuse_other(stores, root, &f.path).await {
                why = Some(e.to_string());
                break;
            }
        }
        match why {
            None => kept.push(bin),
            Some(e) => refused.push(IceFailure {
                partition: bin.label.clone(),
                error: format!(
                    "{e}: its outputs would be written into that table; the bin is left alone"
                ),
                files_kept: Vec::new(),
            }),
        }
    }
    p.bins = kept;
    refused
}

/// Removes what killed jobs left on the table (a dry run only says what it would remove). A
/// sweep that fails is logged, never the job's failure: it only ever deletes leftovers.
async fn sweep_leftovers(
    ctx: &mut Ctx<'_>,
    state: &TableState,
    root: &str,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Sweep {
    let dry_run = ctx.req.dry_run;
    match ledger::sweep(&mut ctx.stores, state, root, &ctx.job, dry_run, now_ms()).await {
        Ok(s) => {
            if !s.dead_jobs.is_empty() || !s.refused.is_empty() {
                events(&IceEvent::Swept(s.clone()));
            }
            s
        }
        Err(e) => {
            tracing::warn!("iceberg: sweeping what killed jobs left under {root}: {e}");
            Sweep::default()
        }
    }
}

/// Rewrites, proves and commits each bin in turn (the cancel stops before the next one).
async fn run_bins(
    ctx: &mut Ctx<'_>,
    record: &mut Record,
    state: &mut TableState,
    p: &IcePlan,
    summary: &mut IceSummary,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) {
    let req = ctx.req;
    let sort_memory = match req.sort_memory {
        0 => DEFAULT_SORT_MEMORY,
        n => n.max(MIN_SORT_MEMORY),
    };
    let types = state.meta.field_types();
    for bin in &p.bins {
        if req.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            summary.cancelled = true;
            break;
        }
        events(&IceEvent::BinStarted {
            partition: bin.label.clone(),
            files: bin.files.len(),
        });
        let mut written = Vec::new();
        let spec = RewriteSpec {
            target: p.target_file_size,
            types: &types,
            order: p.order.as_ref(),
            sort_memory,
        };
        let rewritten = match rewrite_bin(&mut ctx.stores, bin, &spec, record, &mut written).await {
            Ok(r) => r,
            Err(e) => {
                let left = delete_outputs(&mut ctx.stores, &written).await;
                let f = IceFailure {
                    partition: bin.label.clone(),
                    error: e.to_string(),
                    files_kept: left,
                };
                events(&IceEvent::Failed(f.clone()));
                summary.failures.push(f);
                continue;
            }
        };
        match commit_bin(ctx, state, bin, &rewritten, events).await {
            Outcome::Committed(c) => {
                events(&IceEvent::Committed(c.clone()));
                summary.commits.push(c);
            }
            Outcome::Conflict(reason) => {
                let left = delete_outputs(&mut ctx.stores, &written).await;
                let c = IceConflict {
                    partition: bin.label.clone(),
                    reason,
                    outputs_left: left,
                };
                events(&IceEvent::Conflict(c.clone()));
                summary.conflicts.push(c);
            }
            Outcome::Failed(error, keep) => {
                let mut files_kept = keep.clone();
                if keep.is_empty() {
                    files_kept = delete_outputs(&mut ctx.stores, &written).await;
                } else {
                    files_kept.extend(written);
                }
                let f = IceFailure {
                    partition: bin.label.clone(),
                    error,
                    files_kept,
                };
                events(&IceEvent::Failed(f.clone()));
                summary.failures.push(f);
            }
        }
    }
}
