//! Pace by feedback from the writer. While a writer is active a job starts at a modest read
//! rate (`janitor::throttle`), then follows the writer's cadence: the log is listed every
//! second or so, and the interval between the writer's commits over the last few seconds is
//! compared with its interval before the job. While the cadence holds, the pace rises by a
//! step (additive increase) up to full speed; when it stretches, the pace halves
//! (multiplicative decrease), as TCP does with a congested link. A writer that stops (no commit
//! for several of its intervals) is no longer there to protect: full speed. The controller is
//! pure (`Aimd`); `follow` feeds it from the store.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::path::Path;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::pace::Pacer;
use crate::engine::size::format_bytes;

/// The cadence holds while the writer's recent interval is at most this times its interval
/// before the job (jitter of a writer that commits on a timer).
pub const HOLD_RATIO: f64 = 1.15;
/// Beyond this the writer is being slowed: the pace halves.
pub const CUT_RATIO: f64 = 1.35;
/// Added to the pace per step while the cadence holds.
pub const STEP: u64 = 16 * 1024 * 1024;
/// The slowest pace (a writer that slows for other reasons must not stall the job for good).
pub const FLOOR: u64 = 4 * 1024 * 1024;
/// From this pace on the job reads unbounded (full speed).
pub const FULL: u64 = 256 * 1024 * 1024;
/// A writer with no commit for this many of its intervals has stopped.
pub const STOPPED_AFTER: f64 = 5.0;

/// The pace now and why, as shown in the progress line, the jobs panel and the results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaceNote {
    /// Bytes per second (None: full speed, unbounded).
    pub bytes_per_second: Option<u64>,
    pub why: String,
    /// Changes made so far (increases and cuts).
    pub raised: u64,
    pub cut: u64,
}

impl PaceNote {
    pub fn text(&self) -> String {
        match self.bytes_per_second {
            Some(r) => format!("pace {}/s: {}", format_bytes(r), self.why),
            None => format!("pace full speed: {}", self.why),
        }
    }
}

/// The additive-increase, multiplicative-decrease controller.
#[derive(Debug, Clone)]
pub struct Aimd {
    /// The writer's interval before the job (ms).
    baseline_ms: f64,
    rate: u64,
    raised: u64,
    cut: u64,
}

impl Aimd {
    pub fn new(start_rate: u64, baseline_ms: u64) -> Self {
        Self {
            baseline_ms: baseline_ms.max(1) as f64,
            rate: start_rate.max(FLOOR),
            raised: 0,
            cut: 0,
        }
    }

    /// The pace after seeing the writer's recent interval (`None`: no commit in the window, the
    /// writer quiet for `quiet_ms`).
    pub fn observe(&mut self, recent_ms: Option<f64>, quiet_ms: f64) -> PaceNote {
        let b = self.baseline_ms;
        let why = match recent_ms {
            None if quiet_ms >= STOPPED_AFTER * b => {
                self.rate = FULL;
                self.raised += 1;
                format!(
                    "the writer stopped (no commit for {:.1} s, its interval was {b:.0} ms)",
                    quiet_ms / 1000.0
                )
            }
            None => "no writer commit in the window yet: unchanged".into(),
            Some(r) if r <= b * HOLD_RATIO => {
                if self.rate < FULL {
                    self.rate = (self.rate + STEP).min(FULL);
                    self.raised += 1;
                }
                format!("writer cadence {r:.0} ms, unchanged from {b:.0} ms: raised")
            }
            Some(r) if r > b * CUT_RATIO => {
                self.rate = (self.rate.min(FULL) / 2).max(FLOOR);
                self.cut += 1;
                format!("writer cadence stretched to {r:.0} ms from {b:.0} ms: halved")
            }
            Some(r) => format!("writer cadence {r:.0} ms (was {b:.0} ms): held"),
        };
        PaceNote {
            bytes_per_second: (self.rate < FULL).then_some(self.rate),
            why,
            raised: self.raised,
            cut: self.cut,
        }
    }
}

/// Commits seen per poll, over a sliding window.
#[derive(Debug, Default)]
struct Window {
    polls: VecDeque<(Instant, u64)>,
    last_commit: Option<Instant>,
}

impl Window {
    fn add(&mut self, at: Instant, commits: u64, span: Duration) {
        self.polls.push_back((at, commits));
        if commits > 0 {
            self.last_commit = Some(at);
        }
        while self
            .polls
            .front()
            .is_some_and(|(t, _)| at.duration_since(*t) > span)
        {
            self.polls.pop_front();
        }
    }

    /// The mean interval between commits over the window (None: none in it, or too short).
    fn interval_ms(&self) -> Option<f64> {
        let (first, _) = self.polls.front()?;
        let (last, _) = self.polls.back()?;
        // The first poll's commits happened before the window started.
        let n: u64 = self.polls.iter().skip(1).map(|(_, c)| c).sum();
        let span = last.duration_since(*first).as_secs_f64() * 1000.0;
        (n > 0 && span > 0.0).then(|| span / n as f64)
    }
}

/// The version of a commit file name (`_delta_log/00000000000000000012.json`).
fn commit_version(path: &Path) -> Option<u64> {
    let name = path.filename()?;
    let v = name.strip_suffix(".json")?;
    (v.len() == 20).then(|| v.parse().ok()).flatten()
}

