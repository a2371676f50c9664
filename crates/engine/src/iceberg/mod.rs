//! Iceberg tables, read-only: the current snapshot's data files from its manifests, grouped by
//! partition (Iceberg partition specs and transforms), delete files counted apart, the snapshot
//! history as commits, and what `rewrite_data_files` would do with its defaults.
//!
//! A table is a folder with `metadata/*.metadata.json` (the current one is named by
//! `metadata/version-hint.text` when present, else it is the highest version), or a URI of a
//! `*.metadata.json` file. Manifest lists and manifests are Avro, read with `apache-avro`. File
//! paths in Iceberg metadata are absolute URIs, so objects are read through a store opened at
//! the root of their bucket (or of the file system), with the table's storage options.

pub mod compact;
pub mod manifests;
pub mod metadata;
pub mod skipping;

pub mod transforms;
pub mod vacuum;
pub mod writes;

use crate::stats::details::{DeleteFiles, IcebergDetails};
use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use indexmap::IndexMap;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use self::manifests::{
    FileContent, ManifestError, ManifestFile, ManifestRef, read_manifest_list, read_manifest_with,
};
use self::metadata::{PartitionSpec, Snapshot, TableMetadata};
use self::transforms::{Transform, display};
use crate::clock::now_ms;
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::model::partition::PartitionValues;
use crate::model::thresholds::Thresholds;
use crate::options::OpenOptions;
use crate::progress::LoadProgress;
use crate::size::{MIB, format_bytes};
use crate::stats::findings::FindingsCoverage;
use crate::stats::log_health::{LogHealth, rate_per_minute};
use crate::stats::rewrite_preview::{RewriteOptions, RewritePreview};
use crate::stats::table_report::{TableReport, size_sections};
use crate::stats::vacuum::VacuumDebt;

/// Iceberg's default `write.target-file-size-bytes`.
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 512 * MIB;
pub const TARGET_FILE_SIZE_PROPERTY: &str = "write.target-file-size-bytes";

/// What lakehealth says where compaction is offered for an Iceberg table without a catalog.
pub fn compaction_unsupported(t: &TableReport) -> String {
    let mut s = "Iceberg tables are compacted through their catalog: name it with --catalog URI \
                 (sqlite:///FILE or http(s)://HOST:PORT) when starting lakehealth, or run \
                 lakehealth compact TABLE --catalog URI."
        .to_string();
    if let Some(ice) = &t.iceberg {
        s.push(' ');
        s.push_str(&ice.rewrite_summary());
        s.push('.');
    }
    s
}

/// Whether `url` names a metadata file rather than a table folder.
pub fn is_metadata_file_url(url: &Url) -> bool {
    url.path().trim_end_matches('/').ends_with(".metadata.json")
}

/// Whether the folder `prefix` of `store` holds `metadata/*.metadata.json` (one LIST request of
/// `metadata/`).
pub async fn is_iceberg(store: &Arc<dyn ObjectStore>, prefix: Option<&Path>) -> Result<bool> {
    let dir = match prefix {
        Some(p) => p.clone().join("metadata"),
        None => Path::from("metadata"),
    };
    let listed = store
        .list_with_delimiter(Some(&dir))
        .await
        .map_err(|e| EngineError::from_store(dir.as_ref(), "listing metadata/", e))?;
    Ok(listed.objects.iter().any(|o| {
        o.location
            .filename()
            .is_some_and(|f| f.ends_with(".metadata.json"))
    }))
}

/// Whether `loc` is an Iceberg table (a metadata file URI, or a folder with Iceberg metadata).
pub async fn is_iceberg_location(loc: &Location, opts: &OpenOptions) -> Result<bool> {
    if is_metadata_file_url(&loc.url) {
        return Ok(true);
    }
    let mut stores = Stores::new(opts);
    let (store, path) = stores.resolve(loc.url.as_str())?;
    let prefix = (!path.as_ref().is_empty()).then_some(path);
    is_iceberg(&store, prefix.as_ref()).await
}

/// Stores by bucket (or file-system) root, opened once each with the table's options.
pub struct Stores<'a> {
    opts: &'a OpenOptions,
    open: HashMap<String, Arc<dyn ObjectStore>>,
    /// On a local disk, the folder deletes stay beneath (through no link); else the file
    /// system's root.
    beneath: Option<std::path::PathBuf>,
    /// Every request through these stores is counted here (a job's actual price), if set.
    counters: Option<Arc<crate::compact::counting_store::ByteCounters>>,
}

impl<'a> Stores<'a> {
    pub fn new(opts: &'a OpenOptions) -> Self {
        Self {
            opts,
            open: HashMap::new(),
            beneath: None,
            counters: None,
        }
    }

