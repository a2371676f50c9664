//! The micro-batch loop. Exactly-once: each commit carries `txn {appId: query id, version:
//! batch id}`; on start the writer resumes after the last batch id the log holds, and the
//! conflict checker rejects a concurrent commit of the same batch by another instance.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Transaction};
use deltalake::protocol::{DeltaOperation, OutputMode};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::batch::{reading_sum, sensor_batch};
use crate::error::{EngineError, Result};
use crate::location::Location;

#[derive(Debug, Clone)]
pub struct StreamOptions {
    pub query_id: String,
    pub interval: Duration,
    pub rows: usize,
    /// Stop after this many batches (None: until cancelled).
    pub max_batches: Option<u64>,
    pub storage_options: HashMap<String, String>,
}

/// One committed micro-batch, as reported to the caller (and printed by `lakehealth stream`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchCommitted {
    pub query_id: String,
    pub batch_id: i64,
    pub version: u64,
    pub rows: usize,
    pub reading_sum: i64,
    pub partition: String,
    pub files: usize,
    /// From the start of the write to the commit landing.
    pub latency_ms: f64,
    /// When the commit landed (ms since the epoch).
    #[serde(default)]
    pub committed_at_ms: i64,
    /// This commit also wrote a checkpoint (delta-rs does every `checkpointInterval` commits).
    #[serde(default)]
    pub checkpoint: bool,
    pub retries: usize,
}

fn delta_err(uri: &str, e: deltalake::DeltaTableError) -> EngineError {
    EngineError::from_delta(uri, "appending a micro-batch", e)
}

pub async fn open_delta_table(
    loc: &Location,
    storage_options: &HashMap<String, String>,
) -> Result<DeltaTable> {
    crate::delta::delta_rs::load(loc, storage_options, "opening the table").await
}

/// Opens a sensor table for appending; returns it and the next batch id of the query (one
/// after the last batch id the log holds for it).
async fn resume(loc: &Location, opts: &StreamOptions) -> Result<(DeltaTable, i64)> {
    let uri = loc.display();
    let table = open_delta_table(loc, &opts.storage_options).await?;
    let snapshot = table.snapshot().map_err(|e| delta_err(&uri, e))?;
    let partition_cols = snapshot.metadata().partition_columns().to_vec();
    if partition_cols != [super::batch::PARTITION_COLUMN.to_string()] {
        return Err(EngineError::Unsupported {
            uri,
            detail: format!(
                "the streaming writer appends sensor rows partitioned by {}; this table is partitioned by {:?}. \
                 Point it at a table created by `lakehealth demo`.",
                super::batch::PARTITION_COLUMN,
                partition_cols
            ),
        });
    }
    let last = snapshot
        .transaction_version(table.log_store().as_ref(), &opts.query_id)
        .await
        .map_err(|e| delta_err(&uri, e))?;
    Ok((table, last.map_or(0, |v| v + 1)))
}

/// Writes and commits micro-batch `batch_id` (its `txn` makes the commit exactly-once), then
/// brings `table` up to date.
async fn append_batch(
    table: &mut DeltaTable,
    uri: &str,
    opts: &StreamOptions,
    batch_id: i64,
) -> Result<BatchCommitted> {
    let started = Instant::now();
    let now = chrono::Utc::now();
    let date = now.format("%Y-%m-%d").to_string();
    let batch = sensor_batch(
        &opts.query_id,
        batch_id,
        opts.rows,
        &date,
        now.timestamp_micros(),
    )
    .map_err(|e| EngineError::Encode {
        uri: uri.to_string(),
        what: "building a micro-batch".into(),
        source: Box::new(e),
    })?;
    let sum = reading_sum(&batch);
    let mut writer = RecordBatchWriter::for_table(table).map_err(|e| delta_err(uri, e))?;
    writer.write(batch).await.map_err(|e| delta_err(uri, e))?;
    let adds = writer.flush().await.map_err(|e| delta_err(uri, e))?;
    let files = adds.len();
    let txn = Transaction::new_with_last_update(
        opts.query_id.clone(),
        batch_id,
        Some(now.timestamp_millis()),
    );
    let props = CommitProperties::default().with_application_transaction(txn);
    let snapshot = table.snapshot().map_err(|e| delta_err(uri, e))?;
    let finalized = CommitBuilder::from(props)
        .with_actions(adds.into_iter().map(Action::Add).collect())
        .build(
            Some(snapshot),
            table.log_store(),
            DeltaOperation::StreamingUpdate {
                output_mode: OutputMode::Append,
                query_id: opts.query_id.clone(),
                epoch_id: batch_id,
            },
        )
        .await
        .map_err(|e| delta_err(uri, e))?;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    // Catch up with our own and any concurrent commits before the next batch.
    table
        .update_incremental(None)
        .await
        .map_err(|e| delta_err(uri, e))?;
    Ok(BatchCommitted {
        query_id: opts.query_id.clone(),
        batch_id,
        version: finalized.version() as u64,
        rows: opts.rows,
        reading_sum: sum,
        partition: date,
        files,
        latency_ms,
        committed_at_ms: chrono::Utc::now().timestamp_millis(),
        checkpoint: finalized.metrics.new_checkpoint_created,
        retries: finalized.metrics.num_retries as usize,
    })
}

/// Appends micro-batches until cancelled or `max_batches` is reached; each committed batch is
/// sent on `events`. Returns the number of batches committed by this call.
pub async fn run_stream(
    loc: &Location,
    opts: &StreamOptions,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<BatchCommitted>,
) -> Result<u64> {
    let uri = loc.display();
    if opts.interval.is_zero() {
        // tokio's interval panics on zero; a stream without pause is no stream anyway.
        return Err(EngineError::InvalidRequest(
            "the stream's interval between micro-batches must be above zero".into(),
        ));
    }
    let (mut table, mut batch_id) = resume(loc, opts).await?;
    tracing::info!(query = %opts.query_id, batch_id, "stream resuming");
    let mut committed = 0u64;
    let mut ticker = tokio::time::interval(opts.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if opts.max_batches.is_some_and(|m| committed >= m) {
            break;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            _ = ticker.tick() => {}
        }
        let ev = append_batch(&mut table, &uri, opts, batch_id).await?;
        tracing::debug!(?ev, "batch committed");
        let _ = events.send(ev);
        committed += 1;
        batch_id += 1;
    }
    Ok(committed)
}
