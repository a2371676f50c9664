//! Pace by feedback from the writer. While a writer is active a job starts at a modest read
//! rate (`janitor::throttle`), then follows the writer's cadence: the log is listed every
//! second or so, and the intervals between the writer's commits over the last few seconds are
//! compared with its intervals before the job. While the cadence holds, the pace rises by a
//! step (additive increase) up to full speed; when it stretches, the pace halves
//! (multiplicative decrease), as TCP does with a congested link. A writer that stops (no commit
//! for several of its intervals) is no longer there to protect: full speed.
//!
//! The measure is the 90th percentile of the intervals, from the commit files' landing times
//! (the store's last-modified, listed): a writer on a timer keeps its mean interval until its
//! latency exceeds its period, but a slower commit lands later than its tick, so the spread of
//! its intervals grows with its latency long before. Stores that give last-modified to the
//! second only (S3) fall back to the mean interval (commits counted per poll). The controller
//! is pure (`Aimd`); `follow` feeds it from the store.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::path::Path;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::pace::Pacer;
use crate::size::format_bytes;

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
                format!(
                    "writer cadence {r:.0} ms, within {HOLD_RATIO}x its {b:.0} ms before the job: raised"
                )
            }
            Some(r) if r > b * CUT_RATIO => {
                self.rate = (self.rate.min(FULL) / 2).max(FLOOR);
                self.cut += 1;
                format!(
                    "writer cadence stretched to {r:.0} ms, over {CUT_RATIO}x its {b:.0} ms before the job: halved"
                )
            }
            Some(r) => format!(
                "writer cadence {r:.0} ms, {:.2}x its {b:.0} ms before the job: held",
                r / b
            ),
        };
        PaceNote {
            bytes_per_second: (self.rate < FULL).then_some(self.rate),
            why,
            raised: self.raised,
            cut: self.cut,
        }
    }
}

/// The `q` quantile of the intervals between `times` (ascending); None with fewer than `min`
/// intervals.
fn interval_quantile(times: &[i64], q: f64, min: usize) -> Option<f64> {
    let mut gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.len() < min {
        return None;
    }
    gaps.sort_unstable();
    let i = ((gaps.len() as f64 * q) as usize).min(gaps.len() - 1);
    Some(gaps[i] as f64)
}

/// Whether landing times have sub-second precision (S3 lists last-modified to the second).
fn precise(times: &[i64]) -> bool {
    times.iter().any(|t| t % 1000 != 0)
}

/// The fewest intervals a 90th percentile is taken over.
const MIN_INTERVALS: usize = 6;

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

/// The commits after `after` (and up to `upto`), by version: their landing times (ms).
async fn landings(
    store: &dyn ObjectStore,
    after: u64,
    upto: Option<u64>,
) -> Option<Vec<(u64, i64)>> {
    use futures::TryStreamExt;
    let prefix = Path::from("_delta_log");
    let offset = Path::from(format!("_delta_log/{after:020}.json"));
    let files: Vec<_> = store
        .list_with_offset(Some(&prefix), &offset)
        .try_collect()
        .await
        .ok()?;
    let mut out: Vec<(u64, i64)> = files
        .iter()
        .filter_map(|f| {
            let v = commit_version(&f.location)?;
            (v > after && upto.is_none_or(|u| v <= u))
                .then(|| (v, f.last_modified.timestamp_millis()))
        })
        .collect();
    out.sort_unstable();
    Some(out)
}

