//! Helpers shared by the integration tests.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use lakehealth::engine::location::Location;
use lakehealth::engine::options::OpenOptions;

pub use super::harness::{Moto, py_script, python};

/// The lakehealth binary with no config file (`LAKEHEALTH_CONFIG=/dev/null`), so a config in
/// the user's home cannot change what a test sees.
pub fn lakehealth_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lakehealth"));
    c.env("LAKEHEALTH_CONFIG", "/dev/null");
    c
}

/// Runs `lakehealth ARGS` (no config file) to completion.
pub fn lakehealth(args: &[&str]) -> Output {
    lakehealth_cmd()
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A finished command's stderr as text.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// One JSON value per non-blank line; panics naming a line that is not JSON.
pub fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

/// Sends SIGTERM to a child; whether `kill` succeeded.
pub fn sigterm(c: &Child) -> bool {
    Command::new("kill")
        .args(["-TERM", &c.id().to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// Sends SIGTERM to a child, asserting it was sent.
pub fn terminate(c: &Child) {
    assert!(sigterm(c), "kill -TERM {}", c.id());
}

/// A two-thread runtime for tests that drive async code from synchronous tests.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A local sensor table in `dir` with `files` small files (50 rows each) in each of
/// `partitions`.
pub fn sensor_table_with(dir: &Path, partitions: &[(&str, u32)]) {
    use lakehealth::engine::demo::{create_sensor_table, seed_small_files};
    let l = loc(dir);
    runtime().block_on(async {
        create_sensor_table(&l).await.unwrap();
        for (p, files) in partitions {
            seed_small_files(&l, &[p.to_string()], *files, 50)
                .await
                .unwrap();
        }
    });
}

/// Every file below `dir` (folders descended, `_delta_log` included).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The independent reader sees exactly `rows` rows, none twice.
pub fn assert_exact(path: &Path, rows: u64) {
    let r = read_back(path.to_str().unwrap(), None);
    assert_eq!(r.rows, rows, "rows");
    assert_eq!(r.distinct_ids, rows, "no row twice");
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta")
}

pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// Every fixture folder that holds a table (has `_delta_log/`).
pub fn fixture_tables() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures/delta is in the checkout")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("_delta_log").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn opts() -> OpenOptions {
    OpenOptions::default()
}

pub fn loc(p: &Path) -> Location {
    Location::parse(p.to_str().expect("utf-8 test path")).expect("test path exists")
}

/// Copies a folder tree (fixtures are read-only; tests that alter a table use a copy).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
            let mut perm = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&target, perm).unwrap();
        }
    }
}

/// Independent expectation: replays every JSON commit from version 0 with serde_json::Value,
/// keyed by (path, deletion vector), without any lakehealth code. Returns
/// (files, bytes, per-partition files keyed by the sorted raw partitionValues).
pub fn naive_replay(table: &Path) -> (u64, u64, HashMap<String, u64>) {
    let log = table.join("_delta_log");
    let mut commits: Vec<PathBuf> = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.len() == 25 && n.ends_with(".json")
        })
        .collect();
    commits.sort();
    let mut live: HashMap<String, (u64, String)> = HashMap::new();
    let key = |a: &serde_json::Value| {
        let dv = a
            .get("deletionVector")
            .filter(|d| !d.is_null())
            .map(|d| format!("{}{}{}", d["storageType"], d["pathOrInlineDv"], d["offset"]))
            .unwrap_or_default();
        format!("{}|{dv}", a["path"].as_str().unwrap())
    };
    for c in commits {
        let text = std::fs::read_to_string(&c).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(r) = v.get("remove") {
                live.remove(&key(r));
            }
            if let Some(a) = v.get("add") {
                let mut pv: Vec<String> = a["partitionValues"]
                    .as_object()
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                pv.sort();
                live.insert(key(a), (a["size"].as_u64().unwrap(), pv.join("/")));
            }
        }
    }
    let mut parts: HashMap<String, u64> = HashMap::new();
    for (_, p) in live.values() {
        *parts.entry(p.clone()).or_default() += 1;
    }
    let bytes = live.values().map(|(s, _)| s).sum();
    (live.len() as u64, bytes, parts)
}

/// What the independent Python reader (tests/py/verify_table.py: Python deltalake lists the
/// active files, pyarrow reads each one) sees in a sensor table.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ReadBack {
    pub version: i64,
    pub files: u64,
    pub rows: u64,
    pub distinct_ids: u64,
    pub reading_sum: i64,
    /// Active files, relative to the table root, sorted.
    pub paths: Vec<String>,
}

