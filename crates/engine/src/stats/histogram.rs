//! File-size histogram with log-spaced buckets and the target band marked.
//!
//! Buckets below the small-file threshold are log spaced (<1 MiB, 1–8, 8–32, 32–64, 64–128 MiB ...),
//! then one bucket for the target band [small threshold, max file size], then one for oversized files.

use serde::Serialize;

use crate::size::MIB;

/// Where a bucket sits relative to the target band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Small,
    Target,
    Large,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Inclusive lower bound.
    pub min_bytes: u64,
    /// Exclusive upper bound; `None` for the open-ended last bucket.
    pub max_bytes: Option<u64>,
    pub files: u64,
    pub bytes: u64,
    pub band: Band,
}

/// Bucket edges for a given band; shared by every histogram of one report so they line up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketEdges {
    /// Ascending lower bounds of every bucket; the first is 0.
    lower: Vec<u64>,
    small_below: u64,
    large_above: u64,
}

const LOG_EDGES: [u64; 7] = [
    MIB,
    8 * MIB,
    32 * MIB,
    64 * MIB,
    128 * MIB,
    256 * MIB,
    512 * MIB,
];

impl BucketEdges {
    /// `small_below`: files below it are small. `large_above`: files above it exceed the band.
    pub fn new(small_below: u64, large_above: u64) -> Self {
        let large_above = large_above.max(small_below);
        let mut lower = vec![0];
        lower.extend(LOG_EDGES.iter().copied().filter(|&e| e < small_below));
        if small_below > 0 {
            lower.push(small_below);
        }
        // The target band is inclusive of its upper bound, so oversized starts one byte above.
        lower.push(large_above.saturating_add(1));
        lower.dedup();
        Self {
            lower,
            small_below,
            large_above,
        }
    }

    pub fn len(&self) -> usize {
        self.lower.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }

    pub fn index(&self, size: u64) -> usize {
        // At most ~9 edges: a linear scan from the top beats a binary search here.
        self.lower.iter().rposition(|&lo| size >= lo).unwrap_or(0)
    }

    fn band_of(&self, lower: u64) -> Band {
        if lower < self.small_below {
            Band::Small
        } else if lower <= self.large_above {
            Band::Target
        } else {
            Band::Large
        }
    }

    pub fn empty_histogram(&self) -> Histogram {
        let buckets = self
            .lower
            .iter()
            .enumerate()
            .map(|(i, &lo)| Bucket {
                min_bytes: lo,
                max_bytes: self.lower.get(i + 1).copied(),
                files: 0,
                bytes: 0,
                band: self.band_of(lo),
            })
            .collect();
        Histogram { buckets }
    }

    pub fn histogram(&self, sizes: &[u64]) -> Histogram {
        let mut h = self.empty_histogram();
        for &s in sizes {
            let b = &mut h.buckets[self.index(s)];
            b.files += 1;
            b.bytes += s;
        }
        h
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
}

impl Histogram {
    pub fn files(&self) -> u64 {
        self.buckets.iter().map(|b| b.files).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.buckets.iter().map(|b| b.bytes).sum()
    }

    /// Adds another histogram built from the same edges.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            a.files += b.files;
            a.bytes += b.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::GIB;

    #[test]
    fn default_edges_are_log_spaced_with_target_band() {
        let e = BucketEdges::new(128 * MIB, GIB);
        let h = e.empty_histogram();
        let bounds: Vec<(u64, Option<u64>, Band)> = h
            .buckets
            .iter()
            .map(|b| (b.min_bytes, b.max_bytes, b.band))
            .collect();
        assert_eq!(
            bounds,
            vec![
                (0, Some(MIB), Band::Small),
                (MIB, Some(8 * MIB), Band::Small),
                (8 * MIB, Some(32 * MIB), Band::Small),
                (32 * MIB, Some(64 * MIB), Band::Small),
                (64 * MIB, Some(128 * MIB), Band::Small),
                (128 * MIB, Some(GIB + 1), Band::Target),
                (GIB + 1, None, Band::Large),
            ]
        );
    }

    #[test]
    fn sizes_land_in_the_right_bucket() {
        let e = BucketEdges::new(128 * MIB, GIB);
        let h = e.histogram(&[0, MIB - 1, MIB, 128 * MIB - 1, 128 * MIB, GIB, GIB + 1]);
        let files: Vec<u64> = h.buckets.iter().map(|b| b.files).collect();
        assert_eq!(files, vec![2, 1, 0, 0, 1, 2, 1]);
        assert_eq!(h.files(), 7);
        assert_eq!(
            h.bytes(),
            MIB - 1 + MIB + 128 * MIB - 1 + 128 * MIB + GIB + GIB + 1
        );
    }

    #[test]
    fn custom_band_keeps_edges_below_threshold_only() {
        let e = BucketEdges::new(20 * MIB, 64 * MIB);
        let h = e.empty_histogram();
        let lows: Vec<u64> = h.buckets.iter().map(|b| b.min_bytes).collect();
        assert_eq!(lows, vec![0, MIB, 8 * MIB, 20 * MIB, 64 * MIB + 1]);
        assert_eq!(h.buckets[3].band, Band::Target);
    }
}
