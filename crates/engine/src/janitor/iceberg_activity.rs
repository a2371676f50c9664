//! An Iceberg table's writes for the janitor's time rules (`written_within`, `quiet_period`,
//! the age rule): the current snapshot's ancestors are read newest first (`iceberg::writes`),
//! each once, back to the policy's horizon (or the budget), and kept as a Delta table's
//! commits are (`activity`): a snapshot is a commit whose version is its sequence number, a
//! `replace` (a compaction) adds and removes files but writes no data.

use super::activity::{Activity, CommitDigest};
use crate::error::Result;
use crate::iceberg::writes::{History, SnapshotWrites};
use crate::location::Location;
use crate::model::partition::PartitionValues;
use crate::options::OpenOptions;

/// The snapshot's writes as a commit's digest.
fn digest(w: SnapshotWrites, columns: &[String]) -> CommitDigest {
    let values = |v: Vec<Option<String>>| PartitionValues(columns.iter().cloned().zip(v).collect());
    let mut written: Vec<PartitionValues> = Vec::new();
    let mut adds = Vec::new();
    let mut removes = Vec::new();
    for (path, v, size) in w.added {
        let p = values(v);
        if w.data_change && !written.contains(&p) {
            written.push(p.clone());
        }
        adds.push((path, p, size));
    }
    for (path, v) in w.removed {
        let p = values(v);
        if w.data_change && !written.contains(&p) {
            written.push(p);
        }
        removes.push(path);
    }
    CommitDigest {
        version: w.ancestor.sequence,
        ts: w.ancestor.ts_ms,
        written,
        adds,
        removes,
    }
}

/// Reads the snapshots of the table at `metadata` not read yet, newest first, until one is at
/// or before `now_ms - horizon_ms`, at most `budget` of them.
pub async fn update(
    activity: &mut Activity,
    metadata: &str,
    opts: &OpenOptions,
    horizon_ms: i64,
    now_ms: i64,
    budget: usize,
) -> Result<()> {
    // Nothing new since this metadata was read back to the horizon.
    if horizon_ms <= 0 || activity.read_through() == Some(metadata) {
        return Ok(());
    }
    let mut history = History::open(&Location::parse(metadata)?, opts).await?;
    let (ancestors, first) = history.ancestors();
    let Some(newest) = ancestors.first() else {
        activity.set_read_through(Some(metadata.to_string()));
        return Ok(());
    };
    // The table was rolled back or recreated: what was read is not its history any more.
    if activity.newest().is_some_and(|n| newest.sequence < n) {
        *activity = Activity::default();
    }
    let horizon = now_ms.saturating_sub(horizon_ms);
    let mut left = budget;
    let mut oldest = None;
    // Until the budget stops the read short: the next cycle then goes on from there.
    let mut through = true;
    for (i, a) in ancestors.iter().enumerate() {
        if !activity.knows(a.sequence) {
            if left == 0 {
                through = false;
                break;
            }
            left -= 1;
            let w = history.writes(a).await?;
            activity.record(digest(w, &history.columns));
        }
        oldest = Some((a.clone(), i + 1 == ancestors.len()));
        if a.ts_ms <= horizon {
            break;
        }
    }
    if let Some((a, last)) = oldest {
        activity.known_range(a.sequence, a.ts_ms, newest.sequence, first && last, horizon);
    }
    activity.set_read_through(through.then(|| metadata.to_string()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::writes::Ancestor;

    /// A metadata file already read to the horizon is not read again: this one does not
    /// exist, so a read would fail.
    #[tokio::test]
    async fn the_metadata_read_through_last_time_is_not_read_again() {
        let gone = "file:///nonexistent-lakehealth-test/t/metadata/00009-x.metadata.json";
        let mut act = Activity::default();
        act.set_read_through(Some(gone.to_string()));
        let opts = OpenOptions::default();
        assert!(
            update(&mut act, gone, &opts, 3_600_000, 10_000_000, 8)
                .await
                .is_ok()
        );
        act.set_read_through(None);
        assert!(
            update(&mut act, gone, &opts, 3_600_000, 10_000_000, 8)
                .await
                .is_err()
        );
    }

    #[test]
    fn a_snapshots_writes_become_a_commit_and_a_replace_writes_no_data() {
        let cols = vec!["day".to_string()];
        let a = |seq: u64| Ancestor {
            snapshot_id: seq as i64,
            sequence: seq,
            ts_ms: 1000 * seq as i64,
        };
        let append = SnapshotWrites {
            ancestor: a(3),
            data_change: true,
            added: vec![("f1".into(), vec![Some("d1".into())], 10)],
            removed: vec![("f0".into(), vec![Some("d2".into())])],
        };
        let d = digest(append, &cols);
        let p = |v: &str| PartitionValues(vec![("day".into(), Some(v.into()))]);
        assert_eq!((d.version, d.ts), (3, 3000));
        assert_eq!(d.written, vec![p("d1"), p("d2")]);
        assert_eq!(d.adds, vec![("f1".into(), p("d1"), 10)]);
        assert_eq!(d.removes, vec!["f0".to_string()]);
        let replace = SnapshotWrites {
            ancestor: a(4),
            data_change: false,
            added: vec![("f2".into(), vec![Some("d1".into())], 100)],
            removed: vec![("f1".into(), vec![Some("d1".into())])],
        };
        let d = digest(replace, &cols);
        assert!(d.written.is_empty(), "a compaction writes no data");
        assert_eq!(d.adds.len(), 1);

        // The range: read newest first, extended by what was known.
        let mut act = Activity::default();
        act.record(digest(
            SnapshotWrites {
                ancestor: a(5),
                data_change: true,
                added: vec![("f3".into(), vec![Some("d1".into())], 1)],
                removed: vec![],
            },
            &cols,
        ));
        act.known_range(5, 5000, 5, false, 0);
        assert!(act.knows(5) && !act.knows(4));
        assert_eq!(
            act.last_write(&p("d1")),
            crate::janitor::activity::LastWrite::At(5000)
        );
        assert_eq!(
            act.last_write(&p("d9")),
            crate::janitor::activity::LastWrite::NotSince(5000)
        );
        act.known_range(3, 3000, 6, true, 0);
        assert!(act.knows(4) && act.knows(6));
        assert_eq!(
            act.last_write(&p("d9")),
            crate::janitor::activity::LastWrite::Never
        );
    }
}
