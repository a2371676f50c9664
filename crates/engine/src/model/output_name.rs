//! A compaction output's name carries its job's id (`…lakehealth-<job>-…parquet`), so what a
//! sweep may delete is decided by the name lakehealth gave the file, never by a record alone:
//! a file some other writer named is never a job's output, whatever a ledger says.

/// The token that marks `job`'s outputs.
fn token(job: &str) -> String {
    format!("lakehealth-{job}-")
}

/// `path` (a table-relative path or a file name) renamed as an output of `job`: delta-rs's
/// `part-NNNNN-<uuid>-c000.snappy.parquet` becomes `part-NNNNN-lakehealth-<job>-<uuid>-c000…`,
/// another name gets the token in front. A name that carries it already is kept.
pub fn named_for_job(path: &str, job: &str) -> String {
    let (folder, name) = match path.rsplit_once('/') {
        Some((f, n)) => (Some(f), n),
        None => (None, path),
    };
    if carries_job(name, job) {
        return path.to_string();
    }
    let renamed = match part_number(name) {
        Some((part, rest)) => format!("{part}{}{rest}", token(job)),
        None => format!("{}{name}", token(job)),
    };
    match folder {
        Some(f) => format!("{f}/{renamed}"),
        None => renamed,
    }
}

/// `part-NNNNN-` and the rest of the name, when the name starts so.
fn part_number(name: &str) -> Option<(&str, &str)> {
    let digits = name.strip_prefix("part-")?;
    let end = digits.find('-')?;
    (end > 0 && digits[..end].bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.split_at("part-".len() + end + 1))
}

/// Whether the file name of `path` is a Parquet file named as an output of `job` (the token at
/// the start of the name or right after a `-`).
pub fn carries_job(path: &str, job: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if job.is_empty() || !name.ends_with(".parquet") {
        return false;
    }
    let t = token(job);
    name.starts_with(&t) || name.contains(&format!("-{t}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn delta_rs_names_keep_their_part_number_and_carry_the_job() {
        let p = "d=1/part-00003-6b1c-c000.snappy.parquet";
        let named = named_for_job(p, JOB);
        assert_eq!(
            named,
            format!("d=1/part-00003-lakehealth-{JOB}-6b1c-c000.snappy.parquet")
        );
        assert!(carries_job(&named, JOB));
        assert_eq!(named_for_job(&named, JOB), named, "named once");
        assert_eq!(
            named_for_job("x.parquet", JOB),
            format!("lakehealth-{JOB}-x.parquet")
        );
    }

    #[test]
    fn a_name_without_the_exact_job_does_not_carry_it() {
        assert!(!carries_job("d=1/part-00000-6b1c-c000.snappy.parquet", JOB));
        // Another job whose id starts with this one's, or ends so.
        assert!(!carries_job(
            &format!("part-00000-lakehealth-{JOB}0-x.parquet"),
            JOB
        ));
        assert!(!carries_job(
            &format!("part-00000-xlakehealth-{JOB}-x.parquet"),
            JOB
        ));
        // Only the file name counts, not a folder named like an output.
        assert!(!carries_job(&format!("lakehealth-{JOB}-d/x.parquet"), JOB));
        assert!(!carries_job(
            &format!("part-00000-lakehealth-{JOB}-x.json"),
            JOB
        ));
        assert!(!carries_job("part-00000-lakehealth--x.parquet", ""));
        // Iceberg's outputs carry it the same way.
        assert!(carries_job(
            &format!("00001-lakehealth-{JOB}-ab12.parquet"),
            JOB
        ));
    }
}
