//! Findings: damage the log shows has already happened, said plainly. (`orphan_files`, files
//! in the table's folders no version references, comes from a listing: `maintenance::orphans`.)
//!
//! `duplicated_rows`: two commits removed the same file (same path and deletion vector) with no
//! add of it in between. A commit that removes a file and adds files rewrote its rows (OPTIMIZE
//! compacts them into a new file), so when a second commit removes a file that was already gone,
//! the rows it writes back are already in the table: they are now there twice. Spark's conflict
//! checker refuses such a commit; delta-rs lets two OPTIMIZEs of the same files both commit
//! since its PR #3982.

use std::collections::BTreeMap;

use serde::Serialize;

use super::deleted_rows::DeletedRows;
use crate::delta::log::state::{CommitOrigin, LogState, RepeatedRemove};
use crate::size::format_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    DuplicatedRows,
    /// Data files no version of the log references (`versions` is empty).
    OrphanFiles,
    /// Files whose deletion vectors mark more than the ratio of their rows deleted
    /// (`versions` is empty; `deleted_rows` of the report has them).
    DeletedRowsOverRatio,
    /// A clustering column whose files overlap past the bound (`skipping` of the report has
    /// its depth; `versions` is empty).
    ClusteringDepth,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The commits involved, oldest first.
    pub versions: Vec<u64>,
    /// `commitInfo.operation` of each version (same order).
    pub operations: Vec<String>,
    /// `engineInfo` (or delta-rs's `clientVersion`) of each version, when recorded.
    pub engines: Vec<Option<String>>,
    /// The first remove is older than the commits read: the checkpoint of this version already
    /// listed the files as removed.
    pub first_remove_in_checkpoint: Option<u64>,
    pub files: u64,
    /// Sizes from the remove actions (0 for those that do not record one).
    pub bytes: u64,
    pub message: String,
}

/// Which commits the findings speak for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingsCoverage {
    /// Every commit from this version to `to_version` was read in full (None: none was).
    pub from_version: Option<u64>,
    pub to_version: u64,
    /// Files removed after this checkpoint were also checked against its tombstones.
    pub checkpoint_version: Option<u64>,
}

impl FindingsCoverage {
    /// "versions 3..17" (and the checkpoint's tombstones).
    pub fn describe(&self) -> String {
        let range = match self.from_version {
            Some(a) if a == self.to_version => format!("version {a}"),
            Some(a) => format!("versions {a}..{}", self.to_version),
            None => "no commits".into(),
        };
        match self.checkpoint_version {
            Some(cp) if self.from_version.is_none_or(|a| a > 0) => {
                format!("{range} and the tombstones of checkpoint {cp}")
            }
            _ => range,
        }
    }
}

/// The findings of a table's skipping health for its report (a clustering column past its
/// bound).
pub fn skipping_findings(h: &super::skipping::SkippingHealth) -> Vec<Finding> {
    use super::skipping::SkippingFinding;
    h.findings
        .iter()
        .filter(|f| matches!(f, SkippingFinding::ClusteringDepth { .. }))
        .map(|f| Finding {
            kind: FindingKind::ClusteringDepth,
            versions: Vec::new(),
            operations: Vec::new(),
            engines: Vec::new(),
            first_remove_in_checkpoint: None,
            files: h.files as u64,
            bytes: 0,
            message: f.message_for(h.source),
        })
        .collect()
}

/// The finding for files over the deleted-rows ratio, when there are any.
pub fn deleted_rows_finding(d: &DeletedRows) -> Option<Finding> {
    Some(Finding {
        kind: FindingKind::DeletedRowsOverRatio,
        versions: Vec::new(),
        operations: Vec::new(),
        engines: Vec::new(),
        first_remove_in_checkpoint: None,
        files: d.files_over_ratio.len() as u64,
        bytes: 0,
        message: d.over_ratio_message()?,
    })
}

