//! The embedded demo: a partitioned sensor table like a real streaming ingest leaves behind
//! (thousands of tiny files in recent days, a few compacted healthy days), built in seconds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use bytes::Bytes;
use chrono::{Duration as ChronoDuration, Utc};
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, DataType, PrimitiveType, StructField, Transaction};
use deltalake::protocol::{DeltaOperation, OutputMode, SaveMode};
use deltalake::{DeltaTable, DeltaTableError};
use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::error::{EngineError, Result};
use super::location::Location;
use super::size::MIB;
use super::stream::batch::{PARTITION_COLUMN, Rng, sensor_batch};

pub const DEMO_TABLE: &str = "streaming_sensor_data";
/// The query id the seeded history was "written" by (shown in the writers panel).
pub const SEED_QUERY: &str = "sensor-ingest-legacy";

/// The demo folder: `--dir`, else the platform data dir.
pub fn default_demo_dir() -> PathBuf {
    directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
        .map(|d| d.data_dir().join("demo"))
        .unwrap_or_else(|| std::env::temp_dir().join("lakehealth-demo"))
}

#[derive(Debug, Clone, Copy)]
pub struct DemoShape {
    /// Days of many small files (before today).
    pub small_days: u32,
    pub small_files_per_day: u32,
    /// Days compacted into one ~140 MiB file each.
    pub healthy_days: u32,
    pub healthy_file_bytes: u64,
}

impl Default for DemoShape {
    fn default() -> Self {
        Self {
            small_days: 3,
            small_files_per_day: 1000,
            healthy_days: 2,
            healthy_file_bytes: 140 * MIB,
        }
    }
}

fn derr(e: DeltaTableError) -> EngineError {
    EngineError::from_delta(DEMO_TABLE, "creating the demo table", e)
}

fn encode_err(e: impl std::error::Error + Send + Sync + 'static) -> EngineError {
    EngineError::Encode {
        uri: DEMO_TABLE.into(),
        what: "writing a demo file".into(),
        source: Box::new(e),
    }
}

fn io_err(dir: &Path, what: &str, e: std::io::Error) -> EngineError {
    EngineError::Io {
        uri: dir.display().to_string(),
        what: what.into(),
        source: e,
    }
}

/// One day of the demo written and committed, as the build goes (it takes seconds: the user
/// sees it move).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoProgress {
    /// The partition value (`ingestion_date`).
    pub day: String,
    /// Its files and their bytes.
    pub files: usize,
    pub bytes: u64,
    /// Files written so far, of all the demo's.
    pub written: usize,
    pub total: usize,
}

/// Creates the demo table in `dir` (or reuses an existing one), telling `progress` each day
/// written; returns its location.
pub async fn ensure_demo_table(
    dir: &Path,
    shape: DemoShape,
    reset: bool,
    progress: &(dyn Fn(DemoProgress) + Sync),
) -> Result<Location> {
    let table_dir = dir.join(DEMO_TABLE);
    if reset && table_dir.exists() {
        std::fs::remove_dir_all(&table_dir)
            .map_err(|e| io_err(&table_dir, "removing the old demo table", e))?;
    }
    if table_dir.join("_delta_log").is_dir() {
        return Location::parse(&table_dir.to_string_lossy());
    }
    std::fs::create_dir_all(&table_dir).map_err(|e| {
        io_err(
            &table_dir,
            "creating the demo folder (pass --dir to put it elsewhere)",
            e,
        )
    })?;
    let loc = Location::parse(&table_dir.to_string_lossy())?;
    create_and_seed(&loc, shape, progress)
        .await
        .inspect_err(|_| {
            // A half-built demo would be reused next time: remove it.
            let _ = std::fs::remove_dir_all(&table_dir);
        })?;
    Ok(loc)
}

fn columns() -> Vec<StructField> {
    vec![
        StructField::new(
            "event_id",
            DataType::Primitive(PrimitiveType::String),
            false,
        ),
        StructField::new(
            "sensor_id",
            DataType::Primitive(PrimitiveType::Integer),
            false,
        ),
        StructField::new(
            "event_time",
            DataType::Primitive(PrimitiveType::Timestamp),
            false,
        ),
        StructField::new(
            "temperature",
            DataType::Primitive(PrimitiveType::Double),
            false,
        ),
        StructField::new("reading", DataType::Primitive(PrimitiveType::Long), false),
        StructField::new(
            PARTITION_COLUMN,
            DataType::Primitive(PrimitiveType::String),
            false,
        ),
    ]
}

