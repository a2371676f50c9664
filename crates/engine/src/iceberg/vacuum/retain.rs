//! Which snapshots an expiry keeps, as Iceberg's `expire_snapshots` decides (Java
//! `RemoveSnapshots`, pyiceberg `ExpireSnapshots`): a snapshot older than the cutoff is expired
//! unless a ref (a branch head or a tag) names it or it is one of the newest `min_keep` of the
//! main branch's ancestry. The current snapshot is always kept.
//!
//! Kept more conservatively than Iceberg: a ref's own `max-ref-age-ms` / `max-snapshot-age-ms`
//! are not applied (a ref is never removed, and every ref's head is kept).

use std::collections::{BTreeSet, HashMap, HashSet};

/// A snapshot as the decision needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotAge {
    pub id: i64,
    pub parent: Option<i64>,
    pub timestamp_ms: i64,
}

/// What the expiry keeps and removes (both sorted).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Retained {
    pub kept: BTreeSet<i64>,
    pub expired: BTreeSet<i64>,
}

/// Decides the expiry of `snapshots` at `cutoff_ms`: `current` and the heads in `refs` are
/// kept, and the `min_keep` newest of `current`'s ancestry (at least the current one).
pub fn retained(
    snapshots: &[SnapshotAge],
    current: Option<i64>,
    refs: &[i64],
    cutoff_ms: i64,
    min_keep: usize,
) -> Retained {
    let by_id: HashMap<i64, &SnapshotAge> = snapshots.iter().map(|s| (s.id, s)).collect();
    let mut kept: BTreeSet<i64> = refs
        .iter()
        .copied()
        .filter(|r| by_id.contains_key(r))
        .collect();
    // The ancestry of the current snapshot, newest first (a loop in parents ends it).
    let mut walked = HashSet::new();
    let mut at = current;
    while let Some(id) = at {
        if walked.len() >= min_keep.max(1) || !walked.insert(id) {
            break;
        }
        let Some(s) = by_id.get(&id) else { break };
        kept.insert(id);
        at = s.parent;
    }
    for s in snapshots {
        if s.timestamp_ms >= cutoff_ms {
            kept.insert(s.id);
        }
    }
    let expired = snapshots
        .iter()
        .map(|s| s.id)
        .filter(|id| !kept.contains(id))
        .collect();
    Retained { kept, expired }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(times: &[i64]) -> Vec<SnapshotAge> {
        times
            .iter()
            .enumerate()
            .map(|(i, &t)| SnapshotAge {
                id: i as i64 + 1,
                parent: (i > 0).then_some(i as i64),
                timestamp_ms: t,
            })
            .collect()
    }

    #[test]
    fn snapshots_older_than_the_cutoff_expire_but_the_current_one_never_does() {
        let s = chain(&[10, 20, 30, 40]);
        let r = retained(&s, Some(4), &[4], 25, 1);
        assert_eq!(r.kept, [3, 4].into());
        assert_eq!(r.expired, [1, 2].into());
        // A cutoff past every snapshot keeps the current one only.
        let r = retained(&s, Some(4), &[4], 1_000, 1);
        assert_eq!(r.kept, [4].into());
        assert_eq!(r.expired, [1, 2, 3].into());
    }

    #[test]
    fn the_newest_min_keep_of_the_ancestry_and_every_ref_head_are_kept() {
        let s = chain(&[10, 20, 30, 40, 50]);
        let r = retained(&s, Some(5), &[5], 1_000, 3);
        assert_eq!(r.kept, [3, 4, 5].into());
        // A tag on snapshot 1 keeps it, not its neighbours.
        let r = retained(&s, Some(5), &[5, 1], 1_000, 1);
        assert_eq!(r.kept, [1, 5].into());
        assert_eq!(r.expired, [2, 3, 4].into());
    }

    #[test]
    fn a_snapshot_off_the_main_ancestry_expires_by_age_and_a_parent_loop_ends() {
        let mut s = chain(&[10, 20, 30]);
        // Snapshot 9: a dead branch's, old.
        s.push(SnapshotAge {
            id: 9,
            parent: Some(1),
            timestamp_ms: 15,
        });
        let r = retained(&s, Some(3), &[3], 100, 10);
        assert_eq!(r.kept, [1, 2, 3].into());
        assert_eq!(r.expired, [9].into());
        let looped = [
            SnapshotAge {
                id: 1,
                parent: Some(2),
                timestamp_ms: 1,
            },
            SnapshotAge {
                id: 2,
                parent: Some(1),
                timestamp_ms: 2,
            },
        ];
        assert_eq!(retained(&looped, Some(2), &[], 100, 10).kept, [1, 2].into());
    }

    #[test]
    fn a_table_without_snapshots_keeps_and_expires_nothing() {
        assert_eq!(retained(&[], None, &[], 0, 1), Retained::default());
    }
}
