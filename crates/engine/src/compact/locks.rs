//! Two jobs never compact the same partition at once in one process: a job holds a lock on
//! each (table, partition) it rewrites, and a queued job waits until its partitions are free.
//! Every lock held by any `PartitionLocks` of the process is also listed process-wide
//! (`held_partitions`): the orphan scan never offers a file of a partition a job of this process
//! is rewriting (its outputs exist before they are committed).

use std::collections::HashSet;

use crate::model::partition::PartitionValues;

/// A partition of a table, by its typed values (never by display label: NULL and the string
/// "null" print alike).
pub type LockKey = (String, PartitionValues);
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Every key held by any `PartitionLocks` of this process (a key twice when two instances
/// hold it).
static HELD_IN_PROCESS: Mutex<Vec<LockKey>> = Mutex::new(Vec::new());

/// The partitions of `table_uri` a compaction job of this process holds right now.
pub fn held_partitions(table_uri: &str) -> Vec<PartitionValues> {
    let held = HELD_IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    held.iter()
        .filter(|(t, _)| t == table_uri)
        .map(|(_, p)| p.clone())
        .collect()
}

#[derive(Debug, Default)]
pub struct PartitionLocks {
    held: Mutex<HashSet<LockKey>>,
    freed: Notify,
}

pub struct LockGuard {
    locks: Arc<PartitionLocks>,
    keys: Vec<LockKey>,
}

impl PartitionLocks {
    /// Takes every key at once, or none (no partial holds, so no deadlock between jobs).
    pub fn try_acquire(self: &Arc<Self>, keys: &[LockKey]) -> Option<LockGuard> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if keys.iter().any(|k| held.contains(k)) {
            return None;
        }
        held.extend(keys.iter().cloned());
        HELD_IN_PROCESS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(keys.iter().cloned());
        Some(LockGuard {
            locks: self.clone(),
            keys: keys.to_vec(),
        })
    }

    /// Waits until every key is free, then takes them.
    pub async fn acquire(self: &Arc<Self>, keys: &[LockKey]) -> LockGuard {
        loop {
            let notified = self.freed.notified();
            if let Some(g) = self.try_acquire(keys) {
                return g;
            }
            notified.await;
        }
    }

    pub fn is_held(&self, key: &LockKey) -> bool {
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
        let mut all = HELD_IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
        for k in &self.keys {
            if let Some(i) = all.iter().position(|h| h == k) {
                all.swap_remove(i);
            }
        }
        drop(all);
        self.locks.freed.notify_waiters();
    }
}

pub fn key(table_uri: &str, partition: &PartitionValues) -> LockKey {
    (table_uri.to_string(), partition.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: Option<&str>) -> LockKey {
        key(
            "t",
            &PartitionValues(vec![("d".into(), v.map(str::to_string))]),
        )
    }

    #[tokio::test]
    async fn overlapping_jobs_wait_disjoint_jobs_run() {
        let l = Arc::new(PartitionLocks::default());
        let a = l.try_acquire(&[k(Some("1")), k(Some("2"))]).unwrap();
        assert!(l.try_acquire(&[k(Some("2"))]).is_none());
        assert!(l.try_acquire(&[k(Some("3"))]).is_some());
        let l2 = l.clone();
        let waiter = tokio::spawn(async move {
            let _g = l2.acquire(&[k(Some("1"))]).await;
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(a);
        waiter.await.unwrap();
        assert!(!l.is_held(&k(Some("1"))));
    }

    #[test]
    fn held_partitions_lists_every_instances_locks_until_they_are_released() {
        let uri = "held-partitions-test";
        let p = |v: &str| PartitionValues(vec![("d".into(), Some(v.into()))]);
        let (a, b) = (
            Arc::new(PartitionLocks::default()),
            Arc::new(PartitionLocks::default()),
        );
        let ga = a.try_acquire(&[key(uri, &p("1"))]).unwrap();
        let gb = b
            .try_acquire(&[key(uri, &p("1")), key(uri, &p("2"))])
            .unwrap();
        let mut held = held_partitions(uri);
        held.sort();
        assert_eq!(held, vec![p("1"), p("1"), p("2")]);
        assert!(held_partitions("another table").is_empty());
        drop(gb);
        assert_eq!(held_partitions(uri), vec![p("1")]);
        drop(ga);
        assert!(held_partitions(uri).is_empty());
    }

    #[test]
    fn the_null_partition_and_the_string_null_are_locked_apart() {
        let l = Arc::new(PartitionLocks::default());
        let _a = l.try_acquire(&[k(None)]).unwrap();
        assert!(l.try_acquire(&[k(Some("null"))]).is_some());
        assert!(l.try_acquire(&[k(None)]).is_none());
    }
}
