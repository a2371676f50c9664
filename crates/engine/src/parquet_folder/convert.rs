//! The safe fix for a folder of small Parquet files: convert it to a Delta table in place, then
//! compact it like any Delta table. No data file is rewritten, moved or deleted: the conversion
//! writes one commit naming the files (delta-rs's convert-to-Delta, which reads each file's
//! footer for its schema and statistics).
//!
//! delta-rs's converter lists the folder itself and takes every `*.parquet` file it finds. The
//! table must hold exactly the previewed files (for a Spark sink: the ones its log lists, not the
//! orphans; never `_temporary/` leftovers), so the converter is given a view of the store whose
//! listing holds only those files (`OnlyTheseFiles`); reads and writes pass through unchanged.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use deltalake::kernel::{DataType, PrimitiveType, StructField};
use deltalake::operations::convert_to_delta::ConvertToDeltaBuilder;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{ListResult, ObjectMeta, ObjectStore};
use serde::Serialize;

use crate::delta::log::partition_key::{PartitionSizes, decode};
use crate::detect::{list_children, probe_format};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::format::TableFormat;
use crate::options::OpenOptions;
use crate::parquet_folder::hive::PartitionParser;
use crate::parquet_folder::scan::{Entry, classify, list_folder};
use crate::parquet_folder::spark_sink::{SinkScan, scan_sink};
use crate::progress::LoadProgress;
use crate::size::format_bytes;
use crate::stats::details::{FileGroup, FolderDetails};

/// A partition column and its Delta type (`--partition-by day:date`; string by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionColumn {
    pub name: String,
    pub data_type: PrimitiveType,
}

const TYPES: &str =
    "string, int, long, short, byte, double, float, boolean, date, timestamp, timestamp_ntz";

/// A `--partition-by` value that is not COLUMN or COLUMN:TYPE of a known type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionColumnError {
    #[error("expected COLUMN or COLUMN:TYPE, got {0:?}")]
    NoName(String),
    #[error("unknown type {0:?}; use one of {types}", types = TYPES)]
    UnknownType(String),
}

impl std::str::FromStr for PartitionColumn {
    type Err = PartitionColumnError;

    fn from_str(s: &str) -> std::result::Result<Self, PartitionColumnError> {
        let (name, ty) = match s.split_once(':') {
            Some((n, t)) => (n.trim(), t.trim().to_ascii_lowercase()),
            None => (s.trim(), "string".to_string()),
        };
        if name.is_empty() {
            return Err(PartitionColumnError::NoName(s.to_string()));
        }
        let data_type = match ty.as_str() {
            "string" => PrimitiveType::String,
            "int" | "integer" => PrimitiveType::Integer,
            "long" | "bigint" => PrimitiveType::Long,
            "short" | "smallint" => PrimitiveType::Short,
            "byte" | "tinyint" => PrimitiveType::Byte,
            "double" => PrimitiveType::Double,
            "float" => PrimitiveType::Float,
            "boolean" | "bool" => PrimitiveType::Boolean,
            "date" => PrimitiveType::Date,
            "timestamp" => PrimitiveType::Timestamp,
            "timestamp_ntz" => PrimitiveType::TimestampNtz,
            other => return Err(PartitionColumnError::UnknownType(other.to_string())),
        };
        Ok(Self {
            name: name.to_string(),
            data_type,
        })
    }
}

/// What a conversion will do, shown before it is done (`--dry-run` stops here).
#[derive(Debug, Clone, Serialize)]
pub struct ConvertPlan {
    pub uri: String,
    pub format: TableFormat,
    /// Files the Delta table will hold, and their bytes.
    pub files: u64,
    pub bytes: u64,
    /// Partition columns (in folder order) and their Delta types.
    pub partition_columns: Vec<(String, String)>,
    /// Spark sink: Parquet files its log does not list; they are not added.
    pub orphans: Option<FileGroup>,
    /// Spark sink: files its log lists that are not in the folder (not added: they are gone).
    pub missing: Option<FileGroup>,
    /// Hidden (`_`/`.`) and non-Parquet files: not added.
    pub hidden_files: FileGroup,
    pub other_files: FileGroup,
    /// What the user must do, in order (the conversion is one of the steps).
    pub steps: Vec<String>,
    #[serde(skip)]
    keep: Arc<HashSet<String>>,
    #[serde(skip)]
    fields: Vec<StructField>,
    /// As given, to look again before converting.
    #[serde(skip)]
    partition_by: Vec<PartitionColumn>,
}

