//! How often the janitor reads each table and lists each root, so watching thousands of idle
//! tables costs little: a table read with a new commit is read again next cycle; one without
//! is read at doubling intervals up to `idle_poll_max` (its decisions are made each cycle all
//! the same, from what was read last); a table that failed to load is retried likewise; and a
//! root's listing of tables is kept `discover_every`. Counted in cycles, so a test drives it
//! without a clock.

use std::collections::HashMap;
use std::time::Duration;

use crate::discover::FoundTable;

/// A table's reads since its last change.
#[derive(Debug, Clone, Copy)]
struct Quiet {
    /// Reads in a row that found nothing new (or failed).
    reads: u32,
    /// The first cycle it is read again.
    next: u64,
}

/// A root's tables as last listed.
#[derive(Debug, Clone)]
struct Listed {
    tables: Vec<FoundTable>,
    cycle: u64,
}

#[derive(Debug)]
pub struct Polling {
    tables: HashMap<String, Quiet>,
    roots: HashMap<String, Listed>,
    /// The most cycles between two reads of an idle table.
    max_gap: u64,
    /// Cycles a root's listing is kept.
    discover_gap: u64,
}

/// Cycles until the next read after `reads` quiet ones: 1, 2, 4, ... at most `max_gap`.
fn gap(reads: u32, max_gap: u64) -> u64 {
    let doubled = 1u64
        .checked_shl(reads.saturating_sub(1))
        .unwrap_or(u64::MAX);
    doubled.min(max_gap)
}

/// Whole cycles in `d` (at least one).
fn cycles(d: Duration, interval: Duration) -> u64 {
    (d.as_millis() / interval.as_millis().max(1)).max(1) as u64
}

impl Polling {
    pub fn new(interval: Duration, idle_poll_max: Duration, discover_every: Duration) -> Self {
        Self {
            tables: HashMap::new(),
            roots: HashMap::new(),
            max_gap: cycles(idle_poll_max, interval),
            discover_gap: cycles(discover_every, interval),
        }
    }

    /// Whether table `id` is read in `cycle` (one never read: yes).
    pub fn due(&self, id: &str, cycle: u64) -> bool {
        self.tables.get(id).is_none_or(|q| cycle >= q.next)
    }

    /// Table `id` was read in `cycle`: with something new (or work pending on it) it is read
    /// next cycle; otherwise after twice the last gap, at most `max_gap`.
    pub fn read(&mut self, id: &str, cycle: u64, changed: bool) {
        let max_gap = self.max_gap;
        let q = self.tables.entry(id.to_string()).or_insert(Quiet {
            reads: 0,
            next: cycle + 1,
        });
        if changed {
            q.reads = 0;
            q.next = cycle + 1;
        } else {
            q.reads = q.reads.saturating_add(1);
            q.next = cycle + gap(q.reads, max_gap);
        }
    }

    /// Reads in a row of table `id` that found nothing new.
    pub fn quiet_reads(&self, id: &str) -> u32 {
        self.tables.get(id).map_or(0, |q| q.reads)
    }

    /// A root's listing made in `cycle`, still fresh then (None: list it again).
    pub fn listing(&self, root: &str, cycle: u64) -> Option<&[FoundTable]> {
        self.roots
            .get(root)
            .filter(|l| cycle < l.cycle + self.discover_gap)
            .map(|l| l.tables.as_slice())
    }

    /// A root's last listing, fresh or not: the tables a re-listing need not probe again.
    pub fn known(&self, root: &str) -> &[FoundTable] {
        self.roots.get(root).map_or(&[], |l| l.tables.as_slice())
    }

    pub fn listed(&mut self, root: &str, tables: Vec<FoundTable>, cycle: u64) {
        self.roots
            .insert(root.to_string(), Listed { tables, cycle });
    }

    /// Forgets tables no longer found (a table that comes back is read afresh).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.tables.retain(|id, _| keep(id));
    }

    /// Tables read at most every `max_gap` cycles once idle.
    pub fn max_gap(&self) -> u64 {
        self.max_gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polling() -> Polling {
        Polling::new(
            Duration::from_secs(10),
            Duration::from_secs(80),
            Duration::from_secs(30),
        )
    }

    /// The cycles in 1..=n in which `id` is read, idle throughout.
    fn reads_while_idle(p: &mut Polling, id: &str, n: u64) -> Vec<u64> {
        let mut read = Vec::new();
        for c in 1..=n {
            if p.due(id, c) {
                p.read(id, c, false);
                read.push(c);
            }
        }
        read
    }

    #[test]
    fn an_idle_table_is_read_at_doubling_gaps_up_to_the_most_the_policy_allows() {
        let mut p = polling();
        assert_eq!(p.max_gap(), 8);
        // Gaps 1, 2, 4, 8, 8.
        assert_eq!(
            reads_while_idle(&mut p, "t", 32),
            vec![1, 2, 4, 8, 16, 24, 32]
        );
    }

    #[test]
    fn a_commit_brings_a_table_back_to_every_cycle() {
        let mut p = polling();
        reads_while_idle(&mut p, "t", 16);
        assert!(!p.due("t", 17));
        assert!(p.due("t", 24));
        p.read("t", 24, true);
        assert!(p.due("t", 25), "read again the next cycle");
        p.read("t", 25, false);
        assert!(p.due("t", 26), "then back off from one cycle again");
    }

    #[test]
    fn a_new_table_is_read_at_once_and_a_forgotten_one_afresh() {
        let mut p = polling();
        assert!(p.due("new", 40));
        reads_while_idle(&mut p, "t", 8);
        assert!(!p.due("t", 9));
        p.retain(|id| id != "t");
        assert!(p.due("t", 9));
    }

    #[test]
    fn a_roots_listing_is_kept_for_discover_every_then_listed_again() {
        let mut p = polling();
        assert!(p.listing("r", 1).is_none());
        let a = FoundTable {
            rel: "a".into(),
            format: crate::model::format::TableFormat::Delta,
        };
        p.listed("r", vec![a.clone()], 1);
        assert_eq!(p.listing("r", 3), Some(&[a.clone()][..]));
        assert!(p.listing("r", 4).is_none(), "30 s of 10 s cycles: 3 cycles");
        assert_eq!(p.known("r"), &[a][..], "known after it went stale");
        assert!(p.known("other").is_empty());
    }
}
