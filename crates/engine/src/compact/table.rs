//! Opening a table for compaction: a delta-rs table whose object store counts every byte, and
//! its active files grouped by partition (from the same snapshot the commits will be checked
//! against, so the plan is exactly what runs).

use std::collections::HashMap;
use std::sync::Arc;

use delta_kernel::table_features::ColumnMappingMode;
use deltalake::DeltaTable;
use deltalake::table::builder::DeltaTableBuilder;
use object_store::ObjectStore;

use super::counting_store::{ByteCounters, CountingStore};
use super::plan::{FileRef, RowIds};
use super::tiers::tier_of;
use crate::compact::ledger_store::LedgerStore;
use crate::delta::column_mapping::partition_physical_names;
use crate::delta::features::{self, WriteFeatures};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::partition::PartitionValues;
use crate::properties::TableProps;

pub struct CompactionTable {
    pub table: DeltaTable,
    /// Bytes the job's reads and writes moved (its progress).
    pub counters: Arc<ByteCounters>,
    /// Every request reaching the store, bookkeeping included (the job's price).
    pub requests: Arc<ByteCounters>,
    /// The store's URL scheme (its default rates).
    pub scheme: String,
    pub uri: String,
    /// The table's properties when it was opened.
    pub props: TableProps,
    /// What its protocol asks of the rewrite and the commit (each commit checks again).
    pub features: WriteFeatures,
    /// It uses column mapping: outputs are written with physical names (`column_mapping`).
    pub column_mapped: bool,
    /// This job's durable list of the outputs it writes (`job_ledger`).
    pub ledger: Arc<LedgerStore>,
    /// Its clustering columns by logical name (empty: not clustered).
    pub clustering: Vec<String>,
}

fn derr(uri: &str, e: deltalake::DeltaTableError) -> EngineError {
    EngineError::from_delta(uri, "opening the table for compaction", e)
}

