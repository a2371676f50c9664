//! Z-order keys: each column's value becomes its bucket among quantile boundaries (ranks, as
//! Spark's `range_partition_id` does, so a skewed or string column spreads over the buckets
//! as evenly as a uniform integer), and the buckets' bits are interleaved, most significant
//! first. Rows sorted by the key fill files that each cover a small box of every column.
//! delta-rs instead interleaves the first 16 bytes of each value's row encoding, which leaves
//! a column whose values share leading bytes (small integers in an i64, strings with a common
//! prefix) almost unsorted.

/// Bits of one column's bucket (1,024 buckets); at most `MAX_COLUMNS` columns fit a key.
pub const BUCKET_BITS: u32 = 10;
pub const MAX_COLUMNS: usize = (u128::BITS / BUCKET_BITS) as usize;

/// Quantile boundaries of one column: the `buckets - 1` values that cut `sample` (order-
/// preserving encodings of its values) into equal shares, duplicates dropped.
pub fn boundaries(mut sample: Vec<Vec<u8>>, buckets: usize) -> Vec<Vec<u8>> {
    sample.sort_unstable();
    let n = sample.len();
    if n == 0 || buckets < 2 {
        return Vec::new();
    }
    let mut out: Vec<Vec<u8>> = (1..buckets)
        .map(|i| sample[(i * n / buckets).min(n - 1)].clone())
        .collect();
    out.dedup();
    out
}

/// The bucket of `value` among `boundaries`: how many boundaries are at or below it, spread
/// over the whole `BUCKET_BITS` range (a column of 500 distinct values has 500 buckets; spread,
/// its top bit splits it in halves like every other column's, instead of never being set).
pub fn bucket(boundaries: &[Vec<u8>], value: &[u8]) -> u32 {
    let rank = boundaries.partition_point(|b| b.as_slice() <= value) as u64;
    let buckets = boundaries.len() as u64 + 1;
    ((rank << BUCKET_BITS) / buckets) as u32
}

/// The buckets of one row (one per column, each below 2^`BUCKET_BITS`) interleaved most
/// significant bit first: the first column's top bit, the second's, ..., then the next bits.
pub fn interleave(buckets: &[u32]) -> u128 {
    let d = buckets.len().min(MAX_COLUMNS);
    let mut key = 0u128;
    for bit in (0..BUCKET_BITS).rev() {
        for b in &buckets[..d] {
            key = (key << 1) | u128::from((b >> bit) & 1);
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_takes_each_columns_bits_in_turn_from_the_most_significant() {
        // 10-bit buckets: only the lowest bits are set here, so they end the key.
        assert_eq!(interleave(&[0b11, 0b00]), 0b1010);
        assert_eq!(interleave(&[0b10, 0b01]), 0b1001);
        assert_eq!(interleave(&[0b1]), 0b1);
        // The top bit of the first column is the key's top bit.
        assert_eq!(interleave(&[1 << 9, 0]), 1 << 19);
        assert_eq!(interleave(&[0, 1 << 9]), 1 << 18);
    }

    #[test]
    fn sorting_a_grid_by_key_walks_the_z_curve() {
        let mut cells: Vec<(u32, u32)> = (0..4).flat_map(|x| (0..4).map(move |y| (x, y))).collect();
        cells.sort_by_key(|(x, y)| interleave(&[*x, *y]));
        // Each quadrant of 2x2 cells is visited whole before the next (the Z).
        let first: Vec<(u32, u32)> = cells[..4].to_vec();
        assert_eq!(first, vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
        assert_eq!(cells[4..8].to_vec(), vec![(0, 2), (0, 3), (1, 2), (1, 3)]);
        assert_eq!(cells[15], (3, 3));
    }

    #[test]
    fn boundaries_cut_a_skewed_column_into_equal_shares_and_buckets_follow_them() {
        // 90 % of the values are "a": one bucket holds them, the rest spread out (100 buckets:
        // each of the ten others has its own).
        let mut sample: Vec<Vec<u8>> = vec![b"a".to_vec(); 90];
        sample.extend((0..10u8).map(|i| vec![b'b', i]));
        let b = boundaries(sample, 100);
        assert_eq!(b.len(), 11, "a, then b0..b9");
        assert_eq!(b.first().map(Vec::as_slice), Some(&b"a"[..]));
        assert!(b.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        // 12 buckets spread over 1,024: the first at 0, the last past the middle's top bit.
        assert_eq!(bucket(&b, b""), 0, "below every boundary");
        assert_eq!(bucket(&b, b"a"), 1024 / 12);
        assert!(bucket(&b, &[b'b', 9]) > bucket(&b, &[b'b', 0]));
        assert_eq!(bucket(&b, &[b'b', 9]), 11 * 1024 / 12);
        assert!(
            bucket(&b, &[b'b', 9]) >= 1 << (BUCKET_BITS - 1),
            "the top bit is used"
        );
        assert!(boundaries(Vec::new(), 10).is_empty());
    }
}
