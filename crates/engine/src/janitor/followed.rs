//! How the janitor keeps a Delta table's log between cycles. A table that changes is followed
//! commit by commit (`LogWatcher`: its state, every active file included). One idle for
//! `SUMMARIZE_AFTER` reads in a row keeps only a summary: its report (statistics per partition,
//! no file list), its version, its store and its partition columns. Memory then follows the
//! tables that move, not the tables watched (amoro#826). A read of a summary asks whether the
//! next commit exists (one HEAD, as a followed table's read is one GET); when it does, the table
//! is replayed once and followed again.
//!
//! Log cleanup cannot hide a commit from that question: it removes only commits older than the
//! log retention (30 days by default), and an idle table is read at least every
//! `idle_poll_max` (minutes).

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::activity::Columns;
use crate::delta::log::actions::physical_names;
use crate::delta::watch::LogWatcher;
use crate::error::{EngineError, Result};
use crate::stats::table_report::TableReport;

/// Quiet reads in a row after which a table keeps only its summary.
pub const SUMMARIZE_AFTER: u32 = 3;

/// An idle table's log as last read, without its files.
pub struct Summary {
    pub version: u64,
    pub report: TableReport,
    pub store: Arc<dyn ObjectStore>,
    pub cols: Columns,
}

pub enum Followed {
    Full(Box<LogWatcher>),
    Summary(Box<Summary>),
}

/// What a cycle needs of a table's log: its report, its store, its partition columns.
pub struct View {
    pub report: TableReport,
    pub store: Arc<dyn ObjectStore>,
    pub cols: Columns,
}

/// The partition columns of a followed table, with the physical names of mapped columns (for
/// `partitionValues` in commits).
fn columns(w: &LogWatcher, report: &TableReport) -> Columns {
    let physical = physical_names(&w.state().metadata.schema_string)
        .into_iter()
        .map(|(p, l)| (l, p))
        .collect();
    Columns {
        logical: report.partition_columns.clone(),
        physical,
    }
}

impl Followed {
    pub fn view(&self) -> View {
        match self {
            Followed::Full(w) => {
                let report = w.report();
                View {
                    cols: columns(w, &report),
                    store: w.store(),
                    report,
                }
            }
            Followed::Summary(s) => View {
                report: s.report.clone(),
                store: s.store.clone(),
                cols: s.cols.clone(),
            },
        }
    }

    /// The summary of a followed table (its file list dropped); a summary stays one.
    pub fn summarized(self) -> Self {
        match self {
            Followed::Full(w) => {
                let report = w.report();
                Followed::Summary(Box::new(Summary {
                    version: w.version(),
                    cols: columns(&w, &report),
                    store: w.store(),
                    report,
                }))
            }
            s => s,
        }
    }

    pub fn is_summary(&self) -> bool {
        matches!(self, Followed::Summary(_))
    }
}

/// Whether the commit after `version` of the table at `uri` exists.
pub async fn has_new_commit(store: &Arc<dyn ObjectStore>, uri: &str, version: u64) -> Result<bool> {
    let next = format!("_delta_log/{:020}.json", version + 1);
    match store.head(&Path::from(next.as_str())).await {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(EngineError::from_store(uri, &next, e)),
    }
}
