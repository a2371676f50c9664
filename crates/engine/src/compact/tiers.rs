//! Size-tiered planning: which small files the janitor merges so that a streamed byte is
//! rewritten a bounded number of times.
//!
//! Bin-packing every small file each cycle (what `lakehealth compact` and Delta's OPTIMIZE do)
//! rewrites a growing output together with a few new files at every cycle, until it reaches the
//! target: a byte that arrived in the morning is rewritten once per cycle all day. Here, as in a
//! log-structured merge tree, every file has a *tier*: 0 for a file a writer made, t + 1 for an
//! output of merging tier-t files (lakehealth tags its outputs, `TIER_TAG`). A tier is merged
//! only once it holds `fanout` files (or enough bytes for a file of the target size), so every
//! merge multiplies the rows per file by about `fanout`, and a byte is rewritten at most once
//! per tier: about log_fanout(files streamed per partition) times, whatever the cycle interval.
//!
//! The trade-off (`fanout`, the policy's `tier_fanout`): a larger fanout rewrites each byte
//! fewer times but leaves up to `fanout - 1` files per tier in the partition; a smaller one
//! keeps fewer files and rewrites more.

use std::collections::BTreeMap;

use super::plan::FileRef;

/// The `add` action tag holding an output's tier.
pub const TIER_TAG: &str = "lakehealth.tier";

/// The default fanout: with a stream of KiB-sized files, about 4 rewrites per byte before its
/// file reaches 128 MiB, and at most 7 files per tier.
pub const DEFAULT_FANOUT: u32 = 8;