/// Follows the writer's cadence from `version` until `done`, setting `pacer`'s rate and
/// telling `changed` each new pace. `rhythm_ms`: the writer's median interval before the job
/// (from its commits' timestamps), used when landing times are too coarse. Our own commits
/// count as the writer's: a few among many, they can only make the pace more careful.
pub async fn follow(
    store: Arc<dyn ObjectStore>,
    version: u64,
    rhythm_ms: u64,
    pacer: Arc<Pacer>,
    done: CancellationToken,
    changed: impl Fn(PaceNote),
) {
    let rhythm = rhythm_ms.max(1);
    // The writer before the job: its last commits' landing times.
    let before: Vec<i64> = landings(store.as_ref(), version.saturating_sub(40), Some(version))
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let p90_before = precise(&before)
        .then(|| interval_quantile(&before, 0.9, MIN_INTERVALS))
        .flatten();
    let baseline = p90_before.unwrap_or(rhythm as f64).max(1.0);
    let mut aimd = Aimd::new(pacer.rate().unwrap_or(FULL), baseline as u64);
    // At least 20 of the writer's intervals (and 3 s): enough to take a percentile of.
    let span = Duration::from_millis((20 * rhythm).max(3000));
    let poll = Duration::from_millis(rhythm.clamp(1000, 5000));
    let mut seen = version;
    let mut recent: VecDeque<i64> = VecDeque::new();
    let mut window = Window::default();
    let started = Instant::now();
    window.add(started, 0, span);
    loop {
        tokio::select! {
            _ = done.cancelled() => return,
            _ = tokio::time::sleep(poll) => {}
        }
        let Some(new) = landings(store.as_ref(), seen, None).await else {
            continue;
        };
        let now = Instant::now();
        seen = new.last().map_or(seen, |(v, _)| *v);
        window.add(now, new.len() as u64, span);
        recent.extend(new.iter().map(|(_, t)| *t));
        if let Some(&newest) = recent.back() {
            let from = newest - span.as_millis() as i64;
            while recent.front().is_some_and(|t| *t < from) {
                recent.pop_front();
            }
        }
        if now.duration_since(started) < span / 2 {
            continue;
        }
        let quiet = now
            .duration_since(window.last_commit.unwrap_or(started))
            .as_secs_f64()
            * 1000.0;
        let times: Vec<i64> = recent.iter().copied().collect();
        let measured = match p90_before {
            Some(_) => interval_quantile(&times, 0.9, MIN_INTERVALS),
            None => window.interval_ms(),
        };
        let note = aimd.observe(measured, quiet);
        if pacer.note().as_ref() != Some(&note) {
            if !pacer.set(note.clone()) {
                // The user lifted the pace: nothing left to follow.
                return;
            }
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
        // The figures say what they compare: the writer's interval now and before the job.
        assert_eq!(
            n.why,
            "writer cadence 105 ms, within 1.15x its 100 ms before the job: raised"
        );
        assert_eq!(a.observe(Some(100.0), 0.0).bytes_per_second, Some(56 * MIB));
        let cut = a.observe(Some(150.0), 0.0);
        assert_eq!(cut.bytes_per_second, Some(28 * MIB));
        assert!(
            cut.why
                .contains("stretched to 150 ms, over 1.35x its 100 ms before the job"),
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
    fn the_spread_of_the_intervals_shows_a_slower_commit_before_the_mean_does() {
        // A writer on a 100 ms timer: its commits land at the tick plus their latency.
        let land = |lat: &[i64]| -> Vec<i64> {
            lat.iter()
                .enumerate()
                .map(|(i, l)| i as i64 * 100 + l)
                .collect()
        };
        let calm = land(&[40, 42, 41, 40, 43, 41, 40, 42, 41, 40, 42]);
        let busy = land(&[40, 90, 41, 95, 43, 88, 40, 92, 41, 96, 42]);
        let mean = |t: &[i64]| (t[t.len() - 1] - t[0]) as f64 / (t.len() - 1) as f64;
        assert!(
            (mean(&busy) - mean(&calm)).abs() < 1.0,
            "the mean barely moves"
        );
        let (c, b) = (
            interval_quantile(&calm, 0.9, MIN_INTERVALS).unwrap(),
            interval_quantile(&busy, 0.9, MIN_INTERVALS).unwrap(),
        );
        assert!(b > c * CUT_RATIO, "p90 {c} -> {b}");
        assert_eq!(interval_quantile(&calm[..4], 0.9, MIN_INTERVALS), None);
        assert!(precise(&calm));
        assert!(!precise(&[1_000, 2_000, 5_000]), "S3's whole seconds");
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
