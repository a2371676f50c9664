//! The lakehouse janitor's state in the app. Pure transitions; `App::update` calls them.

use std::sync::Arc;

use crate::engine::janitor::fleet::FleetSnapshot;

#[derive(Debug, Default)]
pub struct Fleet {
    /// The janitor's task while it runs.
    task: Option<u64>,
    /// Switched off: its jobs finish their current commit, then it ends.
    pub stopping: bool,
    /// The latest snapshot of its current task.
    pub snapshot: Option<Arc<FleetSnapshot>>,
    /// Tables it watches that the list does not have (created since the root was read).
    pub unlisted: usize,
}

/// What a switch asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Switch {
    Start(u64),
    Stop(u64),
    /// Already stopping: nothing to do.
    Nothing,
}

impl Fleet {
    pub fn is_on(&self) -> bool {
        self.task.is_some()
    }

    /// `a`: on as task `id`, or off.
    pub fn switch(&mut self, id: u64) -> Switch {
        match self.task {
            None => {
                self.task = Some(id);
                self.stopping = false;
                self.snapshot = None;
                Switch::Start(id)
            }
            Some(_) if self.stopping => Switch::Nothing,
            Some(running) => {
                self.stopping = true;
                Switch::Stop(running)
            }
        }
    }

    /// A snapshot of task `id`; false when it is not the current task's (a stale one).
    pub fn updated(&mut self, id: u64, snapshot: Arc<FleetSnapshot>) -> bool {
        if self.task != Some(id) {
            return false;
        }
        self.snapshot = Some(snapshot);
        true
    }

    /// Task `id` ended; false when it is not the current one.
    pub fn stopped(&mut self, id: u64) -> bool {
        if self.task != Some(id) {
            return false;
        }
        *self = Fleet::default();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_starts_then_stops_once_and_a_stale_snapshot_is_ignored() {
        let mut f = Fleet::default();
        assert_eq!(f.switch(7), Switch::Start(7));
        assert!(f.is_on());
        assert!(!f.updated(6, Arc::default()), "an older task's snapshot");
        assert!(f.updated(7, Arc::default()));
        assert_eq!(f.switch(8), Switch::Stop(7));
        assert_eq!(f.switch(9), Switch::Nothing, "already stopping");
        assert!(f.is_on(), "on until its task ends");
        assert!(!f.stopped(6));
        assert!(f.stopped(7));
        assert!(!f.is_on() && f.snapshot.is_none());
    }
}
