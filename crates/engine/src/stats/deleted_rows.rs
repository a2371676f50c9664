//! Rows deleted by deletion vectors, per partition: how much of what a table stores its readers
//! skip, and the files whose deleted share is over the ratio compaction rewrites them at (Delta's
//! OPTIMIZE `maxDeletedRowsRatio`, 0.05 by default).

use serde::Serialize;

use crate::model::partition::PartitionValues;

/// One active file, as far as deleted rows go.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRows {
    pub path: String,
    /// Rows its deletion vector marks deleted (0 without one).
    pub deleted: u64,
    /// Rows in the file (deleted ones included); None when its statistics do not say.
    pub records: Option<u64>,
}

impl FileRows {
    pub fn ratio(&self) -> Option<f64> {
        let n = self.records.filter(|n| *n > 0)?;
        (self.deleted > 0).then(|| self.deleted as f64 / n as f64)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionDeletedRows {
    pub values: PartitionValues,
    pub files_with_deletion_vectors: u64,
    pub deleted_rows: u64,
    /// Rows in the partition's files (deleted ones included), from their statistics.
    pub rows: u64,
    /// `deleted_rows / rows` (0 when no row count is known).
    pub deleted_share: f64,
}

/// A file whose deleted share is over the ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileOverRatio {
    pub path: String,
    pub deleted_rows: u64,
    pub rows: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeletedRows {
    pub max_deleted_ratio: f64,
    pub files_with_deletion_vectors: u64,
    pub deleted_rows: u64,
    pub rows: u64,
    /// Partitions with at least one deletion vector, most deleted rows first.
    pub partitions: Vec<PartitionDeletedRows>,
    /// Files over `max_deleted_ratio`, largest share first.
    pub files_over_ratio: Vec<FileOverRatio>,
}

fn share(deleted: u64, rows: u64) -> f64 {
    if rows == 0 {
        0.0
    } else {
        deleted as f64 / rows as f64
    }
}

impl DeletedRows {
    /// From the active files grouped by partition; None when no file has a deletion vector.
    pub fn compute(groups: &[(PartitionValues, Vec<FileRows>)], max_ratio: f64) -> Option<Self> {
        let mut partitions = Vec::new();
        let mut over = Vec::new();
        for (values, files) in groups {
            let with_dv = files.iter().filter(|f| f.deleted > 0).count() as u64;
            if with_dv == 0 {
                continue;
            }
            let deleted: u64 = files.iter().map(|f| f.deleted).sum();
            let rows: u64 = files.iter().filter_map(|f| f.records).sum();
            partitions.push(PartitionDeletedRows {
                values: values.clone(),
                files_with_deletion_vectors: with_dv,
                deleted_rows: deleted,
                rows,
                deleted_share: share(deleted, rows),
            });
            over.extend(
                files
                    .iter()
                    .filter(|f| f.ratio().is_some_and(|r| r > max_ratio))
                    .map(|f| FileOverRatio {
                        path: f.path.clone(),
                        deleted_rows: f.deleted,
                        rows: f.records.unwrap_or(0),
                    }),
            );
        }
        if partitions.is_empty() {
            return None;
        }
        partitions.sort_by(|a, b| {
            b.deleted_rows
                .cmp(&a.deleted_rows)
                .then(a.values.cmp(&b.values))
        });
        over.sort_by(|a, b| {
            share(b.deleted_rows, b.rows)
                .total_cmp(&share(a.deleted_rows, a.rows))
                .then(a.path.cmp(&b.path))
        });
        let rows = groups
            .iter()
            .flat_map(|(_, f)| f.iter().filter_map(|f| f.records))
            .sum();
        Some(DeletedRows {
            max_deleted_ratio: max_ratio,
            files_with_deletion_vectors: partitions
                .iter()
                .map(|p| p.files_with_deletion_vectors)
                .sum(),
            deleted_rows: partitions.iter().map(|p| p.deleted_rows).sum(),
            rows,
            partitions,
            files_over_ratio: over,
        })
    }

    /// Files named in the finding's message.
    const NAMED: usize = 5;

    /// The finding's message, naming the first files over the ratio; None when none is.
    pub fn over_ratio_message(&self) -> Option<String> {
        if self.files_over_ratio.is_empty() {
            return None;
        }
        let named: Vec<String> = self
            .files_over_ratio
            .iter()
            .take(Self::NAMED)
            .map(|f| {
                format!(
                    "{} ({:.1} % of {} rows)",
                    f.path,
                    100.0 * share(f.deleted_rows, f.rows),
                    f.rows
                )
            })
            .collect();
        let more = self.files_over_ratio.len().saturating_sub(Self::NAMED);
        Some(format!(
            "{} files have more than {} % of their rows deleted by deletion vectors: readers still read and skip them. `lakehealth compact` rewrites them (or `lakehealth purge` every file with a deletion vector): {}{}",
            self.files_over_ratio.len(),
            self.max_deleted_ratio * 100.0,
            named.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(v: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(v.into()))])
    }

    fn f(path: &str, deleted: u64, records: u64) -> FileRows {
        FileRows {
            path: path.into(),
            deleted,
            records: Some(records),
        }
    }

    #[test]
    fn shares_per_partition_and_the_files_over_the_ratio_are_named() {
        let groups = vec![
            (pv("1"), vec![f("a", 10, 100), f("b", 0, 100)]),
            (pv("2"), vec![f("c", 5, 100)]),
            (pv("3"), vec![f("d", 0, 50)]),
        ];
        let d = DeletedRows::compute(&groups, 0.05).unwrap();
        assert_eq!(d.deleted_rows, 15);
        assert_eq!(d.rows, 350);
        assert_eq!(d.files_with_deletion_vectors, 2);
        assert_eq!(d.partitions.len(), 2);
        assert_eq!(d.partitions[0].values, pv("1"));
        assert_eq!(d.partitions[0].deleted_share, 0.05);
        // 5 % is not over 5 %.
        assert_eq!(d.files_over_ratio.len(), 1);
        let m = d.over_ratio_message().unwrap();
        assert!(m.starts_with("1 files have more than 5 % "), "{m}");
        assert!(m.contains("a (10.0 % of 100 rows)"), "{m}");
    }

    #[test]
    fn a_table_without_deletion_vectors_has_no_section() {
        assert!(DeletedRows::compute(&[(pv("1"), vec![f("a", 0, 10)])], 0.05).is_none());
    }
}