    /// These stores, counting every request made through them into `counters`.
    pub fn counted(mut self, counters: Arc<crate::compact::counting_store::ByteCounters>) -> Self {
        self.open.clear();
        self.counters = Some(counters);
        self
    }

    /// Stores whose local deletes stay beneath `table`'s folder (a job's: it deletes only its
    /// own outputs and records, all inside the table).
    pub fn beneath(opts: &'a OpenOptions, table: &Location) -> Self {
        Self {
            beneath: table
                .is_local()
                .then(|| table.url.to_file_path().ok())
                .flatten(),
            ..Self::new(opts)
        }
    }

    /// The store holding `uri` (an absolute URI, or an absolute local path) and its path in it.
    pub fn resolve(&mut self, uri: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let bad = |detail: String| EngineError::InvalidUri {
            input: uri.to_string(),
            detail,
        };
        let url = if uri.starts_with('/') {
            Url::from_file_path(uri).map_err(|_| bad("not an absolute path".into()))?
        } else {
            Url::parse(uri).map_err(|e| bad(e.to_string()))?
        };
        let root = format!("{}://{}/", url.scheme(), url.authority());
        let path = Path::from_url_path(url.path()).map_err(|e| bad(e.to_string()))?;
        if let Some(s) = self.open.get(&root) {
            return Ok((s.clone(), path));
        }
        let root_url = Url::parse(&root).map_err(|e| bad(e.to_string()))?;
        let at = Location { url: root_url };
        let store = if at.is_local() {
            at.open_root_store_beneath(&self.opts.storage_options, self.beneath.clone())?
        } else {
            at.open_store(&self.opts.storage_options)?
        };
        let store: Arc<dyn ObjectStore> = match &self.counters {
            Some(c) => Arc::new(crate::compact::counting_store::CountingStore::new(
                store,
                c.clone(),
            )),
            None => store,
        };
        self.open.insert(root, store.clone());
        Ok((store, path))
    }

    pub async fn read(
        &mut self,
        table: &str,
        what: &str,
        uri: &str,
    ) -> Result<(bytes::Bytes, u64)> {
        let (store, path) = self.resolve(uri)?;
        let got = store
            .get(&path)
            .await
            .map_err(|e| EngineError::from_store(table, &format!("reading {what} {uri}"), e))?;
        let bytes = got
            .bytes()
            .await
            .map_err(|e| EngineError::from_store(table, &format!("reading {what} {uri}"), e))?;
        let n = bytes.len() as u64;
        Ok((bytes, n))
    }
}

/// The table's folder as a URL ending in `/`: the folder opened, or the parent of the
/// `metadata/` folder when a metadata file was opened.
fn table_folder(loc: &Location) -> String {
    let s = loc.url.as_str().trim_end_matches('/');
    if is_metadata_file_url(&loc.url)
        && let Some((meta_dir, _)) = s.rsplit_once('/')
        && let Some((table, _)) = meta_dir.rsplit_once('/')
    {
        return format!("{table}/");
    }
    format!("{s}/")
}

/// Whether `target` (an absolute URI or local path, as metadata writes them) is inside the
/// folder `root` (a URL ending in `/`), after resolving `.` and `..`.
pub fn is_under(root: &str, target: &str) -> bool {
    let parsed = if target.starts_with('/') {
        Url::from_file_path(target).ok()
    } else {
        Url::parse(target).ok()
    };
    let (Some(t), Ok(r)) = (parsed, Url::parse(root)) else {
        return false;
    };
    if t.path()
        .split('/')
        .any(|seg| seg == ".." || seg == "." || seg.eq_ignore_ascii_case("%2e%2e"))
    {
        return false;
    }
    t.scheme() == r.scheme() && t.authority() == r.authority() && t.path().starts_with(r.path())
}

/// A local path of `target` (an absolute path or a `file://` URI); None for object stores.
pub fn local_path(target: &str) -> Option<std::path::PathBuf> {
    if target.starts_with('/') {
        return Some(std::path::PathBuf::from(target));
    }
    let url = Url::parse(target).ok()?;
    (url.scheme() == "file")
        .then(|| url.to_file_path().ok())
        .flatten()
}

/// Refuses to `action` the table at `uri` through `target`, a path inside the local folder
/// `root` (a URL ending in `/`) that a symbolic link leads out of. Object stores have no links;
/// a path outside the folder is the callers' to judge (`is_under`).
pub fn refuse_link_out_of(root: &str, target: &str, uri: &str, action: &str) -> Result<()> {
    if !is_under(root, target) {
        return Ok(());
    }
    let (Some(root_path), Some(file)) = (local_path(root), local_path(target)) else {
        return Ok(());
    };
    crate::root_links::refuse_link_out(uri, &root_path, &file, action)
}

