//! The local executor: bins rewritten on this machine, on the job's runtime.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::mpsc;

use crate::compact::executor::{BinResult, RunContext, Work};
use crate::compact::rewrite::{BinError, BinFailure, rewrite_bin};

/// Runs every bin it receives, at most `parallelism` at once, each on its own task (so on the
/// job's multi-threaded runtime they use separate cores). A bin task that panics is reported
/// as a failed bin with every output it had written.
pub(crate) fn spawn_rewriters(
    ctx: RunContext,
    mut work: mpsc::UnboundedReceiver<Work>,
    results: mpsc::Sender<BinResult>,
) -> tokio::task::JoinHandle<()> {
    let RunContext {
        table,
        schema,
        opts,
        cancel,
        counters,
        ..
    } = ctx;
    let slots = Arc::new(tokio::sync::Semaphore::new(opts.parallelism.max(1)));
    tokio::spawn(async move {
        while let Some((values, bin)) = work.recv().await {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                break;
            };
            let results = results.clone();
            let ledger: Arc<Mutex<Vec<String>>> = Arc::default();
            let fut = rewrite_bin(
                table.clone(),
                values.clone(),
                bin,
                schema.clone(),
                opts.rewrite.clone(),
                cancel.clone(),
                counters.clone(),
                ledger.clone(),
            );
            tokio::spawn(async move {
                let r = std::panic::AssertUnwindSafe(fut).catch_unwind().await;
                drop(permit);
                let r = r.unwrap_or_else(|panic| {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panic".into());
                    Err(BinError {
                        partition: values,
                        failure: BinFailure::Panicked(what),
                        outputs: ledger.lock().map(|l| l.clone()).unwrap_or_default(),
                    })
                });
                let _ = results.send(r).await;
            });
        }
    })
}
