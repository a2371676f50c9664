//! Picking up after a coordinator that stopped (crash, restart, lost cluster): every worker
//! result still under the table's `_lakehealth/jobs/` is settled exactly once.
//!
//! Nothing there is taken on trust (`trust`): a bin's spec (written by its worker before any
//! output), its result and its output ledger must carry this installation's seal (`sealed`: a
//! table's writers can write that folder, they cannot seal), the spec and result must agree,
//! and before a result commits, pickup reads its inputs and its outputs again and compares
//! their content fingerprints itself. The inputs it reads, the files the commit removes and
//! their sizes are one list, taken from the table's log at the spec's version: a spec's own
//! store paths are never read.
//!
//! - outputs already active in the table: the coordinator's commit landed; only the job's
//!   bookkeeping is removed;
//! - a finished bin that answers its spec, whose inputs are all still active and whose outputs
//!   hold exactly its inputs' rows: committed now, with the same validation as any bin
//!   (`commit_bin`);
//! - otherwise (inputs taken by another commit, a failed bin, a worker that never finished, a
//!   result that does not answer its spec): its outputs are deleted — only Parquet files in its
//!   partition's folder, written after its spec, never an active file, never the log;
//! - without a spec nothing is committed or deleted: the files are left and reported.
//!
//! A commit whose outcome is unknown keeps its outputs and its result file. Run it only when no
//! other coordinator is compacting the table with a remote executor (its results would be
//! settled under it). In `Preview` mode nothing is written or deleted: the summary says what
//! `Apply` would do.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use deltalake::DeltaTable;
use deltalake::protocol::DeltaOperation;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;

use super::spec::{BinReport, BinSpec, Outcome};
use super::trust::{check_result, deletable_output, spec_at_its_key};
use super::worker::{delete_outputs, read_record};
use crate::compact::ledger_store::{STATE_DIR, read_ledger};
use crate::compact::plan::{FileRef, RowIds};
use crate::compact::rewrite::{
    FileToProve, ProveError, fingerprint_files, object_key, removes_for,
};
use crate::compact::schema::{SchemaError, file_schema};
use crate::delta::commit::{BinActions, CommitOutcome, commit_bin};
use crate::error::{EngineError, Result};
use crate::model::percent::decode as decoded;
use crate::model::trigger::Trigger;
use crate::sealed::RecordKind;

/// Whether pickup acts or only says what it would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickupMode {
    /// Commits and deletes.
    Apply,
    /// Reads and checks everything, changes nothing (`--dry-run`).
    Preview,
}

/// What pickup did (or, in preview, would do), bin by bin.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PickupSummary {
    /// True when nothing was changed (preview).
    pub dry_run: bool,
    /// Versions committed from finished results.
    pub committed: Vec<u64>,
    /// Results that passed every check and would commit (preview only).
    pub would_commit: Vec<String>,
    /// Results whose commit had already landed.
    pub already_committed: u64,
    /// Results not committed (inputs taken, the bin failed or never finished, a result that
    /// does not answer its spec or whose content differs), with why.
    pub discarded: Vec<String>,
    /// Output files deleted (in preview: that would be).
    pub deleted_outputs: u64,
    /// Output files kept: a commit whose outcome is unknown, or a delete that failed.
    pub kept_outputs: Vec<String>,
    /// Paths a result or ledger names that pickup refused to delete, with why.
    pub refused_paths: Vec<String>,
}

/// The table's active paths, as the log writes them and percent-decoded.
pub(super) fn active_paths(table: &DeltaTable, uri: &str) -> Result<HashSet<String>> {
    let snapshot = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(uri, "reading the snapshot", e))?;
    Ok(snapshot
        .log_data()
        .into_iter()
        .map(|f| f.path().to_string())
        .collect())
}

pub(super) fn is_active(active: &HashSet<String>, path: &str) -> bool {
    active.contains(path) || active.contains(&decoded(path))
}

/// One bin's files in a job folder.
#[derive(Default)]
struct BinFiles {
    spec: Option<Path>,
    result: Option<Path>,
    ledger: Option<Path>,
    other: Vec<Path>,
}

