//! A sorted or z-ordered bin: every input row (its deletion vector applied, its row ids
//! materialized, conformed and fingerprinted as a bin-packing reads it) is fed to a spilling
//! sort (`ordering::sorter`), keyed first when z-ordered; the rows come back in order and are
//! written with the same rolling by size. The fingerprint is the multiset digest
//! (`row_set_digest`), so the proof holds whatever order the rows come back in, and a row
//! the sort lost, duplicated or changed fails it.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use deltalake::datafusion::error::DataFusionError;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::order_sample::sample;
use super::plan::Bin;
use super::rewrite::{BinFailure, Inputs, Writing};
use crate::compact::ordering::keys::{KEY_COLUMN, ZKeys, without_keys};
use crate::compact::ordering::sorter::{self, Fed};
use crate::compact::ordering::zorder::BUCKET_BITS;
use crate::compact::ordering::{OrderKind, RowOrder};

/// Where a sorted bin's rows go as they are read: keyed when z-ordered.
pub(crate) struct Feed {
    tx: mpsc::Sender<Fed>,
    keys: Option<ZKeys>,
    /// The schema the sort takes: the file schema, with the key column when z-ordered.
    schema: SchemaRef,
}

impl Feed {
    pub(crate) async fn send(&self, batch: RecordBatch) -> Result<(), BinFailure> {
        let keyed = match &self.keys {
            Some(k) => k.with_keys(batch, &self.schema),
            None => RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec()),
        }
        .map_err(|e| BinFailure::Write(format!("keying rows for the sort: {e}")))?;
        self.tx
            .send(Ok(keyed))
            .await
            .map_err(|_| BinFailure::Write(SORT_STOPPED.into()))
    }
}

const MIN_SLICE_ROWS: usize = 256;
const MAX_SLICE_ROWS: usize = 8 * 1024;

const SORT_STOPPED: &str = "the sort stopped before every row was fed to it";

pub(crate) struct SortSpec<'a> {
    pub order: &'a RowOrder,
    /// Bytes the sort holds before it spills.
    pub memory: usize,
}

impl SortSpec<'_> {
    /// Z-order keys from a sample of the bin (None for a linear sort), and the schema and
    /// columns the sort takes.
    async fn keys(
        &self,
        inputs: &Inputs<'_>,
        bin: &Bin,
    ) -> Result<(Option<ZKeys>, SchemaRef, Vec<String>), BinFailure> {
        let schema = inputs.file_schema.clone();
        if self.order.effective_kind() == OrderKind::Sort {
            return Ok((None, schema, self.order.physical.clone()));
        }
        let samples = sample(inputs.store, &bin.files, &schema, &self.order.physical)
            .await
            .map_err(|(path, e)| BinFailure::Read {
                path,
                detail: format!("sampling the z-order columns: {e}"),
            })?;
        let keys = ZKeys::new(&schema, &self.order.physical, &samples, 1 << BUCKET_BITS)
            .map_err(|e| BinFailure::Setup(format!("z-order keys: {e}")))?;
        Ok((
            Some(keys),
            ZKeys::keyed_schema(&schema),
            vec![KEY_COLUMN.to_string()],
        ))
    }

    /// Feeds every input's live rows to the sort, then writes them back in order, rolling
    /// outputs by size; returns the rows left out as deleted and the bytes the sort spilled.
    pub(crate) async fn copy(
        &self,
        inputs: &Inputs<'_>,
        w: &mut Writing,
        bin: &Bin,
    ) -> Result<(u64, u64), BinFailure> {
        let (keys, schema, columns) = self.keys(inputs, bin).await?;
        let (tx, mut sorted) = sorter::start(schema.clone(), &columns, self.memory)
            .map_err(|e| BinFailure::Setup(format!("starting the sort: {e}")))?;
        w.feed = Some(Feed { tx, keys, schema });
        // The sort's first batch comes once its feed closes: read it while feeding.
        let (copied, first) = tokio::join!(
            async {
                let r = inputs.copy(w, bin).await;
                if let (Err(e), Some(feed)) = (&r, &w.feed) {
                    // Stop the sort rather than let it sort what was fed so far.
                    let why = DataFusionError::Execution(format!("the bin stopped: {e}"));
                    let _ = feed.tx.send(Err(why)).await;
                }
                w.feed = None;
                r
            },
            sorted.stream.next()
        );
        let deleted = match (copied, first.as_ref()) {
            // The feed stopped because the sort did: the sort's error says why.
            (Err(BinFailure::Write(m)), Some(Err(e))) if m == SORT_STOPPED => {
                return Err(BinFailure::Write(format!("sorting: {e}")));
            }
            (Err(e), _) => return Err(e),
            (Ok(_), Some(Err(e))) => return Err(BinFailure::Write(format!("sorting: {e}"))),
            (Ok(d), _) => d,
        };
        let total_rows = w.input.finish().rows.max(1) as f64;
        // An eighth of the rows an output is predicted to hold (one when the input is as
        // large): outputs roll within a few percent of the goal.
        let rows_per_output = total_rows * w.roll.goal / (bin.bytes.max(1) as f64);
        let chunk = ((rows_per_output / 8.0) as usize).clamp(MIN_SLICE_ROWS, MAX_SLICE_ROWS);
        let widen = w.materialize.is_some();
        let mut written = 0u64;
        let mut next = first;
        while let Some(batch) = next {
            if inputs.cancel.is_cancelled() {
                w.writer.reset().await;
                return Err(BinFailure::Cancelled);
            }
            let batch = batch
                .and_then(|b| without_keys(b).map_err(Into::into))
                .map_err(|e| BinFailure::Write(format!("sorting: {e}")))?;
            // Written in slices, so a file can roll within a batch of the sort's.
            let mut at = 0;
            while at < batch.num_rows() {
                let n = chunk.min(batch.num_rows() - at);
                w.writer
                    .write(batch.slice(at, n), widen)
                    .await
                    .map_err(BinFailure::Write)?;
                at += n;
                written += n as u64;
                let consumed = bin.bytes as f64 * written as f64 / total_rows;
                if w.roll.should_roll(consumed, w.writer.buffer_len() as u64) {
                    let out_bytes = w.flush().await?;
                    w.roll.rolled(consumed, out_bytes);
                }
            }
            next = sorted.stream.next().await;
        }
        Ok((deleted, sorted.spilled_bytes()))
    }
}
