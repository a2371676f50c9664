//! A table opened once: its store, its format, its report, and (for a Delta table) a log read
//! once for every reader that needs it while it is opened. A compaction planned from a `Table`
//! lists `_delta_log/` once and fetches each commit file once: our replay (partition columns,
//! writers, the observed compression ratio) and delta-rs's snapshot (the files to plan) read
//! the same log, at the same version (`delta::log::cache`).
//!
//! Everything after opening reads the live log: the checks before each commit, the replans
//! after conflicts, the writer's cadence. A Delta table keeps the state its report was built
//! from, so its live log (`watch`) follows on from it instead of replaying the table again.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::prefix::PrefixStore;

use crate::compact::job::{CompactRequest, PreparedJob, observed_ratio, prepare_table};
use crate::compact::table::{StoreWrapper, open_for_compaction_on, table_path};
use crate::delta::log::cache::LogCache;
use crate::delta::log::state::LogState;
use crate::delta::watch::{LogWatcher, WatchOptions};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::thresholds::Thresholds;
use crate::options::OpenOptions;
use crate::panic_guard::guarded;
use crate::progress::LoadProgress;
use crate::stats::table_report::TableReport;

pub struct Table {
    loc: Location,
    cache: Arc<LogCache>,
    /// The table's folder, read through `cache`.
    store: Arc<dyn ObjectStore>,
    report: TableReport,
    /// A Delta table's replayed log.
    delta_log: Option<LogState>,
    /// What its store charges (its plans are priced at them).
    rates: crate::model::cost::Rates,
}

/// A Delta table's log as a `Table` read it, handed on to follow it live.
pub struct OpenedLog {
    store: Arc<dyn ObjectStore>,
    uri: String,
    name: String,
    state: LogState,
}

impl OpenedLog {
    /// The table's live log, starting at the version it was opened at.
    pub fn watcher(self, opts: WatchOptions) -> LogWatcher {
        LogWatcher::from_state(self.store, self.uri, self.name, opts, self.state)
    }

    /// The table's location as the report shows it.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl Table {
    pub async fn open(
        loc: &Location,
        opts: &OpenOptions,
        progress: &(dyn Fn(LoadProgress) + Send + Sync),
    ) -> Result<Self> {
        Self::open_with(loc, opts, progress, None).await
    }

    /// `open` with the root store wrapped (tests count its requests with it).
    pub async fn open_with(
        loc: &Location,
        opts: &OpenOptions,
        progress: &(dyn Fn(LoadProgress) + Send + Sync),
        wrap: Option<&StoreWrapper>,
    ) -> Result<Self> {
        let mut root = loc.open_root_store(&opts.storage_options)?;
        if let Some(wrap) = wrap {
            root = wrap(root);
        }
        let path = table_path(loc)?;
        let cache = Arc::new(LogCache::new(root, &path));
        let store: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(
            cache.clone() as Arc<dyn ObjectStore>,
            path,
        ));
        // A table's files are untrusted input: a bug they trip is this table's error, not the
        // process's end (under a root, the other tables are still reported).
        let loaded =
            match guarded(crate::formats::load_table_from(loc, &store, opts, progress)).await {
                Ok(r) => r,
                Err(panic) => Err(EngineError::Panicked {
                    uri: loc.display(),
                    detail: panic.0,
                }),
            };
        let loaded = match loaded {
            Ok(l) => l,
            Err(e) => {
                cache.thaw();
                return Err(e);
            }
        };
        Ok(Self {
            loc: loc.clone(),
            cache,
            store,
            report: loaded.report,
            delta_log: loaded.delta_log,
            rates: opts.prices.for_scheme(loc.url.scheme()),
        })
    }

    pub fn report(&self) -> &TableReport {
        &self.report
    }

    pub fn into_report(self) -> TableReport {
        self.report
    }

    /// The report, and a Delta table's log to follow live from where the report read it.
    pub fn into_report_and_log(self) -> (TableReport, Option<OpenedLog>) {
        // Whoever follows the log reads it as it is from now on.
        self.cache.thaw();
        let log = self.delta_log.map(|state| OpenedLog {
            store: self.store,
            uri: self.report.uri.clone(),
            name: self.report.name.clone(),
            state,
        });
        (self.report, log)
    }

    /// Plans `req` (a Delta table): delta-rs's snapshot is read through the log this table was
    /// opened with, then the cache thaws, so what the job checks before it commits is live.
    pub async fn prepare_compaction(
        self,
        req: &CompactRequest,
        thresholds: Thresholds,
    ) -> Result<PreparedJob> {
        crate::root_links::refuse_links_leaving(&self.loc, "compact")?;
        crate::sealed::keyring().map_err(crate::error::EngineError::NoKey)?;
        let ratio = observed_ratio(&self.report.commits);
        let opened = open_for_compaction_on(
            &self.loc,
            &req.storage_options,
            self.cache.clone() as Arc<dyn ObjectStore>,
            None,
            &crate::compact::job_ledger::new_job_id(),
        )
        .await;
        self.cache.thaw();
        let mut job = prepare_table(opened?, req, thresholds, ratio)?;
        job.set_rates(self.rates);
        Ok(job)
    }
}
