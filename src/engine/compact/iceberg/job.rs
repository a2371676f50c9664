//! An Iceberg compaction job: find the table in its catalog, plan, and for each bin rewrite its
//! files, prove the outputs, and commit a `replace` snapshot through the catalog (a SQL
//! catalog's compare-and-swap of `metadata_location`, or a REST catalog's commit with
//! `assert-table-uuid` and `assert-ref-snapshot-id`). A lost race reloads the table and rebuilds the commit on it while every
//! replaced file is still live and no delete file applies to the bin's partition; otherwise the
//! bin is dropped and its outputs deleted. A metadata file that did not become current is
//! deleted with the bin's manifests.

use std::sync::Arc;

use object_store::{PutMode, PutOptions, PutPayload};
use serde::Serialize;

use super::IcebergCompactError as E;
use super::catalog::{Catalog, TableId};
use super::manifest_write::build;
use super::plan::{DeleteScope, IceBin, IcePlan, plan};
use super::rest_catalog::RestCommit;
use super::rewrite::{Rewritten, delete_outputs, rewrite_bin};
use super::snapshot::{new_metadata, new_snapshot_id, next_metadata_location, snapshot_json};
use super::sql_catalog::SqlCatalog;
use super::table_state::{TableState, file_path};
use crate::engine::compact::fingerprint::Fingerprint;
use crate::engine::formats::iceberg::{
    DEFAULT_TARGET_FILE_SIZE, Stores, TARGET_FILE_SIZE_PROPERTY, is_under,
};
use crate::engine::location::Location;
use crate::engine::open::{OpenOptions, now_ms};
use crate::engine::size::format_bytes;

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
    pub dry_run: bool,
    /// Commit attempts after a lost race, per bin.
    pub max_retries: u32,
    pub before_commit: Option<BeforeCommit>,
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
}

impl IceSummary {
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
    o
}

#[derive(Debug, Clone)]
pub enum IceEvent {
    Planned(IcePlan),
    BinStarted { partition: String, files: usize },
    Committed(IceCommit),
    Retrying { partition: String, attempt: u32 },
    Conflict(IceConflict),
    Failed(IceFailure),
}

/// The catalog's table must live at the folder given, and (as for reading) its manifests and
/// data files under it: outputs are written beside the inputs, so metadata pointing elsewhere
/// would have lakehealth write there. `--trust-metadata-paths` lifts the second rule.
fn check_inside(folder: &Location, state: &TableState, opts: &OpenOptions) -> Result<(), E> {
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

struct Ctx<'a> {
    uri: String,
    catalog: Catalog,
    table: TableId,
    stores: Stores<'a>,
    req: &'a IceRequest,
}

