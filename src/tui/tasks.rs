//! The TUI's background work in one place, as yazi's scheduler keeps it: every task by id with
//! its kind, its cancel token and (for jobs) its handle; and the previews parked by id until
//! they run or are discarded. A new kind of work is one `TaskKind` variant and one `Parked`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use crate::engine::compact::budget::Brakes;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// Opening a table or a root.
    Load,
    /// A compaction job (cancelled, it stops before its next commit).
    Job,
    /// Following a table's log.
    Watch,
    /// A vacuum (cancelled before it deletes, it deletes nothing).
    Maintenance,
    /// The lakehouse janitor: its jobs stop before their next commit once cancelled; waited
    /// for on quit as jobs are.
    Janitor,
}

struct Task {
    kind: TaskKind,
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
    /// A job's pace and commit spacing, for lifting them while it runs.
    brakes: Option<Brakes>,
}

#[derive(Default)]
pub struct Tasks {
    map: HashMap<u64, Task>,
}

impl Tasks {
    /// Registers task `id` of `kind`; returns its cancel token. Tasks that ended or were
    /// cancelled are forgotten first (a load or watch never reports its end here).
    pub fn start(&mut self, id: u64, kind: TaskKind) -> CancellationToken {
        self.map.retain(|_, t| {
            !t.cancel.is_cancelled() && t.handle.as_ref().is_none_or(|h| !h.is_finished())
        });
        let cancel = CancellationToken::new();
        self.map.insert(
            id,
            Task {
                kind,
                cancel: cancel.clone(),
                handle: None,
                brakes: None,
            },
        );
        cancel
    }

    /// Keeps the handle of task `id`, to wait for it.
    pub fn attach(&mut self, id: u64, handle: JoinHandle<()>) {
        if let Some(t) = self.map.get_mut(&id) {
            t.handle = Some(handle);
        }
    }

    /// Keeps what holds job `id` back, for `brakes`.
    pub fn set_brakes(&mut self, id: u64, brakes: Brakes) {
        if let Some(t) = self.map.get_mut(&id) {
            t.brakes = Some(brakes);
        }
    }

    /// What holds job `id` back, while it runs (a job that ended has nothing to lift).
    pub fn brakes(&self, id: u64) -> Option<&Brakes> {
        self.map
            .get(&id)
            .filter(|t| t.handle.as_ref().is_none_or(|h| !h.is_finished()))
            .and_then(|t| t.brakes.as_ref())
    }

    /// Cancels task `id` if it is of `kind`. A job stays known until it ends (it is waited for
    /// on quit); a load or a watch is forgotten.
    pub fn cancel(&mut self, id: u64, kind: TaskKind) {
        let Some(t) = self.map.get(&id).filter(|t| t.kind == kind) else {
            return;
        };
        t.cancel.cancel();
        if !matches!(kind, TaskKind::Job | TaskKind::Janitor) {
            self.map.remove(&id);
        }
    }

    /// Cancels every task (on quit); jobs stay known to be waited for.
    pub fn cancel_all(&mut self) {
        for t in self.map.values() {
            t.cancel.cancel();
        }
        self.map.retain(|_, t| t.handle.is_some());
    }

    /// Tasks of `kind` whose handle has not finished.
    pub fn active(&self, kind: TaskKind) -> usize {
        self.map
            .values()
            .filter(|t| t.kind == kind && t.handle.as_ref().is_some_and(|h| !h.is_finished()))
            .count()
    }

    /// The handles of every task of `kind`, to wait for them.
    pub fn take_handles(&mut self, kind: TaskKind) -> Vec<JoinHandle<()>> {
        self.map
            .values_mut()
            .filter(|t| t.kind == kind)
            .filter_map(|t| t.handle.take())
            .collect()
    }
}

/// Previews parked by id until they run (`take`) or are closed (`discard`); shared with the
/// background tasks that make them.
pub struct Parked<T>(Arc<Mutex<HashMap<u64, T>>>);

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(HashMap::new())))
    }
}

impl<T> Clone for Parked<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Parked<T> {
    pub fn park(&self, id: u64, value: T) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, value);
        }
    }

    pub fn take(&self, id: u64) -> Option<T> {
        self.0.lock().ok()?.remove(&id)
    }

    pub fn discard(&self, id: u64) {
        drop(self.take(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_checks_the_kind_and_jobs_stay_known_until_waited_for() {
        let mut t = Tasks::default();
        let load = t.start(1, TaskKind::Load);
        let job = t.start(2, TaskKind::Job);
        t.attach(2, tokio::spawn(async {}));
        t.cancel(1, TaskKind::Job);
        assert!(!load.is_cancelled(), "a load is not cancelled as a job");
        t.cancel(1, TaskKind::Load);
        assert!(load.is_cancelled());
        t.cancel(2, TaskKind::Job);
        assert!(job.is_cancelled());
        assert_eq!(
            t.take_handles(TaskKind::Job).len(),
            1,
            "still there to wait for"
        );
        let watch = t.start(3, TaskKind::Watch);
        t.cancel_all();
        assert!(watch.is_cancelled());
    }

    #[test]
    fn a_parked_preview_is_taken_once_or_discarded() {
        let p: Parked<&str> = Parked::default();
        p.park(1, "plan");
        p.park(2, "other");
        assert_eq!(p.take(1), Some("plan"));
        assert_eq!(p.take(1), None);
        p.discard(2);
        assert_eq!(p.clone().take(2), None);
    }
}
