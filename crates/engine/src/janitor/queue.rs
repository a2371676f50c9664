//! The janitor's queue of due jobs, one per table, shared by every table it watches: a job
//! starts when the global budget (`max_jobs` in flight) has room and its table has no job
//! running, so a table paced by its writer holds one slot and never the others.
//!
//! Order: what a job saves readers per byte it rewrites (files removed per MiB rewritten),
//! multiplied by one plus the cycles it has waited, so a job passed over gains on the ones that
//! keep arriving fresh; and a job that has waited `max_wait` cycles goes before every other
//! (the longest waiting first). However busy the other tables are, a due table is started
//! within `max_wait` cycles plus the time for the jobs queued ahead of it at that point.

use crate::size::MIB;

/// What a job is worth: files it removes, bytes it rewrites.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Benefit {
    /// Files the readers no longer open (small files in, fewer files out).
    pub files_removed: u64,
    /// Bytes the job reads and writes again.
    pub bytes: u64,
}

impl Benefit {
    /// Files removed per MiB rewritten (a job under 1 MiB counts as 1 MiB).
    pub fn per_mib(&self) -> f64 {
        self.files_removed as f64 / (self.bytes as f64 / MIB as f64).max(1.0)
    }
}

/// A queued job.
#[derive(Debug)]
pub struct Queued<T> {
    pub table: String,
    pub benefit: Benefit,
    /// Cycles it has waited so far.
    pub waited: u32,
    pub job: T,
}

impl<T> Queued<T> {
    fn score(&self) -> f64 {
        self.benefit.per_mib() * (1.0 + f64::from(self.waited))
    }
}

/// Cycles after which a waiting job goes before the others.
pub const DEFAULT_MAX_WAIT: u32 = 3;

#[derive(Debug)]
pub struct JobQueue<T> {
    entries: Vec<Queued<T>>,
    /// The tables of `entries`: `contains` is asked for every table read each cycle.
    tables: std::collections::HashSet<String>,
    max_wait: u32,
}

impl<T> Default for JobQueue<T> {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_WAIT)
    }
}