/// Compacts the Iceberg table at `folder` through its catalog.
pub async fn compact_iceberg(
    folder: &Location,
    req: &IceRequest,
    opts: &OpenOptions,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Result<IceSummary, E> {
    let catalog = Catalog::open(&req.catalog)?;
    let (table, metadata_location) = catalog
        .find(folder.url.as_str(), req.table.as_deref())
        .await?;
    let mut ctx = Ctx {
        uri: folder.display(),
        catalog,
        table,
        stores: Stores::new(opts),
        req,
    };
    let mut state = TableState::load(&mut ctx.stores, &ctx.uri, &metadata_location).await?;
    check_inside(folder, &state, opts)?;
    let p = plan(&state, target(&state, req), &req.partitions);
    let mut summary = IceSummary {
        table: ctx.table.to_string(),
        metadata_location,
        plan: p.clone(),
        commits: Vec::new(),
        conflicts: Vec::new(),
        failures: Vec::new(),
        dry_run: req.dry_run,
    };
    events(&IceEvent::Planned(p.clone()));
    if req.dry_run {
        return Ok(summary);
    }
    for bin in &p.bins {
        events(&IceEvent::BinStarted {
            partition: bin.label.clone(),
            files: bin.files.len(),
        });
        let mut written = Vec::new();
        let rewritten = match rewrite_bin(
            &mut ctx.stores,
            bin,
            p.target_file_size,
            &state.meta.field_types(),
            &mut written,
        )
        .await
        {
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
        match commit_bin(&mut ctx, &mut state, bin, &rewritten, events).await {
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
    summary.metadata_location = state.metadata_location.clone();
    Ok(summary)
}

enum Outcome {
    Committed(IceCommit),
    /// The table moved so that the bin may not commit: its outputs are to be deleted.
    Conflict(String),
    /// An error; the files listed are kept (the commit's outcome is unknown), else the outputs
    /// are to be deleted.
    Failed(String, Vec<String>),
}

/// Commits `bin` on `state` (reloaded after a lost race; the new state after a commit).
async fn commit_bin(
    ctx: &mut Ctx<'_>,
    state: &mut TableState,
    bin: &IceBin,
    out: &Rewritten,
    events: &(dyn Fn(&IceEvent) + Send + Sync),
) -> Outcome {
    let mut attempt = 0;
    loop {
        if DeleteScope::of(state).applies(bin.spec_id, &bin.partition) {
            return Outcome::Conflict(
                "a delete file now applies to the bin's partition; its rows would come back".into(),
            );
        }
        let snapshot_id = new_snapshot_id(state);
        let sequence = state.last_sequence_number() + 1;
        let metadata_dir = match state.metadata_location.rsplit_once('/') {
            Some((d, _)) => format!("{d}/"),
            None => {
                return Outcome::Failed("the metadata location has no folder".into(), Vec::new());
            }
        };
        let files = match build(
            state,
            bin,
            &out.outputs,
            snapshot_id,
            sequence,
            &metadata_dir,
        ) {
            Ok(f) => f,
            Err(E::Conflict(reason)) => return Outcome::Conflict(reason),
            Err(e) => return Outcome::Failed(e.to_string(), Vec::new()),
        };
        let mut ours: Vec<String> = files.manifests.iter().map(|m| m.path.clone()).collect();
        ours.push(files.list_path.clone());
        let mut puts: Vec<(String, Vec<u8>)> = files
            .manifests
            .into_iter()
            .map(|m| (m.path, m.bytes))
            .collect();
        puts.push((files.list_path.clone(), files.list_bytes));
        if let Err(e) = put_new(&mut ctx.stores, puts).await {
            delete_outputs(&mut ctx.stores, &ours).await;
            return Outcome::Failed(e.to_string(), Vec::new());
        }
        let snapshot = snapshot_json(
            state,
            bin,
            &out.outputs,
            snapshot_id,
            sequence,
            &files.list_path,
            now_ms(),
        );
        if let Some(hook) = &ctx.req.before_commit {
            hook(bin, attempt);
        }
        let swap = match &ctx.catalog {
            Catalog::Sql(c) => {
                sql_swap(c, &ctx.table, &mut ctx.stores, state, &snapshot, &mut ours).await
            }
            Catalog::Rest(c) => {
                let parent = state.snapshot().map(|s| s.snapshot_id);
                match c
                    .commit(
                        &ctx.table,
                        state.table_uuid(),
                        parent,
                        &snapshot,
                        snapshot_id,
                    )
                    .await
                {
                    RestCommit::Committed(l) => Swap::Won(l),
                    RestCommit::Conflict => Swap::Lost,
                    RestCommit::Refused(e) => Swap::NotCommitted(e),
                    RestCommit::Unknown(e) => Swap::Unknown(e),
                }
            }
        };
        let new_location = match swap {
            Swap::Won(l) => l,
            Swap::Lost => String::new(),
            Swap::NotCommitted(e) => {
                delete_outputs(&mut ctx.stores, &ours).await;
                return Outcome::Failed(e, Vec::new());
            }
            Swap::Unknown(e) => {
                return Outcome::Failed(
                    format!("{e}; the commit's outcome is unknown, its files are kept"),
                    ours,
                );
            }
        };
        let won = !new_location.is_empty();
        if won {
            let commit = IceCommit {
                partition: bin.label.clone(),
                snapshot_id,
                sequence_number: sequence,
                metadata_location: new_location.clone(),
                files_removed: bin.files.len() as u64,
                files_added: out.outputs.len() as u64,
                bytes_removed: bin.bytes(),
                bytes_added: out.bytes(),
                rows: out.fingerprint.rows,
                retries: attempt,
                fingerprint: out.fingerprint,
            };
            // The next bin builds on this commit (or on whatever the catalog has by then).
            match TableState::load(&mut ctx.stores, &ctx.uri, &new_location).await {
                Ok(s) => *state = s,
                Err(e) => tracing::warn!("reloading after a commit: {e}"),
            }
            return Outcome::Committed(commit);
        }
        // Lost the race: nothing of this attempt is referenced.
        delete_outputs(&mut ctx.stores, &ours).await;
        attempt += 1;
        if attempt > ctx.req.max_retries {
            return Outcome::Conflict(format!(
                "the table kept moving: {attempt} commit attempts lost the race"
            ));
        }
        events(&IceEvent::Retrying {
            partition: bin.label.clone(),
            attempt,
        });
        let reloaded = match ctx.catalog.current(&ctx.table).await {
            Ok(cur) => TableState::load(&mut ctx.stores, &ctx.uri, &cur).await,
            Err(e) => Err(E::from(e)),
        };
        match reloaded {
            Ok(s) => *state = s,
            Err(e) => return Outcome::Failed(e.to_string(), Vec::new()),
        }
    }
}

/// What a commit attempt got from the catalog.
enum Swap {
    /// Committed: the new metadata location.
    Won(String),
    /// The table moved since the commit was built.
    Lost,
    /// Not committed, for another reason.
    NotCommitted(String),
    /// It may or may not have committed.
    Unknown(String),
}

/// A SQL catalog commit: the new metadata file, then the compare-and-swap of the table's row.
/// After an error the row is read again: only a row still naming the base proves nothing
/// committed.
async fn sql_swap(
    c: &SqlCatalog,
    table: &TableId,
    stores: &mut Stores<'_>,
    state: &TableState,
    snapshot: &serde_json::Value,
    ours: &mut Vec<String>,
) -> Swap {
    let new_location = next_metadata_location(state);
    let json = match new_metadata(state, snapshot) {
        Ok(j) => j,
        Err(e) => return Swap::NotCommitted(e.to_string()),
    };
    if let Err(e) = put_new(stores, vec![(new_location.clone(), json)]).await {
        return Swap::NotCommitted(e.to_string());
    }
    ours.push(new_location.clone());
    let expected = &state.metadata_location;
    match c.swap(table, expected, &new_location) {
        Ok(true) => Swap::Won(new_location),
        Ok(false) => Swap::Lost,
        Err(e) => match c.current(table) {
            Ok(cur) if cur == new_location => Swap::Won(new_location),
            Ok(cur) if cur == *expected => Swap::NotCommitted(e.to_string()),
            _ => Swap::Unknown(e.to_string()),
        },
    }
}

/// Writes new objects, never over an existing one.
async fn put_new(stores: &mut Stores<'_>, puts: Vec<(String, Vec<u8>)>) -> Result<(), E> {
    for (uri, bytes) in puts {
        let (store, path) = stores.resolve(&uri)?;
        store
            .put_opts(
                &path,
                PutPayload::from(bytes),
                PutOptions {
                    mode: PutMode::Create,
                    ..Default::default()
                },
            )
            .await
            .map_err(|source| E::Store { path: uri, source })?;
    }
    Ok(())
}
