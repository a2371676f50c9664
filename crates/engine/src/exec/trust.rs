//! What a coordinator believes of a file under `_lakehealth/jobs/`: nothing it cannot check.
//! A worker's result and output ledger are plain files beside the table; a crashed worker, an
//! older version or a hand-placed file can say anything. Two rules, each a typed refusal:
//!
//! - a result may commit only if it answers its bin's spec (same job, bin, version and
//!   partition; it removes exactly the files the spec gave; it adds only fresh Parquet outputs
//!   in that partition's folder) — `check_result`; pickup then re-proves its content itself;
//! - a path may be deleted only if it can be an output of that spec: a Parquet file in the
//!   partition's folder, never under an underscore or dot folder (`_delta_log/`, `_lakehealth/`),
//!   never outside the table root — `deletable_output` (the caller adds: not active, not older
//!   than the spec).

use std::collections::BTreeSet;

use thiserror::Error;

use super::spec::{BinReport, BinSpec, Outcome};
use crate::model::percent::decode as decoded;

/// Why a result or a path is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Untrusted {
    #[error("the result is for {found}, its spec for {expected}")]
    OtherBin { expected: String, found: String },
    #[error("the result removes {removes} file(s) the spec did not give it ({example})")]
    RemovesNotInSpec { removes: usize, example: String },
    #[error("the result leaves out {missing} of the spec's input file(s) ({example})")]
    InputsMissing { missing: usize, example: String },
    #[error("the result adds {path}, which is also one of its inputs")]
    AddIsInput { path: String },
    #[error("the result adds {path} with partition values other than its bin's")]
    AddInOtherPartition { path: String },
    #[error("the result says {said} rows, its outputs' statistics {counted}")]
    RowCountDiffers { said: u64, counted: u64 },
    #[error("{path} is not a path inside the table: {why}")]
    OutsideTable { path: String, why: &'static str },
    #[error("{path} is not a Parquet data file")]
    NotParquet { path: String },
    #[error("{path} is not named as an output of job {job} (its name does not carry the job's id)")]
    NotNamedForJob { path: String, job: String },
    #[error("{path} is not in the folder of partition {partition}")]
    OtherFolder { path: String, partition: String },
    #[error(
        "{key} holds a spec of job {job:?}, bin {bin}: not its own folder and file (or not a plain job id); it is ignored"
    )]
    MisplacedSpec { key: String, job: String, bin: u64 },
}

fn label(job: &str, bin: u64, version: u64, partition: &[(String, Option<String>)]) -> String {
    let values: Vec<String> = partition
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("NULL")))
        .collect();
    format!(
        "job {job} bin {bin} at version {version} [{}]",
        values.join(",")
    )
}

/// The result answers `spec`: same bin, exactly its inputs removed, only outputs of its
/// partition added. Failed results pass (they commit nothing).
pub fn check_result(spec: &BinSpec, report: &BinReport) -> Result<(), Untrusted> {
    let expected = label(
        &spec.job_id,
        spec.bin_id,
        spec.table_version,
        &spec.partition,
    );
    let found = label(
        &report.job_id,
        report.bin_id,
        report.table_version,
        &report.partition,
    );
    if expected != found {
        return Err(Untrusted::OtherBin { expected, found });
    }
    let Outcome::Done {
        adds,
        removes,
        rows,
        ..
    } = &report.outcome
    else {
        return Ok(());
    };
    let inputs: BTreeSet<String> = spec.files.iter().map(|f| decoded(&f.path)).collect();
    let removed: BTreeSet<String> = removes.iter().map(|r| decoded(&r.path)).collect();
    let extra: Vec<&String> = removed.difference(&inputs).collect();
    if let Some(first) = extra.first() {
        return Err(Untrusted::RemovesNotInSpec {
            removes: extra.len(),
            example: (*first).clone(),
        });
    }
    let missing: Vec<&String> = inputs.difference(&removed).collect();
    if let Some(first) = missing.first() {
        return Err(Untrusted::InputsMissing {
            missing: missing.len(),
            example: (*first).clone(),
        });
    }
    let columns: Vec<String> = spec.partition.iter().map(|(k, _)| k.clone()).collect();
    let mut counted = 0u64;
    for a in adds {
        deletable_output(&columns, &spec.partition, &spec.job_id, &a.path)?;
        if inputs.contains(&decoded(&a.path)) {
            return Err(Untrusted::AddIsInput {
                path: a.path.clone(),
            });
        }
        let same_partition = spec.partition.iter().all(|(k, v)| {
            a.partition_values
                .get(k)
                .is_some_and(|got| got.as_deref() == v.as_deref())
        }) && a.partition_values.len() == spec.partition.len();
        if !same_partition {
            return Err(Untrusted::AddInOtherPartition {
                path: a.path.clone(),
            });
        }
        counted += add_rows(a).unwrap_or(0);
    }
    // Statistics are optional in a result of an older version; when every add has them, the
    // count must agree.
    if adds.iter().all(|a| add_rows(a).is_some()) && counted != *rows {
        return Err(Untrusted::RowCountDiffers {
            said: *rows,
            counted,
        });
    }
    Ok(())
}

