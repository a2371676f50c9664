//! Vacuum debt: files the log has removed but that stay on storage until VACUUM deletes them.
//! The log tells their sizes (when the writer recorded them) and when they were removed.

use serde::Serialize;

use crate::delta::log::state::Tombstones;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VacuumDebt {
    /// Tombstones in the current log state.
    pub removed_files: u64,
    /// Their total size (tombstones without a size are counted in `files_without_size`).
    pub removed_bytes: u64,
    pub files_without_size: u64,
    pub retention_hours: f64,
    /// Older than the retention: a VACUUM run now would delete them.
    pub vacuumable_files: u64,
    pub vacuumable_bytes: u64,
}

impl VacuumDebt {
    pub fn compute(t: &Tombstones, retention_hours: f64, now_ms: i64) -> Self {
        let cutoff = now_ms - (retention_hours * 3_600_000.0) as i64;
        let mut d = VacuumDebt {
            removed_files: 0,
            removed_bytes: 0,
            files_without_size: 0,
            retention_hours,
            vacuumable_files: 0,
            vacuumable_bytes: 0,
        };
        for &(ts, size) in &t.entries {
            d.removed_files += 1;
            let size = size.map(crate::delta::log::file_size::logged_size);
            match size {
                Some(s) => d.removed_bytes += s,
                None => d.files_without_size += 1,
            }
            if ts.is_some_and(|ts| ts < cutoff) {
                d.vacuumable_files += 1;
                d.vacuumable_bytes += size.unwrap_or(0);
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_vacuumable_by_retention() {
        let mut t = Tombstones::default();
        let now = 1_000_000_000_000;
        let hour = 3_600_000;
        t.push(Some(now - 200 * hour), Some(100)); // past 168h
        t.push(Some(now - hour), Some(50));
        t.push(None, None);
        let d = VacuumDebt::compute(&t, 168.0, now);
        assert_eq!(d.removed_files, 3);
        assert_eq!(d.removed_bytes, 150);
        assert_eq!(d.files_without_size, 1);
        assert_eq!((d.vacuumable_files, d.vacuumable_bytes), (1, 100));
    }
}