pub fn findings(state: &LogState) -> (Vec<Finding>, FindingsCoverage) {
    let coverage = FindingsCoverage {
        from_version: state.fully_read_from,
        to_version: state.version,
        checkpoint_version: state.checkpoint_version,
    };
    (
        duplicated_rows(&state.repeated_removes, &state.origins),
        coverage,
    )
}

/// One finding per set of commits that removed the same files.
pub fn duplicated_rows(
    repeated: &[RepeatedRemove],
    origins: &BTreeMap<u64, CommitOrigin>,
) -> Vec<Finding> {
    let mut groups: BTreeMap<(Vec<u64>, Option<u64>), (u64, u64)> = BTreeMap::new();
    for r in repeated {
        // Each remove by a commit that also added files wrote the file's rows back (a rewrite);
        // a commit that added nothing (a plain delete) wrote none. The checkpoint's tombstone
        // counts as one rewrite: the remover is unknown, and a rewrite is what loses nothing.
        let versions: Vec<u64> = r
            .versions
            .iter()
            .copied()
            .filter(|v| origins.get(v).is_none_or(|o| o.files_added > 0))
            .collect();
        let copies = versions.len() + usize::from(r.removed_by_checkpoint.is_some());
        if copies < 2 {
            continue;
        }
        let g = groups
            .entry((versions, r.removed_by_checkpoint))
            .or_default();
        g.0 += 1;
        g.1 += r.size.unwrap_or(0);
    }
    groups
        .into_iter()
        .map(|((versions, in_checkpoint), (files, bytes))| {
            let operations: Vec<String> = versions
                .iter()
                .map(|v| {
                    origins
                        .get(v)
                        .map_or_else(|| "UNKNOWN".into(), |o| o.operation.clone())
                })
                .collect();
            let engines: Vec<Option<String>> = versions
                .iter()
                .map(|v| origins.get(v).and_then(|o| o.engine.clone()))
                .collect();
            let message = message(
                &versions,
                &operations,
                &engines,
                in_checkpoint,
                files,
                bytes,
            );
            Finding {
                kind: FindingKind::DuplicatedRows,
                versions,
                operations,
                engines,
                first_remove_in_checkpoint: in_checkpoint,
                files,
                bytes,
                message,
            }
        })
        .collect()
}

