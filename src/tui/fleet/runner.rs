//! The loader's side of the lakehouse janitor: the engine janitor over the root, run until its
//! cancel token, its fleet forwarded to the app as it is published.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::janitor::Janitor;
use crate::engine::janitor::fleet::FleetSnapshot;
use crate::engine::janitor::history::{HistoryFile, Line};
use crate::engine::janitor::policy::Policy;
use crate::engine::location::Location;
use crate::engine::options::OpenOptions;
use crate::tui::action::Action;
use crate::tui::task_error::TaskError;

/// What the janitor over a root needs.
pub struct FleetRun {
    pub id: u64,
    pub root: String,
    pub policy: Policy,
    pub history: HistoryFile,
    pub opts: OpenOptions,
}

/// Runs the janitor over the root until `cancel` (its jobs stop before their next commit, and
/// are waited for); every snapshot comes back as `FleetUpdated`, the end as `FleetStopped`.
pub fn start(
    run: FleetRun,
    cancel: CancellationToken,
    tx: UnboundedSender<Action>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let id = run.id;
        let result = watch_root(run, cancel, &tx).await;
        let _ = tx.send(Action::FleetStopped { id, result });
    })
}

async fn watch_root(
    run: FleetRun,
    cancel: CancellationToken,
    tx: &UnboundedSender<Action>,
) -> Result<(), TaskError> {
    let loc = Location::parse(&run.root).map_err(TaskError::from)?;
    let history = run.history.open().map_err(|e| {
        TaskError::from(format!(
            "cannot open the history file {}: {e}",
            run.history.path.display()
        ))
    })?;
    let (ftx, mut frx) = tokio::sync::watch::channel(Arc::new(FleetSnapshot::default()));
    let janitor = Janitor::new(
        vec![loc],
        run.policy,
        run.opts,
        history,
        Box::new(|_: &Line| {}),
        false,
    )
    .with_fleet(ftx);
    let running = async move {
        let mut janitor = janitor;
        janitor.run(false, cancel).await;
        // Dropping it closes the fleet channel: the forwarding below ends.
    };
    let id = run.id;
    let forward = async move {
        while frx.changed().await.is_ok() {
            let snapshot = frx.borrow_and_update().clone();
            if tx.send(Action::FleetUpdated { id, snapshot }).is_err() {
                break;
            }
        }
    };
    tokio::join!(running, forward);
    Ok(())
}