/// Creates an empty sensor table at `loc` (used by the demo and by tests).
pub async fn create_sensor_table(loc: &Location) -> Result<DeltaTable> {
    DeltaTable::try_from_url(loc.url.clone())
        .await
        .map_err(derr)?
        .create()
        .with_columns(columns())
        .with_partition_columns([PARTITION_COLUMN])
        .with_table_name(DEMO_TABLE)
        .with_save_mode(SaveMode::ErrorIfExists)
        .await
        .map_err(derr)
}

struct Planned {
    date: String,
    rows: usize,
    big: bool,
    seed: i64,
}

fn encode(batch: &RecordBatch, big: bool) -> Result<Bytes> {
    // Big files: plain and uncompressed, so their size is predictable and writing is fast.
    let props = if big {
        WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(1 << 20))
            .build()
    } else {
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build()
    };
    // Partition values live in the path, not in the file.
    let data = batch.project(&[0, 1, 2, 3, 4]).map_err(encode_err)?;
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, data.schema(), Some(props)).map_err(encode_err)?;
    w.write(&data).map_err(encode_err)?;
    w.close().map_err(encode_err)?;
    Ok(Bytes::from(buf))
}

/// The file's statistics as a Delta writer records them (row count, min, max and null count
/// of every data column, by delta-kernel's collector), so the demo's files skip as a real
/// writer's do.
fn file_stats(batch: &RecordBatch) -> Result<String> {
    use delta_kernel::expressions::ColumnName;
    let data = batch.project(&[0, 1, 2, 3, 4]).map_err(encode_err)?;
    let fields: Vec<StructField> = columns().into_iter().take(5).collect();
    let names: Vec<ColumnName> = fields.iter().map(|f| ColumnName::new([f.name()])).collect();
    let schema = delta_kernel::schema::StructType::try_new(fields).map_err(encode_err)?;
    let mut stats = delta_kernel_engine::stats::FileStatsAccumulator::new(&names, &schema);
    stats.merge(&data).map_err(encode_err)?;
    let collected = stats
        .finish()
        .map_err(encode_err)?
        .ok_or_else(|| encode_err(std::io::Error::other("no statistics collected")))?;
    crate::compact::physical_writer::stats_json(&collected).map_err(encode_err)
}