/// `numRecords` from an add's statistics, if it has them.
fn add_rows(a: &deltalake::kernel::Add) -> Option<u64> {
    let stats: serde_json::Value = serde_json::from_str(a.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_u64()
}

/// `path` (table-relative, as the log writes it) can be an output of job `job`'s bin of
/// `partition` (`columns` in partition order): a Parquet file directly in the partition's
/// folder, named as that job's output.
pub fn deletable_output(
    columns: &[String],
    partition: &[(String, Option<String>)],
    job: &str,
    path: &str,
) -> Result<(), Untrusted> {
    let outside = |why| Untrusted::OutsideTable {
        path: path.to_string(),
        why,
    };
    if path.is_empty() || path.starts_with('/') || path.contains('\\') {
        return Err(outside("not a relative path"));
    }
    if path.contains("://") {
        return Err(outside("a URL or a drive"));
    }
    // Split before decoding: a value may hold an encoded '/'.
    let segments: Vec<String> = path.split('/').map(decoded).collect();
    for s in &segments {
        if s.is_empty() || s == "." || s.split('/').any(|x| x == "..") {
            return Err(outside("an empty, '.' or '..' segment"));
        }
        if s.starts_with('_') || s.starts_with('.') {
            return Err(outside(
                "inside a hidden or underscore folder (the log, lakehealth's state)",
            ));
        }
    }
    let Some((file, folders)) = segments.split_last() else {
        return Err(outside("no file name"));
    };
    if !file.ends_with(".parquet") {
        return Err(Untrusted::NotParquet {
            path: path.to_string(),
        });
    }
    let expected: Vec<String> = columns
        .iter()
        .map(|col| {
            let v = partition
                .iter()
                .find(|(k, _)| k == col)
                .and_then(|(_, v)| v.as_deref())
                .unwrap_or("__HIVE_DEFAULT_PARTITION__");
            format!("{col}={v}")
        })
        .collect();
    // Writers encode a value once or twice (the path in the log is itself encoded).
    let in_partition = folders.len() == expected.len()
        && folders
            .iter()
            .zip(&expected)
            .all(|(folder, want)| folder == want || decoded(folder) == *want);
    if !in_partition {
        return Err(Untrusted::OtherFolder {
            path: path.to_string(),
            partition: if expected.is_empty() {
                "(unpartitioned table root)".into()
            } else {
                expected.join("/")
            },
        });
    }
    if !crate::model::output_name::carries_job(file, job) {
        return Err(Untrusted::NotNamedForJob {
            path: path.to_string(),
            job: job.to_string(),
        });
    }
    Ok(())
}

/// A spec found at `key` is one its job wrote there: its job id is a plain token (never a
/// path), its folder and output prefix are that job's, its file that bin's. Else a spec could
/// speak for another job.
pub fn spec_at_its_key(spec: &BinSpec, key: &str) -> Result<(), Untrusted> {
    let job = &spec.job_id;
    let plain = !job.is_empty()
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let prefix = super::spec::job_prefix(job);
    let own = plain && spec.output_prefix == prefix && spec.spec_key().as_ref() == key;
    if own {
        return Ok(());
    }
    Err(Untrusted::MisplacedSpec {
        key: key.to_string(),
        job: job.clone(),
        bin: spec.bin_id,
    })
}

/// Of `paths` a worker's files name, those that can be outputs of `spec`'s bin
/// (`deletable_output`), and why each other one cannot.
pub fn only_outputs(spec: &BinSpec, paths: Vec<String>) -> (Vec<String>, Vec<Untrusted>) {
    let columns: Vec<String> = spec.partition.iter().map(|(k, _)| k.clone()).collect();
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for p in paths {
        match deletable_output(&columns, &spec.partition, &spec.job_id, &p) {
            Ok(()) => ok.push(p),
            Err(e) => refused.push(e),
        }
    }
    (ok, refused)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use deltalake::kernel::{Add, Remove};

    use super::*;
    use crate::compact::fingerprint::Fingerprint;
    use crate::exec::spec::{SpecFile, WorkerMetrics};

    fn part() -> Vec<(String, Option<String>)> {
        vec![("d".into(), Some("2026-11-01".into()))]
    }

    fn spec() -> BinSpec {
        BinSpec {
            table_uri: "/t".into(),
            job_id: "j".into(),
            bin_id: 1,
            table_version: 5,
            partition: part(),
            files: ["a", "b"]
                .iter()
                .map(|n| SpecFile {
                    path: format!("d=2026-11-01/{n}.parquet"),
                    store_path: format!("d=2026-11-01/{n}.parquet"),
                    size: 10,
                    tier: 0,
                    deletion_vector: None,
                    num_records: None,
                })
                .collect(),
            target_file_size: 1 << 20,
            compression: "SNAPPY".into(),
            order: None,
            clustering_provider: None,
            sort_memory: crate::compact::ordering::sorter::DEFAULT_SORT_MEMORY,
            compression_ratio: 1.0,
            output_prefix: "_lakehealth/jobs/j".into(),
        }
    }

    fn add(path: &str, rows: u64) -> Add {
        Add {
            path: path.into(),
            partition_values: HashMap::from([("d".to_string(), Some("2026-11-01".to_string()))]),
            size: 20,
            modification_time: 0,
            data_change: false,
            stats: Some(format!("{{\"numRecords\":{rows}}}")),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        }
    }

    fn remove(path: &str) -> Remove {
        Remove {
            path: path.into(),
            data_change: false,
            deletion_timestamp: Some(0),
            extended_file_metadata: None,
            partition_values: None,
            size: None,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        }
    }

    fn report(removes: &[&str], adds: Vec<Add>, rows: u64) -> BinReport {
        BinReport {
            job_id: "j".into(),
            bin_id: 1,
            table_uri: "/t".into(),
            table_version: 5,
            partition: part(),
            metrics: WorkerMetrics::default(),
            outcome: Outcome::Done {
                adds,
                removes: removes.iter().map(|p| remove(p)).collect(),
                rows,
                deleted_rows: 0,
                bytes_in: 20,
                fingerprint: Fingerprint { rows, digest: 1 },
            },
        }
    }

    const A: &str = "d=2026-11-01/a.parquet";
    const B: &str = "d=2026-11-01/b.parquet";
    const OUT: &str = "d=2026-11-01/part-00001-lakehealth-j-x-c000.snappy.parquet";

    #[test]
    fn a_spec_speaks_only_for_the_job_and_bin_of_its_own_folder_and_file() {
        let s = spec();
        assert_eq!(
            spec_at_its_key(&s, "_lakehealth/jobs/j/bin-1.spec.json"),
            Ok(())
        );
        for key in [
            "_lakehealth/jobs/k/bin-1.spec.json",
            "_lakehealth/jobs/j/bin-2.spec.json",
        ] {
            assert!(
                matches!(
                    spec_at_its_key(&s, key),
                    Err(Untrusted::MisplacedSpec { .. })
                ),
                "{key}"
            );
        }
        let mut other_prefix = spec();
        other_prefix.output_prefix = "_lakehealth/jobs/k".into();
        assert!(spec_at_its_key(&other_prefix, "_lakehealth/jobs/j/bin-1.spec.json").is_err());
        let mut dotted = spec();
        dotted.job_id = "..".into();
        dotted.output_prefix = "_lakehealth/jobs/..".into();
        assert!(spec_at_its_key(&dotted, "_lakehealth/jobs/../bin-1.spec.json").is_err());
    }

    #[test]
    fn a_result_that_removes_exactly_its_spec_inputs_is_trusted() {
        assert_eq!(
            check_result(&spec(), &report(&[A, B], vec![add(OUT, 7)], 7)),
            Ok(())
        );
    }

    #[test]
    fn a_result_removing_a_file_its_spec_never_gave_it_is_refused() {
        let r = report(&[A, B, "d=2026-11-01/c.parquet"], vec![add(OUT, 7)], 7);
        assert!(matches!(
            check_result(&spec(), &r),
            Err(Untrusted::RemovesNotInSpec { removes: 1, .. })
        ));
    }

    #[test]
    fn a_result_keeping_one_of_its_inputs_is_refused() {
        let r = report(&[A], vec![add(OUT, 7)], 7);
        assert!(matches!(
            check_result(&spec(), &r),
            Err(Untrusted::InputsMissing { missing: 1, .. })
        ));
    }

    #[test]
    fn a_result_of_another_bin_or_version_is_refused() {
        let mut r = report(&[A, B], vec![add(OUT, 7)], 7);
        r.table_version = 4;
        assert!(matches!(
            check_result(&spec(), &r),
            Err(Untrusted::OtherBin { .. })
        ));
    }

    #[test]
    fn a_result_whose_outputs_count_other_rows_is_refused() {
        let r = report(&[A, B], vec![add(OUT, 6)], 7);
        assert_eq!(
            check_result(&spec(), &r),
            Err(Untrusted::RowCountDiffers {
                said: 7,
                counted: 6
            })
        );
    }

    #[test]
    fn a_result_adding_outside_its_partition_or_an_input_is_refused() {
        let r = report(
            &[A, B],
            vec![add("d=2026-11-02/lakehealth-j-x.parquet", 7)],
            7,
        );
        assert!(matches!(
            check_result(&spec(), &r),
            Err(Untrusted::OtherFolder { .. })
        ));
        let mut other = add(OUT, 7);
        other
            .partition_values
            .insert("d".into(), Some("2026-11-02".into()));
        assert!(matches!(
            check_result(&spec(), &report(&[A, B], vec![other], 7)),
            Err(Untrusted::AddInOtherPartition { .. })
        ));
        // An input lakehealth wrote for this job before (named for it), added again.
        let own = "d=2026-11-01/lakehealth-j-in.parquet";
        let mut s = spec();
        s.files[0].path = own.into();
        s.files[0].store_path = own.into();
        assert!(matches!(
            check_result(&s, &report(&[own, B], vec![add(own, 7)], 7)),
            Err(Untrusted::AddIsInput { .. })
        ));
    }

    #[test]
    fn log_files_state_files_and_paths_out_of_the_root_are_never_deletable() {
        let cols = vec!["d".to_string()];
        for p in [
            "_delta_log/00000000000000000001.json",
            "_delta_log/00000000000000000010.checkpoint.parquet",
            "_lakehealth/jobs/j/bin-1.result.json",
            "d=2026-11-01/../../etc/x.parquet",
            "d=2026-11-01/%2E%2E/x.parquet",
            "/etc/passwd",
            "s3://other/d=1/x.parquet",
            "d=2026-11-01/.hidden.parquet",
            "",
        ] {
            assert!(
                matches!(
                    deletable_output(&cols, &part(), "j", p),
                    Err(Untrusted::OutsideTable { .. })
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn only_parquet_files_in_the_partition_folder_are_deletable() {
        let cols = vec!["d".to_string()];
        assert_eq!(deletable_output(&cols, &part(), "j", OUT), Ok(()));
        assert!(matches!(
            deletable_output(&cols, &part(), "j", "d=2026-11-01/notes.txt"),
            Err(Untrusted::NotParquet { .. })
        ));
        assert!(matches!(
            deletable_output(&cols, &part(), "j", "x.parquet"),
            Err(Untrusted::OtherFolder { .. })
        ));
        assert!(matches!(
            deletable_output(&cols, &part(), "j", "e=1/x.parquet"),
            Err(Untrusted::OtherFolder { .. })
        ));
        assert!(matches!(
            deletable_output(&cols, &part(), "j", "d=2026-11-02/x.parquet"),
            Err(Untrusted::OtherFolder { .. })
        ));
        let spaced = vec![("d".to_string(), Some("a b".to_string()))];
        assert_eq!(
            deletable_output(&cols, &spaced, "j", "d=a%2520b/lakehealth-j-x.parquet"),
            Ok(())
        );
        let null = vec![("d".to_string(), None)];
        assert_eq!(
            deletable_output(
                &cols,
                &null,
                "j",
                "d=__HIVE_DEFAULT_PARTITION__/lakehealth-j-x.parquet"
            ),
            Ok(())
        );
        assert_eq!(
            deletable_output(&[], &[], "j", "lakehealth-j-part-0.parquet"),
            Ok(())
        );
    }

    #[test]
    fn a_file_in_the_partition_not_named_for_the_job_is_never_its_output() {
        let cols = vec!["d".to_string()];
        for p in [
            "d=2026-11-01/part-00001-x-c000.snappy.parquet",
            "d=2026-11-01/part-00001-lakehealth-k-x-c000.snappy.parquet",
            "d=2026-11-01/part-00001-lakehealth-jj-x-c000.snappy.parquet",
        ] {
            assert!(
                matches!(
                    deletable_output(&cols, &part(), "j", p),
                    Err(Untrusted::NotNamedForJob { .. })
                ),
                "{p}"
            );
        }
        let unnamed = add("d=2026-11-01/part-00001-x-c000.snappy.parquet", 7);
        assert!(matches!(
            check_result(&spec(), &report(&[A, B], vec![unnamed], 7)),
            Err(Untrusted::NotNamedForJob { .. })
        ));
    }
}
