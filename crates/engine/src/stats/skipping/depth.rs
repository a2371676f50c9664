//! Overlap depth: how many files a reader must open for one value of a column, from each
//! file's [min, max] statistics alone (no data read). The measure Snowflake's
//! `SYSTEM$CLUSTERING_INFORMATION` teaches: a file's depth is the most files overlapping at
//! any point of its range (itself included); a table whose files tile the column has depth 1,
//! one whose every file spans every value has depth = its file count.
//!
//! A file without statistics for the column cannot be skipped: it counts at every point. A
//! file whose column is all null holds no value a point predicate matches: it counts nowhere.

use serde::Serialize;

/// One file's statistics for one column, as order-preserving keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span<K> {
    /// Every value of the file lies in [lo, hi].
    Range { lo: K, hi: K },
    /// Only nulls: a point lookup skips it.
    AllNull,
    /// No statistics: a point lookup always opens it.
    Unknown,
}

/// Files whose depth lies in (the previous bucket's `upto`, `upto`]: 1, 2, 3-4, 5-8, ...
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DepthBucket {
    pub upto: usize,
    pub files: usize,
}

/// The depth of one column over a set of files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Depth {
    pub files: usize,
    /// Files with no statistics for the column (never skipped).
    pub without_stats: usize,
    /// Files holding only nulls for it (always skipped by a point lookup).
    pub all_null: usize,
    /// The mean of the files' depths.
    pub mean: f64,
    /// The deepest file's depth: the most files one lookup may open.
    pub worst: usize,
    /// Files a point lookup of a value the table holds opens, on average (a lookup per file,
    /// of its lower bound).
    pub point_files: f64,
    /// The share of files such a lookup skips, 0..=1 (1 for an empty set).
    pub skipped_share: f64,
    pub histogram: Vec<DepthBucket>,
}

/// The depth of a column over `spans` (one per file). Keys need only an order.
pub fn depth<K: Ord>(spans: &[Span<K>]) -> Depth {
    let files = spans.len();
    let unknown = spans.iter().filter(|s| matches!(s, Span::Unknown)).count();
    let all_null = spans.iter().filter(|s| matches!(s, Span::AllNull)).count();
    let ranges: Vec<(&K, &K)> = spans
        .iter()
        .filter_map(|s| match s {
            // A range written upside down (a broken writer) is read as its two ends.
            Span::Range { lo, hi } if lo <= hi => Some((lo, hi)),
            Span::Range { lo, hi } => Some((hi, lo)),
            _ => None,
        })
        .collect();
    let active = Active::new(&ranges);
    let global = active.max_over(0, active.len().saturating_sub(1)) + unknown;
    let mut depths: Vec<usize> = ranges
        .iter()
        .map(|(lo, hi)| unknown + active.max_over(active.index(lo), active.index(hi)))
        .collect();
    depths.extend(std::iter::repeat_n(global, unknown));
    let lookups: Vec<usize> = ranges
        .iter()
        .map(|(lo, _)| unknown + active.at(active.index(lo)))
        .chain(std::iter::repeat_n(global.max(unknown), unknown))
        .collect();
    let point_files = mean(&lookups);
    Depth {
        files,
        without_stats: unknown,
        all_null,
        mean: mean(&depths),
        worst: depths.iter().copied().max().unwrap_or(0),
        point_files,
        skipped_share: if files == 0 {
            1.0
        } else {
            (1.0 - point_files / files as f64).clamp(0.0, 1.0)
        },
        histogram: histogram(&depths),
    }
}

fn mean(xs: &[usize]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<usize>() as f64 / xs.len() as f64
    }
}

/// Files by depth in buckets 1, 2, 3-4, 5-8, ... up to the deepest (empty buckets kept, so
/// histograms of one table line up).
fn histogram(depths: &[usize]) -> Vec<DepthBucket> {
    let worst = depths.iter().copied().max().unwrap_or(0);
    let mut out = Vec::new();
    let mut upto = 1usize;
    let mut from = 0usize;
    while from < worst {
        out.push(DepthBucket {
            upto,
            files: depths.iter().filter(|d| **d > from && **d <= upto).count(),
        });
        from = upto;
        upto = upto.saturating_mul(2);
    }
    out
}

/// How many ranges hold each distinct end point, with range-maximum queries over them. The
/// count between two consecutive points never exceeds the count at either, so the points
/// are all a maximum needs.
struct Active<'a, K> {
    points: Vec<&'a K>,
    /// A segment tree of the counts at `points` (leaves from `leaves`).
    tree: Vec<usize>,
    leaves: usize,
}

impl<'a, K: Ord> Active<'a, K> {
    fn new(ranges: &[(&'a K, &'a K)]) -> Self {
        let mut points: Vec<&K> = ranges.iter().flat_map(|(lo, hi)| [*lo, *hi]).collect();
        points.sort();
        points.dedup();
        let m = points.len();
        // starts[i]: ranges opening at point i; ends[i]: ranges closing at it.
        let mut starts = vec![0isize; m];
        let mut ends = vec![0isize; m];
        for (lo, hi) in ranges {
            starts[index_of(&points, lo)] += 1;
            ends[index_of(&points, hi)] += 1;
        }
        let leaves = m.next_power_of_two().max(1);
        let mut tree = vec![0usize; 2 * leaves];
        let mut open = 0isize;
        for i in 0..m {
            open += starts[i];
            // Ranges closing here still hold this point.
            tree[leaves + i] = open.max(0) as usize;
            open -= ends[i];
        }
        for i in (1..leaves).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        Self {
            points,
            tree,
            leaves,
        }
    }