/// `v12.metadata.json`, `v12.gz.metadata.json` (Hadoop tables) and `00012-<uuid>.metadata.json`
/// (catalogs) are version 12.
fn metadata_version(file_name: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(".metadata.json")?;
    let stem = stem.strip_suffix(".gz").unwrap_or(stem);
    let digits = match stem.strip_prefix('v') {
        Some(rest) if rest.chars().all(|c| c.is_ascii_digit()) => rest,
        _ => stem.split('-').next()?,
    };
    digits.parse().ok()
}

/// The current metadata file of the table folder `dir` (a URI ending in `/`).
async fn current_metadata_file(stores: &mut Stores<'_>, table: &str, dir: &str) -> Result<String> {
    let meta_dir = format!("{dir}metadata/");
    let hint = format!("{meta_dir}version-hint.text");
    let (store, path) = stores.resolve(&meta_dir)?;
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&path))
        .try_collect()
        .await
        .map_err(|e| EngineError::from_store(table, "listing metadata/", e))?;
    let mut candidates: Vec<(u64, chrono::DateTime<chrono::Utc>, String)> = listed
        .iter()
        .filter_map(|o| {
            let name = o.location.filename()?;
            Some((metadata_version(name)?, o.last_modified, name.to_string()))
        })
        .collect();
    if listed
        .iter()
        .any(|o| o.location.filename() == Some("version-hint.text"))
        && let Ok((bytes, _)) = stores.read(table, "version hint", &hint).await
        && let Ok(v) = String::from_utf8_lossy(&bytes).trim().parse::<u64>()
        && let Some((_, _, name)) = candidates.iter().find(|(n, _, _)| *n == v)
    {
        return Ok(format!("{meta_dir}{name}"));
    }
    // Highest version; two files of one version (a lost commit race): the newer one.
    candidates.sort();
    match candidates.pop() {
        Some((_, _, name)) => Ok(format!("{meta_dir}{name}")),
        None => Err(EngineError::NotATable {
            uri: table.to_string(),
            depth: 0,
        }),
    }
}

pub(crate) fn iceberg_error(
    table: &str,
    what: &str,
    file: &str,
    source: impl Into<crate::error::BoxError>,
) -> EngineError {
    EngineError::IcebergMetadata {
        uri: table.to_string(),
        what: what.to_string(),
        file: file.to_string(),
        source: source.into(),
    }
}

/// Snapshot versions for the commit panel: sequence numbers (v2+), else the position in time.
fn snapshot_versions(snapshots: &[Snapshot]) -> HashMap<i64, u64> {
    let mut by_time: Vec<&Snapshot> = snapshots.iter().collect();
    by_time.sort_by_key(|s| (s.timestamp_ms, s.sequence_number));
    let sequenced = snapshots.iter().all(|s| s.sequence_number > 0);
    by_time
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let v = if sequenced {
                s.sequence_number
            } else {
                i as u64 + 1
            };
            (s.snapshot_id, v)
        })
        .collect()
}

fn commits(snapshots: &[Snapshot]) -> Vec<crate::delta::log::state::CommitSummary> {
    let versions = snapshot_versions(snapshots);
    let mut out: Vec<_> = snapshots
        .iter()
        .map(|s| {
            let engine =
                s.summary
                    .get("engine-name")
                    .map(|n| match s.summary.get("engine-version") {
                        Some(v) => format!("{n} {v}"),
                        None => n.clone(),
                    });
            crate::delta::log::state::CommitSummary {
                version: versions.get(&s.snapshot_id).copied().unwrap_or(0),
                timestamp_ms: Some(s.timestamp_ms),
                operation: s.operation().to_string(),
                files_added: s.count("added-data-files"),
                files_removed: s.count("deleted-data-files"),
                bytes_added: s.count("added-files-size"),
                bytes_removed: s.count("removed-files-size"),
                // `replace` rewrites files without changing rows (compaction).
                data_change: s.operation() != "replace",
                query_id: None,
                epoch_id: None,
                engine,
                trigger: None,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.timestamp_ms
            .cmp(&a.timestamp_ms)
            .then(b.version.cmp(&a.version))
    });
    out
}

/// Partition columns: the default spec's fields, then fields only older specs have.
pub(crate) fn partition_columns(meta: &TableMetadata) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    let default = meta.default_spec();
    let specs = meta.specs();
    for spec in default.iter().chain(specs.iter()) {
        for f in &spec.fields {
            if !cols.contains(&f.name) {
                cols.push(f.name.clone());
            }
        }
    }
    cols
}

/// How one spec's partition struct maps onto the table's partition columns.
pub(crate) struct SpecView {
    /// (column index, transform, source type) per field of the spec, in spec order.
    fields: Vec<(usize, String, Transform, String)>,
}