/// A file's tier from its `add` action's tags: absent or unreadable is 0 (a writer's file).
pub fn tier_of(tags: Option<&std::collections::HashMap<String, Option<String>>>) -> u32 {
    tags.and_then(|t| t.get(TIER_TAG))
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The groups of `candidates` (small files of one partition) to merge now: each tier with at
/// least `fanout` files, or with at least `target` bytes. If the partition would still keep
/// `keep_below` small files or more (the policy's bound), its lowest waiting tiers are merged
/// together too, until it would not: the bound holds, at the price of an early merge.
pub fn due_groups(
    candidates: Vec<FileRef>,
    fanout: u32,
    target: u64,
    keep_below: u64,
) -> Vec<Vec<FileRef>> {
    let fanout = fanout.max(2) as usize;
    let mut tiers: BTreeMap<u32, Vec<FileRef>> = BTreeMap::new();
    for f in candidates {
        tiers.entry(f.tier).or_default().push(f);
    }
    let (mut due, waiting): (Vec<Vec<FileRef>>, Vec<Vec<FileRef>>) =
        tiers.into_values().partition(|files| {
            let bytes: u64 = files.iter().map(|f| f.size).sum();
            files.len() >= 2 && (files.len() >= fanout || bytes >= target)
        });
    // Files left after this plan: the waiting ones and one output per due group (at least).
    let mut left: u64 = waiting.iter().map(|t| t.len() as u64).sum::<u64>() + due.len() as u64;
    let mut early: Vec<FileRef> = Vec::new();
    for tier in waiting {
        if left < keep_below.max(2) {
            break;
        }
        left -= tier.len() as u64;
        if early.is_empty() {
            left += 1;
        }
        early.extend(tier);
    }
    if early.len() >= 2 {
        due.push(early);
    }
    due
}

/// The tier of the output of merging `files`.
pub fn output_tier(files: &[FileRef]) -> u32 {
    files
        .iter()
        .map(|f| f.tier)
        .max()
        .unwrap_or(0)
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::{KIB, MIB};

    fn file(i: u64, size: u64, tier: u32) -> FileRef {
        FileRef {
            path: format!("f{i}"),
            store_path: format!("f{i}"),
            size,
            deletion_vector: None,
            num_records: None,
            tier,
            row_ids: Default::default(),
        }
    }

    /// One simulated partition: what is in it, and what compaction wrote.
    struct Day {
        files: Vec<FileRef>,
        next: u64,
        ingested: u64,
        rewritten: u64,
        max_files: usize,
    }

    impl Day {
        /// A cycle: `arrivals` new writer files, then one plan of the small files run.
        fn cycle(&mut self, arrivals: u64, size: u64, fanout: u32, min: u64, target: u64) {
            for _ in 0..arrivals {
                self.files.push(file(self.next, size, 0));
                self.next += 1;
                self.ingested += size;
            }
            let (small, big): (Vec<FileRef>, Vec<FileRef>) =
                self.files.drain(..).partition(|f| f.size < min);
            self.files = big;
            let groups = due_groups(small.clone(), fanout, target, u64::MAX);
            let merged: std::collections::HashSet<String> = groups
                .iter()
                .flat_map(|g| g.iter().map(|f| f.path.clone()))
                .collect();
            self.files
                .extend(small.into_iter().filter(|f| !merged.contains(&f.path)));
            for g in groups {
                let bytes: u64 = g.iter().map(|f| f.size).sum();
                self.rewritten += bytes;
                self.files.push(file(self.next, bytes, output_tier(&g)));
                self.next += 1;
            }
            self.max_files = self.max_files.max(self.files.len());
        }
    }

    impl Day {
        /// A cycle of the janitor's plan with the policy's bound.
        fn cycle_bounded(&mut self, arrivals: u64, size: u64, fanout: u32, keep_below: u64) {
            for _ in 0..arrivals {
                self.files.push(file(self.next, size, 0));
                self.next += 1;
                self.ingested += size;
            }
            let files = std::mem::take(&mut self.files);
            let groups = if files.len() as u64 >= keep_below {
                due_groups(files.clone(), fanout, 64 * MIB, keep_below)
            } else {
                Vec::new()
            };
            let merged: std::collections::HashSet<String> = groups
                .iter()
                .flat_map(|g| g.iter().map(|f| f.path.clone()))
                .collect();
            self.files = files
                .into_iter()
                .filter(|f| !merged.contains(&f.path))
                .collect();
            for g in groups {
                let bytes: u64 = g.iter().map(|f| f.size).sum();
                self.rewritten += bytes;
                self.files.push(file(self.next, bytes, output_tier(&g)));
                self.next += 1;
            }
        }
    }

    fn day(cycles: u64, arrivals: u64, size: u64, fanout: u32) -> Day {
        let mut d = Day {
            files: Vec::new(),
            next: 0,
            ingested: 0,
            rewritten: 0,
            max_files: 0,
        };
        for _ in 0..cycles {
            d.cycle(arrivals, size, fanout, 64 * MIB, 64 * MIB);
        }
        d
    }

    #[test]
    fn a_day_of_streaming_rewrites_each_byte_a_bounded_number_of_times() {
        // A writer committing twice a second, a 3 KiB file each time, a cycle every 5 s: a
        // day is 17,280 cycles of 10 files (about 500 MiB).
        let d = day(17_280, 10, 3 * KIB, DEFAULT_FANOUT);
        let amplification = d.rewritten as f64 / d.ingested as f64;
        // log_8(172,800 files) = 5.8 tiers: every byte rewritten at most once per tier.
        assert!(
            amplification <= 6.0,
            "write amplification {amplification:.2}"
        );
        assert!(amplification >= 1.0, "it compacts: {amplification:.2}");
        // Every tier holds fewer than `fanout` small files after a cycle.
        assert!(d.max_files <= 7 * 7 + 10, "{} files", d.max_files);
    }

    #[test]
    fn rewriting_the_growing_output_every_cycle_is_what_tiers_avoid() {
        // The old plan: every small file merged every cycle (a fanout of 2 with one tier per
        // cycle behaves like it when outputs keep their tier), for comparison.
        let mut files: Vec<u64> = Vec::new();
        let (mut ingested, mut rewritten) = (0u64, 0u64);
        for _ in 0..1_000 {
            files.extend([3 * KIB; 10]);
            ingested += 30 * KIB;
            let total: u64 = files.iter().sum();
            rewritten += total;
            files = vec![total];
        }
        let binpack = rewritten as f64 / ingested as f64;
        let tiered = day(1_000, 10, 3 * KIB, DEFAULT_FANOUT);
        let tiered = tiered.rewritten as f64 / tiered.ingested as f64;
        assert!(
            binpack > 100.0 && tiered < 5.0,
            "{binpack:.1} vs {tiered:.2}"
        );
    }

    #[test]
    fn a_tier_merges_at_fanout_files_or_at_a_target_of_bytes() {
        let few: Vec<FileRef> = (0..7).map(|i| file(i, KIB, 0)).collect();
        assert!(due_groups(few.clone(), 8, 64 * MIB, u64::MAX).is_empty());
        let mut eight = few.clone();
        eight.push(file(7, KIB, 0));
        assert_eq!(due_groups(eight, 8, 64 * MIB, u64::MAX).len(), 1);
        let big: Vec<FileRef> = (0..3).map(|i| file(i, 30 * MIB, 2)).collect();
        let g = due_groups(big, 8, 64 * MIB, u64::MAX);
        assert_eq!((g.len(), output_tier(&g[0])), (1, 3));
        // Tiers never mix: 7 of tier 0 and 7 of tier 1 wait.
        let mixed: Vec<FileRef> = (0..14).map(|i| file(i, KIB, (i % 2) as u32)).collect();
        assert!(due_groups(mixed.clone(), 8, 64 * MIB, u64::MAX).is_empty());
        // ... unless the partition would keep the policy's number of small files: then the
        // lowest tiers merge together, leaving fewer.
        let g = due_groups(mixed, 8, 64 * MIB, 10);
        assert_eq!(g.len(), 1);
        assert_eq!(
            g[0].len(),
            7,
            "the lowest tier: 7 + 1 output left, below 10"
        );
        assert_eq!(output_tier(&g[0]), 1);
    }

    #[test]
    fn the_policys_bound_holds_every_cycle_at_a_bounded_rewrite_cost() {
        // The benchmark's stream: 2 partitions x 2 commits/s, a cycle every 5 s, a policy of
        // 20 small files: 10 new files per partition and cycle, for 4 minutes.
        let mut d = Day {
            files: Vec::new(),
            next: 0,
            ingested: 0,
            rewritten: 0,
            max_files: 0,
        };
        for _ in 0..48 {
            d.cycle_bounded(10, 3 * KIB, DEFAULT_FANOUT, 20);
            assert!(d.files.len() < 20, "{} files after a cycle", d.files.len());
        }
        let amplification = d.rewritten as f64 / d.ingested as f64;
        assert!(
            amplification <= 3.0,
            "write amplification {amplification:.2}"
        );
    }

    #[test]
    fn tags_name_the_tier_and_anything_else_is_a_writers_file() {
        let mut tags = std::collections::HashMap::new();
        assert_eq!(tier_of(None), 0);
        tags.insert(TIER_TAG.to_string(), Some("3".to_string()));
        assert_eq!(tier_of(Some(&tags)), 3);
        tags.insert(TIER_TAG.to_string(), Some("x".to_string()));
        assert_eq!(tier_of(Some(&tags)), 0);
    }
}