async fn write_file(store: Arc<dyn ObjectStore>, p: Planned) -> Result<Add> {
    let date = p.date.clone();
    let (bytes, stats) = tokio::task::spawn_blocking(move || {
        let batch = sensor_batch(SEED_QUERY, p.seed, p.rows, &p.date, 0).map_err(encode_err)?;
        Ok::<_, EngineError>((encode(&batch, p.big)?, file_stats(&batch)?))
    })
    .await
    .map_err(encode_err)??;
    let rel = format!(
        "{PARTITION_COLUMN}={date}/part-00000-{}-c000.snappy.parquet",
        uuid::Uuid::new_v4()
    );
    let size = bytes.len() as i64;
    store
        .put(&ObjPath::from(rel.as_str()), bytes.into())
        .await
        .map_err(|e| EngineError::from_store(DEMO_TABLE, &rel, e))?;
    Ok(Add {
        path: rel,
        partition_values: [(PARTITION_COLUMN.to_string(), Some(date))].into(),
        size,
        modification_time: Utc::now().timestamp_millis(),
        data_change: true,
        stats: Some(stats),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

/// Appends `files_per_partition` small files of `rows` rows to each partition of a sensor table,
/// in commits of 200 files (benchmarks and tests use it to build small-file tables fast).
pub async fn seed_small_files(
    loc: &Location,
    partitions: &[String],
    files_per_partition: u32,
    rows: usize,
) -> Result<()> {
    let mut table = super::stream::writer::open_delta_table(loc, &Default::default()).await?;
    let store = table.object_store();
    let mut seed = 1_000_000i64;
    for date in partitions {
        let files = (0..files_per_partition).map(|_| {
            seed += 1;
            Planned {
                date: date.clone(),
                rows,
                big: false,
                seed,
            }
        });
        let adds = write_files(&store, files.collect()).await?;
        for part in adds.chunks(200) {
            commit_adds(&mut table, part, None).await?;
        }
    }
    Ok(())
}

/// The demo's files, oldest day first: healthy compacted days, one mixed day, then days of
/// streaming leftovers (today's only partly filled).
fn seed_plan(shape: DemoShape) -> Vec<(String, Vec<Planned>)> {
    let today = Utc::now().date_naive();
    let day = |back: u32| {
        (today - ChronoDuration::days(back as i64))
            .format("%Y-%m-%d")
            .to_string()
    };
    let mut rng = Rng::new(42);
    let mut plan: Vec<(String, Vec<Planned>)> = Vec::new();
    let mut seed = 0i64;
    let mut next_seed = || {
        seed += 1;
        seed
    };
    let mixed_day = shape.small_days + 1;
    for d in 0..shape.healthy_days {
        let back = mixed_day + shape.healthy_days - d;
        // ~62 bytes per row, plain and uncompressed
        let rows = (shape.healthy_file_bytes / 62) as usize;
        plan.push((
            day(back),
            vec![Planned {
                date: day(back),
                rows,
                big: true,
                seed: next_seed(),
            }],
        ));
    }
    let mixed: Vec<Planned> = (0..8)
        .map(|_| Planned {
            date: day(mixed_day),
            rows: ((2 + rng.below(22)) * MIB / 62) as usize,
            big: true,
            seed: next_seed(),
        })
        .collect();
    plan.push((day(mixed_day), mixed));
    for back in (0..=shape.small_days).rev() {
        let n = if back == 0 {
            shape.small_files_per_day / 6
        } else {
            shape.small_files_per_day
        };
        let files = (0..n)
            .map(|_| Planned {
                date: day(back),
                rows: 100 + rng.below(4000) as usize,
                big: false,
                seed: next_seed(),
            })
            .collect();
        plan.push((day(back), files));
    }
    plan
}

/// Writes the files (8 at a time) and returns their add actions.
async fn write_files(store: &Arc<dyn ObjectStore>, files: Vec<Planned>) -> Result<Vec<Add>> {
    futures::stream::iter(files.into_iter().map(|p| write_file(store.clone(), p)))
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// Commits `adds` as a plain append (big files) or as the next micro-batch of the seed's
/// streaming query, and brings `table` up to date.
async fn commit_adds(table: &mut DeltaTable, adds: &[Add], batch_id: Option<i64>) -> Result<()> {
    let actions: Vec<Action> = adds.iter().cloned().map(Action::Add).collect();
    let (op, props) = match batch_id {
        None => (
            DeltaOperation::Write {
                mode: SaveMode::Append,
                partition_by: Some(vec![PARTITION_COLUMN.into()]),
                predicate: None,
            },
            CommitProperties::default(),
        ),
        Some(batch_id) => {
            let txn = Transaction::new_with_last_update(
                SEED_QUERY,
                batch_id,
                Some(Utc::now().timestamp_millis()),
            );
            let op = DeltaOperation::StreamingUpdate {
                output_mode: OutputMode::Append,
                query_id: SEED_QUERY.into(),
                epoch_id: batch_id,
            };
            (
                op,
                CommitProperties::default().with_application_transaction(txn),
            )
        }
    };
    let snapshot = table.snapshot().map_err(derr)?;
    CommitBuilder::from(props)
        .with_actions(actions)
        .build(Some(snapshot), table.log_store(), op)
        .await
        .map_err(derr)?;
    table.update_incremental(None).await.map_err(derr)
}

async fn create_and_seed(
    loc: &Location,
    shape: DemoShape,
    progress: &(dyn Fn(DemoProgress) + Sync),
) -> Result<()> {
    let mut table = create_sensor_table(loc).await?;
    let store = table.object_store();
    let mut batch_id = 0i64;
    let plan = seed_plan(shape);
    let total = plan.iter().map(|(_, files)| files.len()).sum();
    let mut written = 0;
    for (date, files) in plan {
        let big = files.first().is_some_and(|f| f.big);
        let adds = write_files(&store, files).await?;
        written += adds.len();
        let day = DemoProgress {
            day: date.clone(),
            files: adds.len(),
            bytes: adds.iter().map(|a| a.size.max(0) as u64).sum(),
            written,
            total,
        };
        // Small files arrive as streaming commits of 200 files, like a backlog of micro-batches.
        let chunk = if big { adds.len().max(1) } else { 200 };
        for part in adds.chunks(chunk) {
            let streaming = (!big).then(|| {
                batch_id += 1;
                batch_id - 1
            });
            commit_adds(&mut table, part, streaming).await?;
            tracing::debug!(%date, files = part.len(), "demo commit");
        }
        progress(day);
    }
    // A fresh checkpoint, as a well-kept table would have.
    deltalake::checkpoints::create_checkpoint(&table, None)
        .await
        .map_err(derr)?;
    Ok(())
}