impl SpecView {
    pub(crate) fn new(
        spec: &PartitionSpec,
        columns: &[String],
        types: &HashMap<i32, String>,
    ) -> Self {
        Self {
            fields: spec
                .fields
                .iter()
                .filter_map(|f| {
                    let col = columns.iter().position(|c| *c == f.name)?;
                    let ty = types.get(&f.source_id).cloned().unwrap_or_default();
                    Some((col, f.name.clone(), Transform::parse(&f.transform), ty))
                })
                .collect(),
        }
    }

    /// Displayed values in column order; a column this spec lacks is None.
    pub(crate) fn values(
        &self,
        partition: &[(String, apache_avro::types::Value)],
        n_columns: usize,
    ) -> Vec<Option<String>> {
        let mut out = vec![None; n_columns];
        // Writers sanitise Avro field names (`ts-day` → `ts_x2Dday`) but keep the spec's
        // order, so fields are matched by position when the counts agree.
        let by_position = partition.len() == self.fields.len();
        for (i, (col, name, transform, ty)) in self.fields.iter().enumerate() {
            let v = if by_position {
                partition.get(i).map(|(_, v)| v)
            } else {
                partition.iter().find(|(k, _)| k == name).map(|(_, v)| v)
            };
            out[*col] = v.and_then(|v| display(v, transform, ty));
        }
        out
    }
}

/// The table's target file size: `write.target-file-size-bytes`, else Iceberg's default.
fn target_file_size(meta: &TableMetadata, warnings: &mut Vec<String>) -> (u64, Option<u64>) {
    match meta.properties.get(TARGET_FILE_SIZE_PROPERTY) {
        None => (DEFAULT_TARGET_FILE_SIZE, None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => (n, Some(n)),
            _ => {
                warnings.push(format!(
                    "{TARGET_FILE_SIZE_PROPERTY}={v:?} is not a positive number of bytes; it is ignored (Iceberg's default {} applies)",
                    format_bytes(DEFAULT_TARGET_FILE_SIZE)
                ));
                (DEFAULT_TARGET_FILE_SIZE, None)
            }
        },
    }
}

/// Reads and decodes one manifest of the snapshot.
async fn fetch_manifest(
    uri: String,
    m: ManifestRef,
    store: Arc<dyn ObjectStore>,
    path: Path,
    stats: bool,
) -> Result<(ManifestRef, u64, Vec<ManifestFile>)> {
    let what = if m.deletes {
        "delete manifest"
    } else {
        "manifest"
    };
    let failed = |e| EngineError::from_store(&uri, &format!("reading {what} {}", m.path), e);
    let b = store
        .get(&path)
        .await
        .map_err(failed)?
        .bytes()
        .await
        .map_err(failed)?;
    let n = b.len() as u64;
    // Decoding is CPU work: off the async threads.
    let files = tokio::task::spawn_blocking(move || read_manifest_with(&b, stats))
        .await
        .map_err(|e| iceberg_error(&uri, what, &m.path, e))?
        .map_err(|e: ManifestError| iceberg_error(&uri, what, &m.path, e))?;
    Ok((m, n, files))
}

/// Loads an Iceberg table's statistics from its current snapshot.
pub async fn load_iceberg(
    loc: &Location,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    let uri = loc.display();
    let mut stores = Stores::new(opts);
    progress(LoadProgress::Listing);
    let (metadata_file, metadata_bytes, meta) = read_metadata(loc, &mut stores, &uri).await?;
    let mut warnings = Vec::new();
    let (target, table_target) = target_file_size(&meta, &mut warnings);
    let rewrite = RewriteOptions::defaults(target);
    // The band is rewrite_data_files' own: files outside it are what it rewrites.
    let thresholds = Thresholds {
        target_file_size: target,
        small_file_size: rewrite.min_file_size,
        max_file_size: rewrite.max_file_size,
    };
    let columns = partition_columns(&meta);
    let mut scan = ManifestScan::default();
    if let Some(snap) = meta.current_snapshot() {
        let reader = SnapshotReader {
            loc,
            opts,
            uri: &uri,
            meta: &meta,
            columns: &columns,
            progress,
            stats: false,
        };
        reader.read(snap, &mut stores, &mut scan).await?;
    }
    progress(LoadProgress::Computing);
    scan.deletes.partitions = scan.delete_partitions.len() as u64;
    if let Some(w) = delete_files_warning(&scan.deletes) {
        warnings.push(w);
    }
    let groups = std::mem::take(&mut scan.groups);
    let rewrite_preview = RewritePreview::plan(&by_partition(&columns, &groups), rewrite);
    let (stats, partitions) = size_sections(&columns, groups.into_iter().collect(), &thresholds);
    let commits = commits(&meta.snapshots);
    let log = snapshot_log_health(&meta, &commits, metadata_bytes.len() as u64, &scan);
    let version = log.version;
    Ok(TableReport {
        uri,
        name: table_name(loc, &meta),
        format: TableFormat::Iceberg,
        version,
        partition_columns: columns,
        stats,
        thresholds,
        table_target_file_size: table_target,
        partitions,
        log,
        // Iceberg keeps no tombstones: unreferenced files go with expire_snapshots.
        vacuum: VacuumDebt::compute(&Default::default(), 0.0, now_ms()),
        streaming_writers: Vec::new(),
        commits,
        warnings,
        findings: Vec::new(),
        findings_checked: FindingsCoverage {
            from_version: None,
            to_version: version,
            checkpoint_version: None,
        },
        iceberg: Some(Box::new(details(
            &meta,
            metadata_file,
            scan,
            rewrite_preview,
        ))),
        folder: None,
        orphans: None,
        skipping: None,
        deleted_rows: None,
    })
}

