//! File-size statistics of a set of files (a partition or a whole table) and the health score.
//!
//! Health score (0–100) = 100 × ideal_files / files (100 for no file), where ideal_files is
//! what a compaction of the small files would leave: the files at or above the small-file
//! threshold, kept as they are, plus the small files' bytes in files of at least
//! max(target_file_size, small_file_size), i.e. floor(small_bytes / that), at least 1 when
//! there is a small file. So the score agrees with the histogram: it is 100 only when at most
//! one file is small (a partition of small files is 100 only as a single file holding all its
//! data), and 10 means ten times more files than needed.

use serde::Serialize;

use super::histogram::{BucketEdges, Histogram};

use crate::model::thresholds::Thresholds;

// The histogram's bands belong to the statistics, so this impl stays beside them.
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

/// The files a partition would have after compacting its small files into files of at least
/// `max(target, small_threshold)` each (documented in the module header).
pub fn ideal_files(files: u64, small_files: u64, small_bytes: u64, t: &Thresholds) -> u64 {
    let kept = files - small_files;
    let merged = if small_files == 0 {
        0
    } else {
        let each = t.target_file_size.max(t.small_file_size).max(1);
        (small_bytes / each).clamp(1, small_files)
    };
    kept + merged
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
        let ideal = ideal_files(files, small_files, small_bytes, t);
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
    use crate::size::{GIB, MIB};

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
        assert_eq!(s.ideal_files, 7); // floor(1000 MiB / 128 MiB)
        assert_eq!(s.excess_files, 993);
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
        assert_eq!(s.ideal_files, 2);
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
    fn a_partition_of_small_files_is_not_healthy() {
        let t = t();
        // The measured case: two outputs of 89 and 79 MiB, where one file would do.
        let mut sizes = vec![89 * MIB, 79 * MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!((s.ideal_files, s.excess_files, s.health_score), (1, 1, 50));
        // Three small files that could be two in the band.
        let mut sizes = vec![127 * MIB, 127 * MIB, 127 * MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!((s.ideal_files, s.health_score), (2, 66));
        // A threshold above the target: outputs must reach the threshold to leave the band.
        let t2 = Thresholds {
            small_file_size: 256 * MIB,
            ..t
        };
        let mut sizes = vec![200 * MIB, 200 * MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t2, &t2.edges());
        assert_eq!((s.ideal_files, s.health_score), (1, 50));
        // Big files are kept as they are; one small file beside them cannot be merged.
        let mut sizes = vec![900 * MIB, MIB];
        let s = SizeStats::from_sizes(&mut sizes, &t, &t.edges());
        assert_eq!((s.ideal_files, s.health_score), (2, 100));
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
