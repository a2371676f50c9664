//! The fleet the janitor publishes over a root (what the TUI's tables list shows): every table
//! with its state, its debt, its last job and its spend, built from what the janitor really
//! did. Rows are read back by Python.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::support::common::{loc, opts, read_back, runtime, sensor_table_with};

fn path(d: &std::path::Path) -> &str {
    d.to_str().expect("utf-8 test path")
}
use lakehealth::engine::janitor::Janitor;
use lakehealth::engine::janitor::fleet::{FleetSnapshot, FleetState};
use lakehealth::engine::janitor::history::{History, Outcome};
use lakehealth::engine::janitor::policy::Policy;
use lakehealth::engine::model::cost::{Prices, Rates};

/// Three due tables and one that cannot be read, one job slot: after a cycle that does not
/// wait, one table runs, the other two are queued 1st and 2nd of 2, the broken one says why;
/// once every job ended, each due table's last job compacted (rows exact), priced at the rates
/// given for the local disk, and the month's spend is its extrapolation.
#[test]
fn the_fleet_shows_one_running_two_queued_in_order_and_the_broken_table_then_every_last_job_and_its_price()
 {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lake");
    let mut before = Vec::new();
    for (t, small) in [("a", 52), ("b", 60), ("c", 70)] {
        let dir = root.join("db").join(t);
        std::fs::create_dir_all(&dir).unwrap();
        sensor_table_with(&dir, &[("2026-11-01", small)]);
        before.push((dir.clone(), read_back(path(&dir), None)));
    }
    let bad = root.join("db").join("bad").join("_delta_log");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join(format!("{:020}.json", 0)), "not json\n").unwrap();

    let mut o = opts();
    // Local files are free by default; priced here so the spend is not zero.
    o.prices = Prices([("file".to_string(), Rates::S3_STANDARD)].into());
    let policy = Policy::parse("max_jobs = 1\n", "p.toml", o.thresholds).unwrap();
    let (tx, rx) = tokio::sync::watch::channel(Arc::new(FleetSnapshot::default()));
    let mut j = Janitor::new(
        vec![loc(&root)],
        policy,
        o,
        History::open(&tmp.path().join("h.jsonl")).unwrap(),
        Box::new(|_| {}),
        false,
    )
    .with_fleet(tx);
    let cancel = CancellationToken::new();
    runtime().block_on(async {
        j.cycle(&cancel, false).await;
        let s = j.fleet_snapshot();
        let state = |t: &str| {
            s.rows
                .iter()
                .find(|r| r.table.ends_with(&format!("/db/{t}")))
                .unwrap_or_else(|| panic!("{t} in {s:#?}"))
                .state
                .clone()
        };
        let states: Vec<FleetState> = ["a", "b", "c"].iter().map(|t| state(t)).collect();
        let running = states
            .iter()
            .filter(|s| matches!(s, FleetState::Running { .. }))
            .count();
        assert_eq!(running, 1, "{states:#?}");
        let mut places: Vec<(usize, usize)> = states
            .iter()
            .filter_map(|s| match s {
                FleetState::Queued { place, of, why } => {
                    assert!(why.starts_with("queued"), "{why}");
                    Some((*place, *of))
                }
                _ => None,
            })
            .collect();
        places.sort();
        assert_eq!(places, vec![(1, 2), (2, 2)], "{states:#?}");
        match state("bad") {
            FleetState::Broken { error } => assert!(!error.is_empty()),
            other => panic!("the unreadable table is broken, not {other:?}"),
        }
        let a = s.rows.iter().find(|r| r.table.ends_with("/db/a")).unwrap();
        let debt = a.debt.expect("read");
        assert_eq!(debt.small_files, 52);
        assert_eq!(s.max_jobs, 1);

        // The next cycle waits for every job (each ended job frees the slot for the next).
        j.cycle(&cancel, true).await;
        j.cycle(&cancel, true).await;
    });
    let published = rx.borrow().clone();
    assert_eq!(published.cycle, 3, "the last cycle published its fleet");
    for (t, small) in [("a", 52), ("b", 60), ("c", 70)] {
        let r = published
            .rows
            .iter()
            .find(|r| r.table.ends_with(&format!("/db/{t}")))
            .unwrap();
        let job = r.last_job.as_ref().expect("its job ended");
        assert_eq!(job.outcome, Outcome::Compacted, "{t}: {}", job.summary);
        assert!(
            job.summary.starts_with(&format!("compacted {small} files")),
            "{}",
            job.summary
        );
        let usd = job.usd.expect("priced");
        assert!(usd > 0.0, "{t}: {usd}");
        assert!(r.spent_usd >= usd, "its log reads count too");
        assert!(
            (r.month_usd - r.spent_usd * 720.0).abs() < 1e-9,
            "under an hour, a month is 720 times the spend: {r:?}"
        );
        assert!(matches!(r.state, FleetState::Idle { .. }), "{:?}", r.state);
        assert_eq!(r.debt.unwrap().small_files, 1, "read again after its job");
    }
    for (dir, b) in before {
        let after = read_back(path(&dir), None);
        assert_eq!(after.rows, b.rows);
        assert_eq!(after.distinct_ids, b.distinct_ids);
        assert_eq!(after.reading_sum, b.reading_sum);
    }
}
