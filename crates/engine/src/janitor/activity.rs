//! When each partition was last written, and how old its small files are, from the log's JSON
//! commits. The report has no per-partition times (the replay keeps sizes only), so the janitor
//! reads the newest commits itself: on its first cycle back to the policy's horizon (the longest
//! of quiet period, `written_within` and the age rule), later only the commits that are new.
//! At most `budget` commits a cycle: a coverage that falls short grows over the next cycles, and
//! until then decisions that need it say what is unknown.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::delta::log::actions::{ActionLine, file_key};
use crate::error::{EngineError, Result};
use crate::model::partition::PartitionValues;

/// Commits read at once.
const CONCURRENCY: usize = 16;

/// What one commit did to partitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitDigest {
    pub version: u64,
    /// commitInfo.timestamp, else the commit file's modification time.
    pub ts: i64,
    /// Partitions whose data an action changed (dataChange true or unset).
    pub written: Vec<PartitionValues>,
    /// Files added: file key, partition, size.
    pub adds: Vec<(String, PartitionValues, u64)>,
    /// File keys removed.
    pub removes: Vec<String>,
}

/// How a table's partition columns are spelled in `partitionValues` (physical names under
/// column mapping).
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub logical: Vec<String>,
    /// Logical name -> physical name, for mapped columns.
    pub physical: HashMap<String, String>,
}

impl Columns {
    /// Typed values in partition-column order; `""` is NULL, as the log reader reads it.
    fn values(&self, raw: &HashMap<String, Option<String>>) -> PartitionValues {
        PartitionValues(
            self.logical
                .iter()
                .map(|c| {
                    let key = self.physical.get(c).unwrap_or(c);
                    let v = raw.get(key).cloned().flatten().filter(|v| !v.is_empty());
                    (c.clone(), v)
                })
                .collect(),
        )
    }
}

/// Digests one commit file (newline-delimited actions; unreadable lines are skipped: the
/// replay already reported a corrupt log).
pub fn digest(
    version: u64,
    bytes: &[u8],
    fallback_ts: Option<i64>,
    cols: &Columns,
) -> CommitDigest {
    let mut d = CommitDigest {
        version,
        ts: fallback_ts.unwrap_or(0),
        written: Vec::new(),
        adds: Vec::new(),
        removes: Vec::new(),
    };
    let mut commit_ts = None;
    let mut written: HashSet<PartitionValues> = HashSet::new();
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(a) = serde_json::from_slice::<ActionLine>(line) else {
            continue;
        };
        if let Some(add) = a.add {
            let values = cols.values(&add.partition_values);
            if add.data_change != Some(false) {
                written.insert(values.clone());
            }
            let key = file_key(&add.path, add.deletion_vector.as_ref());
            d.adds.push((key, values, add.size.max(0) as u64));
        }
        if let Some(rm) = a.remove {
            if rm.data_change != Some(false)
                && let Some(pv) = &rm.partition_values
            {
                written.insert(cols.values(pv));
            }
            d.removes
                .push(file_key(&rm.path, rm.deletion_vector.as_ref()));
        }
        if let Some(ci) = a.commit_info {
            commit_ts = commit_ts.or(ci.timestamp);
        }
    }
    if let Some(t) = commit_ts {
        d.ts = t;
    }
    d.written = written.into_iter().collect();
    d
}

/// When a partition was last written, as far as the commits read tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastWrite {
    At(i64),
    /// No write since this time (the oldest commit read); earlier ones are unknown.
    NotSince(i64),
    /// No write since the table was created (every commit was read).
    Never,
    /// No commit was read (the policy needs no times, or the log could not be read back).
    Unknown,
}