/// Wraps the table's object store (tests inject failures with it).
pub type StoreWrapper = dyn Fn(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> + Send + Sync;

pub async fn open_for_compaction(
    loc: &Location,
    storage_options: &HashMap<String, String>,
) -> Result<CompactionTable> {
    open_for_compaction_with(loc, storage_options, None).await
}

pub async fn open_for_compaction_with(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    wrap: Option<&StoreWrapper>,
) -> Result<CompactionTable> {
    open_for_job(loc, storage_options, wrap, &super::job_ledger::new_job_id()).await
}

/// `open_for_compaction_with` for the job `job` (a worker's bin: the coordinator's job id, so
/// every output it writes carries it).
pub async fn open_for_job(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    wrap: Option<&StoreWrapper>,
    job: &str,
) -> Result<CompactionTable> {
    let root_store = root_store(loc, storage_options)?;
    open_for_compaction_on(loc, storage_options, root_store, wrap, job).await
}

/// The store of the bucket (or file system) that holds the table: delta-rs's paths are in it.
/// Opened by `Location`, so a local table's deletes stay beneath its folder through no link.
pub fn root_store(
    loc: &Location,
    storage_options: &HashMap<String, String>,
) -> Result<Arc<dyn ObjectStore>> {
    loc.open_root_store(storage_options)
}

/// The table's folder as a path of its `root_store`.
pub fn table_path(loc: &Location) -> Result<object_store::path::Path> {
    object_store::path::Path::from_url_path(loc.url.path()).map_err(|e| {
        EngineError::from_store(
            &loc.display(),
            "the table path",
            object_store::Error::from(e),
        )
    })
}

/// `open_for_compaction_with` over a root store already opened (`table::Table` passes one
/// whose log was read when the table was opened).
pub async fn open_for_compaction_on(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    root_store: Arc<dyn ObjectStore>,
    wrap: Option<&StoreWrapper>,
    job: &str,
) -> Result<CompactionTable> {
    let uri = loc.display();
    let root = table_path(loc)?;
    // Innermost: every output is listed durably just before the store creates it, and the
    // ledger's own writes are bookkeeping, not bytes the job wrote.
    let requests = Arc::new(ByteCounters::default());
    let counted: Arc<dyn ObjectStore> = Arc::new(CountingStore::new(root_store, requests.clone()));
    let ledger = super::job_ledger::ledger_store(counted, root, job);
    let counters = Arc::new(ByteCounters::default());
    let mut store: Arc<dyn ObjectStore> = Arc::new(CountingStore::new(
        ledger.clone() as Arc<dyn ObjectStore>,
        counters.clone(),
    ));
    if let Some(wrap) = wrap {
        store = wrap(store);
    }
    let loaded = DeltaTableBuilder::from_url(loc.url.clone())
        .map_err(|e| derr(&uri, e))?
        .with_storage_backend(store, loc.url.clone())
        .with_storage_options(storage_options.clone())
        .load()
        .await;
    let table = match loaded {
        Ok(t) => t,
        Err(e) => return Err(why_not_loaded(loc, storage_options, &uri, e).await),
    };
    let props = TableProps::parse(
        table
            .snapshot()
            .map_err(|e| derr(&uri, e))?
            .metadata()
            .configuration()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let column_mapped = column_mapping_mode(&uri, &props)? != ColumnMappingMode::None;
    let features = honoured_features(&table, &uri)?;
    // Only a table whose protocol lists clustering has a clustering domain to read.
    let clustering = if features.clustered {
        crate::delta::skipping::clustering_of(&table, &uri).await?
    } else {
        Vec::new()
    };
    Ok(CompactionTable {
        table,
        counters,
        requests,
        scheme: loc.url.scheme().to_string(),
        uri,
        props,
        features,
        column_mapped,
        ledger,
        clustering,
    })
}

/// Why delta-rs could not load the table: a `metaData` without `schemaString` or `format` (which
/// Spark tolerates and lakehealth reports) is said plainly; anything else is delta-rs's error.
async fn why_not_loaded(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    uri: &str,
    e: deltalake::DeltaTableError,
) -> EngineError {
    let Ok(store) = loc.open_store(storage_options) else {
        return derr(uri, e);
    };
    let state = crate::delta::log::replay::replay(&store, uri, Default::default(), &|_| {}).await;
    let state = match state {
        Ok(s) => s,
        // lakehealth's own reader says what is wrong with the log in words (a gap, a corrupt
        // commit or checkpoint, named) where the kernel's error does not.
        Err(ours) => return ours,
    };
    if let Some(w) = state
        .warnings
        .iter()
        .find(|w| w.starts_with("_last_checkpoint names version"))
    {
        return EngineError::Unsupported {
            uri: uri.to_string(),
            detail: format!(
                "{w}. delta-rs, through which lakehealth commits, refuses such a log (it said: {e}). lakehealth changed nothing: restore the checkpoint, or delete _delta_log/_last_checkpoint so that writers replay the JSON commits (`report` still reads the table)"
            ),
        };
    }
    let missing = state.metadata.missing_required();
    if missing.is_empty() {
        return derr(uri, e);
    }
    EngineError::Unsupported {
        uri: uri.to_string(),
        detail: format!(
            "the table's metaData has no {}: lakehealth writes compacted files with the table's schema and statistics, so it cannot compact this table (Spark can: it takes the schema from the data files). lakehealth changed nothing",
            missing.join(" and no ")
        ),
    }
}

/// The features the table's protocol asks a compaction to honour; one it cannot honour is
/// refused before anything is rewritten, naming it (`features`).
fn honoured_features(table: &DeltaTable, uri: &str) -> Result<WriteFeatures> {
    let refuse = |why: String| EngineError::Unsupported {
        uri: uri.to_string(),
        detail: format!("{why}; lakehealth refuses before rewriting anything and changed nothing"),
    };
    features::of_table(table)
        .map_err(|e| derr(uri, e))?
        .map_err(|e| refuse(e.to_string()))
}

/// The table's column mapping mode (`name` and `id` are rewritten physically,
/// `column_mapping`); an unknown mode is refused, since files might be laid out by it.
fn column_mapping_mode(uri: &str, props: &TableProps) -> Result<ColumnMappingMode> {
    props
        .column_mapping_mode()
        .map_err(|source| EngineError::InvalidProperty {
            uri: uri.to_string(),
            source,
            remedy: "compact it with another engine",
        })
}

impl CompactionTable {
    pub fn version(&self) -> u64 {
        self.table.version().unwrap_or_default()
    }

    pub fn partition_columns(&self) -> Result<Vec<String>> {
        Ok(self
            .table
            .snapshot()
            .map_err(|e| derr(&self.uri, e))?
            .metadata()
            .partition_columns()
            .to_vec())
    }

    /// `delta.targetFileSize`, when the table sets one; an invalid value is an error naming it.
    pub fn table_target_file_size(&self) -> Result<Option<u64>> {
        self.props
            .checked_target_file_size()
            .map_err(|source| EngineError::InvalidProperty {
                uri: self.uri.clone(),
                source,
                remedy: "pass --target",
            })
    }

    /// Its top-level columns as (logical, physical) names: the names a user orders by, and
    /// the names its files hold (the same unless column-mapped).
    pub fn data_columns(&self) -> Result<Vec<(String, String)>> {
        let snapshot = self.table.snapshot().map_err(|e| derr(&self.uri, e))?;
        let mode = snapshot
            .snapshot()
            .table_configuration()
            .column_mapping_mode();
        Ok(snapshot
            .schema()
            .fields()
            .map(|f| {
                (
                    f.name().clone(),
                    crate::delta::column_mapping::physical_name(f, mode).to_string(),
                )
            })
            .collect())
    }

    /// Active files grouped by partition, in partition-column order.
    pub fn partition_files(&self) -> Result<Vec<(PartitionValues, Vec<FileRef>)>> {
        partition_files(&self.table, &self.uri)
    }
}

/// Active files of `table`'s loaded snapshot grouped by their typed partition values (the
/// protocol's empty string is NULL; the string "null" is a value like any other), ordered by
/// those values.
pub fn partition_files(
    table: &DeltaTable,
    uri: &str,
) -> Result<Vec<(PartitionValues, Vec<FileRef>)>> {
    let snapshot = table.snapshot().map_err(|e| derr(uri, e))?;
    let cols = snapshot.metadata().partition_columns().to_vec();
    // The log keys partition values by physical name in a column-mapped table; the plan by the
    // logical one.
    let mode = snapshot
        .snapshot()
        .table_configuration()
        .column_mapping_mode();
    let physical = partition_physical_names(&snapshot.schema(), &cols, mode).map_err(|e| {
        EngineError::Unsupported {
            uri: uri.to_string(),
            detail: e.to_string(),
        }
    })?;
    // delta-rs 1.1 unwraps a deletion vector's storage type when it converts a file action
    // (found by fuzzing: `"storageType":"t"` panicked): the log is corrupt, an error.
    crate::panic_guard::guarded_sync(|| group_files(snapshot, &cols, &physical)).map_err(|p| {
        EngineError::Unsupported {
            uri: uri.to_string(),
            detail: format!(
                "delta-rs cannot read a file action of the log (an invalid deletion vector \
                 descriptor?): {p}"
            ),
        }
    })
}

/// The active files of `snapshot` grouped and ordered by partition (see `partition_files`).
fn group_files(
    snapshot: &deltalake::table::state::DeltaTableState,
    cols: &[String],
    physical: &HashMap<String, String>,
) -> Vec<(PartitionValues, Vec<FileRef>)> {
    let mut groups: HashMap<PartitionValues, Vec<FileRef>> = HashMap::new();
    for f in snapshot.log_data() {
        let map = f.partition_values_map();
        let values = PartitionValues(
            cols.iter()
                .map(|c| {
                    let key = physical.get(c).unwrap_or(c);
                    let v = map.get(key).cloned().flatten().filter(|v| !v.is_empty());
                    (c.clone(), v)
                })
                .collect(),
        );
        // The tags and row ids are only reachable through the whole add action in delta-rs 1.1.
        #[allow(deprecated)]
        let add = f.add_action();
        let tier = tier_of(add.tags.as_ref());
        groups.entry(values).or_default().push(FileRef {
            path: f.path().to_string(),
            store_path: f.object_store_path().to_string(),
            size: crate::delta::log::file_size::logged_size(f.size()),
            deletion_vector: f.deletion_vector_descriptor(),
            num_records: f.num_records().map(|n| n as u64),
            tier,
            row_ids: RowIds {
                base_row_id: add.base_row_id,
                default_row_commit_version: add.default_row_commit_version,
            },
        });
    }
    let mut out: Vec<(PartitionValues, Vec<FileRef>)> = groups.into_iter().collect();
    out.sort_by(|a, b| a.0.0.cmp(&b.0.0));
    out
}
