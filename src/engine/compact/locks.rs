//! Two jobs never compact the same partition at once in one process: a job holds a lock on
//! each (table, partition) it rewrites, and a queued job waits until its partitions are free.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct PartitionLocks {
    held: Mutex<HashSet<String>>,
    freed: Notify,
}

pub struct LockGuard {
    locks: Arc<PartitionLocks>,
    keys: Vec<String>,
}

impl PartitionLocks {
    /// Takes every key at once, or none (no partial holds, so no deadlock between jobs).
    pub fn try_acquire(self: &Arc<Self>, keys: &[String]) -> Option<LockGuard> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if keys.iter().any(|k| held.contains(k)) {
            return None;
        }
        held.extend(keys.iter().cloned());
        Some(LockGuard {
            locks: self.clone(),
            keys: keys.to_vec(),
        })
    }

    /// Waits until every key is free, then takes them.
    pub async fn acquire(self: &Arc<Self>, keys: &[String]) -> LockGuard {
        loop {
            let notified = self.freed.notified();
            if let Some(g) = self.try_acquire(keys) {
                return g;
            }
            notified.await;
        }
    }

    pub fn is_held(&self, key: &str) -> bool {
        self.held.lock().map(|h| h.contains(key)).unwrap_or(false)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let mut held = self.locks.held.lock().unwrap_or_else(|p| p.into_inner());
        for k in &self.keys {
            held.remove(k);
        }
        drop(held);
        self.locks.freed.notify_waiters();
    }
}

pub fn key(table_uri: &str, partition: &str) -> String {
    format!("{table_uri}\u{1f}{partition}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn overlapping_jobs_wait_disjoint_jobs_run() {
        let l = Arc::new(PartitionLocks::default());
        let a = l.try_acquire(&["t/d=1".into(), "t/d=2".into()]).unwrap();
        assert!(l.try_acquire(&["t/d=2".into()]).is_none());
        assert!(l.try_acquire(&["t/d=3".into()]).is_some());
        let l2 = l.clone();
        let waiter = tokio::spawn(async move {
            let _g = l2.acquire(&["t/d=1".into()]).await;
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(a);
        waiter.await.unwrap();
        assert!(!l.is_held("t/d=1"));
    }
}