#[derive(Debug, Default)]
pub struct Activity {
    /// Every version in `oldest..=newest` has been read (empty while `oldest > newest`).
    newest: Option<u64>,
    oldest: u64,
    oldest_ts: Option<i64>,
    /// Version 0 was read: every write since the table began is known.
    from_start: bool,
    /// The commit below `oldest` is gone (log cleanup): nothing older can be known.
    cut: bool,
    last_write: HashMap<PartitionValues, i64>,
    /// Commits inside the horizon, for file ages.
    digests: BTreeMap<u64, CommitDigest>,
    /// The Iceberg metadata file whose history was read to the horizon: the same file is not
    /// read again (an idle table costs no request between its reloads).
    read_through: Option<String>,
}

async fn fetch(
    store: &Arc<dyn ObjectStore>,
    uri: &str,
    version: u64,
    cols: &Columns,
) -> Result<Option<CommitDigest>> {
    let path = format!("_delta_log/{version:020}.json");
    let got = match store.get(&Path::from(path.as_str())).await {
        Ok(g) => g,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(EngineError::from_store(uri, &path, e)),
    };
    let modified = got.meta.last_modified.timestamp_millis();
    let bytes = got
        .bytes()
        .await
        .map_err(|e| EngineError::from_store(uri, &path, e))?;
    Ok(Some(digest(version, &bytes, Some(modified), cols)))
}

impl Activity {
    /// Reads the commits up to `version` that are new, then older ones until the log is
    /// known back to `now_ms - horizon_ms`, at most `budget` in all.
    #[allow(clippy::too_many_arguments)]
    pub async fn update(
        &mut self,
        store: &Arc<dyn ObjectStore>,
        uri: &str,
        version: u64,
        cols: &Columns,
        horizon_ms: i64,
        now_ms: i64,
        budget: usize,
    ) -> Result<()> {
        if horizon_ms <= 0 {
            return Ok(());
        }
        let read = Reader { store, uri, cols };
        let budget = self.read_forward(&read, version, budget).await?;
        let horizon = now_ms.saturating_sub(horizon_ms);
        self.read_back(&read, horizon, budget).await?;
        // Digests are kept for file ages inside the horizon only.
        self.digests.retain(|_, d| d.ts >= horizon);
        Ok(())
    }

    /// Reads the commits newer than the range, up to `version`; returns the budget left.
    async fn read_forward(
        &mut self,
        read: &Reader<'_>,
        version: u64,
        budget: usize,
    ) -> Result<usize> {
        let n = match self.newest {
            // A table recreated under the same path: start over.
            Some(n) if version < n => {
                self.restart(version);
                return Ok(budget);
            }
            Some(n) if version > n => n,
            Some(_) => return Ok(budget),
            None => {
                self.restart(version);
                return Ok(budget);
            }
        };
        let new = (version - n) as usize;
        if new > budget {
            // Too many to read in one cycle: the gap would break the range.
            self.restart(version);
            return Ok(budget);
        }
        for d in read.fetch(n + 1..=version).await {
            // A commit listed by the replay is there (unless cleaned up since: then the range
            // cannot be kept).
            match d? {
                Some(d) => self.apply(d),
                None => {
                    self.restart(version);
                    break;
                }
            }
        }
        if self.newest.is_some_and(|n| n < version) {
            self.newest = Some(version);
        }
        Ok(budget - new)
    }

    /// Reads older commits, newest first, until the range reaches back past `horizon`, the log
    /// starts or ends (cleaned up), or the budget is spent.
    async fn read_back(
        &mut self,
        read: &Reader<'_>,
        horizon: i64,
        mut budget: usize,
    ) -> Result<()> {
        while budget > 0
            && !self.from_start
            && !self.cut
            && self.oldest_ts.is_none_or(|t| t > horizon)
        {
            let below = self.oldest;
            if below == 0 {
                self.from_start = true;
                break;
            }
            let n = budget.min(CONCURRENCY).min(below as usize);
            let got = read.fetch((below - n as u64..below).rev()).await;
            budget -= n;
            for d in got {
                let Some(d) = d? else {
                    self.cut = true;
                    break;
                };
                let (v, ts) = (d.version, d.ts);
                self.apply(d);
                self.oldest = v;
                self.oldest_ts = Some(ts);
                if v == 0 {
                    self.from_start = true;
                }
                if ts <= horizon {
                    break;
                }
            }
        }
        Ok(())
    }

