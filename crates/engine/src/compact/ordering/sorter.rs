//! A bin's rows sorted through DataFusion's `SortExec`: batches are fed through a channel as
//! the bin's files are read, sorted in memory up to the job's sort budget (a `FairSpillPool`),
//! spilled to sorted runs in the OS temp folder beyond it, and merged as they are read out.
//! So the memory a sort holds is the budget, whatever the bin's size.

use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::compute::SortOptions;
use arrow::datatypes::SchemaRef;
use deltalake::datafusion::error::DataFusionError;
use deltalake::datafusion::execution::TaskContext;
use deltalake::datafusion::execution::memory_pool::FairSpillPool;
use deltalake::datafusion::execution::runtime_env::RuntimeEnvBuilder;
use deltalake::datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use deltalake::datafusion::physical_plan::expressions::col;
use deltalake::datafusion::physical_plan::sorts::sort::SortExec;
use deltalake::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use deltalake::datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use deltalake::datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use deltalake::datafusion::prelude::SessionConfig;
use futures::StreamExt;
use tokio::sync::mpsc;

/// The memory a sort holds by default before it spills.
pub const DEFAULT_SORT_MEMORY: usize = 512 * 1024 * 1024;
/// The least a sort is given: below it merging the spilled runs has no room.
pub const MIN_SORT_MEMORY: usize = 16 * 1024 * 1024;
/// Batches in flight between the reader and the sort.
const CHANNEL: usize = 4;
/// Rows per batch the sort gives back.
const OUTPUT_BATCH_ROWS: usize = 8 * 1024;

pub type Fed = Result<RecordBatch, DataFusionError>;

/// The sort's input: the receiving end of the feed, taken once when the plan runs.
#[derive(Debug)]
struct Feed {
    schema: SchemaRef,
    rx: Mutex<Option<mpsc::Receiver<Fed>>>,
}

impl PartitionStream for Feed {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let rx = self.rx.lock().ok().and_then(|mut g| g.take());
        let stream = match rx {
            Some(rx) => {
                futures::stream::unfold(
                    rx,
                    |mut rx| async move { rx.recv().await.map(|b| (b, rx)) },
                )
                .boxed()
            }
            None => futures::stream::once(async {
                Err(DataFusionError::Internal(
                    "the sort's feed ran twice".into(),
                ))
            })
            .boxed(),
        };
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}

/// A running sort's output: the rows in order once every sender of its feed is dropped. (The
/// first read waits for the whole input, so feeding and that read run together.)
pub struct Sorted {
    pub stream: SendableRecordBatchStream,
    plan: Arc<SortExec>,
}

impl Sorted {
    /// Bytes the sort spilled to disk so far (0: it fit its memory).
    pub fn spilled_bytes(&self) -> u64 {
        self.plan
            .metrics()
            .and_then(|m| m.spilled_bytes())
            .unwrap_or(0) as u64
    }
}

/// Starts sorting batches of `schema` by `columns` (ascending, nulls first, as Spark sorts)
/// within `memory` bytes: the feed's sender, and the sorted output.
pub fn start(
    schema: SchemaRef,
    columns: &[String],
    memory: usize,
) -> Result<(mpsc::Sender<Fed>, Sorted), DataFusionError> {
    let (tx, rx) = mpsc::channel(CHANNEL);
    let feed = Arc::new(Feed {
        schema: schema.clone(),
        rx: Mutex::new(Some(rx)),
    });
    let input = StreamingTableExec::try_new(schema.clone(), vec![feed], None, vec![], false, None)?;
    let options = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let exprs = columns
        .iter()
        .map(|c| Ok(PhysicalSortExpr::new(col(c, &schema)?, options)))
        .collect::<Result<Vec<_>, DataFusionError>>()?;
    let ordering = LexOrdering::new(exprs)
        .ok_or_else(|| DataFusionError::Plan("a sort needs at least one column".into()))?;
    let sort = Arc::new(SortExec::new(ordering, Arc::new(input)));
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(FairSpillPool::new(memory)))
        .build_arc()?;
    let ctx = TaskContext::default()
        .with_session_config(
            SessionConfig::new()
                .with_batch_size(OUTPUT_BATCH_ROWS)
                // Kept back for merging the spilled runs: DataFusion's fixed 10 MB would not
                // fit a small budget, and a quarter leaves the rest for sorting.
                .with_sort_spill_reservation_bytes(memory / 4),
        )
        .with_runtime(runtime);
    let stream = sort.execute(0, Arc::new(ctx))?;
    Ok((tx, Sorted { stream, plan: sort }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, AsArray, Int64Array, StringArray};
    use arrow::datatypes::Int64Type;

    fn batch(ids: Vec<i64>) -> RecordBatch {
        let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("name", Arc::new(StringArray::from(names)) as ArrayRef),
        ])
        .unwrap()
    }

    /// The ids in the order the sort returned them, and the bytes it spilled.
    async fn sort_all(batches: Vec<RecordBatch>, memory: usize) -> (Vec<i64>, u64) {
        let schema = batches[0].schema();
        let (tx, mut sorted) = start(schema, &["id".to_string()], memory).unwrap();
        let feed = async move {
            for b in batches {
                if tx.send(Ok(b)).await.is_err() {
                    break;
                }
            }
        };
        let (_, first) = tokio::join!(feed, sorted.stream.next());
        let mut out = Vec::new();
        let mut next = first;
        while let Some(b) = next {
            let b = b.unwrap();
            out.extend(
                b.column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .copied(),
            );
            next = sorted.stream.next().await;
        }
        (out, sorted.spilled_bytes())
    }

    #[tokio::test]
    async fn rows_come_back_sorted_in_memory() {
        let (out, spilled) =
            sort_all(vec![batch(vec![5, 3, 9]), batch(vec![1, 7])], 64 << 20).await;
        assert_eq!(out, vec![1, 3, 5, 7, 9]);
        assert_eq!(spilled, 0);
    }

    #[tokio::test]
    async fn a_sort_beyond_its_memory_spills_and_still_returns_every_row_in_order() {
        // 200 batches of 10,000 rows (about 40 MB with names) through a 16 MiB budget.
        let batches: Vec<RecordBatch> = (0..200i64)
            .map(|b| {
                batch(
                    (0..10_000i64)
                        .map(|i| (i * 7919 + b * 104_729) % 2_000_000)
                        .collect(),
                )
            })
            .collect();
        let mut want: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        want.sort_unstable();
        let (out, spilled) = sort_all(batches, MIN_SORT_MEMORY).await;
        assert!(spilled > 0, "the sort did not spill");
        assert_eq!(out.len(), want.len());
        assert_eq!(out, want);
    }
}