    fn len(&self) -> usize {
        self.points.len()
    }

    fn index(&self, k: &K) -> usize {
        index_of(&self.points, k)
    }

    fn at(&self, i: usize) -> usize {
        self.tree.get(self.leaves + i).copied().unwrap_or(0)
    }

    /// The most ranges holding any point in `from..=to` (0 when there are none).
    fn max_over(&self, from: usize, to: usize) -> usize {
        if self.points.is_empty() {
            return 0;
        }
        let (mut l, mut r) = (from + self.leaves, to + self.leaves + 1);
        let mut best = 0;
        while l < r {
            if l & 1 == 1 {
                best = best.max(self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best = best.max(self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        best
    }
}

/// The position of `k` among sorted distinct `points` (it is one of them).
fn index_of<K: Ord>(points: &[&K], k: &K) -> usize {
    points.partition_point(|p| *p < k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(lo: i64, hi: i64) -> Span<i64> {
        Span::Range { lo, hi }
    }

    #[test]
    fn files_that_tile_the_column_have_depth_one_and_a_lookup_opens_one() {
        let d = depth(&[r(0, 9), r(10, 19), r(20, 29), r(30, 39)]);
        assert_eq!(d.worst, 1);
        assert_eq!(d.mean, 1.0);
        assert_eq!(d.point_files, 1.0);
        assert_eq!(d.skipped_share, 0.75);
        assert_eq!(d.histogram, vec![DepthBucket { upto: 1, files: 4 }]);
    }

    #[test]
    fn files_that_each_span_every_value_have_depth_equal_to_their_count() {
        let d = depth(&[r(0, 100), r(1, 99), r(0, 100), r(2, 98), r(0, 100)]);
        assert_eq!(d.worst, 5);
        assert_eq!(d.mean, 5.0);
        // Lookups at the lower bounds 0, 1, 0, 2, 0 open 3, 4, 3, 5, 3 files.
        assert!((d.point_files - 3.6).abs() < 1e-9);
        assert_eq!(
            d.histogram,
            vec![
                DepthBucket { upto: 1, files: 0 },
                DepthBucket { upto: 2, files: 0 },
                DepthBucket { upto: 4, files: 0 },
                DepthBucket { upto: 8, files: 5 },
            ]
        );
    }

    #[test]
    fn a_files_depth_is_the_most_files_overlapping_anywhere_in_its_range() {
        // [0,10] meets [5,6] and [8,20]; those two never meet each other, and [8,20] meets
        // [15,30] as well: the chain's middle files are 2 deep, the long one too.
        let d = depth(&[r(0, 10), r(5, 6), r(8, 20), r(15, 30)]);
        // Depths: [0,10] -> 2, [5,6] -> 2, [8,20] -> 2, [15,30] -> 2.
        assert_eq!(d.worst, 2);
        assert_eq!(d.mean, 2.0);
        // Lookups at each lower bound: 0 -> 1, 5 -> 2, 8 -> 2, 15 -> 2.
        assert_eq!(d.point_files, 1.75);
        // Touching ends overlap: a value equal to both bounds is in both files.
        let touching = depth(&[r(0, 10), r(10, 20)]);
        assert_eq!(touching.worst, 2);
        assert_eq!(touching.point_files, 1.5);
    }

    #[test]
    fn a_file_without_statistics_is_opened_by_every_lookup_and_an_all_null_one_by_none() {
        let d = depth(&[r(0, 9), r(10, 19), Span::Unknown, Span::AllNull]);
        assert_eq!((d.files, d.without_stats, d.all_null), (4, 1, 1));
        // Each ranged file meets the unknown one; the unknown one is as deep as the deepest.
        assert_eq!(d.worst, 2);
        assert_eq!(d.point_files, 2.0);
        assert_eq!(d.skipped_share, 0.5);
        let none = depth::<i64>(&[Span::Unknown, Span::Unknown]);
        assert_eq!(
            (none.worst, none.point_files, none.skipped_share),
            (2, 2.0, 0.0)
        );
    }

    #[test]
    fn no_files_have_no_depth() {
        let d = depth::<i64>(&[]);
        assert_eq!((d.files, d.worst, d.mean), (0, 0, 0.0));
        assert!(d.histogram.is_empty());
    }

    #[test]
    fn the_sweep_agrees_with_counting_every_point_by_hand() {
        // Pseudo-random ranges over 0..200; each depth checked against a brute-force count.
        let mut x: u64 = 42;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as i64 % 200
        };
        let spans: Vec<Span<i64>> = (0..60)
            .map(|_| {
                let (a, b) = (next(), next());
                r(a.min(b), a.max(b))
            })
            .collect();
        let ranges: Vec<(i64, i64)> = spans
            .iter()
            .map(|s| match s {
                Span::Range { lo, hi } => (*lo, *hi),
                _ => unreachable!(),
            })
            .collect();
        let at = |v: i64| ranges.iter().filter(|(l, h)| *l <= v && v <= *h).count();
        let brute: Vec<usize> = ranges
            .iter()
            .map(|(l, h)| (*l..=*h).map(at).max().unwrap_or(0))
            .collect();
        let d = depth(&spans);
        assert_eq!(d.worst, brute.iter().copied().max().unwrap());
        assert!((d.mean - mean(&brute)).abs() < 1e-9);
        let lookups: Vec<usize> = ranges.iter().map(|(l, _)| at(*l)).collect();
        assert!((d.point_files - mean(&lookups)).abs() < 1e-9);
    }
}
