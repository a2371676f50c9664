//! The janitor's job on an Iceberg table: its due partitions compacted through the table's
//! catalog (`compact::iceberg`), one bin at a time, each proven by content fingerprint and
//! committed by the catalog's compare-and-swap; a bin whose files were taken, or to which a
//! delete file now applies, does not commit. What it does is said as it goes, and it ends as a
//! Delta job does (`JobDone`): one result line per partition, the table's back-off on failure.
//! It runs at background CPU priority, so the table's writers keep their cores.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::jobs::{DuePartition, JobDone, JobEnd, JobSpec, Talker, Work};
use crate::compact::events::{
    CommitRecord, ConflictRecord, Failure, FailureKind, JobSummary, PartitionTally,
};
use crate::delta::commit::Conflict;
use crate::iceberg::compact::job::{IceEvent, IceRequest, IceSummary, compact_iceberg};
use crate::location::Location;
use crate::model::partition::PartitionValues;
use crate::options::OpenOptions;
use crate::size::format_bytes;

/// An Iceberg job's request: the catalog, the due partitions' labels, the policy's target.
pub(super) struct IcebergWork {
    pub req: IceRequest,
    pub open: OpenOptions,
}

/// Runs `spec`'s Iceberg job to its end (the cancel stops it before its next bin).
pub(super) async fn run(spec: JobSpec, cancel: CancellationToken, started: Instant) -> JobDone {
    let Work::Iceberg(work) = &spec.work else {
        return JobDone::new(spec, JobEnd::never_started(), started);
    };
    let mut req = work.req.clone();
    req.cancel = Some(cancel);
    let talker = Talker::of(&spec);
    talker.say(format!(
        "started: {} partition(s) through the catalog {}; one bin at a time, each committed as it is proven",
        spec.partitions.len(),
        crate::secrets::redact_url(&req.catalog)
    ));
    let ran = in_background(spec.loc.clone(), req, work.open.clone(), Talker::of(&spec)).await;
    let end = match ran {
        Ok(s) if s.plan.bins.is_empty() => JobEnd::nothing(JobSummary::default(), nothing(&s)),
        Ok(s) => {
            let mut summary = summary(&s, &spec.partitions);
            summary.seconds = started.elapsed().as_secs_f64();
            JobEnd::ran(summary)
        }
        Err(e) => JobEnd::ran(JobSummary::failed(FailureKind::Setup, e)),
    };
    JobDone::new(spec, end, started)
}

/// Runs the job on a thread of its own at background CPU priority (`compact::priority`): the
/// table's writers get a core the moment they want one, and on an idle machine the job still
/// has all it needs. What it does is said through `talker` as it goes.
async fn in_background(
    loc: Location,
    req: IceRequest,
    open: OpenOptions,
    talker: Talker,
) -> Result<IceSummary, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("lakehealth-iceberg".into())
        .spawn(move || {
            if !crate::compact::priority::lower_this_thread() {
                tracing::debug!("could not lower the Iceberg job thread's priority");
            }
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot start the job's runtime: {e}")));
                    return;
                }
            };
            let say = |e: &IceEvent| {
                if let Some(text) = event_text(e) {
                    talker.say(text);
                }
                if let (IceEvent::Committed(_), Ok(mut s)) = (e, talker.state.lock()) {
                    s.commits += 1;
                }
            };
            let r = rt
                .block_on(compact_iceberg(&loc, &req, &open, &say))
                .map_err(|e| e.to_string());
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the job's thread: {e}"));
    }
    rx.await
        .unwrap_or_else(|_| Err("the job's thread stopped before it ended".into()))
}

/// What the job says of an event (None: nothing worth a line): the plan in one line, the
/// rest as `compact --catalog` says it.
fn event_text(e: &IceEvent) -> Option<String> {
    match e {
        IceEvent::Planned(p) => Some(format!(
            "planned at snapshot {}: {} bin(s), {} files ({})",
            p.snapshot_id.map_or("none".into(), |s| s.to_string()),
            p.bins.len(),
            p.files_in(),
            format_bytes(p.bytes_in())
        )),
        IceEvent::BinStarted { .. } | IceEvent::Retrying { .. } => None,
        other => Some(crate::iceberg::compact::job::event_text(other)),
    }
}

/// Every partition's result when the plan found no bin.
fn nothing(s: &IceSummary) -> String {
    let p = &s.plan;
    let mut text = format!(
        "nothing to compact at snapshot {}: no two files below {} to merge",
        p.snapshot_id.map_or("none".into(), |s| s.to_string()),
        format_bytes(p.min_file_size)
    );
    if p.partitions_with_deletes > 0 {
        text.push_str(&format!(
            "; {} partition(s) with delete files are left alone",
            p.partitions_with_deletes
        ));
    }
    text
}

