//! Runs the maintenance effects for the loader: the vacuum dry run (kept until the user
//! confirms or closes the preview), the vacuum job it previewed, checkpoints, and the
//! skipping measure. Results come back as `Action::VacuumPlanReady`, `Action::Maintenance`
//! and `Action::SkippingReady`.

use crate::tui::task_error::TaskError;
use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::maintenance::{MaintenanceEvent, MaintenanceResult};
use super::tasks::Parked;
use crate::engine::location::Location;
use crate::engine::maintenance::checkpoint::checkpoint;
use crate::engine::maintenance::vacuum::{VacuumPlan, VacuumRequest, plan_vacuum, run_vacuum};
use crate::engine::model::format::TableFormat;
use crate::engine::options::OpenOptions;

type Prepared = (Location, VacuumRequest, VacuumPlan);

pub struct MaintenanceTasks {
    storage_options: HashMap<String, String>,
    /// The TUI's open options (an Iceberg table's skipping reads its manifests with them).
    open: OpenOptions,
    tx: mpsc::UnboundedSender<Action>,
    prepared: Parked<Prepared>,
}

impl MaintenanceTasks {
    pub fn new(open: OpenOptions, tx: mpsc::UnboundedSender<Action>) -> Self {
        Self {
            storage_options: open.storage_options.clone(),
            open,
            tx,
            prepared: Parked::default(),
        }
    }

    /// The dry run, with the table's retention (the TUI offers no override).
    pub fn plan_vacuum(&mut self, id: u64, uri: String) {
        let tx = self.tx.clone();
        let prepared = self.prepared.clone();
        let req = VacuumRequest {
            storage_options: self.storage_options.clone(),
            ..VacuumRequest::default()
        };
        tokio::spawn(async move {
            let work = async {
                let loc = Location::parse(&uri).map_err(TaskError::from)?;
                let plan = plan_vacuum(&loc, &req).await.map_err(TaskError::from)?;
                Ok::<_, TaskError>((loc, plan))
            };
            let result = match work.await {
                Ok((loc, plan)) => {
                    let boxed = Box::new(plan.clone());
                    prepared.park(id, (loc, req, plan));
                    Ok(boxed)
                }
                Err(e) => Err(e),
            };
            let _ = tx.send(Action::VacuumPlanReady { id, result });
        });
    }

    pub fn discard(&mut self, id: u64) {
        self.prepared.discard(id);
    }

    fn send(tx: &mpsc::UnboundedSender<Action>, id: u64, event: MaintenanceEvent) {
        let _ = tx.send(Action::Maintenance { id, event });
    }

    /// Runs the vacuum previewed as `id`: exactly its files, or nothing (`cancel`, the
    /// loader's token for it: a vacuum cancelled before it deletes deletes nothing).
    pub fn start_vacuum(&mut self, id: u64, cancel: CancellationToken) {
        let prepared = self.prepared.take(id);
        let tx = self.tx.clone();
        let Some((loc, req, plan)) = prepared else {
            Self::send(
                &tx,
                id,
                MaintenanceEvent::Finished(Err(
                    "the previewed vacuum is gone; preview it again".into()
                )),
            );
            return;
        };
        tokio::spawn(async move {
            let etx = tx.clone();
            let on_event = move |ev| Self::send(&etx, id, MaintenanceEvent::Vacuum(ev));
            let result = run_vacuum(&loc, &req, &plan, &cancel, &on_event)
                .await
                .map(MaintenanceResult::Vacuum)
                .map_err(TaskError::from);
            Self::send(&tx, id, MaintenanceEvent::Finished(result));
        });
    }

    /// The table's skipping health (read-only; a closed panel drops it when it comes).
    pub fn measure_skipping(&mut self, id: u64, uri: String, format: TableFormat) {
        let tx = self.tx.clone();
        let opts = self.open.clone();
        tokio::spawn(async move {
            let result = match Location::parse(&uri) {
                Ok(loc) => crate::engine::formats::skipping_health(&loc, format, &opts)
                    .await
                    .map(Box::new)
                    .map_err(TaskError::from),
                Err(e) => Err(TaskError::from(e)),
            };
            let _ = tx.send(Action::SkippingReady { id, result });
        });
    }

    pub fn checkpoint(&mut self, id: u64, uri: String) {
        let tx = self.tx.clone();
        let opts = self.storage_options.clone();
        tokio::spawn(async move {
            let result = match Location::parse(&uri) {
                Ok(loc) => checkpoint(&loc, &opts)
                    .await
                    .map(MaintenanceResult::Checkpoint)
                    .map_err(TaskError::from),
                Err(e) => Err(TaskError::from(e)),
            };
            Self::send(&tx, id, MaintenanceEvent::Finished(result));
        });
    }
}