    fn restart(&mut self, version: u64) {
        *self = Activity {
            newest: Some(version),
            oldest: version + 1,
            ..Activity::default()
        };
    }

    fn apply(&mut self, d: CommitDigest) {
        for p in &d.written {
            let t = self.last_write.entry(p.clone()).or_insert(d.ts);
            *t = (*t).max(d.ts);
        }
        self.digests.insert(d.version, d);
    }

    /// Whether commit `v` (an Iceberg table's: a snapshot's sequence number) was read.
    pub fn knows(&self, v: u64) -> bool {
        self.newest.is_some_and(|n| self.oldest <= v && v <= n)
    }

    /// The newest commit read.
    pub fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// The metadata file whose history was read back to the horizon (Iceberg).
    pub fn read_through(&self) -> Option<&str> {
        self.read_through.as_deref()
    }

    pub fn set_read_through(&mut self, metadata: Option<String>) {
        self.read_through = metadata;
    }

    /// Records a commit read out of the log's order (an Iceberg snapshot's writes).
    pub fn record(&mut self, d: CommitDigest) {
        self.apply(d);
    }

    /// Every commit from `oldest` (at `oldest_ts`; the table's first when `first`) to `newest`
    /// is now known (an Iceberg table's ancestry, read newest first). A range already known
    /// further back that this one reaches into is kept; digests older than `horizon` go.
    pub fn known_range(
        &mut self,
        oldest: u64,
        oldest_ts: i64,
        newest: u64,
        first: bool,
        horizon: i64,
    ) {
        let extends = self.knows(oldest) && self.oldest <= oldest;
        if !extends {
            self.oldest = oldest;
            self.oldest_ts = Some(oldest_ts);
            self.from_start = first;
        }
        self.newest = Some(newest);
        self.digests.retain(|_, d| d.ts >= horizon);
    }

    /// Every write since `ms` is known.
    pub fn covers(&self, ms: i64) -> bool {
        self.from_start || self.oldest_ts.is_some_and(|t| t <= ms)
    }

    /// How far back the log is known, in ms before `now_ms` (None: not at all).
    pub fn known_for_ms(&self, now_ms: i64) -> Option<i64> {
        if self.from_start {
            Some(i64::MAX)
        } else {
            self.oldest_ts.map(|t| now_ms.saturating_sub(t))
        }
    }

    pub fn last_write(&self, p: &PartitionValues) -> LastWrite {
        match (self.last_write.get(p), self.from_start, self.oldest_ts) {
            (Some(&t), _, _) => LastWrite::At(t),
            (None, true, _) => LastWrite::Never,
            (None, false, Some(t)) => LastWrite::NotSince(t),
            (None, false, None) => LastWrite::Unknown,
        }
    }

    /// Files of `p` below `small_below` added since `since_ms` and still live; None when the
    /// log is not known back that far.
    pub fn recent_small_files(
        &self,
        p: &PartitionValues,
        small_below: u64,
        since_ms: i64,
    ) -> Option<u64> {
        if !self.covers(since_ms) {
            return None;
        }
        let mut removed: HashSet<&str> = HashSet::new();
        let mut n = 0;
        // Newest first: a file counts unless a newer commit removed it.
        for d in self.digests.values().rev() {
            if d.ts >= since_ms {
                n += d
                    .adds
                    .iter()
                    .filter(|(k, part, size)| {
                        part == p && *size < small_below && !removed.contains(k.as_str())
                    })
                    .count() as u64;
            }
            removed.extend(d.removes.iter().map(String::as_str));
        }
        Some(n)
    }
}

/// Where commits are read from, and the columns their digests keep.
struct Reader<'a> {
    store: &'a Arc<dyn ObjectStore>,
    uri: &'a str,
    cols: &'a Columns,
}

