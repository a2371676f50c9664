//! `c` on an Iceberg table: the compaction goes through the table's catalog, named when the TUI
//! starts (`lakehealth TABLE --catalog URI`). A dry run shows the plan; confirmed, the job runs
//! as `lakehealth compact --catalog` does and the dialog shows its outcome, then the table
//! reloads. Without a catalog, `c` says how to name one.

use super::action::Effect;
use super::app::{App, IcebergDialog, Modal};
use super::preview::{IcebergCompaction, IcebergRequest};
use crate::engine::iceberg::compact::job::IceSummary;
use crate::tui::task_error::TaskError;

impl App {
    pub(super) fn preview_iceberg(&mut self, uri: String, partitions: Vec<String>) -> Vec<Effect> {
        let Some(catalog) = self.iceberg_catalog.clone() else {
            let why = self
                .table
                .as_ref()
                .map(crate::engine::formats::compaction_unsupported)
                .unwrap_or_default();
            self.modals.show_error(why);
            return vec![];
        };
        let id = self.next_id();
        let request = IcebergRequest {
            catalog: catalog.clone(),
            partitions: partitions.clone(),
        };
        self.modals
            .open(Modal::Iceberg(IcebergDialog::new(id, uri.clone(), request)));
        vec![Effect::PlanIceberg {
            id,
            uri,
            catalog,
            partitions,
        }]
    }

    pub(super) fn iceberg_plan_ready(
        &mut self,
        id: u64,
        result: Result<Box<IceSummary>, TaskError>,
    ) -> Vec<Effect> {
        self.preview_ready::<IcebergCompaction>(id, result)
    }

    pub(super) fn iceberg_compacted(
        &mut self,
        id: u64,
        result: Result<String, TaskError>,
    ) -> Vec<Effect> {
        if let Some(Modal::Iceberg(d)) = &mut self.modals.modal
            && d.id == id
        {
            d.running = false;
            d.outcome = Some(result);
        }
        self.reload_table()
    }
}