impl<T> JobQueue<T> {
    pub fn new(max_wait: u32) -> Self {
        Self {
            entries: Vec::new(),
            tables: Default::default(),
            max_wait,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Queues `job` for `table`, replacing the table's queued job (a newer decision knows its
    /// partitions better) but keeping how long the table has waited.
    pub fn push(&mut self, table: String, benefit: Benefit, job: T) {
        let waited = match self.entries.iter().position(|e| e.table == table) {
            Some(i) => self.entries.swap_remove(i).waited,
            None => 0,
        };
        self.tables.insert(table.clone());
        self.entries.push(Queued {
            table,
            benefit,
            waited,
            job,
        });
    }

    /// A cycle passed: every queued job has waited one more.
    pub fn age(&mut self) {
        for e in &mut self.entries {
            e.waited = e.waited.saturating_add(1);
        }
    }

    /// Keeps only the jobs of tables `keep` says are still there.
    /// Whether `table` has a job waiting.
    pub fn contains(&self, table: &str) -> bool {
        self.tables.contains(table)
    }

    pub fn retain_tables(&mut self, keep: impl Fn(&str) -> bool) {
        self.entries.retain(|e| keep(&e.table));
        self.tables.retain(|t| keep(t));
    }

    fn overdue(&self, e: &Queued<T>) -> bool {
        e.waited >= self.max_wait
    }

    fn order(&self, a: &Queued<T>, b: &Queued<T>) -> std::cmp::Ordering {
        // Overdue first, the longest waiting of them first; then by score; then by name, so
        // the order never depends on arrival.
        self.overdue(b)
            .cmp(&self.overdue(a))
            .then_with(|| match self.overdue(a) && self.overdue(b) {
                true => b.waited.cmp(&a.waited),
                false => std::cmp::Ordering::Equal,
            })
            .then_with(|| b.score().total_cmp(&a.score()))
            .then_with(|| a.table.cmp(&b.table))
    }

    /// The queued jobs in the order they would start.
    pub fn ranked(&self) -> Vec<&Queued<T>> {
        let mut v: Vec<&Queued<T>> = self.entries.iter().collect();
        v.sort_by(|a, b| self.order(a, b));
        v
    }

    /// Takes the first job in order whose table is not `busy`.
    pub fn pop_next(&mut self, busy: impl Fn(&str) -> bool) -> Option<Queued<T>> {
        let next = self
            .ranked()
            .into_iter()
            .find(|e| !busy(&e.table))
            .map(|e| e.table.clone())?;
        let i = self.entries.iter().position(|e| e.table == next)?;
        self.tables.remove(&next);
        Some(self.entries.swap_remove(i))
    }

    /// Every queued job (a stop: none of them starts).
    pub fn drain(&mut self) -> Vec<Queued<T>> {
        self.tables.clear();
        std::mem::take(&mut self.entries)
    }

    /// Why the job at `place` (0-based, in `ranked` order) waits, naming up to two that go
    /// first.
    pub fn why_waiting(&self, place: usize) -> String {
        self.why_in(&self.ranked(), place)
    }

    /// Every queued job in `ranked` order, with why it waits (one ranking for all of them).
    pub fn waiting(&self) -> Vec<(&Queued<T>, String)> {
        let ranked = self.ranked();
        (0..ranked.len())
            .map(|place| (ranked[place], self.why_in(&ranked, place)))
            .collect()
    }

    fn why_in(&self, ranked: &[&Queued<T>], place: usize) -> String {
        let Some(me) = ranked.get(place) else {
            return String::new();
        };
        let ahead: Vec<&str> = ranked[..place]
            .iter()
            .map(|e| e.table.as_str())
            .take(2)
            .collect();
        let names = match (ahead.len(), place) {
            (0, _) => return format!("queued 1st of {}: next when a job slot frees", ranked.len()),
            (_, n) if n > 2 => format!("{} and {} more", ahead.join(", "), n - 2),
            _ => ahead.join(" and "),
        };
        let why = if self.overdue(me) {
            "waited longer".to_string()
        } else if ranked[..place].iter().any(|e| self.overdue(e)) {
            "waited longer or save more per byte".to_string()
        } else {
            "save more per byte rewritten".to_string()
        };
        format!(
            "queued {} of {}: {names} {why} ({:.1} files removed per MiB, waited {} cycle(s))",
            ordinal(place + 1),
            ranked.len(),
            me.benefit.per_mib(),
            me.waited
        )
    }
}

/// The database of a table: the folder that holds it (`s3://b/lake/db3` for
/// `s3://b/lake/db3/t7`); a table at a bucket's root is its own.
pub fn database_of(table: &str) -> &str {
    let t = table.trim_end_matches('/');
    match t.rsplit_once('/') {
        Some((db, _)) if !db.ends_with('/') && !db.is_empty() => db,
        _ => t,
    }
}

/// Whether `table`'s database already runs `quota` jobs among `running`.
pub fn database_at_quota<'a>(
    table: &str,
    running: impl Iterator<Item = &'a String>,
    quota: Option<usize>,
) -> bool {
    let Some(quota) = quota else { return false };
    let db = database_of(table);
    running.filter(|t| database_of(t) == db).count() >= quota
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_tables_database_is_its_folder_and_a_full_database_holds_its_next_job() {
        assert_eq!(database_of("s3://b/lake/db3/t7"), "s3://b/lake/db3");
        assert_eq!(database_of("/data/lake/db1/t1/"), "/data/lake/db1");
        assert_eq!(database_of("s3://b/t"), "s3://b");
        let running = [
            "s3://b/lake/db1/a".to_string(),
            "s3://b/lake/db2/a".to_string(),
        ];
        assert!(database_at_quota(
            "s3://b/lake/db1/b",
            running.iter(),
            Some(1)
        ));
        assert!(!database_at_quota(
            "s3://b/lake/db3/b",
            running.iter(),
            Some(1)
        ));
        assert!(!database_at_quota(
            "s3://b/lake/db1/b",
            running.iter(),
            Some(2)
        ));
        assert!(!database_at_quota(
            "s3://b/lake/db1/b",
            running.iter(),
            None
        ));
    }

    use super::*;

    fn b(files_removed: u64, mib: u64) -> Benefit {
        Benefit {
            files_removed,
            bytes: mib * MIB,
        }
    }

    #[test]
    fn the_job_that_saves_most_per_byte_starts_first() {
        let mut q = JobQueue::default();
        q.push("big".into(), b(100, 1000), ());
        q.push("cheap".into(), b(50, 10), ());
        q.push("mid".into(), b(20, 20), ());
        let order: Vec<&str> = q.ranked().iter().map(|e| e.table.as_str()).collect();
        assert_eq!(order, ["cheap", "mid", "big"]);
        assert_eq!(q.pop_next(|_| false).map(|e| e.table), Some("cheap".into()));
    }

    #[test]
    fn a_table_with_a_job_running_is_passed_over_not_dropped() {
        let mut q = JobQueue::default();
        q.push("a".into(), b(50, 1), ());
        q.push("b".into(), b(1, 100), ());
        let next = q.pop_next(|t| t == "a").map(|e| e.table);
        assert_eq!(next, Some("b".into()));
        assert_eq!(q.len(), 1, "a stays queued");
        assert_eq!(q.pop_next(|t| t == "a").map(|e| e.table), None);
        assert_eq!(q.pop_next(|_| false).map(|e| e.table), Some("a".into()));
    }

    #[test]
    fn a_new_decision_replaces_the_tables_job_and_keeps_its_wait() {
        let mut q = JobQueue::default();
        q.push("t".into(), b(1, 1), 1);
        q.age();
        q.age();
        q.push("t".into(), b(2, 1), 2);
        assert_eq!(q.len(), 1);
        let e = q.pop_next(|_| false).unwrap();
        assert_eq!((e.job, e.waited), (2, 2));
    }

    /// One job slot; a busy table is due again every cycle with a far better ratio; the low
    /// one is due once. It must start within `max_wait` cycles.
    #[test]
    fn a_low_priority_table_is_served_within_the_bound_while_a_busy_one_keeps_being_due() {
        for max_wait in [1, 3, 5] {
            let mut q = JobQueue::new(max_wait);
            q.push("low".into(), b(1, 1000), ());
            let mut served_at = None;
            for cycle in 0..50u32 {
                q.age();
                q.push("busy".into(), b(1000, 1), ());
                // One slot per cycle.
                let started = q.pop_next(|_| false).map(|e| e.table);
                if started.as_deref() == Some("low") {
                    served_at = Some(cycle);
                    break;
                }
            }
            let at = served_at.expect("the low-priority table was never served");
            assert!(at < max_wait, "served in cycle {at}, bound {max_wait}");
        }
    }

    #[test]
    fn without_the_bound_the_busy_table_would_win_every_cycle() {
        // The same race with the bound out of reach: the ratio alone never serves the low one
        // (what the bound is for).
        let mut q = JobQueue::new(u32::MAX);
        q.push("low".into(), b(1, 1000), ());
        for _ in 0..50 {
            q.age();
            q.push("busy".into(), b(1000, 1), ());
            assert_eq!(q.pop_next(|_| false).map(|e| e.table), Some("busy".into()));
        }
    }

    #[test]
    fn the_reason_names_its_place_and_who_goes_first() {
        let mut q = JobQueue::default();
        q.push("t7".into(), b(50, 1), ());
        q.push("t12".into(), b(40, 1), ());
        q.push("t3".into(), b(1, 100), ());
        let why = q.why_waiting(2);
        assert!(
            why.starts_with("queued 3rd of 3: t7 and t12 save more per byte rewritten"),
            "{why}"
        );
        assert!(
            q.why_waiting(0).starts_with("queued 1st of 3"),
            "{}",
            q.why_waiting(0)
        );
        for _ in 0..DEFAULT_MAX_WAIT {
            q.age();
        }
        q.push("t9".into(), b(99, 1), ());
        let why = q.why_waiting(3);
        assert!(
            why.contains("queued 4th of 4") && why.contains("waited longer"),
            "{why}"
        );
    }

    #[test]
    fn gone_tables_leave_the_queue() {
        let mut q = JobQueue::default();
        q.push("a".into(), b(1, 1), ());
        q.push("b".into(), b(1, 1), ());
        q.retain_tables(|t| t == "b");
        assert_eq!(
            q.drain().into_iter().map(|e| e.table).collect::<Vec<_>>(),
            ["b"]
        );
    }
}