impl Reader<'_> {
    /// The digests of `versions`, read concurrently, in their order (None: not in the log).
    async fn fetch(
        &self,
        versions: impl Iterator<Item = u64>,
    ) -> Vec<Result<Option<CommitDigest>>> {
        futures::stream::iter(versions.map(|v| fetch(self.store, self.uri, v, self.cols)))
            .buffered(CONCURRENCY)
            .collect()
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::PutPayload;
    use object_store::memory::InMemory;

    fn cols() -> Columns {
        Columns {
            logical: vec!["d".into(), "k".into()],
            physical: HashMap::new(),
        }
    }

    fn pv(d: &str, k: Option<&str>) -> PartitionValues {
        PartitionValues(vec![
            ("d".into(), Some(d.into())),
            ("k".into(), k.map(str::to_string)),
        ])
    }

    fn add(path: &str, d: &str, k: &str, size: u64, data_change: bool) -> String {
        format!(
            r#"{{"add":{{"path":"{path}","partitionValues":{{"d":"{d}","k":{k}}},"size":{size},"modificationTime":0,"dataChange":{data_change}}}}}"#
        )
    }

    fn remove(path: &str, d: &str, data_change: bool) -> String {
        format!(
            r#"{{"remove":{{"path":"{path}","partitionValues":{{"d":"{d}","k":"a"}},"size":1,"dataChange":{data_change}}}}}"#
        )
    }

    fn commit(ts: i64, actions: &[String]) -> String {
        let mut s = format!(r#"{{"commitInfo":{{"timestamp":{ts},"operation":"WRITE"}}}}"#);
        for a in actions {
            s.push('\n');
            s.push_str(a);
        }
        s
    }

    #[test]
    fn digest_reads_partitions_typed_and_ignores_rewrites_as_writes() {
        let text = commit(
            5_000,
            &[
                add("a", "x", "\"\"", 10, true),
                add("b", "y", "\"null\"", 10, true),
                add("c", "z", "\"a\"", 10, false),
                remove("r", "w", false),
                remove("s", "v", true),
            ],
        );
        let d = digest(3, text.as_bytes(), Some(1), &cols());
        assert_eq!(
            d.ts, 5_000,
            "commitInfo's timestamp wins over the file time"
        );
        let mut w = d.written.clone();
        w.sort();
        // "" is NULL, the string "null" is not; dataChange=false (OPTIMIZE) is no write.
        assert_eq!(
            w,
            vec![pv("v", Some("a")), pv("x", None), pv("y", Some("null"))]
        );
        assert_eq!(d.adds.len(), 3);
        assert_eq!(d.removes, vec!["r".to_string(), "s".to_string()]);
        // Physical names map to logical ones.
        let mapped = Columns {
            logical: vec!["d".into()],
            physical: HashMap::from([("d".to_string(), "col-1".to_string())]),
        };
        let line =
            r#"{"add":{"path":"p","partitionValues":{"col-1":"q"},"size":1,"dataChange":true}}"#;
        let d = digest(0, line.as_bytes(), Some(7), &mapped);
        assert_eq!(d.ts, 7, "no commitInfo: the file time");
        assert_eq!(
            d.written,
            vec![PartitionValues(vec![("d".into(), Some("q".into()))])]
        );
    }

    async fn put(store: &Arc<dyn ObjectStore>, v: u64, text: String) {
        store
            .put(
                &Path::from(format!("_delta_log/{v:020}.json")),
                PutPayload::from(text.into_bytes()),
            )
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn last_writes_and_fragment_ages_from_the_commits_inside_the_horizon() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let min = 60_000;
        let now = 1_000 * min;
        // v0 at now-100min: x gets a1 (small) and a2; v1 at now-50min: y gets b1;
        // v2 at now-30min: OPTIMIZE of x (a1, a2 -> a3, not a write);
        // v3 at now-1min: x gets a4 (small).
        put(
            &store,
            0,
            commit(
                now - 100 * min,
                &[
                    add("a1", "x", "\"a\"", 5, true),
                    add("a2", "x", "\"a\"", 5, true),
                ],
            ),
        )
        .await;
        put(
            &store,
            1,
            commit(now - 50 * min, &[add("b1", "y", "\"a\"", 5, true)]),
        )
        .await;
        put(
            &store,
            2,
            commit(
                now - 30 * min,
                &[
                    remove("a1", "x", false),
                    remove("a2", "x", false),
                    add("a3", "x", "\"a\"", 500, false),
                ],
            ),
        )
        .await;
        put(
            &store,
            3,
            commit(now - min, &[add("a4", "x", "\"a\"", 5, true)]),
        )
        .await;

        // A 40-minute horizon: v3, v2, then v1 (older than the horizon) ends the walk.
        let mut a = Activity::default();
        a.update(&store, "t", 3, &cols(), 40 * min, now, 100)
            .await
            .unwrap();
        let x = pv("x", Some("a"));
        let y = pv("y", Some("a"));
        assert_eq!(a.last_write(&x), LastWrite::At(now - min));
        assert_eq!(a.last_write(&y), LastWrite::At(now - 50 * min));
        assert_eq!(
            a.last_write(&pv("q", None)),
            LastWrite::NotSince(now - 50 * min)
        );
        assert!(a.covers(now - 40 * min));
        assert!(!a.covers(now - 60 * min));
        // x has a3 (big) and a4 (small, 1 min old): one small file in the last 40 min.
        assert_eq!(a.recent_small_files(&x, 100, now - 40 * min), Some(1));
        assert_eq!(
            a.recent_small_files(&x, 100, now - 90 * min),
            None,
            "not known that far"
        );

        // A new commit is read on the next update, alone.
        put(
            &store,
            4,
            commit(
                now + min,
                &[add("b2", "y", "\"a\"", 5, true), remove("a4", "x", true)],
            ),
        )
        .await;
        a.update(&store, "t", 4, &cols(), 40 * min, now + min, 1)
            .await
            .unwrap();
        assert_eq!(a.last_write(&y), LastWrite::At(now + min));
        assert_eq!(
            a.last_write(&x),
            LastWrite::At(now + min),
            "a delete is a write"
        );
        assert_eq!(
            a.recent_small_files(&x, 100, now - 30 * min),
            Some(0),
            "a4 was removed"
        );

        // A budget too small for the horizon reads what it can and grows next cycle.
        let mut b = Activity::default();
        b.update(&store, "t", 4, &cols(), 200 * min, now + min, 2)
            .await
            .unwrap();
        assert_eq!(b.known_for_ms(now + min), Some(2 * min), "v4 and v3");
        assert_eq!(b.last_write(&pv("q", None)), LastWrite::NotSince(now - min));
        b.update(&store, "t", 4, &cols(), 200 * min, now + min, 2)
            .await
            .unwrap();
        assert_eq!(b.known_for_ms(now + min), Some(51 * min), "then v2 and v1");
        b.update(&store, "t", 4, &cols(), 200 * min, now + min, 2)
            .await
            .unwrap();
        assert_eq!(
            b.known_for_ms(now + min),
            Some(i64::MAX),
            "reached version 0"
        );
        assert_eq!(b.last_write(&pv("q", None)), LastWrite::Never);
        assert_eq!(b.recent_small_files(&x, 100, now - 150 * min), Some(0));

        // A cleaned-up log: the walk stops at the gap and says how far it got.
        store
            .delete(&Path::from(format!("_delta_log/{:020}.json", 1)))
            .await
            .unwrap();
        let mut c = Activity::default();
        c.update(&store, "t", 4, &cols(), 200 * min, now + min, 100)
            .await
            .unwrap();
        assert_eq!(c.known_for_ms(now + min), Some(31 * min));
        assert!(!c.covers(now - 60 * min));

        // No time condition in the policy: nothing is read.
        let mut d = Activity::default();
        d.update(&store, "t", 4, &cols(), 0, now, 100)
            .await
            .unwrap();
        assert_eq!(d.last_write(&x), LastWrite::Unknown);
    }
}
