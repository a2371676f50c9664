//! The `duplicated_rows` finding: reported on a table whose rows two racing Python
//! `optimize.compact()` calls really duplicated (counted by an independent reader), and never
//! on tables compacted cleanly (every fixture, the demo table after lakehealth compactions).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use lakehealth::cli::report_text::table_text;
use lakehealth::engine::compact::job::prepare;
use lakehealth::engine::demo::{DemoShape, ensure_demo_table};
use lakehealth::engine::model::thresholds::Thresholds;
use lakehealth::engine::open::load_table;
use lakehealth::engine::options::OpenOptions;
use lakehealth::engine::size::{KIB, MIB};
use lakehealth::engine::stats::findings::FindingKind;
use lakehealth::engine::stream::writer::{StreamOptions, run_stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::common::*;
use crate::support::{RequestExt, request};

/// Builds a table of FILES small appends, then runs two `optimize.compact()` at once (two
/// threads released by a barrier) until both commit; a fresh table per attempt. Prints one JSON
/// object: what each attempt saw, read back by Python deltalake + pyarrow.
const RACE: &str = r#"
import json, os, sys, threading
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

root, files = sys.argv[1], int(sys.argv[2])
for attempt in range(1, 31):
    path = os.path.join(root, f"attempt{attempt}")
    n = 0
    for i in range(files):
        ids = pa.array(range(n, n + 50), pa.int64())
        n += 50
        write_deltalake(path, pa.table({"id": ids, "p": pa.array(["a" if i % 2 else "b"] * 50)}),
                        mode="append", partition_by=["p"])
    before = DeltaTable(path)
    small_bytes = sum(before.get_add_actions(flatten=True).column("size_bytes").to_pylist())
    barrier = threading.Barrier(2)
    errors = []
    def compact():
        dt = DeltaTable(path)
        barrier.wait()
        try:
            dt.optimize.compact()
        except Exception as e:
            errors.append(str(e))
    threads = [threading.Thread(target=compact) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = DeltaTable(path)
    ids = dt.to_pyarrow_table().column("id").to_pylist()
    out = {"path": path, "attempt": attempt, "written_rows": n, "rows": len(ids),
           "distinct_ids": len(set(ids)), "small_files": files, "small_bytes": small_bytes,
           "version": dt.version(), "files": len(dt.file_uris()), "errors": errors}
    if not errors:
        break
print(json.dumps(out), flush=True)
# deltalake's runtime threads sometimes abort the interpreter's teardown ("terminate called
# without an active exception"): the result is out, so skip it.
os._exit(0)
"#;

#[derive(Debug, serde::Deserialize)]
struct Raced {
    path: String,
    attempt: u32,
    written_rows: u64,
    rows: u64,
    distinct_ids: u64,
    small_files: u64,
    small_bytes: u64,
    version: u64,
    files: u64,
    errors: Vec<String>,
}

fn race(root: &Path, files: u32) -> Raced {
    let o = Command::new(python())
        .arg("-c")
        .arg(RACE)
        .arg(root)
        .arg(files.to_string())
        .output()
        .expect("the venv's python runs");
    assert!(
        o.status.success(),
        "race script: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "race script printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_duplicated_by_two_racing_python_compactions_are_reported() {
    let d = tempfile::tempdir().unwrap();
    let r = race(d.path(), 60);
    assert!(
        r.errors.is_empty(),
        "the two compactions never both committed in {} attempts: {:?}",
        r.attempt,
        r.errors
    );
    // The damage is real: every row is in the table twice.
    assert_eq!(r.distinct_ids, r.written_rows, "{r:?}");
    assert_eq!(r.rows, 2 * r.written_rows, "{r:?}");

    let path = Path::new(&r.path);
    let report = load_table(&loc(path), &opts(), &|_| {}).await.unwrap();
    assert_eq!(
        report.stats.files, r.files,
        "lakehealth counts delta-rs's files"
    );
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    assert_eq!(f.kind, FindingKind::DuplicatedRows);
    assert_eq!(f.versions, vec![r.version - 1, r.version]);
    assert_eq!(f.operations, vec!["OPTIMIZE", "OPTIMIZE"]);
    assert!(
        f.engines
            .iter()
            .all(|e| e.as_deref().is_some_and(|e| e.contains("delta-rs"))),
        "{:?}",
        f.engines
    );
    assert_eq!((f.files, f.bytes), (r.small_files, r.small_bytes));
    assert!(
        f.message.starts_with(&format!(
            "duplicated rows: versions {} and {} (OPTIMIZE, OPTIMIZE by delta-rs",
            r.version - 1,
            r.version
        )),
        "{}",
        f.message
    );
    assert!(f.message.ends_with("their rows are in the table twice"));
    assert_eq!(report.findings_checked.from_version, Some(0));
    assert_eq!(report.findings_checked.to_version, r.version);
    assert!(table_text(&report).contains(&format!("  ! {}", f.message)));

    // `report --json` carries it as documented.
    let o = lakehealth(&["report", &r.path, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["findings"][0];
    assert_eq!(j["kind"], "duplicated_rows");
    assert_eq!(j["versions"], serde_json::json!([r.version - 1, r.version]));
    assert_eq!(j["files"], r.small_files);
    assert_eq!(j["bytes"], r.small_bytes);
    assert_eq!(j["message"], f.message.as_str());
    assert_eq!(j["operations"], serde_json::json!(["OPTIMIZE", "OPTIMIZE"]));
    assert_eq!(v["findings_checked"]["to_version"], r.version);

    // After a checkpoint of the latest version the commits are still read, so still found.
    let t = deltalake::open_table(loc(path).url.clone()).await.unwrap();
    deltalake::checkpoints::create_checkpoint(&t, None)
        .await
        .unwrap();
    let again = load_table(&loc(path), &opts(), &|_| {}).await.unwrap();
    assert_eq!(again.findings, report.findings);
}

/// The racing table with its log cut between the two compactions, a checkpoint written there
/// by delta-rs, and the second compaction put back: its removes hit the checkpoint's tombstones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_compaction_after_a_checkpoint_is_found_from_its_tombstones() {
    let d = tempfile::tempdir().unwrap();
    let r = race(d.path(), 30);
    assert!(r.errors.is_empty(), "{r:?}");
    let path = Path::new(&r.path);
    let log = path.join("_delta_log");
    let second = log.join(format!("{:020}.json", r.version));
    let aside = d.path().join("second.json");
    std::fs::rename(&second, &aside).unwrap();
    let t = deltalake::open_table(loc(path).url.clone()).await.unwrap();
    deltalake::checkpoints::create_checkpoint(&t, None)
        .await
        .unwrap();
    std::fs::rename(&aside, &second).unwrap();

    // Only what follows the checkpoint is read: the tombstones name the first remove.
    let mut o = opts();
    o.replay.scan_commits = 0;
    o.replay.history_commits = 1;
    let report = load_table(&loc(path), &o, &|_| {}).await.unwrap();
    let (files, bytes, _) = naive_replay(path);
    assert_eq!((report.stats.files, report.stats.bytes), (files, bytes));
    assert_eq!(report.stats.files, r.files);
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    assert_eq!(f.versions, vec![r.version]);
    assert_eq!(f.first_remove_in_checkpoint, Some(r.version - 1));
    assert_eq!((f.files, f.bytes), (r.small_files, r.small_bytes));
    assert_eq!(report.findings_checked.from_version, Some(r.version));

    // With the older commits read, both versions are named.
    let full = load_table(&loc(path), &opts(), &|_| {}).await.unwrap();
    assert_eq!(full.findings[0].versions, vec![r.version - 1, r.version]);
    assert_eq!((full.stats.files, full.stats.bytes), (files, bytes));
}

#[tokio::test]
async fn no_fixture_table_has_damage_findings() {
    use lakehealth::engine::stats::findings::FindingKind;
    let tables = fixture_tables();
    assert!(tables.len() >= 10, "fixtures missing: {tables:?}");
    for name in tables {
        let r = load_table(&loc(&fixture(&name)), &opts(), &|_| {})
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Spark's deletion-vector table has 20 % of its one file's rows deleted: that is its
        // one finding (not damage); no table has any other.
        let kinds: Vec<FindingKind> = r.findings.iter().map(|f| f.kind).collect();
        let expected = if name == "table-with-dv-small" {
            vec![FindingKind::DeletedRowsOverRatio]
        } else {
            vec![]
        };
        assert_eq!(kinds, expected, "{name}: {:#?}", r.findings);
        assert_eq!(r.findings_checked.to_version, r.version, "{name}");
    }
}

fn small() -> Thresholds {
    Thresholds {
        target_file_size: MIB,
        small_file_size: MIB,
        max_file_size: 16 * MIB,
    }
}

async fn compact_demo(l: &lakehealth::engine::location::Location) {
    // Several bins, so several OPTIMIZE commits remove files: a bin closes only at two
    // targets of output, so the target is small beside the bin.
    let req = request()
        .target(32 * KIB)
        .min_file_size(MIB)
        .parallelism(2)
        .max_bin(128 * KIB);
    let job = prepare(l, &req, small(), 1.0).await.expect("plan");
    assert!(job.plan.bins > 1, "{:?}", job.plan);
    let s = run_job(job).await;
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.commits.len() > 1, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_table_compacted_by_lakehealth_has_no_findings() {
    let d = tempfile::tempdir().unwrap();
    let shape = DemoShape {
        small_days: 2,
        small_files_per_day: 40,
        healthy_days: 1,
        healthy_file_bytes: 2 * MIB,
    };
    let l = ensure_demo_table(d.path(), shape, false, &|_| {})
        .await
        .unwrap();
    compact_demo(&l).await;
    // More streaming files, compacted again.
    let stream = StreamOptions {
        query_id: "findings".into(),
        interval: Duration::from_millis(1),
        rows: 200,
        max_batches: Some(12),
        storage_options: HashMap::new(),
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    run_stream(&l, &stream, CancellationToken::new(), tx)
        .await
        .unwrap();
    compact_demo(&l).await;

    let r = load_table(&l, &OpenOptions::default(), &|_| {})
        .await
        .unwrap();
    let optimizes: Vec<u64> = r
        .commits
        .iter()
        .filter(|c| c.operation == "OPTIMIZE")
        .map(|c| c.version)
        .collect();
    assert!(optimizes.len() >= 4, "{optimizes:?}");
    // Every compaction commit was checked, and none removed a file twice.
    let oldest = optimizes.iter().min().copied().unwrap_or(0);
    assert!(
        r.findings_checked.from_version.is_some_and(|v| v <= oldest),
        "{:?}",
        r.findings_checked
    );
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert!(table_text(&r).contains("findings: none (checked versions "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_view_shows_duplicated_rows_in_a_red_panel() {
    use lakehealth::tui::action::{Action, Effect};
    use lakehealth::tui::app::App;
    use ratatui::style::Color;

    let d = tempfile::tempdir().unwrap();
    let r = race(d.path(), 20);
    assert!(r.errors.is_empty(), "{r:?}");
    let (w, h) = (160, 45);
    let mut app = App::new(loc(Path::new(&r.path)).display(), Duration::ZERO, (w, h));
    let mut effects = app.start();
    while let Some(e) = effects.pop() {
        if let Effect::Load { id, uri } = e {
            let result = lakehealth::engine::open::open(&loc(Path::new(&uri)), &opts(), &|_| {})
                .await
                .map_err(lakehealth::tui::task_error::TaskError::from);
            effects.extend(app.update(Action::Loaded { load: id, result }));
        }
    }
    assert!(app.error().is_none(), "{:?}", app.error());
    let screen = render(&app, w, h);
    assert!(screen.contains("Findings (1)"), "{screen}");
    assert!(
        screen.contains(&format!(
            "! duplicated rows: versions {} and {}",
            r.version - 1,
            r.version
        )),
        "{screen}"
    );
    // In red.
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    t.draw(|f| lakehealth::tui::view::draw(f, &app)).unwrap();
    let buf = t.backend().buffer().clone();
    let bang = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .find(|&(x, y)| buf[(x, y)].symbol() == "!")
        .expect("the finding's line is drawn");
    assert_eq!(buf[bang].fg, Color::Red);
}