/// "12 and 13", "12, 13 and 14".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// "OPTIMIZE, OPTIMIZE by delta-rs.1.6.6" when one engine wrote them all, else each with its own.
fn who(operations: &[String], engines: &[Option<String>]) -> String {
    let same = engines.windows(2).all(|w| w[0] == w[1]);
    match (same, engines.first()) {
        (true, Some(Some(e))) => format!("{} by {e}", operations.join(", ")),
        (true, _) => operations.join(", "),
        (false, _) => operations
            .iter()
            .zip(engines)
            .map(|(o, e)| match e {
                Some(e) => format!("{o} by {e}"),
                None => o.clone(),
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn times(n: usize) -> String {
    match n {
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

fn message(
    versions: &[u64],
    operations: &[String],
    engines: &[Option<String>],
    in_checkpoint: Option<u64>,
    files: u64,
    bytes: u64,
) -> String {
    let what = format!(
        "{files} file{} ({})",
        if files == 1 { "" } else { "s" },
        format_bytes(bytes)
    );
    let names: Vec<String> = versions.iter().map(u64::to_string).collect();
    let plural = versions.len() > 1;
    let who = who(operations, engines);
    match in_checkpoint {
        None => format!(
            "duplicated rows: versions {} ({who}) {} removed {what}: their rows are in the table {}",
            and_list(&names),
            if versions.len() == 2 { "both" } else { "all" },
            times(versions.len())
        ),
        Some(cp) => format!(
            "duplicated rows: version{} {} ({who}) removed {what} that checkpoint {cp} already \
             lists as removed: their rows are in the table {}",
            if plural { "s" } else { "" },
            and_list(&names),
            times(versions.len() + 1)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(op: &str, engine: Option<&str>, files_added: u64) -> CommitOrigin {
        CommitOrigin {
            operation: op.into(),
            engine: engine.map(str::to_string),
            files_added,
        }
    }

    fn rr(versions: &[u64], cp: Option<u64>, size: u64) -> RepeatedRemove {
        RepeatedRemove {
            versions: versions.to_vec(),
            removed_by_checkpoint: cp,
            size: Some(size),
        }
    }

    #[test]
    fn two_optimizes_of_the_same_files_are_one_finding_with_totals() {
        let origins = BTreeMap::from([
            (12, origin("OPTIMIZE", Some("delta-rs.1.6.6"), 1)),
            (13, origin("OPTIMIZE", Some("delta-rs.1.6.6"), 1)),
        ]);
        let rep: Vec<RepeatedRemove> = (0..40).map(|_| rr(&[12, 13], None, 82_000)).collect();
        let f = duplicated_rows(&rep, &origins);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].versions, vec![12, 13]);
        assert_eq!((f[0].files, f[0].bytes), (40, 3_280_000));
        assert_eq!(
            f[0].message,
            "duplicated rows: versions 12 and 13 (OPTIMIZE, OPTIMIZE by delta-rs.1.6.6) both \
             removed 40 files (3.13 MiB): their rows are in the table twice"
        );
        let json = serde_json::to_value(&f[0]).unwrap();
        assert_eq!(json["kind"], "duplicated_rows");
        assert_eq!(json["versions"], serde_json::json!([12, 13]));
        assert_eq!(json["engines"][1], "delta-rs.1.6.6");
    }

    #[test]
    fn a_remove_that_adds_nothing_copies_nothing() {
        let origins = BTreeMap::from([
            (2, origin("DELETE", None, 0)),
            (3, origin("OPTIMIZE", None, 1)),
            (4, origin("DELETE", None, 0)),
            (5, origin("OPTIMIZE", None, 1)),
        ]);
        assert!(duplicated_rows(&[rr(&[3, 4], None, 1)], &origins).is_empty());
        assert!(duplicated_rows(&[rr(&[2, 3], None, 1)], &origins).is_empty());
        let f = duplicated_rows(&[rr(&[2, 3, 4, 5], None, 1)], &origins);
        assert_eq!(f[0].versions, vec![3, 5]);
        assert!(f[0].message.ends_with("twice"));
    }

    #[test]
    fn a_remove_of_a_file_the_checkpoint_lists_as_removed_is_named_with_the_checkpoint() {
        let origins = BTreeMap::from([(9, origin("OPTIMIZE", Some("Apache-Spark/3.5"), 2))]);
        let f = duplicated_rows(&[rr(&[9], Some(8), 1024)], &origins);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].first_remove_in_checkpoint, Some(8));
        assert_eq!(
            f[0].message,
            "duplicated rows: version 9 (OPTIMIZE by Apache-Spark/3.5) removed 1 file (1 KiB) \
             that checkpoint 8 already lists as removed: their rows are in the table twice"
        );
    }

    #[test]
    fn three_removes_are_three_copies_and_engines_are_named_each_when_they_differ() {
        let origins = BTreeMap::from([
            (1, origin("OPTIMIZE", Some("a"), 1)),
            (2, origin("OPTIMIZE", Some("b"), 1)),
            (3, origin("OPTIMIZE", None, 1)),
        ]);
        let f = duplicated_rows(&[rr(&[1, 2, 3], None, 5)], &origins);
        assert!(f[0].message.contains("versions 1, 2 and 3"));
        assert!(
            f[0].message
                .contains("(OPTIMIZE by a, OPTIMIZE by b, OPTIMIZE) all removed")
        );
        assert!(f[0].message.ends_with("3 times"));
    }

    #[test]
    fn coverage_names_the_range_and_the_checkpoint() {
        let c = FindingsCoverage {
            from_version: Some(11),
            to_version: 20,
            checkpoint_version: Some(15),
        };
        assert_eq!(
            c.describe(),
            "versions 11..20 and the tombstones of checkpoint 15"
        );
        let c = FindingsCoverage {
            from_version: Some(0),
            to_version: 20,
            checkpoint_version: None,
        };
        assert_eq!(c.describe(), "versions 0..20");
    }
}