impl ConvertPlan {
    /// The preview as plain text (the CLI prints it, the TUI shows it).
    pub fn text(&self) -> String {
        let p = self;
        let mut o = format!(
            "convert {} ({}) to Delta in place: {} files, {}\n",
            p.uri,
            p.format.label(),
            p.files,
            format_bytes(p.bytes)
        );
        if !p.partition_columns.is_empty() {
            let cols: Vec<String> = p
                .partition_columns
                .iter()
                .map(|(c, t)| format!("{c} ({t})"))
                .collect();
            o.push_str(&format!("partition columns: {}\n", cols.join(", ")));
        }
        for (what, g) in [
            (
                "orphan files (not in the sink log), not added",
                p.orphans.as_ref(),
            ),
            (
                "files the sink log lists but the folder lacks",
                p.missing.as_ref(),
            ),
            (
                "hidden files (_ or . prefixed), not added",
                Some(&p.hidden_files),
            ),
            (
                "files that are not Parquet, not added",
                Some(&p.other_files),
            ),
        ] {
            if let Some(g) = g.filter(|g| g.files > 0) {
                o.push_str(&format!(
                    "{what}: {} ({}), e.g. {}\n",
                    g.files,
                    format_bytes(g.bytes),
                    g.examples.join(", ")
                ));
            }
        }
        o.push_str("\nwhat to do:\n");
        for (i, s) in p.steps.iter().enumerate() {
            o.push_str(&format!("  {}. {s}\n", i + 1));
        }
        o
    }
}

/// What the conversion did.
#[derive(Debug, Clone, Serialize)]
pub struct ConvertOutcome {
    pub uri: String,
    pub version: u64,
    pub files: u64,
    pub bytes: u64,
}

