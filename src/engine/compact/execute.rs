//! Running a compaction plan: each bin streams its input files through delta-rs's
//! `RecordBatchWriter` (bounded memory, statistics written for every output), rolls outputs by
//! their measured encoded size so they land in the target band, checks that every row read was
//! written, and is committed on its own as soon as it finishes: an OPTIMIZE commit of
//! `remove`s and `add`s with `dataChange=false`, built on the plan's snapshot and checked by
//! delta-rs's conflict checker (blind appends never conflict), with its retries.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::cast;
use arrow::datatypes::{Schema, SchemaRef};
use delta_kernel::expressions::Scalar;
use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, Remove};
use deltalake::protocol::DeltaOperation;
use deltalake::writer::{DeltaWriter, RecordBatchWriter, WriteMode};
use futures::StreamExt;
use indexmap::IndexMap;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{CommitRecord, JobEvent, JobSummary, Progress};
use super::plan::{Bin, CompactionPlan};
use super::table::CompactionTable;
use crate::engine::parquet_reader::StoreReader;
use crate::engine::stats::table_report::PartitionValues;

#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Output files are rolled when their encoded size reaches this.
    pub target_file_size: u64,
    /// Bins rewritten at once (each is one reader and one writer).
    pub parallelism: usize,
    pub compression: Compression,
    /// Recorded in the OPTIMIZE commit's operationParameters.
    pub predicate: Option<String>,
    /// Output/input bytes assumed until the first output of a bin is measured.
    pub compression_ratio: f64,
}

#[derive(Debug, Default)]
struct Counters {
    files_read: AtomicU64,
    rows: AtomicU64,
    bins_done: AtomicU64,
}

struct BinOutput {
    partition: String,
    adds: Vec<Add>,
    removes: Vec<Remove>,
    rows: u64,
    bytes_in: u64,
}

struct BinError {
    partition: String,
    error: String,
    orphans: Vec<String>,
}

/// Outputs aim 10% above the target so that compression variance does not leave them below it.
const ROLL_MARGIN: f64 = 1.1;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Casts or null-fills each column to the table's file schema (older files may predate a column,
/// Spark's INT96 timestamps read as nanoseconds).
fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, String> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let n = batch.num_rows();
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(c) => cast(c, f.data_type()).map_err(|e| format!("column {}: {e}", f.name())),
            None if f.is_nullable() => Ok(new_null_array(f.data_type(), n)),
            None => Err(format!(
                "input file lacks the non-nullable column {}",
                f.name()
            )),
        })
        .collect::<Result<_, _>>()?;
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
}

