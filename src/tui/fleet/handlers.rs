//! The app's side of the lakehouse janitor: `a` on the tables list switches it on or off; its
//! snapshots fill the rows' janitor columns and re-sort the list, keeping the selection.

use std::sync::Arc;

use super::state::Switch;
use crate::engine::janitor::fleet::FleetSnapshot;
use crate::tui::action::Effect;
use crate::tui::app::App;
use crate::tui::task_error::TaskError;
use crate::tui::{layout, view};

impl App {
    /// `a` on the tables list: the janitor over the root, on or off.
    pub(in crate::tui) fn toggle_fleet(&mut self) -> Vec<Effect> {
        let Some(root) = self.root.as_ref().map(|r| r.root.clone()) else {
            return vec![];
        };
        let id = self.next_id();
        match self.fleet.switch(id) {
            Switch::Start(id) => {
                self.tables.set_fleet_keys(true);
                vec![Effect::StartFleet { id, root }]
            }
            Switch::Stop(id) => vec![Effect::StopFleet { id }],
            Switch::Nothing => vec![],
        }
    }

    pub(in crate::tui) fn fleet_updated(
        &mut self,
        id: u64,
        snapshot: Arc<FleetSnapshot>,
    ) -> Vec<Effect> {
        if self.fleet.updated(id, snapshot) {
            self.apply_fleet();
        }
        vec![]
    }

    pub(in crate::tui) fn fleet_stopped(
        &mut self,
        id: u64,
        result: Result<(), TaskError>,
    ) -> Vec<Effect> {
        if !self.fleet.stopped(id) {
            return vec![];
        }
        self.tables.set_fleet_keys(false);
        self.apply_fleet();
        if let Err(e) = result {
            self.modals
                .show_error(format!("the janitor over the root stopped: {e}"));
        }
        vec![]
    }

    /// The rows take the latest snapshot (none: the janitor is off) and the list its order.
    pub(in crate::tui) fn apply_fleet(&mut self) {
        let area = layout::full(self.size);
        let h = layout::list_rows(layout::tables_areas(area, &view::tables_shape(self)).list);
        let Some(r) = self.root.as_mut() else { return };
        self.fleet.unlisted = r.apply_fleet(self.fleet.snapshot.as_deref());
        let keep = self.tables.selected_id(&r.rows);
        self.tables.rebuild(&r.rows, keep.as_ref(), h);
    }
}
