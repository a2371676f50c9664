//! File sizes as the log states them: `add.size` and `remove.size` are a writer's `i64`, and a
//! crafted or corrupt log can say anything. Sizes are taken clamped to what one data file can
//! plausibly hold, so that no total of a table's files wraps around (`u64` sums of 16 million
//! files at the bound still fit), and the replay says which file claimed more.

use crate::size::TIB;

/// The most bytes one data file is believed to hold (Parquet files are MiB to a few GiB).
pub const MAX_FILE_SIZE: u64 = TIB;

/// `raw` as a byte count: negative is 0, more than `MAX_FILE_SIZE` is `MAX_FILE_SIZE`.
pub fn logged_size(raw: i64) -> u64 {
    raw.clamp(0, MAX_FILE_SIZE as i64) as u64
}

/// Whether the log's size cannot be a real file's.
pub fn is_implausible(raw: i64) -> bool {
    raw < 0 || raw as u64 > MAX_FILE_SIZE
}

/// Files whose logged size was implausible: how many, and the first seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImplausibleSizes {
    pub count: u64,
    pub example: Option<(String, i64)>,
}

impl ImplausibleSizes {
    pub fn note(&mut self, path: &str, raw: i64) {
        if is_implausible(raw) {
            self.count += 1;
            self.example.get_or_insert_with(|| (path.to_string(), raw));
        }
    }

    /// The replay's warning, if any file claimed an implausible size.
    pub fn warning(&self) -> Option<String> {
        let (path, raw) = self.example.as_ref()?;
        Some(format!(
            "{} add action(s) state a size no data file has (e.g. {path}: {raw} bytes); each is counted as at most 1 TiB (negative as 0), so totals stay meaningful. The log was written by a broken or hostile writer",
            self.count
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_files_of_i64_max_bytes_sum_without_wrapping() {
        let total: u64 = [i64::MAX; 3].iter().map(|r| logged_size(*r)).sum();
        assert_eq!(total, 3 * TIB);
        assert_eq!(logged_size(-5), 0);
        assert_eq!(logged_size(1234), 1234);
    }

    #[test]
    fn the_warning_names_the_first_implausible_file_and_counts_them_all() {
        let mut s = ImplausibleSizes::default();
        s.note("a.parquet", 10);
        assert_eq!(s.warning(), None);
        s.note("b.parquet", i64::MAX);
        s.note("c.parquet", -1);
        let w = s.warning().unwrap();
        assert!(
            w.starts_with("2 add action(s)") && w.contains("b.parquet"),
            "{w}"
        );
    }
}
