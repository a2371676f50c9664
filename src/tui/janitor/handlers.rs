//! The app's side of the janitor: `a` switches it on or off, ticks start decision rounds, a
//! round's job is planned and then runs as a manual job does (jobs panel, `x`).

use super::state::Round;
use crate::engine::model::format::TableFormat;
use crate::tui::action::Effect;
use crate::tui::app::App;
use crate::tui::jobs::JobView;
use crate::tui::preview::PlannedJob;
use crate::tui::task_error::TaskError;

impl App {
    /// `a`: switches the janitor on for the open table (a decision round starts at once) or off.
    pub(in crate::tui) fn toggle_janitor(&mut self) -> Vec<Effect> {
        let Some(t) = self.table.as_ref() else {
            return vec![];
        };
        if self.fleet.is_on() && !self.janitor.is_on() {
            self.modals.show_error(
                "the janitor over the root already watches this table (its row on the tables list shows what it does); switch it off there with `a` to run this table's own"
                    .to_string(),
            );
            return vec![];
        }
        if t.format != TableFormat::Delta && !self.janitor.is_on() {
            let why = match t.format {
                TableFormat::Iceberg => "the TUI's janitor watches Delta tables; an Iceberg table's janitor runs as `lakehealth watch TABLE --catalog URI` (its jobs commit through the catalog)".to_string(),
                f => format!("the janitor compacts Delta and Iceberg tables, not {} tables", f.label()),
            };
            self.modals.show_error(why);
            return vec![];
        }
        let uri = t.uri.clone();
        if self.janitor.toggle(&uri) {
            self.janitor_tick()
        } else {
            vec![]
        }
    }

    /// Starts a decision round when the policy's interval has passed (and the table shown is
    /// still the one it is on for; another table switches it off).
    pub(in crate::tui) fn janitor_tick(&mut self) -> Vec<Effect> {
        let shown = self.table.as_ref().map(|t| t.uri.clone());
        if self.janitor.is_on() && self.janitor.table != shown {
            self.janitor.toggle("");
            return vec![];
        }
        if !self.janitor.due_for_cycle(self.clock.now()) {
            return vec![];
        }
        let Some(uri) = shown else { return vec![] };
        let id = self.next_id();
        self.janitor.cycle = Some(id);
        vec![Effect::JanitorCycle { id, uri }]
    }

    /// A round's decisions: the list's flags and the why view follow; the table's job, if the
    /// round decided one, is planned.
    pub(in crate::tui) fn janitor_decided(
        &mut self,
        id: u64,
        result: Result<Round, TaskError>,
    ) -> Vec<Effect> {
        let now = self.clock.now();
        if !self.janitor.decided(id, now, result) {
            return vec![];
        }
        let Some(uri) = self.janitor.table.clone() else {
            return vec![];
        };
        let id = self.next_id();
        self.janitor.starting(id);
        vec![Effect::JanitorJob { id, uri }]
    }

    /// The janitor's job was planned: it runs like a manual job (jobs panel, `x`). A plan with
    /// nothing to do, or none at all, ends it here (the runner recorded why).
    pub(in crate::tui) fn janitor_planned(
        &mut self,
        id: u64,
        result: Result<Box<PlannedJob>, TaskError>,
    ) -> Vec<Effect> {
        match result {
            Ok(planned) if planned.plan.bins > 0 => {
                let uri = self.janitor.table.clone().unwrap_or_default();
                let number = self.job_number();
                self.jobs.push(JobView::new(id, number, uri, &planned.plan));
                // The janitor's own throttle applies: the user can lift it once it runs.
                vec![Effect::StartJob {
                    id,
                    full_speed: false,
                }]
            }
            _ => {
                self.janitor.job_ended(id);
                vec![Effect::DiscardPlan { id }]
            }
        }
    }
}
