//! A sorted or z-ordered Iceberg bin, through the same spilling sort and z-order keys as a
//! Delta bin (`compact::ordering`): the order's columns are found in the files by field id,
//! z-order boundaries are cut from a sample of the bin (`compact::order_sample`), every input
//! row is fed to the sort (and to the row-set digest) as it is read, and the rows come back in
//! order into outputs rolled by size. The row-set digest proves the outputs hold the same rows
//! whatever order they come back in.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use deltalake::datafusion::error::DataFusionError;
use futures::StreamExt;
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

use super::IcebergCompactError as E;
use super::order::IceOrder;
use super::plan::IceBin;
use super::rewrite::{Digest, Inputs, RewriteSpec, Sorted};
use crate::compact::order_sample::{SampleSource, sample_sources};
use crate::compact::ordering::OrderKind;
use crate::compact::ordering::keys::{KEY_COLUMN, ZKeys, without_keys};
use crate::compact::ordering::sorter;
use crate::compact::ordering::zorder::BUCKET_BITS;
use crate::iceberg::Stores;

const MIN_SLICE_ROWS: usize = 256;
const MAX_SLICE_ROWS: usize = 8 * 1024;
const SORT_STOPPED: &str = "the sort stopped before every row was fed to it";

/// The names in the files of the top-level columns with `field_ids`.
fn physical_names(schema: &SchemaRef, order: &IceOrder) -> Result<Vec<String>, E> {
    order
        .field_ids
        .iter()
        .zip(&order.order.columns)
        .map(|(id, name)| {
            schema
                .fields()
                .iter()
                .find(|f| {
                    f.metadata()
                        .get(PARQUET_FIELD_ID_META_KEY)
                        .and_then(|v| v.parse::<i32>().ok())
                        == Some(*id)
                })
                .map(|f| f.name().clone())
                .ok_or_else(|| {
                    E::Unsupported(format!(
                        "the bin's files have no column with field id {id} ({name}): they were written before it was added; the bin is left alone"
                    ))
                })
        })
        .collect()
}

/// Z-order keys from a sample of the bin (None for a linear sort), and the schema and columns
/// the sort takes.
async fn keys(
    stores: &mut Stores<'_>,
    bin: &IceBin,
    schema: &SchemaRef,
    order: &IceOrder,
    physical: Vec<String>,
) -> Result<(Option<ZKeys>, SchemaRef, Vec<String>), E> {
    if order.order.effective_kind() == OrderKind::Sort {
        return Ok((None, schema.clone(), physical));
    }
    let mut sources = Vec::new();
    for f in &bin.files {
        let (store, path) = stores.resolve(&f.path)?;
        sources.push(SampleSource {
            store,
            path,
            size: Some(f.size),
            name: f.path.clone(),
        });
    }
    let samples = sample_sources(sources, schema, &physical)
        .await
        .map_err(|(path, e)| E::Sample {
            path,
            detail: e.to_string(),
        })?;
    let keys = ZKeys::new(schema, &physical, &samples, 1 << BUCKET_BITS)
        .map_err(|e| E::Sort(format!("z-order keys: {e}")))?;
    Ok((
        Some(keys),
        ZKeys::keyed_schema(schema),
        vec![KEY_COLUMN.to_string()],
    ))
}

/// Feeds every row of the bin to the sort (and `digest`), and writes them back in order
/// through `w`.
pub(super) async fn copy(
    stores: &mut Stores<'_>,
    bin: &IceBin,
    inputs: &mut Inputs<'_>,
    digest: &mut Digest,
    order: &IceOrder,
    spec: &RewriteSpec<'_>,
    w: &mut Sorted<'_, '_, '_>,
) -> Result<(), E> {
    let schema = inputs.schema.clone();
    let physical = physical_names(&schema, order)?;
    let (keys, sort_schema, columns) = keys(stores, bin, &schema, order, physical).await?;
    let (tx, mut sorted) = sorter::start(sort_schema.clone(), &columns, spec.sort_memory)
        .map_err(|e| E::Sort(format!("starting the sort: {e}")))?;
    let feed = async {
        let tx = tx;
        let r = async {
            while let Some(batch) = inputs.next_batch(stores).await? {
                digest.update(&batch)?;
                let keyed = match &keys {
                    Some(k) => k.with_keys(batch, &sort_schema),
                    None => RecordBatch::try_new(sort_schema.clone(), batch.columns().to_vec()),
                }
                .map_err(|e| E::Sort(format!("keying rows for the sort: {e}")))?;
                tx.send(Ok(keyed))
                    .await
                    .map_err(|_| E::Sort(SORT_STOPPED.into()))?;
            }
            Ok::<(), E>(())
        }
        .await;
        if let Err(e) = &r {
            // Stop the sort rather than let it sort what was fed so far.
            let why = DataFusionError::Execution(format!("the bin stopped: {e}"));
            let _ = tx.send(Err(why)).await;
        }
        r
    };
    // The sort's first batch comes once its feed closes: read it while feeding.
    let (fed, first) = tokio::join!(feed, sorted.stream.next());
    match (fed, first.as_ref()) {
        // The feed stopped because the sort did: the sort's error says why.
        (Err(E::Sort(m)), Some(Err(e))) if m == SORT_STOPPED => {
            return Err(E::Sort(e.to_string()));
        }
        (Err(e), _) => return Err(e),
        (Ok(()), Some(Err(e))) => return Err(E::Sort(e.to_string())),
        (Ok(()), _) => {}
    }
    let chunk = slice_rows(bin, spec.target);
    let mut next = first;
    while let Some(batch) = next {
        let batch = batch
            .and_then(|b| without_keys(b).map_err(Into::into))
            .map_err(|e| E::Sort(e.to_string()))?;
        let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
            .map_err(|e| E::Sort(e.to_string()))?;
        // Written in slices, so a file can roll within a batch of the sort's.
        let mut at = 0;
        while at < batch.num_rows() {
            let n = chunk.min(batch.num_rows() - at);
            w.write(stores, &schema, &batch.slice(at, n)).await?;
            at += n;
        }
        next = sorted.stream.next().await;
    }
    Ok(())
}

/// Rows written at a time: an eighth of what an output is predicted to hold, so outputs roll
/// within a few percent of the target.
fn slice_rows(bin: &IceBin, target: u64) -> usize {
    let rows_per_output = bin.records() as f64 * target as f64 / bin.bytes().max(1) as f64;
    ((rows_per_output / 8.0) as usize).clamp(MIN_SLICE_ROWS, MAX_SLICE_ROWS)
}
