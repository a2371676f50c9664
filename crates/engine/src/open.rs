//! Opening what the user pointed at: one table, or a root holding many tables.

use crate::options::OpenOptions;
use std::sync::Arc;

use futures::StreamExt;
use serde::Serialize;

use super::discover::discover;
use super::error::{EngineError, ErrorKind, Result};
use super::location::Location;
use super::progress::LoadProgress;
use super::stats::table_report::TableReport;
use super::table::Table;

/// Loads one table's statistics: a Delta table from its log, a Parquet folder from its listing,
/// a Spark file-sink folder from `_spark_metadata/` (see `formats::load_table_any`).
pub async fn load_table(
    loc: &Location,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    Table::open(loc, opts, progress)
        .await
        .map(Table::into_report)
}

#[derive(Debug, Clone, Serialize)]
pub struct TableLoadError {
    pub uri: String,
    /// What kind of error it was (`permission_denied`, `corrupt_checkpoint`, ...).
    pub kind: ErrorKind,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RootReport {
    pub root: String,
    /// Worst health first.
    pub tables: Vec<TableReport>,
    /// Tables that were found but could not be read.
    pub errors: Vec<TableLoadError>,
}

impl RootReport {
    pub fn sort_by_health(&mut self) {
        self.tables.sort_by(|a, b| {
            a.stats
                .health_score
                .cmp(&b.stats.health_score)
                .then(b.stats.excess_files.cmp(&a.stats.excess_files))
                .then(a.name.cmp(&b.name))
        });
    }
}

#[derive(Debug, Clone)]
pub enum Opened {
    Table(Box<TableReport>),
    Root(RootReport),
}

/// Finds the tables under `root` and loads each (4 at a time).
pub async fn load_root(
    root: &Location,
    rel_tables: Vec<String>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<RootReport> {
    let total = rel_tables.len();
    let locations: Vec<(String, Location)> = rel_tables
        .iter()
        .map(|r| root.join(r).map(|l| (r.clone(), l)))
        .collect::<Result<_>>()?;
    let mut done = 0;
    let mut tables = Vec::new();
    let mut errors = Vec::new();
    let mut results = futures::stream::iter(locations.into_iter().map(|(rel, loc)| {
        let opts = opts.clone();
        async move {
            // Under a root, a table is named by its path from the root ("raw/events").
            let r = load_table(&loc, &opts, &|_| {}).await.map(|mut t| {
                if !rel.is_empty() {
                    t.name = rel;
                }
                t
            });
            (loc, r)
        }
    }))
    .buffer_unordered(4);
    while let Some((loc, r)) = results.next().await {
        done += 1;
        progress(LoadProgress::LoadingTables { done, total });
        match r {
            Ok(t) => tables.push(t),
            Err(e) => errors.push(TableLoadError {
                uri: loc.display(),
                kind: e.kind(),
                error: e.to_string(),
            }),
        }
    }
    let mut report = RootReport {
        root: root.display(),
        tables,
        errors,
    };
    report.sort_by_health();
    Ok(report)
}

/// A table if `loc` is one, else every table found below it.
pub async fn open(
    loc: &Location,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Opened> {
    Ok(match open_handle(loc, opts, progress).await? {
        OpenedHandle::Table(t) => Opened::Table(Box::new(t.into_report())),
        OpenedHandle::Root(r) => Opened::Root(r),
    })
}

/// What `open_handle` found: a table, opened once and kept open, or a root's reports.
pub enum OpenedHandle {
    Table(Box<Table>),
    Root(RootReport),
}

/// `open`, keeping the table open (the TUI follows its log on from where it was read).
pub async fn open_handle(
    loc: &Location,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<OpenedHandle> {
    match Table::open(loc, opts, progress).await {
        Ok(t) => Ok(OpenedHandle::Table(Box::new(t))),
        Err(EngineError::NotATable { .. }) => {
            let store: Arc<dyn object_store::ObjectStore> =
                loc.open_store(&opts.storage_options)?;
            let uri = loc.display();
            let found: Vec<String> = discover(&store, &uri, opts.discovery_depth, progress)
                .await?
                .into_iter()
                .map(|t| t.rel)
                .collect();
            if found.is_empty() {
                return Err(EngineError::NotATable {
                    uri,
                    depth: opts.discovery_depth,
                });
            }
            Ok(OpenedHandle::Root(
                load_root(loc, found, opts, progress).await?,
            ))
        }
        Err(e) => Err(e),
    }
}