/// The partition a bin's label names, among the job's (its labels are `PartitionValues`').
fn values_of(label: &str, due: &[DuePartition]) -> PartitionValues {
    due.iter()
        .find(|d| d.values.label() == label)
        .map(|d| d.values.clone())
        .unwrap_or_else(|| PartitionValues(vec![("partition".into(), Some(label.to_string()))]))
}

/// The Iceberg job's outcome in the janitor's terms: a commit per bin (its version the
/// snapshot's sequence number), conflicts with the catalog's reason, failures by partition.
fn summary(s: &IceSummary, due: &[DuePartition]) -> JobSummary {
    let mut out = JobSummary {
        cancelled: s.cancelled,
        ..Default::default()
    };
    for c in &s.commits {
        let partition = values_of(&c.partition, due);
        out.files_removed += c.files_removed;
        out.files_added += c.files_added;
        out.bytes_removed += c.bytes_removed;
        out.bytes_added += c.bytes_added;
        out.rows += c.rows;
        out.commits.push(CommitRecord {
            version: c.sequence_number.max(0) as u64,
            files_removed: c.files_removed,
            files_added: c.files_added,
            bytes_removed: c.bytes_removed,
            bytes_added: c.bytes_added,
            rows: c.rows,
            deleted_rows: 0,
            retries: u64::from(c.retries),
            partitions: vec![partition.clone()],
            bins: 1,
            fingerprints: vec![c.fingerprint],
            by_partition: vec![PartitionTally {
                partition,
                files_removed: c.files_removed,
                files_added: c.files_added,
                bytes_removed: c.bytes_removed,
                bytes_added: c.bytes_added,
                rows: c.rows,
            }],
        });
    }
    for c in &s.conflicts {
        out.conflicts.push(ConflictRecord {
            partition: values_of(&c.partition, due),
            conflict: Conflict {
                version: None,
                operation: None,
                engine: None,
                missing_files: 0,
                files: 0,
                reason: Some(c.reason.clone()),
            },
            replanned_bins: 0,
        });
    }
    for f in &s.failures {
        let mut line = format!("{}: {}", f.partition, f.error);
        if !f.files_kept.is_empty() {
            line.push_str(&format!(
                " ({} file(s) kept: {})",
                f.files_kept.len(),
                f.files_kept.join(", ")
            ));
        }
        out.fail(
            vec![values_of(&f.partition, due)],
            Failure {
                kind: FailureKind::Commit,
                message: f.error.clone(),
            },
            line,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::fingerprint::Fingerprint;
    use crate::iceberg::compact::job::{IceCommit, IceConflict, IceFailure};
    use crate::iceberg::compact::plan::IcePlan;

    fn due(label: &str) -> DuePartition {
        let (k, v) = label.split_once('=').unwrap();
        DuePartition {
            values: PartitionValues(vec![(k.into(), Some(v.into()))]),
            reason: "due".into(),
            lookup_saving: 0.0,
        }
    }

    #[test]
    fn each_partition_gets_its_own_commits_conflicts_and_failures() {
        let plan = IcePlan {
            snapshot_id: Some(7),
            target_file_size: 100,
            min_file_size: 75,
            bins: vec![],
            partitions_with_deletes: 0,
            files_under_deletes: 0,
            order: None,
            estimate: Default::default(),
            predicate: None,
        };
        let s = IceSummary {
            table: "db.events".into(),
            metadata_location: "m".into(),
            plan,
            commits: vec![IceCommit {
                partition: "d=a".into(),
                snapshot_id: 9,
                sequence_number: 4,
                metadata_location: "m2".into(),
                files_removed: 5,
                files_added: 1,
                bytes_removed: 50,
                bytes_added: 45,
                rows: 3,
                retries: 1,
                fingerprint: Fingerprint { rows: 3, digest: 1 },
            }],
            conflicts: vec![IceConflict {
                partition: "d=b".into(),
                reason: "a delete file now applies to the bin's partition".into(),
                outputs_left: vec![],
            }],
            failures: vec![IceFailure {
                partition: "d=c".into(),
                error: "boom".into(),
                files_kept: vec![],
            }],
            dry_run: false,
            cancelled: false,
            sweep: Default::default(),
            actual: None,
        };
        let parts = [due("d=a"), due("d=b"), due("d=c")];
        let j = summary(&s, &parts);
        let a = j.for_partition(&parts[0].values);
        assert_eq!((a.files_removed, a.files_added, a.rows), (5, 1, 3));
        assert_eq!(a.commits[0].version, 4, "the snapshot's sequence number");
        assert!(a.conflicts.is_empty() && a.errors.is_empty());
        let b = j.for_partition(&parts[1].values);
        assert!(b.commits.is_empty());
        assert_eq!(
            b.conflicts[0].conflict.to_string(),
            "a delete file now applies to the bin's partition"
        );
        let c = j.for_partition(&parts[2].values);
        assert_eq!(c.errors, ["d=c: boom"]);
    }
}