/// Looks at the folder and says what converting it would do. Changes nothing.
pub async fn plan_convert(
    loc: &Location,
    opts: &OpenOptions,
    partition_by: &[PartitionColumn],
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<ConvertPlan> {
    crate::root_links::refuse_links_leaving(loc, "convert")?;
    let uri = loc.display();
    let store = loc.open_store(&opts.storage_options)?;
    let children = list_children(&store, &uri, None).await?;
    let format = probe_format(&store, &uri, None, &children).await?;
    let listed = match format {
        Some(TableFormat::ParquetFolder) => {
            list_parquet_folder(loc, &store, &uri, progress).await?
        }
        Some(TableFormat::SparkFileSink) => list_sink(loc, &store, opts, &uri, progress).await?,
        other => return Err(not_convertible(uri, other)),
    };
    let format = format.unwrap_or(TableFormat::ParquetFolder);
    check_convertible(&uri, &listed)?;
    let Listed {
        keep,
        partitions,
        parser,
        details,
    } = listed;
    let fields = partition_fields(&uri, &parser.columns, partition_by, &partitions)?;
    let files = keep.len() as u64;
    let bytes = partitions
        .groups
        .iter()
        .flat_map(|(_, s)| s.iter())
        .sum::<u64>();
    let steps = steps(&uri, format, files, bytes, &details);
    Ok(ConvertPlan {
        uri,
        format,
        files,
        bytes,
        partition_columns: fields
            .iter()
            .map(|f| (f.name().to_string(), f.data_type().to_string()))
            .collect(),
        orphans: details.orphans,
        missing: details.missing,
        hidden_files: details.hidden_files,
        other_files: details.other_files,
        steps,
        keep: Arc::new(keep),
        fields,
        partition_by: partition_by.to_vec(),
    })
}

/// A folder's files to convert (relative paths), sized by partition, and what else it holds.
struct Listed {
    keep: HashSet<String>,
    partitions: PartitionSizes,
    parser: PartitionParser,
    details: FolderDetails,
}

/// Why a folder of `format` (not a Parquet folder or a sink) is not converted.
fn not_convertible(uri: String, format: Option<TableFormat>) -> EngineError {
    match format {
        Some(TableFormat::Delta) => EngineError::InvalidRequest(format!(
            "{uri} is already a Delta table: nothing to convert (compact it with `lakehealth compact`)"
        )),
        Some(TableFormat::Iceberg) => EngineError::Unsupported {
            uri,
            detail: "Iceberg tables are not converted: they already have a log; lakehealth reads them only".into(),
        },
        _ => EngineError::NotATable { uri, depth: 0 },
    }
}

/// Every Parquet file of a plain folder, by its `key=value` folders.
async fn list_parquet_folder(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Listed> {
    let mut keep: HashSet<String> = HashSet::new();
    let mut parser = PartitionParser::default();
    let mut partitions = PartitionSizes::default();
    let mut details = FolderDetails::default();
    details.listing = list_folder(
        store,
        uri,
        !loc.is_local(),
        progress,
        |meta| match classify(meta.location.as_ref()) {
            Entry::Data(rel) => {
                partitions.push(parser.key_of(rel), meta.size);
                keep.insert(rel.to_string());
            }
            Entry::Hidden(rel) => details.hidden_files.add(rel, meta.size),
            Entry::Other(rel) => details.other_files.add(rel, meta.size),
        },
    )
    .await?;
    Ok(Listed {
        keep,
        partitions,
        parser,
        details,
    })
}

/// The files a Spark sink's log lists; refused when a file's size differs from the log's.
async fn list_sink(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    uri: &str,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<Listed> {
    let mut keep: HashSet<String> = HashSet::new();
    let mut resized: Vec<(String, u64, u64)> = Vec::new();
    let SinkScan {
        partitions,
        parser,
        details,
        ..
    } = scan_sink(loc, store, opts, progress, |rel, logged, actual| {
        keep.insert(rel.to_string());
        if logged != actual {
            resized.push((rel.to_string(), logged, actual));
        }
    })
    .await?;
    // Verified before anything is written: the commit would name sizes the files do not
    // have, and readers would fail on them.
    if !resized.is_empty() {
        resized.sort();
        let examples: Vec<String> = resized
            .iter()
            .take(3)
            .map(|(rel, logged, actual)| {
                format!("{rel} (log: {logged} bytes, file: {actual} bytes)")
            })
            .collect();
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: {} file(s) in the sink log (_spark_metadata/) have another size than the file in the folder, e.g. {}; a file was rewritten or the log is stale, so lakehealth does not convert this folder (nothing was changed)",
            resized.len(),
            examples.join(", ")
        )));
    }
    Ok(Listed {
        keep,
        partitions,
        parser,
        details,
    })
}