fn num_records(add: &Add) -> Option<u64> {
    let stats: serde_json::Value = serde_json::from_str(add.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_u64()
}

fn scalars(
    table: &DeltaTable,
    values: &PartitionValues,
) -> Result<IndexMap<String, Scalar>, String> {
    let snapshot = table.snapshot().map_err(|e| e.to_string())?;
    let schema = snapshot.schema();
    let mut out = IndexMap::new();
    for (col, v) in &values.0 {
        let field = schema
            .field(col)
            .ok_or_else(|| format!("partition column {col} is not in the schema"))?;
        let prim = field
            .data_type()
            .as_primitive_opt()
            .ok_or_else(|| format!("partition column {col} is not a primitive type"))?;
        let s = match v {
            Some(v) => prim.parse_scalar(v).map_err(|e| e.to_string())?,
            None => Scalar::Null(field.data_type().clone()),
        };
        out.insert(col.clone(), s);
    }
    Ok(out)
}

async fn delete_all(store: &Arc<dyn ObjectStore>, paths: &[String]) -> Vec<String> {
    let mut left = Vec::new();
    for p in paths {
        let ok = match Path::from_url_path(p) {
            Ok(path) => store.delete(&path).await.is_ok(),
            Err(_) => false,
        };
        if !ok {
            left.push(p.clone());
        }
    }
    left
}

async fn run_bin(
    table: DeltaTable,
    values: PartitionValues,
    bin: Bin,
    file_schema: SchemaRef,
    opts: ExecOptions,
    cancel: CancellationToken,
    counters: Arc<Counters>,
) -> Result<BinOutput, BinError> {
    let partition = values.label();
    let fail = |error: String, orphans: Vec<String>| BinError {
        partition: partition.clone(),
        error,
        orphans,
    };
    let pv = scalars(&table, &values).map_err(|e| fail(e, vec![]))?;
    let props = WriterProperties::builder()
        .set_compression(opts.compression)
        .build();
    let mut writer = RecordBatchWriter::for_table(&table)
        .map_err(|e| fail(e.to_string(), vec![]))?
        .with_writer_properties(props);
    let store = table.object_store();
    let total_in = bin.bytes as f64;
    let mut adds: Vec<Add> = Vec::new();
    let mut consumed_done = 0.0; // input bytes of files fully read
    let mut consumed_at_flush = 0.0;
    let mut rows_in = 0u64;
    let mut ratio = opts.compression_ratio.clamp(0.05, 5.0);
    for f in &bin.files {
        if cancel.is_cancelled() {
            writer.reset();
            let orphans: Vec<String> = adds.iter().map(|a| a.path.clone()).collect();
            return Err(fail("cancelled".into(), orphans));
        }
        let orphans = |adds: &[Add]| adds.iter().map(|a| a.path.clone()).collect::<Vec<_>>();
        let path = Path::parse(&f.store_path)
            .map_err(|e| fail(format!("{}: {e}", f.path), orphans(&adds)))?;
        let reader = StoreReader::new(store.clone(), path, Some(f.size));
        let builder = ParquetRecordBatchStreamBuilder::new(reader)
            .await
            .map_err(|e| fail(format!("reading {}: {e}", f.path), orphans(&adds)))?;
        let file_rows = builder.metadata().file_metadata().num_rows().max(1) as f64;
        let mut stream = builder
            .with_batch_size(32 * 1024)
            .build()
            .map_err(|e| fail(format!("reading {}: {e}", f.path), orphans(&adds)))?;
        let mut rows_file = 0u64;
        while let Some(batch) = stream.next().await {
            let batch =
                batch.map_err(|e| fail(format!("reading {}: {e}", f.path), orphans(&adds)))?;
            let n = batch.num_rows() as u64;
            let batch = conform(batch, &file_schema)
                .map_err(|e| fail(format!("{}: {e}", f.path), orphans(&adds)))?;
            writer
                .write_partition(batch, &pv, WriteMode::Default)
                .await
                .map_err(|e| fail(format!("writing: {e}"), orphans(&adds)))?;
            rows_file += n;
            counters.rows.fetch_add(n, Ordering::Relaxed);
            // Roll the output when its predicted size reached the target and what remains
            // would still make a file of at least the target; otherwise the remainder joins
            // this file, so no small tail file is produced. Sizes are predicted from input
            // bytes consumed times the output/input ratio measured on this bin's finished files
            // (the writer's own size estimate is pre-compression and overshoots).
            let consumed = consumed_done + f.size as f64 * (rows_file as f64 / file_rows);
            let goal = opts.target_file_size as f64 * ROLL_MARGIN;
            let cur_out = (consumed - consumed_at_flush) * ratio;
            let remaining_out = (total_in - consumed).max(0.0) * ratio;
            if cur_out >= goal && remaining_out >= goal {
                let flushed = writer
                    .flush()
                    .await
                    .map_err(|e| fail(format!("writing: {e}"), orphans(&adds)))?;
                let out: u64 = flushed.iter().map(|a| a.size.max(0) as u64).sum();
                let inp = consumed - consumed_at_flush;
                if out > 0 && inp > 0.0 {
                    ratio = out as f64 / inp;
                }
                adds.extend(flushed);
                consumed_at_flush = consumed;
            }
        }
        rows_in += rows_file;
        consumed_done += f.size as f64;
        counters.files_read.fetch_add(1, Ordering::Relaxed);
    }
    let flushed = writer.flush().await.map_err(|e| {
        fail(
            format!("writing: {e}"),
            adds.iter().map(|a| a.path.clone()).collect(),
        )
    })?;
    adds.extend(flushed);
    for a in &mut adds {
        a.data_change = false;
    }
    // Never commit a bin that lost or invented a row.
    let rows_out: Option<u64> = adds.iter().map(num_records).sum();
    if rows_out != Some(rows_in) {
        return Err(fail(
            format!(
                "row count check failed: read {rows_in} rows, wrote {rows_out:?}; bin not committed"
            ),
            adds.iter().map(|a| a.path.clone()).collect(),
        ));
    }
    let partition_map: HashMap<String, Option<String>> = values.0.iter().cloned().collect();
    let now = now_ms();
    let removes = bin
        .files
        .iter()
        .map(|f| Remove {
            path: f.path.clone(),
            data_change: false,
            deletion_timestamp: Some(now),
            extended_file_metadata: Some(true),
            partition_values: Some(partition_map.clone()),
            size: Some(f.size as i64),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        })
        .collect();
    counters.bins_done.fetch_add(1, Ordering::Relaxed);
    Ok(BinOutput {
        partition,
        adds,
        removes,
        rows: rows_in,
        bytes_in: bin.bytes,
    })
}

async fn commit(
    ct: &CompactionTable,
    out: &BinOutput,
    opts: &ExecOptions,
) -> Result<CommitRecord, String> {
    let snapshot = ct.table.snapshot().map_err(|e| e.to_string())?;
    let mut actions: Vec<Action> = out.removes.iter().cloned().map(Action::Remove).collect();
    actions.extend(out.adds.iter().cloned().map(Action::Add));
    let props = CommitProperties::default()
        .with_create_checkpoint(false)
        .with_max_retries(25);
    let finalized = CommitBuilder::from(props)
        .with_actions(actions)
        .build(
            Some(snapshot),
            ct.table.log_store(),
            DeltaOperation::Optimize {
                predicate: opts.predicate.clone(),
                target_size: opts.target_file_size as i64,
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(CommitRecord {
        version: finalized.version() as u64,
        files_removed: out.removes.len() as u64,
        files_added: out.adds.len() as u64,
        bytes_removed: out.bytes_in,
        bytes_added: out.adds.iter().map(|a| a.size.max(0) as u64).sum(),
        rows: out.rows,
        retries: finalized.metrics.num_retries,
        partitions: vec![out.partition.clone()],
    })
}

fn progress(ct: &CompactionTable, c: &Counters, plan: &CompactionPlan) -> Progress {
    Progress {
        bytes_read: ct.counters.read(),
        bytes_written: ct.counters.written(),
        files_read: c.files_read.load(Ordering::Relaxed),
        rows: c.rows.load(Ordering::Relaxed),
        bins_done: c.bins_done.load(Ordering::Relaxed),
        bins_total: plan.bins,
        files_total: plan.files_in,
        bytes_total: plan.bytes_in,
    }
}

/// Runs every bin of `plan` and commits each as it finishes. Never fails as a whole: errors
/// are reported per bin/commit in the summary and as events.
pub async fn execute(
    ct: &CompactionTable,
    plan: &CompactionPlan,
    opts: &ExecOptions,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<JobEvent>,
) -> JobSummary {
    let started = Instant::now();
    let read0 = ct.counters.read();
    let written0 = ct.counters.written();
    let mut summary = JobSummary {
        table_version_read: plan.table_version,
        ..Default::default()
    };
    let _ = events.send(JobEvent::Started {
        bins: plan.bins,
        files: plan.files_in,
        bytes: plan.bytes_in,
    });
    let file_schema: SchemaRef =
        match ct
            .table
            .snapshot()
            .map_err(|e| e.to_string())
            .and_then(|s| {
                let cols = s.metadata().partition_columns().to_vec();
                let full: Schema =
                    deltalake::kernel::engine::arrow_conversion::TryIntoArrow::try_into_arrow(
                        s.schema().as_ref(),
                    )
                    .map_err(|e: arrow::error::ArrowError| e.to_string())?;
                Ok(Arc::new(Schema::new(
                    full.fields()
                        .iter()
                        .filter(|f| !cols.contains(f.name()))
                        .cloned()
                        .collect::<Vec<_>>(),
                )))
            }) {
            Ok(s) => s,
            Err(e) => {
                summary.errors.push(e);
                let _ = events.send(JobEvent::Finished(summary.clone()));
                return summary;
            }
        };
    let counters = Arc::new(Counters::default());
    let bins: Vec<(PartitionValues, Bin)> = plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(|b| (p.values.clone(), b.clone())))
        .collect();
    let (tx, mut rx) = mpsc::channel::<Result<BinOutput, BinError>>(opts.parallelism.max(1) * 2);
    // Bins run in their own task so a commit in progress never pauses them, and a slow bin never
    // holds back the commit of one already finished.
    let producer = {
        let table = ct.table.clone();
        let opts = opts.clone();
        let cancel = cancel.clone();
        let counters = counters.clone();
        let slots = Arc::new(tokio::sync::Semaphore::new(opts.parallelism.max(1)));
        tokio::spawn(async move {
            // One task per bin, at most `parallelism` at once: on the job's multi-threaded
            // runtime they run on separate cores.
            for (v, b) in bins {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    break;
                };
                let tx = tx.clone();
                let fut = run_bin(
                    table.clone(),
                    v,
                    b,
                    file_schema.clone(),
                    opts.clone(),
                    cancel.clone(),
                    counters.clone(),
                );
                tokio::spawn(async move {
                    let r = fut.await;
                    drop(permit);
                    let _ = tx.send(r).await;
                });
            }
        })
    };
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    let store = ct.table.object_store();
    loop {
        let r = tokio::select! {
            r = rx.recv() => match r { Some(r) => r, None => break },
            _ = ticker.tick() => {
                let _ = events.send(JobEvent::Progress(progress(ct, &counters, plan)));
                continue;
            }
        };
        match r {
            Ok(out) => {
                let paths: Vec<String> = out.adds.iter().map(|a| a.path.clone()).collect();
                if cancel.is_cancelled() {
                    summary
                        .orphaned_files
                        .extend(delete_all(&store, &paths).await);
                    continue;
                }
                let _ = events.send(JobEvent::BinFinished {
                    partition: out.partition.clone(),
                    files_in: out.removes.len() as u64,
                    files_out: out.adds.len() as u64,
                    bytes_in: out.bytes_in,
                    bytes_out: out.adds.iter().map(|a| a.size.max(0) as u64).sum(),
                    rows: out.rows,
                });
                match commit(ct, &out, opts).await {
                    Ok(rec) => {
                        summary.files_removed += rec.files_removed;
                        summary.files_added += rec.files_added;
                        summary.bytes_removed += rec.bytes_removed;
                        summary.bytes_added += rec.bytes_added;
                        summary.rows += rec.rows;
                        summary.commits.push(rec.clone());
                        let _ = events.send(JobEvent::Committed(rec));
                    }
                    Err(error) => {
                        // Never referenced by the log: safe to delete.
                        let left = delete_all(&store, &paths).await;
                        summary.orphaned_files.extend(left.iter().cloned());
                        summary
                            .errors
                            .push(format!("{}: commit failed: {error}", out.partition));
                        let _ = events.send(JobEvent::CommitFailed {
                            partitions: vec![out.partition],
                            error,
                            orphaned_files: left,
                        });
                    }
                }
            }
            Err(e) => {
                let left = delete_all(&store, &e.orphans).await;
                summary.orphaned_files.extend(left);
                if e.error != "cancelled" {
                    summary.errors.push(format!("{}: {}", e.partition, e.error));
                    let _ = events.send(JobEvent::BinFailed {
                        partition: e.partition,
                        error: e.error,
                    });
                }
            }
        }
    }
    let _ = producer.await;
    summary.cancelled = cancel.is_cancelled();
    if summary.cancelled {
        let _ = events.send(JobEvent::Cancelled {
            orphaned_files: summary.orphaned_files.clone(),
        });
    }
    let _ = events.send(JobEvent::Progress(progress(ct, &counters, plan)));
    summary.bytes_read = ct.counters.read() - read0;
    summary.bytes_written = ct.counters.written() - written0;
    summary.seconds = started.elapsed().as_secs_f64();
    let _ = events.send(JobEvent::Finished(summary.clone()));
    summary
}