/// Data file sizes by typed partition values.
fn by_partition(
    columns: &[String],
    groups: &IndexMap<Vec<Option<String>>, Vec<u64>>,
) -> Vec<(PartitionValues, Vec<u64>)> {
    groups
        .iter()
        .map(|(v, s)| {
            (
                PartitionValues(columns.iter().cloned().zip(v.iter().cloned()).collect()),
                s.clone(),
            )
        })
        .collect()
}

/// What the Iceberg panel shows: the snapshot, its manifests and delete files, and what
/// `rewrite_data_files` would do.
fn details(
    meta: &TableMetadata,
    metadata_file: String,
    scan: ManifestScan,
    rewrite_preview: RewritePreview,
) -> IcebergDetails {
    IcebergDetails {
        format_version: meta.format_version,
        metadata_file,
        location: meta.location.clone(),
        snapshot_id: meta.current_snapshot().map(|s| s.snapshot_id),
        sequence_number: meta.current_snapshot().map_or(0, |s| s.sequence_number),
        snapshots: meta.snapshots.len() as u64,
        data_manifests: scan.data_manifests,
        delete_manifests: scan.delete_manifests,
        manifest_bytes: scan.manifest_bytes,
        delete_files: scan.deletes,
        rewrite_preview,
    }
}

/// The current metadata file (the one named, or the folder's current one): its location, its
/// bytes and what it says.
pub(crate) async fn read_metadata(
    loc: &Location,
    stores: &mut Stores<'_>,
    uri: &str,
) -> Result<(String, bytes::Bytes, TableMetadata)> {
    let metadata_file = if is_metadata_file_url(&loc.url) {
        loc.url.as_str().trim_end_matches('/').to_string()
    } else {
        current_metadata_file(stores, uri, loc.url.as_str()).await?
    };
    refuse_link_out_of(&table_folder(loc), &metadata_file, uri, "read")?;
    let (bytes, _) = stores.read(uri, "metadata file", &metadata_file).await?;
    let meta = TableMetadata::parse(&bytes)
        .map_err(|e| iceberg_error(uri, "metadata file", &metadata_file, e))?;
    Ok((metadata_file, bytes, meta))
}

/// The table's name: its folder's, or, for a metadata file's URI, the last segment of the
/// table location it names.
fn table_name(loc: &Location, meta: &TableMetadata) -> String {
    if !is_metadata_file_url(&loc.url) {
        return loc.name();
    }
    meta.location
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .map_or_else(|| loc.name(), str::to_string)
}

/// What the current snapshot's manifests hold, as they are read.
#[derive(Default)]
struct ManifestScan {
    /// Data file sizes by partition values, in the order partitions are first met.
    groups: IndexMap<Vec<Option<String>>, Vec<u64>>,
    deletes: DeleteFiles,
    delete_partitions: std::collections::HashSet<Vec<Option<String>>>,
    data_manifests: u64,
    delete_manifests: u64,
    /// The manifest list's and the manifests' bytes.
    manifest_bytes: u64,
    /// Each data file with its column statistics, when they were read (`skipping`).
    stats: Vec<skipping::StatsFile>,
}

impl ManifestScan {
    /// Counts one manifest's files under their partitions.
    fn add(
        &mut self,
        m: &ManifestRef,
        n: u64,
        files: Vec<ManifestFile>,
        spec: &SpecView,
        columns: usize,
    ) {
        self.manifest_bytes += n;
        if m.deletes {
            self.delete_manifests += 1;
        } else {
            self.data_manifests += 1;
        }
        for f in files {
            let values = spec.values(&f.partition, columns);
            let d = &mut self.deletes;
            match f.content {
                FileContent::Data => {
                    if let Some(stats) = f.stats {
                        self.stats.push(skipping::StatsFile {
                            partition: values.clone(),
                            size: f.size,
                            records: f.records,
                            stats: *stats,
                        });
                    }
                    self.groups.entry(values).or_default().push(f.size)
                }
                FileContent::PositionDeletes => {
                    d.position_files += 1;
                    d.position_bytes += f.size;
                    d.position_records += f.records;
                    self.delete_partitions.insert(values);
                }
                FileContent::EqualityDeletes => {
                    d.equality_files += 1;
                    d.equality_bytes += f.size;
                    d.equality_records += f.records;
                    self.delete_partitions.insert(values);
                }
            }
        }
    }
}