/// Reads a sensor table (local path or s3:// URI; `storage_options_json` for s3) with
/// tests/py/verify_table.py.
pub fn read_back(uri: &str, storage_options_json: Option<&str>) -> ReadBack {
    let mut c = py_script("verify_table.py");
    c.arg(uri);
    if let Some(o) = storage_options_json {
        c.args(["--storage-options", o]);
    }
    let o = c.output().expect("the venv's python runs");
    assert!(
        o.status.success(),
        "verify_table.py {uri}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "verify_table.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// The screen a TestBackend of `w` x `h` shows for `app`, as text.
pub fn render(app: &lakehealth::tui::app::App, w: u16, h: u16) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    t.draw(|f| lakehealth::tui::view::draw(f, app)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Thresholds for tables of small seeded files: 64 KiB target and small-file size.
pub fn kib64_thresholds() -> lakehealth::engine::model::thresholds::Thresholds {
    use lakehealth::engine::size::KIB;
    lakehealth::engine::model::thresholds::Thresholds {
        target_file_size: 64 * KIB,
        small_file_size: 64 * KIB,
        max_file_size: 1024 * KIB,
    }
}

/// A sensor table of `batches` small files (200 rows each, written by the in-process
/// streaming writer, one commit each); returns what the writer reports for each batch.
pub async fn seeded_batches(
    batches: u64,
) -> (
    tempfile::TempDir,
    Location,
    Vec<lakehealth::engine::stream::writer::BatchCommitted>,
) {
    use lakehealth::engine::stream::writer::{StreamOptions, run_stream};
    let d = tempfile::tempdir().unwrap();
    let l = loc(d.path());
    lakehealth::engine::demo::create_sensor_table(&l)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let o = StreamOptions {
        query_id: "seed".into(),
        interval: std::time::Duration::from_millis(1),
        rows: 200,
        max_batches: Some(batches),
        storage_options: HashMap::new(),
    };
    run_stream(&l, &o, tokio_util::sync::CancellationToken::new(), tx)
        .await
        .unwrap();
    let mut evs = Vec::new();
    while let Ok(e) = rx.try_recv() {
        evs.push(e);
    }
    (d, l, evs)
}

/// `seeded_batches`, returning the rows written.
pub async fn seeded(batches: u64) -> (tempfile::TempDir, Location, u64) {
    let (d, l, evs) = seeded_batches(batches).await;
    (d, l, evs.iter().map(|b| b.rows as u64).sum())
}

/// A path in the log as a file name on disk.
pub fn decoded(p: &str) -> String {
    percent_encoding::percent_decode_str(p)
        .decode_utf8_lossy()
        .into_owned()
}

/// Every commit file's actions from version `first`, in version order.
pub fn commits_from(table: &Path, first: u64) -> Vec<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for v in first.. {
        let f = table.join(format!("_delta_log/{v:020}.json"));
        let Ok(text) = std::fs::read_to_string(&f) else {
            break;
        };
        out.push(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        );
    }
    out
}

/// Data files in the folder that no commit ever added: uncommitted outputs left behind.
pub fn leftover_files(table: &Path) -> Vec<String> {
    let mut referenced = BTreeSet::new();
    for c in commits_from(table, 0) {
        for a in c {
            if let Some(p) = a.get("add").and_then(|a| a["path"].as_str()) {
                referenced.insert(decoded(p));
            }
        }
    }
    let mut on_disk = Vec::new();
    walk(table, table, &mut on_disk);
    on_disk.retain(|p| p.ends_with(".parquet") && !referenced.contains(p));
    on_disk
}

/// Every file below `dir`, relative to `root`, outside `_delta_log`.
pub fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
        if rel.starts_with("_delta_log") {
            continue;
        }
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.push(rel);
        }
    }
}

/// Every file below `dir` (outside `_delta_log`, as `walk` lists them) with its bytes, sorted:
/// what a test compares to say nothing in a folder changed.
pub fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

/// Runs a prepared compaction job on its own (fresh partition locks, never cancelled), its
/// events dropped; returns its summary.
pub async fn run_job(
    job: lakehealth::engine::compact::job::PreparedJob,
) -> lakehealth::engine::compact::events::JobSummary {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    lakehealth::engine::compact::job::run_isolated(
        job,
        std::sync::Arc::new(lakehealth::engine::compact::locks::PartitionLocks::default()),
        tokio_util::sync::CancellationToken::new(),
        tx,
    )
    .await
}

/// The active files whose min/max (Python deltalake's reading of the log) admit one value.
#[derive(serde::Deserialize)]
pub struct Admitting {
    pub files: u64,
    pub admitting: u64,
    pub paths: Vec<String>,
}

/// The files of `table` whose statistics admit `col = value` (`tests/py/skipping_depth.py
/// admits`): a file without both bounds counts as admitting.
pub fn admitting(table: &Path, col: &str, value: i64) -> Admitting {
    let o = py_script("skipping_depth.py")
        .args(["admits", table.to_str().unwrap(), col, &value.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}