/// Refuses what delta-rs's converter would get wrong: nothing to convert, files outside
/// `key=value` folders, files not named `*.parquet`, percent-escaped names.
fn check_convertible(uri: &str, listed: &Listed) -> Result<()> {
    let keep = &listed.keep;
    let unsupported = |detail: String| EngineError::Unsupported {
        uri: uri.to_string(),
        detail,
    };
    if keep.is_empty() {
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: no Parquet file to convert"
        )));
    }
    if listed.parser.files_in_plain_folders > 0 {
        return Err(unsupported(format!(
            "{} Parquet files sit in folders not named key=value; delta-rs converts Hive-style folders only. Move them, or convert a folder below",
            listed.parser.files_in_plain_folders
        )));
    }
    // delta-rs's converter takes `*.parquet` files only: a sink file named otherwise would
    // silently be left out of the table.
    if let Some(odd) = keep.iter().find(|p| !p.ends_with(".parquet")) {
        return Err(unsupported(format!(
            "the sink log lists {odd}, which is not named *.parquet; delta-rs's converter would leave it out of the table, so lakehealth does not convert this folder"
        )));
    }
    // delta-rs 1.1's converter percent-decodes each object path into its `add` action, so a
    // Hive-escaped folder (`city=a%20b%2Fc`) would be logged as `city=a b/c`: a file no reader
    // finds. Refuse rather than write a broken table.
    if let Some(escaped) = keep.iter().find(|p| p.contains('%')) {
        return Err(unsupported(format!(
            "{escaped} holds a percent-escaped name; delta-rs 1.1's converter would log it decoded, naming a file that does not exist, so lakehealth does not convert this folder (nothing was changed)"
        )));
    }
    Ok(())
}

/// The partition schema: every `key=value` column found, typed as `--partition-by` says
/// (string by default); every value must parse as its type.
fn partition_fields(
    uri: &str,
    found: &[String],
    given: &[PartitionColumn],
    partitions: &PartitionSizes,
) -> Result<Vec<StructField>> {
    if let Some(g) = given.iter().find(|g| !found.contains(&g.name)) {
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: --partition-by {} names no partition folder; the folders are partitioned by {}",
            g.name,
            if found.is_empty() {
                "nothing (no key=value folders)".to_string()
            } else {
                found.join(", ")
            }
        )));
    }
    let fields: Vec<StructField> = found
        .iter()
        .map(|c| {
            let ty = given
                .iter()
                .find(|g| &g.name == c)
                .map_or(PrimitiveType::String, |g| g.data_type.clone());
            StructField::nullable(c.clone(), DataType::Primitive(ty))
        })
        .collect();
    for (raw, _) in &partitions.groups {
        for (k, v) in decode(raw) {
            let (Some(field), Some(v)) = (fields.iter().find(|f| f.name() == &k), v) else {
                continue;
            };
            if let DataType::Primitive(p) = field.data_type()
                && p.parse_scalar(&v).is_err()
            {
                return Err(EngineError::InvalidRequest(format!(
                    "{uri}: partition value {k}={v:?} is not a {p}; give another type with --partition-by {k}:TYPE ({TYPES})"
                )));
            }
        }
    }
    Ok(fields)
}

fn steps(uri: &str, format: TableFormat, files: u64, bytes: u64, d: &FolderDetails) -> Vec<String> {
    let mut s = Vec::new();
    match format {
        TableFormat::SparkFileSink => {
            s.push(format!(
                "First stop the streaming query that writes into {uri} (query.stop()) and let its last batch finish: a batch written during the conversion would not be in the Delta table."
            ));
            s.push(format!(
                "lakehealth then writes one Delta commit (_delta_log/00000000000000000000.json) naming the {files} files ({}) the sink log lists. No data file is rewritten, moved or deleted; _spark_metadata/ is left as it is.",
                format_bytes(bytes)
            ));
            s.push(format!(
                "Then restart the query with the Delta sink on the same path and the same checkpoint location: .writeStream.format(\"delta\").option(\"checkpointLocation\", <its checkpoint>).start(\"{uri}\"). It resumes after its last batch."
            ));
            s.push("Read the table as Delta from now on (format(\"delta\")): Spark's Parquet readers of the folder still trust _spark_metadata/, which no longer grows.".into());
        }
        _ => {
            s.push(format!(
                "First stop every job that writes Parquet files into {uri}: a file written during the conversion would not be in the Delta table."
            ));
            s.push(format!(
                "lakehealth then writes one Delta commit (_delta_log/00000000000000000000.json) naming the {files} Parquet files ({}). No data file is rewritten, moved or deleted.",
                format_bytes(bytes)
            ));
            s.push(format!(
                "Then restart those jobs writing Delta to the same path (format(\"delta\"), mode append) and read it as Delta: files added to {uri} without a Delta commit are invisible to Delta readers."
            ));
        }
    }
    if let Some(o) = d.orphans.as_ref().filter(|o| o.files > 0) {
        s.push(format!(
            "The {} orphan files ({}) the sink log does not list are not added: Delta readers ignore them, and a VACUUM deletes them after its retention period.",
            o.files,
            format_bytes(o.bytes)
        ));
    }
    s.push("Then compact the Delta table (`lakehealth compact`, or `c` in the table view).".into());
    s
}