/// Lists the log after `after` and returns the newest version seen and how many commits are
/// new.
async fn new_commits(store: &dyn ObjectStore, after: u64) -> Option<(u64, u64)> {
    use futures::TryStreamExt;
    let prefix = Path::from("_delta_log");
    let offset = Path::from(format!("_delta_log/{after:020}.json"));
    let files: Vec<_> = store
        .list_with_offset(Some(&prefix), &offset)
        .try_collect()
        .await
        .ok()?;
    let mut newest = after;
    let mut n = 0;
    for f in files {
        if let Some(v) = commit_version(&f.location)
            && v > after
        {
            n += 1;
            newest = newest.max(v);
        }
    }
    Some((newest, n))
}

/// Follows the writer's cadence from `version` until `done`, setting `pacer`'s rate. Our own
/// commits count as the writer's: a few among many, they can only make the pace more careful.
pub async fn follow(
    store: Arc<dyn ObjectStore>,
    version: u64,
    baseline_ms: u64,
    pacer: Arc<Pacer>,
    done: CancellationToken,
    changed: impl Fn(PaceNote),
) {
    let baseline = baseline_ms.max(1);
    let mut aimd = Aimd::new(pacer.rate().unwrap_or(FULL), baseline);
    // A window of at least 8 of the writer's intervals (and 3 s): enough commits to average.
    let span = Duration::from_millis((8 * baseline).max(3000));
    let poll = Duration::from_millis(baseline.clamp(1000, 5000));
    let mut seen = version;
    let mut window = Window::default();
    let started = Instant::now();
    window.add(started, 0, span);
    loop {
        tokio::select! {
            _ = done.cancelled() => return,
            _ = tokio::time::sleep(poll) => {}
        }
        let Some((newest, n)) = new_commits(store.as_ref(), seen).await else {
            continue;
        };
        seen = newest;
        let now = Instant::now();
        window.add(now, n, span);
        if now.duration_since(started) < span / 2 {
            continue;
        }
        let quiet = now
            .duration_since(window.last_commit.unwrap_or(started))
            .as_secs_f64()
            * 1000.0;
        let note = aimd.observe(window.interval_ms(), quiet);
        if pacer.note().as_ref() != Some(&note) {
            pacer.set(note.clone());
            changed(note);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_pace_rises_while_the_cadence_holds_and_halves_when_it_stretches() {
        let mut a = Aimd::new(24 * MIB, 100);
        let n = a.observe(Some(105.0), 0.0);
        assert_eq!(n.bytes_per_second, Some(40 * MIB));
        assert!(n.why.contains("unchanged"), "{}", n.why);
        assert_eq!(a.observe(Some(100.0), 0.0).bytes_per_second, Some(56 * MIB));
        let cut = a.observe(Some(150.0), 0.0);
        assert_eq!(cut.bytes_per_second, Some(28 * MIB));
        assert!(
            cut.why.contains("stretched to 150 ms from 100 ms"),
            "{}",
            cut.why
        );
        // Between hold and cut: held.
        assert_eq!(a.observe(Some(125.0), 0.0).bytes_per_second, Some(28 * MIB));
        assert_eq!((a.raised, a.cut), (2, 1));
    }

    #[test]
    fn the_pace_reaches_full_speed_and_never_falls_below_the_floor() {
        let mut a = Aimd::new(24 * MIB, 100);
        let mut last = None;
        for _ in 0..20 {
            last = a.observe(Some(100.0), 0.0).bytes_per_second;
        }
        assert_eq!(last, None, "full speed");
        for _ in 0..20 {
            last = a.observe(Some(400.0), 0.0).bytes_per_second;
        }
        assert_eq!(last, Some(FLOOR));
    }

    #[test]
    fn a_writer_that_stopped_leaves_the_job_at_full_speed() {
        let mut a = Aimd::new(24 * MIB, 500);
        let quiet = a.observe(None, 1000.0);
        assert_eq!(quiet.bytes_per_second, Some(24 * MIB), "{}", quiet.why);
        let gone = a.observe(None, 3000.0);
        assert_eq!(gone.bytes_per_second, None);
        assert!(gone.why.contains("the writer stopped"), "{}", gone.why);
    }

    #[test]
    fn the_window_averages_the_interval_of_the_commits_it_saw() {
        let t0 = Instant::now();
        let mut w = Window::default();
        let span = Duration::from_secs(3);
        w.add(t0, 5, span);
        assert_eq!(w.interval_ms(), None);
        w.add(t0 + Duration::from_secs(1), 10, span);
        w.add(t0 + Duration::from_secs(2), 10, span);
        assert_eq!(w.interval_ms(), Some(100.0));
        // Older polls leave the window.
        w.add(t0 + Duration::from_secs(5), 2, span);
        assert_eq!(w.interval_ms(), Some(1000.0 * 3.0 / 2.0));
    }

    #[test]
    fn only_commit_files_are_versions() {
        assert_eq!(
            commit_version(&Path::from("_delta_log/00000000000000000012.json")),
            Some(12)
        );
        assert_eq!(
            commit_version(&Path::from(
                "_delta_log/00000000000000000012.checkpoint.parquet"
            )),
            None
        );
        assert_eq!(
            commit_version(&Path::from("_delta_log/_last_checkpoint")),
            None
        );
        assert_eq!(
            commit_version(&Path::from("_delta_log/00000000000000000012.crc")),
            None
        );
    }
}
