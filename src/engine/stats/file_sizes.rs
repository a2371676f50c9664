//! File-size statistics of a set of files (a partition or a whole table) and the health score.
//!
//! Health score (0–100) = 100 × ideal_files / max(files, ideal_files), where
//! ideal_files = ceil(bytes / target_file_size) (at least 1 when there is any file).
//! 100 means nothing to gain by compacting; 10 means ten times more files than needed.

use serde::Serialize;

use super::histogram::{BucketEdges, Histogram};

/// Thresholds every statistic is computed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// Size compaction aims for; `ideal_files` divides by it.
    pub target_file_size: u64,
    /// Files strictly below it count as small (lower bound of the target band).
    pub small_file_size: u64,
    /// Upper bound of the target band.
    pub max_file_size: u64,
}

impl Thresholds {
    pub fn edges(&self) -> BucketEdges {
        BucketEdges::new(self.small_file_size, self.max_file_size)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeStats {
    pub files: u64,
    pub bytes: u64,
    pub min_file_size: u64,
    pub median_file_size: u64,
    pub mean_file_size: u64,
    pub max_file_size: u64,
    pub small_files: u64,
    pub small_bytes: u64,
    pub ideal_files: u64,
    pub excess_files: u64,
    /// Documented in the module header; 100 is perfect.
    pub health_score: u8,
    pub histogram: Histogram,
}

pub fn ideal_files(bytes: u64, files: u64, target: u64) -> u64 {
    if files == 0 {
        0
    } else {
        bytes.div_ceil(target.max(1)).max(1)
    }
}

pub fn health_score(files: u64, ideal: u64) -> u8 {
    if files == 0 || ideal >= files {
        100
    } else {
        // Truncation keeps 99.9 from showing as a perfect 100.
        ((100 * ideal) / files) as u8
    }
}

impl SizeStats {
    /// Statistics of one partition. `sizes` is reordered (median selection) but not otherwise changed.
    pub fn from_sizes(sizes: &mut [u64], t: &Thresholds, edges: &BucketEdges) -> Self {
        let files = sizes.len() as u64;
        let bytes: u64 = sizes.iter().sum();
        let (min, max) = sizes
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &s| (lo.min(s), hi.max(s)));
        let median = median(sizes);
        let (small_files, small_bytes) = sizes
            .iter()
            .filter(|&&s| s < t.small_file_size)
            .fold((0, 0), |(n, b), &s| (n + 1, b + s));
        let ideal = ideal_files(bytes, files, t.target_file_size);
        Self {
            files,
            bytes,
            min_file_size: if files == 0 { 0 } else { min },
            median_file_size: median,
            mean_file_size: bytes.checked_div(files).unwrap_or(0),
            max_file_size: max,
            small_files,
            small_bytes,
            ideal_files: ideal,
            excess_files: files.saturating_sub(ideal),
            health_score: health_score(files, ideal),
            histogram: edges.histogram(sizes),
        }
    }

    /// Whole-table statistics: sizes over all files, but ideal/excess summed per partition,
    /// because compaction never merges files of different partitions.
    pub fn for_table(
        all_sizes: &mut [u64],
        partitions: &[&SizeStats],
        t: &Thresholds,
        edges: &BucketEdges,
    ) -> Self {
        let mut s = Self::from_sizes(all_sizes, t, edges);
        if !partitions.is_empty() {
            s.ideal_files = partitions.iter().map(|p| p.ideal_files).sum();
            s.excess_files = partitions.iter().map(|p| p.excess_files).sum();
            s.health_score = health_score(s.files, s.ideal_files);
        }
        s
    }

    /// Share of files that are small, 0.0–1.0.
    pub fn small_share(&self) -> f64 {
        if self.files == 0 {
            0.0
        } else {
            self.small_files as f64 / self.files as f64
        }
    }
}

/// Lower median (an actual file size, never an average of two).
fn median(sizes: &mut [u64]) -> u64 {
    if sizes.is_empty() {
        return 0;
    }
    let mid = (sizes.len() - 1) / 2;
    let (_, m, _) = sizes.select_nth_unstable(mid);
    *m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::size::{GIB, MIB};

    fn t() -> Thresholds {
        Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        }
    }

    #[test]
    fn thousand_tiny_files_score_low() {
        let t = t();
        let mut sizes = vec![MIB; 1000];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!(s.files, 1000);
        assert_eq!(s.bytes, 1000 * MIB);
        assert_eq!(s.ideal_files, 8); // ceil(1000 MiB / 128 MiB)
        assert_eq!(s.excess_files, 992);
        assert_eq!(s.small_files, 1000);
        assert_eq!(s.small_bytes, 1000 * MIB);
        assert_eq!(s.health_score, 0); // 8/1000 = 0.8%
        assert_eq!(s.median_file_size, MIB);
    }

    #[test]
    fn healthy_partition_scores_100() {
        let t = t();
        let mut sizes = vec![200 * MIB, 300 * MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!(s.ideal_files, 4);
        assert_eq!(s.excess_files, 0);
        assert_eq!(s.health_score, 100);
        assert_eq!(s.small_files, 0);
        assert_eq!(s.min_file_size, 200 * MIB);
        assert_eq!(s.max_file_size, 300 * MIB);
        assert_eq!(s.mean_file_size, 250 * MIB);
        assert_eq!(s.median_file_size, 200 * MIB);
    }

    #[test]
    fn a_single_small_file_is_not_compactable() {
        let t = t();
        let mut sizes = vec![10 * MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!(s.ideal_files, 1);
        assert_eq!(s.excess_files, 0);
        assert_eq!(s.health_score, 100);
        assert_eq!(s.small_files, 1);
    }

    #[test]
    fn empty_is_zero_and_healthy() {
        let t = t();
        let s = SizeStats::from_sizes(&mut [], &t, &t.edges());
        assert_eq!(
            (s.files, s.bytes, s.min_file_size, s.ideal_files),
            (0, 0, 0, 0)
        );
        assert_eq!(s.health_score, 100);
    }

    #[test]
    fn table_ideal_is_summed_per_partition() {
        let t = t();
        let e = t.edges();
        // Two partitions of one 1 MiB file each: each is ideal on its own, so the table is too.
        let a = SizeStats::from_sizes(&mut [MIB], &t, &e);
        let b = SizeStats::from_sizes(&mut [MIB], &t, &e);
        let table = SizeStats::for_table(&mut [MIB, MIB], &[&a, &b], &t, &e);
        assert_eq!(table.ideal_files, 2);
        assert_eq!(table.excess_files, 0);
        assert_eq!(table.health_score, 100);
    }
}