/// Converts the folder as `plan` previewed. The commit names exactly the previewed files, and
/// only if the folder still holds exactly them.
pub async fn convert(
    loc: &Location,
    plan: &ConvertPlan,
    opts: &OpenOptions,
) -> Result<ConvertOutcome> {
    let uri = loc.display();
    unchanged_since(loc, plan, opts).await?;
    let derr = |what: &str, e: deltalake::DeltaTableError| EngineError::from_delta(&uri, what, e);
    let config = deltalake::logstore::StorageConfig::parse_options(opts.storage_options.clone())
        .map_err(|e| derr("reading the storage options", e))?;
    let prefix = Path::from_url_path(loc.url.path()).map_err(|e| {
        EngineError::from_store(&uri, "the table path", object_store::Error::from(e))
    })?;
    // Opened by `Location`: a local folder's deletes stay beneath it, through no link.
    let root = loc.open_root_store(&opts.storage_options)?;
    let only: Arc<dyn ObjectStore> = Arc::new(OnlyTheseFiles {
        inner: root.clone(),
        prefix: prefix.clone(),
        keep: plan.keep.clone(),
    });
    let log_store = deltalake::logstore::logstore_with(only, &loc.url, config)
        .map_err(|e| derr("opening the storage", e))?;
    let converted = ConvertToDeltaBuilder::new()
        .with_log_store(log_store)
        .with_partition_schema(plan.fields.clone())
        .await;
    let table = match converted {
        Ok(t) => t,
        Err(e) => {
            // delta-rs's error does not say which file; find it (only on this path: a footer
            // read per file would double the cost of every conversion that works).
            if let Some(bad) = first_unreadable_footer(&root, &prefix, &plan.keep).await {
                return Err(EngineError::InvalidRequest(format!(
                    "{uri}: {bad}; nothing was converted (fix or remove that file, then convert again)"
                )));
            }
            return Err(derr("converting to Delta", e));
        }
    };
    let version = table.version().unwrap_or_default();
    // Checked from the log just written, by lakehealth's own reader.
    let written = crate::delta::report::load_delta(
        loc,
        &loc.open_store(&opts.storage_options)?,
        None,
        opts,
        &|_| {},
    )
    .await?;
    if written.stats.files != plan.files || written.stats.bytes != plan.bytes {
        return Err(EngineError::InvalidRequest(format!(
            "{uri}: the conversion committed version {version} with {} files ({} bytes) where {} files ({} bytes) were previewed; check the table before writing to it",
            written.stats.files, written.stats.bytes, plan.files, plan.bytes
        )));
    }
    Ok(ConvertOutcome {
        uri,
        version,
        files: written.stats.files,
        bytes: written.stats.bytes,
    })
}

/// The first file of `keep` (in name order) whose Parquet footer cannot be read, with the reason.
async fn first_unreadable_footer(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    keep: &HashSet<String>,
) -> Option<String> {
    use parquet::arrow::async_reader::AsyncFileReader;
    let mut names: Vec<&String> = keep.iter().collect();
    names.sort();
    for rel in names {
        // `rel` is made of a listed path's encoded parts.
        let full = match prefix.as_ref() {
            "" => rel.clone(),
            p => format!("{p}/{rel}"),
        };
        let Ok(path) = Path::parse(&full) else {
            continue;
        };
        let mut reader = crate::parquet_reader::StoreReader::new(store.clone(), path, None);
        let footer = reader.get_metadata(None).await;
        if let Err(e) = footer {
            return Some(match reader.not_parquet().await {
                Some(why) => format!("{rel}: {why}"),
                None => format!("{rel} is not a readable Parquet file ({e})"),
            });
        }
    }
    None
}