/// Reads the manifests of a snapshot.
struct SnapshotReader<'a> {
    loc: &'a Location,
    opts: &'a OpenOptions,
    uri: &'a str,
    meta: &'a TableMetadata,
    columns: &'a [String],
    progress: &'a (dyn Fn(LoadProgress) + Send + Sync),
    /// Decode each data file's column statistics too (`skipping`).
    stats: bool,
}

impl SnapshotReader<'_> {
    /// Reads the snapshot's manifest list, then its manifests concurrently, into `scan`.
    async fn read(
        &self,
        snap: &Snapshot,
        stores: &mut Stores<'_>,
        scan: &mut ManifestScan,
    ) -> Result<()> {
        let uri = self.uri;
        let Some(list_uri) = snap.manifest_list.clone() else {
            return Err(EngineError::Unsupported {
                uri: uri.to_string(),
                detail: "the current snapshot lists its manifests inline (an early Iceberg v1 writer); lakehealth reads manifest lists only".into(),
            });
        };
        self.inside("manifest list", &list_uri)?;
        let (list_bytes, n) = stores.read(uri, "manifest list", &list_uri).await?;
        scan.manifest_bytes += n;
        let list = read_manifest_list(&list_bytes)
            .map_err(|e| iceberg_error(uri, "manifest list", &list_uri, e))?;
        let total = list.len();
        (self.progress)(LoadProgress::ReadingManifests { done: 0, total });
        // Resolve every store first: reads then run concurrently, in manifest order.
        let mut reads = Vec::with_capacity(total);
        for m in &list {
            self.inside("manifest", &m.path)?;
            reads.push((m.clone(), stores.resolve(&m.path)?));
        }
        // Futures built eagerly: a closure kept inside the stream makes the spawned load
        // future fail the compiler's `Send` proof (higher-ranked lifetimes of `dyn ObjectStore`).
        let reads: Vec<_> = reads
            .into_iter()
            .map(|(m, (store, path))| fetch_manifest(uri.to_string(), m, store, path, self.stats))
            .collect();
        let mut fetched =
            futures::stream::iter(reads).buffered(self.opts.replay.io_concurrency.max(1));
        let types = self.meta.field_types();
        let specs: HashMap<i32, SpecView> = self
            .meta
            .specs()
            .iter()
            .map(|s| (s.spec_id, SpecView::new(s, self.columns, &types)))
            .collect();
        let mut done = 0;
        while let Some(r) = fetched.next().await {
            let (m, n, files) = r?;
            done += 1;
            (self.progress)(LoadProgress::ReadingManifests { done, total });
            let Some(spec) = specs.get(&m.spec_id) else {
                return Err(iceberg_error(
                    uri,
                    "manifest",
                    &m.path,
                    format!("partition spec {} is not in the table metadata", m.spec_id),
                ));
            };
            scan.add(&m, n, files, spec, self.columns.len());
        }
        Ok(())
    }

    fn inside(&self, what: &str, target: &str) -> Result<()> {
        read_inside(self.loc, self.opts, self.uri, what, target)
    }
}

/// Metadata can point anywhere: only paths under the table's folder are read, unless the user
/// trusts the metadata's paths.
pub(crate) fn read_inside(
    loc: &Location,
    opts: &OpenOptions,
    uri: &str,
    what: &str,
    target: &str,
) -> Result<()> {
    let root = table_folder(loc);
    if is_under(&root, target) {
        // Inside by name: a link must not lead it out.
        return refuse_link_out_of(&root, target, uri, "read");
    }
    if opts.trust_metadata_paths {
        return Ok(());
    }
    Err(EngineError::Unsupported {
        uri: uri.to_string(),
        detail: format!(
            "the metadata points the {what} at {target}, outside the table's folder {root}; lakehealth reads only under the table (metadata can point anywhere). If the table was copied or moved and you trust its metadata, pass --trust-metadata-paths"
        ),
    })
}

/// The warning about merge-on-read delete files, when there are some.
fn delete_files_warning(deletes: &DeleteFiles) -> Option<String> {
    (deletes.files() > 0).then(|| {
        format!(
            "{} delete files ({}; {}) in {} partitions: every scan merges them into the data files; Iceberg's rewrite_position_delete_files or rewrite_data_files (delete-file-threshold) removes them",
            deletes.files(),
            format_bytes(deletes.bytes()),
            deletes.describe(),
            deletes.partitions
        )
    })
}