impl BinFiles {
    fn all(&self) -> impl Iterator<Item = &Path> {
        self.spec
            .iter()
            .chain(self.result.iter())
            .chain(self.ledger.iter())
            .chain(self.other.iter())
    }
}

/// A bin's spec as its worker wrote it, with when (outputs are never older).
struct KnownSpec {
    spec: BinSpec,
    written: chrono::DateTime<chrono::Utc>,
}

/// Settles every result under `_lakehealth/jobs/`; `table` is brought to the latest version.
pub async fn pickup(table: &mut DeltaTable, uri: &str, mode: PickupMode) -> Result<PickupSummary> {
    if let Ok(loc) = crate::location::Location::parse(uri) {
        crate::root_links::refuse_links_leaving(&loc, "pick up results for")?;
    }
    let store = table.object_store();
    let mut summary = PickupSummary {
        dry_run: mode == PickupMode::Preview,
        ..Default::default()
    };
    let prefix = Path::from(format!("{STATE_DIR}/jobs"));
    let mut bins: BTreeMap<String, BinFiles> = BTreeMap::new();
    let mut listing = store.list(Some(&prefix));
    while let Some(m) = listing.next().await {
        let m = m.map_err(|e| EngineError::from_store(uri, "listing _lakehealth/jobs", e))?;
        let key = m.location.to_string();
        if let Some(stem) = key.strip_suffix(".result.json") {
            bins.entry(stem.to_string()).or_default().result = Some(m.location);
        } else if let Some(stem) = key.strip_suffix(".outputs.json") {
            bins.entry(stem.to_string()).or_default().ledger = Some(m.location);
        } else if let Some(stem) = key.strip_suffix(".spec.json") {
            bins.entry(stem.to_string()).or_default().spec = Some(m.location);
        } else {
            bins.entry(key).or_default().other.push(m.location);
        }
    }
    drop(listing);
    for files in bins.into_values() {
        Settle {
            table: &mut *table,
            uri,
            store: &store,
            mode,
            summary: &mut summary,
        }
        .bin(files)
        .await?;
    }
    Ok(summary)
}

/// What to do with a finished result.
enum Verdict {
    AlreadyCommitted,
    /// Commit, removing these files: the spec's inputs as the log holds them.
    Commit(Vec<FileRef>),
    Discard(String),
}

struct Settle<'a> {
    table: &'a mut DeltaTable,
    uri: &'a str,
    store: &'a Arc<dyn ObjectStore>,
    mode: PickupMode,
    summary: &'a mut PickupSummary,
}