/// Looks at the folder again: a writer still running (a streaming query's next batch, a job
/// still adding files) would otherwise leave its new files out of the table, or a file it
/// deleted in it. Refuses when the files to convert are not exactly the previewed ones.
async fn unchanged_since(loc: &Location, plan: &ConvertPlan, opts: &OpenOptions) -> Result<()> {
    let now = plan_convert(loc, opts, &plan.partition_by, &|_| {}).await?;
    if now.keep == plan.keep {
        return Ok(());
    }
    let added = now.keep.difference(&plan.keep).count();
    let gone = plan.keep.difference(&now.keep).count();
    Err(EngineError::InvalidRequest(format!(
        "{}: the folder changed since the preview ({added} file(s) added, {gone} gone): a writer is still running. Stop it (the streaming query, the job), preview again, then convert. Nothing was changed",
        plan.uri
    )))
}

/// The table's store as the converter sees it: listings hold only the chosen Parquet files of
/// the table (and everything that is not a Parquet file, and the Delta log); every other
/// operation passes through.
#[derive(Debug)]
struct OnlyTheseFiles {
    inner: Arc<dyn ObjectStore>,
    /// The table's path in `inner`.
    prefix: Path,
    /// Paths relative to the table.
    keep: Arc<HashSet<String>>,
}

impl OnlyTheseFiles {
    fn listed(prefix: &Path, keep: &HashSet<String>, location: &Path) -> bool {
        if location.extension() != Some("parquet") {
            return true;
        }
        let Some(parts) = location.prefix_match(prefix) else {
            return true;
        };
        let rel: Vec<String> = parts.map(|p| p.as_ref().to_string()).collect();
        let rel = rel.join("/");
        rel.starts_with("_delta_log/") || keep.contains(&rel)
    }
}

impl fmt::Display for OnlyTheseFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OnlyTheseFiles({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for OnlyTheseFiles {
    crate::forward_to_inner!(
        put_opts,
        put_multipart_opts,
        get_opts,
        delete_stream,
        copy_opts
    );

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let (table, keep) = (self.prefix.clone(), self.keep.clone());
        self.inner
            .list(prefix)
            .filter(move |r| {
                let show = match r {
                    Ok(meta) => Self::listed(&table, &keep, &meta.location),
                    Err(_) => true,
                };
                futures::future::ready(show)
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let mut r = self.inner.list_with_delimiter(prefix).await?;
        r.objects
            .retain(|m| Self::listed(&self.prefix, &self.keep, &m.location));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_columns_parse_with_types() {
        let c: PartitionColumn = "day:date".parse().unwrap();
        assert_eq!(c.data_type, PrimitiveType::Date);
        let c: PartitionColumn = "city".parse().unwrap();
        assert_eq!(c.data_type, PrimitiveType::String);
        assert!("x:decimalish".parse::<PartitionColumn>().is_err());
        assert!(":int".parse::<PartitionColumn>().is_err());
    }

    #[test]
    fn only_chosen_parquet_files_are_listed() {
        let keep: HashSet<String> = ["d=1/a.parquet".to_string()].into();
        let p = Path::from("lake/t");
        let l = |s: &str| OnlyTheseFiles::listed(&p, &keep, &Path::from(s));
        assert!(l("lake/t/d=1/a.parquet"));
        assert!(!l("lake/t/d=1/orphan.parquet"));
        assert!(!l("lake/t/_temporary/0/a.parquet"));
        assert!(l(
            "lake/t/_delta_log/00000000000000000000.checkpoint.parquet"
        ));
        assert!(l("lake/t/_spark_metadata/0"));
        assert!(l("other/x.parquet"));
    }
}