/// The snapshot history as log health: versions are snapshots, the "log" is the metadata file,
/// the manifest list and the manifests.
fn snapshot_log_health(
    meta: &TableMetadata,
    commits: &[crate::delta::log::state::CommitSummary],
    metadata_bytes: u64,
    scan: &ManifestScan,
) -> LogHealth {
    let current = meta.current_snapshot();
    let versions = snapshot_versions(&meta.snapshots);
    let version = current
        .and_then(|s| versions.get(&s.snapshot_id).copied())
        .unwrap_or(0);
    let timestamps: Vec<i64> = commits.iter().filter_map(|c| c.timestamp_ms).collect();
    let mut operations = std::collections::BTreeMap::new();
    for c in commits {
        *operations.entry(c.operation.clone()).or_insert(0) += 1;
    }
    LogHealth {
        version,
        checkpoint_version: None,
        commits_since_checkpoint: 0,
        json_bytes_since_checkpoint: 0,
        checkpoint_interval: 0,
        checkpoint_overdue: false,
        log_bytes: metadata_bytes + scan.manifest_bytes,
        log_files: 1 + scan.data_manifests + scan.delete_manifests + u64::from(current.is_some()),
        last_commit_ms: commits.first().and_then(|c| c.timestamp_ms),
        window_commits: commits.len(),
        commits_per_minute: rate_per_minute(&timestamps),
        operations,
        min_reader_version: None,
        min_writer_version: None,
        features: Vec::new(),
        rewrite: crate::stats::log_health::Rewrite::of(commits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_table_folder_are_read() {
        let root = "s3://lake/wh/t/";
        assert!(is_under(root, "s3://lake/wh/t/metadata/snap-1.avro"));
        assert!(!is_under(root, "s3://lake/wh/t2/metadata/snap-1.avro"));
        assert!(!is_under(root, "s3://other/wh/t/metadata/snap-1.avro"));
        assert!(!is_under(root, "s3://lake/wh/t/../u/x.avro"));
        assert!(!is_under(root, "file:///etc/passwd"));
        let local = "file:///data/t/";
        assert!(is_under(local, "/data/t/metadata/m.avro"));
        assert!(!is_under(local, "/etc/passwd"));
        assert!(!is_under(local, "/data/t/../../etc/passwd"));
        assert!(!is_under(local, "not a uri"));
    }

    #[test]
    fn the_table_folder_of_a_metadata_file_is_above_its_metadata_folder() {
        let l = Location::parse("s3://lake/wh/t/metadata/v3.metadata.json").unwrap();
        assert_eq!(table_folder(&l), "s3://lake/wh/t/");
        let l = Location::parse("s3://lake/wh/t").unwrap();
        assert_eq!(table_folder(&l), "s3://lake/wh/t/");
    }

    #[test]
    fn metadata_versions_of_catalog_and_hadoop_names() {
        assert_eq!(
            metadata_version("00012-1620eba6-2530-4e26-b9a0-960922b4a2a5.metadata.json"),
            Some(12)
        );
        assert_eq!(metadata_version("v3.metadata.json"), Some(3));
        assert_eq!(metadata_version("v3.gz.metadata.json"), Some(3));
        assert_eq!(metadata_version("snap-1-0-x.avro"), None);
        assert_eq!(metadata_version("version-hint.text"), None);
    }

    fn manifest_list_bytes(entries: &[(&str, i32)]) -> Vec<u8> {
        use apache_avro::types::Value;
        let schema = apache_avro::Schema::parse_str(
            r#"{"type": "record", "name": "manifest_file", "fields": [
              {"name": "manifest_path", "type": "string"},
              {"name": "manifest_length", "type": "long"},
              {"name": "partition_spec_id", "type": "int"},
              {"name": "content", "type": "int"}]}"#,
        )
        .unwrap();
        let mut w = apache_avro::Writer::new(&schema, Vec::new()).unwrap();
        for &(path, content) in entries {
            w.append_value(Value::Record(vec![
                ("manifest_path".into(), Value::String(path.into())),
                ("manifest_length".into(), Value::Long(1)),
                ("partition_spec_id".into(), Value::Int(0)),
                ("content".into(), Value::Int(content)),
            ]))
            .unwrap();
        }
        w.into_inner().unwrap()
    }

    /// A v2 table written by hand: one data manifest, one delete manifest, a version hint
    /// naming v2 beside a broken v3 (a failed commit's leftover).
    #[tokio::test]
    async fn delete_files_are_counted_apart_and_the_version_hint_is_followed() {
        use super::manifests::tests::manifest_bytes;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let meta = root.join("metadata");
        std::fs::create_dir_all(&meta).unwrap();
        let url = |p: &std::path::Path| Url::from_file_path(p).unwrap().to_string();
        let data = meta.join("m-data.avro");
        std::fs::write(
            &data,
            manifest_bytes(&[
                (1, 0, "/t/data/a.parquet", 100, Some("a")),
                (0, 0, "/t/data/b.parquet", 200, Some("a")),
                (1, 0, "/t/data/c.parquet", 300, None),
                (2, 0, "/t/data/gone.parquet", 999, Some("a")),
            ]),
        )
        .unwrap();
        let deletes = meta.join("m-deletes.avro");
        std::fs::write(
            &deletes,
            manifest_bytes(&[
                (1, 1, "/t/data/pos.parquet", 40, Some("a")),
                (1, 2, "/t/data/eq.parquet", 50, None),
            ]),
        )
        .unwrap();
        let list = meta.join("snap-7.avro");
        std::fs::write(
            &list,
            manifest_list_bytes(&[(&url(&data), 0), (&url(&deletes), 1)]),
        )
        .unwrap();
        let metadata = serde_json::json!({
            "format-version": 2, "location": url(&root), "current-snapshot-id": 7,
            "default-spec-id": 0, "current-schema-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": [
                {"source-id": 2, "field-id": 1000, "transform": "identity", "name": "category"}]}],
            "schemas": [{"schema-id": 0, "type": "struct", "fields": [
                {"id": 1, "name": "id", "type": "long", "required": false},
                {"id": 2, "name": "category", "type": "string", "required": false}]}],
            "properties": {"write.target-file-size-bytes": "1000"},
            "snapshots": [{"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 1000,
                "manifest-list": url(&list), "summary": {"operation": "overwrite"}}]
        });
        std::fs::write(meta.join("v2.metadata.json"), metadata.to_string()).unwrap();
        std::fs::write(meta.join("v3.metadata.json"), "{ cut short").unwrap();
        std::fs::write(meta.join("version-hint.text"), "2\n").unwrap();

        let loc = Location::parse(root.to_str().unwrap()).unwrap();
        let t = load_iceberg(&loc, &OpenOptions::default(), &|_| {})
            .await
            .unwrap();
        assert_eq!((t.stats.files, t.stats.bytes), (3, 600));
        let parts: Vec<(String, u64, u64)> = t
            .partitions
            .iter()
            .map(|p| (p.values.label(), p.stats.files, p.stats.bytes))
            .collect();
        assert_eq!(
            parts,
            vec![
                ("category=a".to_string(), 2, 300),
                ("category=null".to_string(), 1, 300)
            ]
        );
        let ice = t.iceberg.as_ref().unwrap();
        assert!(ice.metadata_file.ends_with("/metadata/v2.metadata.json"));
        assert_eq!(
            ice.delete_files,
            DeleteFiles {
                position_files: 1,
                position_bytes: 40,
                position_records: 10,
                equality_files: 1,
                equality_bytes: 50,
                equality_records: 10,
                partitions: 2,
            }
        );
        assert_eq!((ice.data_manifests, ice.delete_manifests), (1, 1));
        assert!(
            t.warnings
                .iter()
                .any(|w| w.starts_with("2 delete files (90 B")),
            "{:?}",
            t.warnings
        );
        assert_eq!(
            (t.thresholds.target_file_size, t.table_target_file_size),
            (1000, Some(1000))
        );
        assert_eq!((t.version, t.commits.len()), (1, 1));

        // Without the hint the highest version is read: the broken one, and the error says so.
        std::fs::remove_file(meta.join("version-hint.text")).unwrap();
        let e = load_iceberg(&loc, &OpenOptions::default(), &|_| {})
            .await
            .unwrap_err();
        assert!(matches!(e, EngineError::IcebergMetadata { .. }), "{e}");
        assert!(e.to_string().contains("v3.metadata.json"), "{e}");
    }

    #[test]
    fn commits_are_newest_first_with_summary_counts() {
        let m = TableMetadata::parse(
            br#"{"format-version": 2, "location": "/t", "current-snapshot-id": 2, "snapshots": [
              {"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 10, "manifest-list": "/l1",
               "summary": {"operation": "append", "added-data-files": "4", "added-files-size": "400"}},
              {"snapshot-id": 2, "sequence-number": 2, "timestamp-ms": 20, "manifest-list": "/l2",
               "summary": {"operation": "replace", "added-data-files": "1", "deleted-data-files": "4",
                           "added-files-size": "390", "removed-files-size": "400",
                           "engine-name": "spark", "engine-version": "3.5.1"}}]}"#,
        )
        .unwrap();
        let c = commits(&m.snapshots);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (
                c[0].version,
                c[0].operation.as_str(),
                c[0].files_added,
                c[0].files_removed
            ),
            (2, "replace", 1, 4)
        );
        assert_eq!((c[0].bytes_added, c[0].bytes_removed), (390, 400));
        assert!(!c[0].data_change);
        assert_eq!(c[0].engine.as_deref(), Some("spark 3.5.1"));
        assert_eq!(
            (c[1].version, c[1].files_added, c[1].bytes_added),
            (1, 4, 400)
        );
    }
}
