//! What Iceberg's `rewrite_data_files` (bin-pack strategy, default options) would do with the
//! current snapshot's data files, per partition, following its planner
//! (`SizeBasedFileRewritePlanner` / `BinPackRewriteFilePlanner` in Apache Iceberg 1.x):
//!
//! - candidates are files under `min-file-size-bytes` (0.75 × target) or over
//!   `max-file-size-bytes` (1.8 × target); the target is `write.target-file-size-bytes`;
//! - candidates of one partition are packed, in manifest order, into groups of at most
//!   `max-file-group-size-bytes` (100 GiB);
//! - a group is rewritten when it has at least 2 files and `min-input-files` (5) of them, or at
//!   least 2 files holding more than the target, or more bytes than `max-file-size-bytes`;
//! - it writes `numOutputFiles(bytes)` files (round down when spreading the remainder keeps the
//!   files within 1.1 × target).
//!
//! Delete-driven rewrites (`delete-file-threshold`, `delete-ratio-threshold`) are not predicted:
//! they need the delete files matched to data files.

use serde::Serialize;

use crate::model::partition::PartitionValues;
use crate::size::GIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RewriteOptions {
    pub target_file_size: u64,
    pub min_file_size: u64,
    pub max_file_size: u64,
    pub min_input_files: u64,
    pub max_file_group_size: u64,
}

impl RewriteOptions {
    /// `rewrite_data_files`' defaults for a table whose target is `target`.
    pub fn defaults(target: u64) -> Self {
        let target = target.max(1);
        Self {
            target_file_size: target,
            min_file_size: (target as f64 * 0.75) as u64,
            max_file_size: (target as f64 * 1.8) as u64,
            min_input_files: 5,
            max_file_group_size: 100 * GIB,
        }
    }

    /// Files are written up to halfway between target and max before a new one starts.
    fn write_max_file_size(&self) -> u64 {
        self.target_file_size + (self.max_file_size - self.target_file_size) / 2
    }

    fn wrongly_sized(&self, size: u64) -> bool {
        size < self.min_file_size || size > self.max_file_size
    }

    /// Files a group of `bytes` is rewritten into.
    pub fn output_files(&self, bytes: u64) -> u64 {
        let t = self.target_file_size;
        if bytes < t {
            return 1;
        }
        let with_remainder = bytes.div_ceil(t);
        let without = bytes / t;
        if bytes % t > self.min_file_size {
            return with_remainder;
        }
        let avg_without = bytes / without;
        let limit = (1.1 * t as f64).min(self.write_max_file_size() as f64);
        if (avg_without as f64) < limit {
            without
        } else {
            with_remainder
        }
    }

    /// Whether a group of `files` holding `bytes` is worth rewriting.
    pub fn rewrites(&self, files: u64, bytes: u64) -> bool {
        let enough_input = files > 1 && files >= self.min_input_files;
        let enough_content = files > 1 && bytes > self.target_file_size;
        let too_much_content = bytes > self.max_file_size;
        enough_input || enough_content || too_much_content
    }
}

/// One file group `rewrite_data_files` would rewrite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewriteGroup {
    pub partition: PartitionValues,
    pub files: u64,
    pub bytes: u64,
    pub files_out: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewritePreview {
    pub options: RewriteOptions,
    /// Files outside [min, max], the candidates.
    pub candidate_files: u64,
    pub candidate_bytes: u64,
    /// Groups that would be rewritten, in partition order.
    pub groups: Vec<RewriteGroup>,
    pub files_in: u64,
    pub bytes_in: u64,
    pub files_out: u64,
    /// Partitions with at least one rewritten group.
    pub partitions: u64,
}

impl RewritePreview {
    /// `partitions`: each partition's data file sizes, in manifest order.
    pub fn plan(partitions: &[(PartitionValues, Vec<u64>)], options: RewriteOptions) -> Self {
        let mut p = RewritePreview {
            options,
            candidate_files: 0,
            candidate_bytes: 0,
            groups: Vec::new(),
            files_in: 0,
            bytes_in: 0,
            files_out: 0,
            partitions: 0,
        };
        for (values, sizes) in partitions {
            let mut groups: Vec<(u64, u64)> = Vec::new();
            for &s in sizes.iter().filter(|&&s| options.wrongly_sized(s)) {
                p.candidate_files += 1;
                p.candidate_bytes += s;
                // Iceberg's ListPacker with lookback 1: only the newest group stays open.
                match groups.last_mut() {
                    Some((n, b)) if *b + s <= options.max_file_group_size => {
                        *n += 1;
                        *b += s;
                    }
                    _ => groups.push((1, s)),
                }
            }
            let before = p.groups.len();
            for (files, bytes) in groups {
                if options.rewrites(files, bytes) {
                    let out = options.output_files(bytes);
                    p.files_in += files;
                    p.bytes_in += bytes;
                    p.files_out += out;
                    p.groups.push(RewriteGroup {
                        partition: values.clone(),
                        files,
                        bytes,
                        files_out: out,
                    });
                }
            }
            if p.groups.len() > before {
                p.partitions += 1;
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::MIB;

    fn part(v: &str) -> PartitionValues {
        PartitionValues(vec![("d".into(), Some(v.into()))])
    }

    #[test]
    fn defaults_follow_the_table_target() {
        let o = RewriteOptions::defaults(512 * MIB);
        assert_eq!(o.min_file_size, 384 * MIB);
        assert_eq!(o.max_file_size, (512.0 * 1.8 * MIB as f64) as u64);
        assert_eq!(o.min_input_files, 5);
    }

    #[test]
    fn five_small_files_are_rewritten_four_are_not() {
        let o = RewriteOptions::defaults(512 * MIB);
        let p = RewritePreview::plan(
            &[
                (part("five"), vec![MIB; 5]),
                (part("four"), vec![MIB; 4]),
                // In the band: never a candidate.
                (part("healthy"), vec![400 * MIB; 9]),
            ],
            o,
        );
        assert_eq!((p.candidate_files, p.candidate_bytes), (9, 9 * MIB));
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].partition, part("five"));
        assert_eq!((p.files_in, p.bytes_in, p.files_out), (5, 5 * MIB, 1));
        assert_eq!(p.partitions, 1);
    }

    #[test]
    fn few_files_holding_more_than_the_target_and_one_oversized_file_are_rewritten() {
        let o = RewriteOptions::defaults(100 * MIB);
        let p = RewritePreview::plan(
            &[
                (part("two-big-small"), vec![70 * MIB, 60 * MIB]),
                (part("one-huge"), vec![500 * MIB]),
                (part("one-small"), vec![MIB]),
            ],
            o,
        );
        let got: Vec<(String, u64, u64)> = p
            .groups
            .iter()
            .map(|g| (g.partition.label(), g.files, g.files_out))
            .collect();
        assert_eq!(
            got,
            vec![
                ("d=two-big-small".to_string(), 2, 2),
                ("d=one-huge".to_string(), 1, 5),
            ]
        );
    }

    #[test]
    fn output_files_round_down_only_when_the_remainder_fits_in_ten_percent() {
        let o = RewriteOptions::defaults(100 * MIB);
        assert_eq!(o.output_files(MIB), 1);
        // A remainder above the minimum (75 MiB) keeps its own file.
        assert_eq!(o.output_files(180 * MIB), 2);
        // 205 MiB: 5 MiB remainder spread over two files of 102.5 MiB (< 110 MiB).
        assert_eq!(o.output_files(205 * MIB), 2);
        // 130 MiB: one file would be 130 MiB (> 110 MiB), so the remainder gets a file.
        assert_eq!(o.output_files(130 * MIB), 2);
    }
}