impl Settle<'_> {
    async fn latest(&mut self) -> Result<()> {
        self.table
            .update_incremental(None)
            .await
            .map_err(|e| EngineError::from_delta(self.uri, "reading the latest version", e))
    }

    async fn spec(&mut self, key: &Path) -> Option<KnownSpec> {
        let meta = self.store.head(key).await.ok()?;
        let spec =
            match read_record::<BinSpec>(self.store, self.uri, RecordKind::BinSpec, key).await {
                Ok(Some(Ok(spec))) => spec,
                Ok(Some(Err(why))) => {
                    // Treated as no spec: nothing of its bin is committed or deleted.
                    tracing::warn!("pickup: {}: {key}: {why}", self.uri);
                    self.summary
                        .refused_paths
                        .push(format!("{key}: {why}; left for a person"));
                    return None;
                }
                _ => return None,
            };
        if let Err(e) = spec_at_its_key(&spec, key.as_ref()) {
            // Treated as no spec: nothing of its bin is committed or deleted.
            tracing::warn!("pickup: {}: {e}", self.uri);
            self.summary.refused_paths.push(e.to_string());
            return None;
        }
        Some(KnownSpec {
            spec,
            written: meta.last_modified,
        })
    }

    async fn bin(mut self, files: BinFiles) -> Result<()> {
        self.latest().await?;
        let name = files
            .result
            .as_ref()
            .or(files.ledger.as_ref())
            .or(files.spec.as_ref())
            .map(|k| k.to_string())
            .unwrap_or_default();
        let spec = match &files.spec {
            Some(k) => self.spec(k).await,
            None => None,
        };
        let mut refused_record = false;
        let report = match &files.result {
            Some(k) => {
                match read_record::<BinReport>(self.store, self.uri, RecordKind::BinResult, k).await
                {
                    Ok(Some(Ok(r))) => Some(r),
                    Ok(Some(Err(why))) => {
                        // Never committed, and left for a person; what its sealed ledger lists
                        // may still be deleted.
                        self.summary
                            .discarded
                            .push(format!("{name}: the result is refused: {why}; left as is"));
                        refused_record = true;
                        None
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.summary.discarded.push(format!("{name}: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        let Some(spec) = spec else {
            if files.result.is_some() || files.ledger.is_some() {
                // Without the spec nothing says which files the bin may touch.
                self.summary.discarded.push(format!(
                    "{name}: no readable spec beside it, so nothing of it can be checked; left as \
                     is (remove {STATE_DIR}/jobs/ by hand once no job runs)"
                ));
            }
            return Ok(());
        };
        let mut keep_result = false;
        let mut to_delete: Vec<String> = Vec::new();
        let label = format!("bin {} of job {}", spec.spec.bin_id, spec.spec.job_id);
        match report {
            Some(r) => match self.verdict(&spec.spec, &r).await? {
                Verdict::AlreadyCommitted => self.summary.already_committed += 1,
                Verdict::Commit(inputs) => {
                    keep_result = self
                        .commit(&label, &spec.spec, &inputs, &r, &mut to_delete)
                        .await;
                }
                Verdict::Discard(why) => {
                    self.summary.discarded.push(format!("{label}: {why}"));
                    to_delete = outputs_of(&r);
                }
            },
            None if files.ledger.is_some() => self
                .summary
                .discarded
                .push(format!("{label}: the worker never finished")),
            None => {}
        }
        // A worker that never finished (or a failed one) leaves its ledger: those outputs go too.
        if !keep_result && let Some(k) = &files.ledger {
            match read_ledger(self.store, k).await {
                Ok(Some(l)) if l.job == spec.spec.job_id => to_delete.extend(l.outputs),
                Ok(Some(l)) => {
                    refused_record = true;
                    self.summary.refused_paths.push(format!(
                        "{k}: sealed for job {}, not its spec's; nothing it names is deleted",
                        l.job
                    ));
                }
                Ok(None) => {}
                Err(e) => {
                    refused_record = true;
                    self.summary
                        .refused_paths
                        .push(format!("{k}: {e}; nothing it names is deleted"));
                }
            }
        }
        if !to_delete.is_empty() {
            self.delete(&spec, to_delete).await?;
        }
        // A refused record stays for a person to look at, and with it its bin's files.
        if !keep_result && !refused_record && self.mode == PickupMode::Apply {
            for k in files.all() {
                let _ = self.store.delete(k).await;
            }
        }
        Ok(())
    }

    /// Whether a finished result may commit: it answers its spec, it has not landed already,
    /// and its outputs hold exactly its inputs' rows (read again here).
    async fn verdict(&mut self, spec: &BinSpec, r: &BinReport) -> Result<Verdict> {
        let (adds, removes, rows) = match &r.outcome {
            Outcome::Done {
                adds,
                removes,
                rows,
                ..
            } => (adds, removes, rows),
            Outcome::Failed { error, .. } => return Ok(Verdict::Discard(error.clone())),
        };
        if let Err(e) = check_result(spec, r) {
            return Ok(Verdict::Discard(format!(
                "the result does not answer its spec: {e}"
            )));
        }
        let active = active_paths(self.table, self.uri)?;
        if !adds.is_empty() && adds.iter().all(|a| is_active(&active, &a.path)) {
            return Ok(Verdict::AlreadyCommitted);
        }
        if let Some(a) = adds.iter().find(|a| is_active(&active, &a.path)) {
            return Ok(Verdict::Discard(format!(
                "its output {} is already in the table, the others are not",
                a.path
            )));
        }
        if let Some(gone) = removes.iter().find(|x| !is_active(&active, &x.path)) {
            return Ok(Verdict::Discard(format!(
                "its input {} is no longer in the table (another commit took it)",
                gone.path
            )));
        }
        let inputs = match self.logged_inputs(spec).await? {
            Ok(files) => files,
            Err(why) => return Ok(Verdict::Discard(why)),
        };
        match self.prove(spec, &inputs, adds).await {
            Ok(fp) if fp.rows == *rows => Ok(Verdict::Commit(inputs)),
            Ok(fp) => Ok(Verdict::Discard(format!(
                "the result says {rows} rows, its inputs and outputs hold {}",
                fp.rows
            ))),
            Err(why) => Ok(Verdict::Discard(why.to_string())),
        }
    }

    /// Reads the spec's inputs and the result's outputs: equal fingerprints, or why not.
    async fn prove(
        &self,
        spec: &BinSpec,
        logged: &[FileRef],
        adds: &[deltalake::kernel::Add],
    ) -> std::result::Result<crate::compact::fingerprint::Fingerprint, Unproven> {
        let schema = file_schema(self.table).map_err(Unproven::Schema)?;
        // The very files the commit removes, where the log says they are.
        let inputs: Vec<FileToProve> = logged
            .iter()
            .map(|f| FileToProve {
                key: Path::from(f.store_path.as_str()),
                size: Some(f.size),
                name: format!("the input {}", f.path),
                deletion_vector: f.deletion_vector.clone(),
            })
            .collect();
        let outputs: Vec<FileToProve> = adds
            .iter()
            .map(|a| FileToProve {
                key: object_key(&a.path),
                size: Some(a.size.max(0) as u64),
                name: format!("the output {}", a.path),
                deletion_vector: None,
            })
            .collect();
        let root = self.table.table_url().clone();
        // A sorted bin's rows are only reordered: compared as multisets.
        let proof = spec.proof();
        let want = fingerprint_files(self.store, &root, &inputs, &schema, None, proof).await?;
        let got = fingerprint_files(self.store, &root, &outputs, &schema, None, proof).await?;
        if want == got {
            Ok(want)
        } else if want.rows == got.rows {
            Err(Unproven::Content { rows: want.rows })
        } else {
            Err(Unproven::Rows {
                inputs: want.rows,
                outputs: got.rows,
            })
        }
    }

    /// The spec's inputs as the table's log holds them at the spec's version, each still
    /// active now as it was then: Ok(Err(why)) when one is not, or its size is not the log's.
    async fn logged_inputs(
        &self,
        spec: &BinSpec,
    ) -> Result<std::result::Result<Vec<FileRef>, String>> {
        let mut then = self.table.clone();
        let version = spec.table_version;
        if let Err(e) = then.load_version(version).await {
            return Ok(Err(format!(
                "the table's log at the spec's version {version} cannot be read: {e}"
            )));
        }
        let logged = logged_files(&then, self.uri)?;
        let now = logged_files(self.table, self.uri)?;
        let mut out = Vec::with_capacity(spec.files.len());
        for f in &spec.files {
            let path = decoded(&f.path);
            let Some(at) = logged.get(&path) else {
                return Ok(Err(format!(
                    "its input {} is not in the table's log at version {version}",
                    f.path
                )));
            };
            if at.size != f.size {
                return Ok(Err(format!(
                    "its spec gives {} a size of {} bytes, the log {}",
                    f.path, f.size, at.size
                )));
            }
            // Re-added since with other content, or a deletion vector since: not the same file.
            if now.get(&path) != Some(at) {
                return Ok(Err(format!(
                    "its input {} is no longer in the table as it was at version {version}",
                    f.path
                )));
            }
            out.push(at.clone());
        }
        Ok(Ok(out))
    }

    /// Commits a proven result (or, in preview, notes it). True when its files must stay.
    async fn commit(
        &mut self,
        label: &str,
        spec: &BinSpec,
        inputs: &[FileRef],
        r: &BinReport,
        to_delete: &mut Vec<String>,
    ) -> bool {
        let Outcome::Done { adds, .. } = &r.outcome else {
            return false;
        };
        // What the proof read is what the commit removes.
        let removes = &removes_for(inputs, &spec.values(), None);
        if self.mode == PickupMode::Preview {
            self.summary.would_commit.push(label.to_string());
            return true;
        }
        let bin = BinActions {
            removes,
            adds,
            read_version: r.table_version,
            operation: DeltaOperation::Optimize {
                predicate: None,
                target_size: 0,
            },
            // A worker's outputs hold the table's columns only: a table with row tracking
            // enabled refuses them at the commit.
            row_ids_materialized: false,
            schema: None,
            // The user ran the pickup: the job it finishes counts as theirs.
            trigger: Trigger::Manual,
        };
        match commit_bin(self.table, &bin).await {
            CommitOutcome::Landed { version, .. } => {
                self.summary.committed.push(version);
                false
            }
            CommitOutcome::Conflict(c) => {
                self.summary.discarded.push(format!("{label}: {c}"));
                *to_delete = outputs_of(r);
                false
            }
            CommitOutcome::Failed(e) => {
                self.summary
                    .discarded
                    .push(format!("{label}: commit failed: {e}"));
                *to_delete = outputs_of(r);
                false
            }
            CommitOutcome::Unknown(e) => {
                self.summary
                    .discarded
                    .push(format!("{label}: commit outcome unknown: {e}"));
                self.summary.kept_outputs.extend(outputs_of(r));
                true
            }
        }
    }

    /// Deletes those of `paths` that can be outputs of the spec's bin: never an active file,
    /// the log, lakehealth's state, a file outside the partition's folder or older than the
    /// spec.
    async fn delete(&mut self, spec: &KnownSpec, mut paths: Vec<String>) -> Result<()> {
        // The latest version: a commit just made here included.
        self.latest().await?;
        let active = active_paths(self.table, self.uri)?;
        paths.sort();
        paths.dedup();
        let columns: Vec<String> = spec.spec.partition.iter().map(|(k, _)| k.clone()).collect();
        let mut ok = Vec::new();
        for p in paths {
            if is_active(&active, &p) {
                continue;
            }
            if let Err(e) = deletable_output(&columns, &spec.spec.partition, &spec.spec.job_id, &p)
            {
                self.summary.refused_paths.push(e.to_string());
                continue;
            }
            match self.store.head(&object_key(&p)).await {
                Ok(m) if m.last_modified < spec.written => self.summary.refused_paths.push(
                    format!("{p} is older than its job's spec, so it is not the job's output"),
                ),
                Ok(_) => ok.push(p),
                // Never created, or already gone: nothing to delete.
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => self
                    .summary
                    .refused_paths
                    .push(format!("{p}: cannot be checked: {e}")),
            }
        }
        if self.mode == PickupMode::Preview {
            self.summary.deleted_outputs += ok.len() as u64;
            return Ok(());
        }
        let left = delete_outputs(self.store, &ok).await;
        self.summary.deleted_outputs += (ok.len() - left.len()) as u64;
        self.summary.kept_outputs.extend(left);
        Ok(())
    }
}

/// The table's active files by decoded path, as the log holds them.
fn logged_files(table: &DeltaTable, uri: &str) -> Result<HashMap<String, FileRef>> {
    let snapshot = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(uri, "reading the snapshot", e))?;
    let mut out = HashMap::new();
    for f in snapshot.log_data() {
        // Row ids are only reachable through the whole add action in delta-rs 1.1.
        #[allow(deprecated)]
        let add = f.add_action();
        let file = FileRef {
            path: f.path().to_string(),
            store_path: f.object_store_path().to_string(),
            size: crate::delta::log::file_size::logged_size(f.size()),
            deletion_vector: f.deletion_vector_descriptor(),
            num_records: f.num_records().map(|n| n as u64),
            tier: 0,
            row_ids: RowIds {
                base_row_id: add.base_row_id,
                default_row_commit_version: add.default_row_commit_version,
            },
        };
        out.insert(decoded(&file.path), file);
    }
    Ok(out)
}

fn outputs_of(r: &BinReport) -> Vec<String> {
    match &r.outcome {
        Outcome::Done { adds, .. } => adds.iter().map(|a| a.path.clone()).collect(),
        Outcome::Failed { outputs, .. } => outputs.clone(),
    }
}
/// Why a result's outputs are not proven to hold its inputs' rows.
#[derive(Debug, thiserror::Error)]
enum Unproven {
    #[error("reading the schema: {0}")]
    Schema(#[source] SchemaError),
    #[error(transparent)]
    Read(#[from] ProveError),
    #[error("its inputs hold {rows} rows, its outputs as many with different content")]
    Content { rows: u64 },
    #[error("its inputs hold {inputs} rows, its outputs {outputs}")]
    Rows { inputs: u64, outputs: u64 },
}
