//! Racing compactions, end to end with real processes: two `lakehealth compact` processes on the
//! same partitions (local and on S3 via moto), Python deltalake's optimize racing lakehealth, and
//! SIGKILL at many moments. Expected rows come from what the test itself wrote; actual rows from
//! the independent Python reader (tests/py/verify_table.py: Python deltalake + pyarrow).
//!
//! The bug these guard against: an OPTIMIZE commit only removes files and adds files with
//! dataChange=false, and delta-rs's conflict checker lets such a commit through when a concurrent
//! winner also only compacted -- even when both removed the same files -- so two compactions of
//! the same partitions could both commit and every row of them would be read twice.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use deltalake::kernel::Action;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use lakehealth::engine::demo::create_sensor_table;
use lakehealth::engine::location::Location;
use lakehealth::engine::stream::batch::{reading_sum, sensor_batch};
use lakehealth::engine::stream::writer::open_delta_table;
use object_store::ObjectStoreExt;

use crate::support::common::*;

const PARTITIONS: [&str; 2] = ["2026-11-28", "2026-11-29"];
const ROWS_PER_FILE: usize = 200;

/// `n` partition values (days).
fn days(n: usize) -> Vec<String> {
    (1..=n).map(|d| format!("2026-10-{d:02}")).collect()
}
/// A process that has not finished by then is stuck (killed, and the test fails).
const PROCESS_TIMEOUT: Duration = Duration::from_secs(180);

/// A sensor table (local or on S3) and what has been written to it: the expectation.
struct Table {
    uri: String,
    loc: Location,
    storage: HashMap<String, String>,
    /// `-o KEY=VALUE` for the CLI.
    cli_opts: Vec<String>,
    /// Storage options for the Python scripts.
    py_opts: Option<String>,
    rows: u64,
    reading_sum: i64,
    seeds: u64,
    rt: tokio::runtime::Runtime,
    /// The local table's folder, or the folder the s3 table's first commit was made in.
    dir: tempfile::TempDir,
}

impl Table {
    fn local() -> Table {
        let dir = tempfile::tempdir().unwrap();
        let l = loc(dir.path());
        let rt = runtime();
        rt.block_on(create_sensor_table(&l)).unwrap();
        Table {
            uri: dir.path().to_str().unwrap().to_string(),
            loc: l,
            storage: HashMap::new(),
            cli_opts: Vec::new(),
            py_opts: None,
            rows: 0,
            reading_sum: 0,
            seeds: 0,
            rt,
            dir,
        }
    }

    /// A sensor table at s3://bucket/key on moto. `create_sensor_table` takes no storage options,
    /// so the table is created in a local folder and its first commit uploaded.
    fn s3(moto: &Moto, bucket: &str, key: &str) -> Table {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        rt.block_on(create_sensor_table(&loc(dir.path()))).unwrap();
        let uri = format!("s3://{bucket}/{key}");
        let l = Location::parse(&uri).unwrap();
        let storage = moto.storage_options();
        let first = "_delta_log/00000000000000000000.json";
        let bytes = std::fs::read(dir.path().join(first)).unwrap();
        let store = l.open_store(&storage).unwrap();
        rt.block_on(store.put(&object_store::path::Path::from(first), bytes.into()))
            .unwrap();
        Table {
            uri,
            loc: l,
            storage,
            cli_opts: moto.cli_args(),
            py_opts: Some(moto.options_json()),
            rows: 0,
            reading_sum: 0,
            seeds: 0,
            rt,
            dir,
        }
    }

    fn local_path(&self) -> &Path {
        assert!(self.loc.is_local());
        self.dir.path()
    }

    /// Appends `files_per_partition` small files (one micro-batch of ROWS_PER_FILE rows each,
    /// event ids unique across calls) to both PARTITIONS, in one commit.
    fn seed(&mut self, files_per_partition: usize) {
        let parts: Vec<String> = PARTITIONS.iter().map(|p| p.to_string()).collect();
        self.seed_into(&parts, files_per_partition, ROWS_PER_FILE);
    }

    /// Appends `files_per_partition` files of `rows` rows to each of `partitions`, in one commit.
    fn seed_into(
        &mut self,
        partitions: &[String],
        files_per_partition: usize,
        rows_per_file: usize,
    ) {
        self.seeds += 1;
        let tag = format!("seed{}", self.seeds);
        let (rows, sum) = self.rt.block_on(async {
            let table = open_delta_table(&self.loc, &self.storage).await.unwrap();
            let mut writer = RecordBatchWriter::for_table(&table).unwrap();
            let mut adds = Vec::new();
            let (mut rows, mut sum) = (0u64, 0i64);
            for (p, date) in partitions.iter().enumerate() {
                for f in 0..files_per_partition {
                    let batch_id = (p * 100_000 + f) as i64;
                    let t = 1_795_000_000_000_000 + batch_id;
                    let batch = sensor_batch(&tag, batch_id, rows_per_file, date, t).unwrap();
                    rows += batch.num_rows() as u64;
                    sum += reading_sum(&batch);
                    writer.write(batch).await.unwrap();
                    adds.extend(writer.flush().await.unwrap());
                }
            }
            assert_eq!(adds.len(), files_per_partition * partitions.len());
            CommitBuilder::from(CommitProperties::default())
                .with_actions(adds.into_iter().map(Action::Add).collect())
                .build(
                    Some(table.snapshot().unwrap()),
                    table.log_store(),
                    DeltaOperation::Write {
                        mode: SaveMode::Append,
                        partition_by: None,
                        predicate: None,
                    },
                )
                .await
                .unwrap();
            (rows, sum)
        });
        self.rows += rows;
        self.reading_sum += sum;
    }

    fn read(&self) -> ReadBack {
        read_back(&self.uri, self.py_opts.as_deref())
    }

    /// None when the independent reader sees exactly the rows written, each once.
    fn mismatch(&self, b: &ReadBack) -> Option<String> {
        (b.rows != self.rows || b.distinct_ids != b.rows || b.reading_sum != self.reading_sum)
            .then(|| {
                format!(
                    "the independent reader sees {} rows ({} distinct ids, {} read twice), reading sum {}; \
                     expected {} rows, reading sum {} (table version {}, {} files)",
                    b.rows,
                    b.distinct_ids,
                    b.rows.saturating_sub(b.distinct_ids),
                    b.reading_sum,
                    self.rows,
                    self.reading_sum,
                    b.version,
                    b.files
                )
            })
    }

    /// `lakehealth compact --target T --min-file-size T` on this table, outputs in `logs`.
    fn compact(&self, target: &str, logs: &Path, name: &str) -> Proc {
        self.compact_below(target, target, logs, name)
    }

    /// `lakehealth compact --target target --min-file-size min`.
    fn compact_below(&self, target: &str, min: &str, logs: &Path, name: &str) -> Proc {
        self.compact_with(&["--target", target, "--min-file-size", min], logs, name)
    }

    /// `lakehealth compact TABLE ARGS --json` in the background.
    fn compact_with(&self, args: &[&str], logs: &Path, name: &str) -> Proc {
        let mut c = lakehealth_cmd();
        c.args(["compact", &self.uri])
            .args(args)
            .arg("--json")
            .args(&self.cli_opts)
            .arg("--log-file")
            .arg(logs.join(format!("{name}.log")))
            .env("RUST_BACKTRACE", "1");
        Proc::spawn(c, logs, name)
    }
}

/// A child process whose stdout and stderr go to files (pipes of two children read one after
/// the other could fill up and stall the one not being read).
struct Proc {
    name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

struct Finished {
    name: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    seconds: f64,
}

impl Proc {
    fn spawn(mut c: Command, logs: &Path, name: &str) -> Proc {
        let out = logs.join(format!("{name}.stdout"));
        let err = logs.join(format!("{name}.stderr"));
        let child = c
            .stdin(Stdio::null())
            .stdout(File::create(&out).unwrap())
            .stderr(File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {name}: {e}"));
        Proc {
            name: name.into(),
            child,
            out,
            err,
            started: Instant::now(),
        }
    }

    /// Waits until the process printed `marker` on stdout.
    fn wait_for_stdout(&mut self, marker: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .contains(marker)
        {
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!(
                    "{} exited ({s}) before printing {marker}: {}",
                    self.name,
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} printed no {marker} within {timeout:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL (what `Child::kill` sends on unix).
    fn kill(&mut self) {
        let _ = self.child.kill();
    }

    fn finish(mut self) -> Finished {
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if self.started.elapsed() > PROCESS_TIMEOUT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} still running after {PROCESS_TIMEOUT:?}; stderr: {}",
                    self.name,
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Finished {
            name: self.name,
            status,
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
            seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

impl Finished {
    fn summary(&self) -> Option<serde_json::Value> {
        serde_json::from_str(self.stdout.trim()).ok()
    }

    /// Versions this compaction committed (from its --json summary).
    fn commit_versions(&self) -> Vec<u64> {
        self.summary()
            .and_then(|s| {
                s["commits"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|c| c["version"].as_u64()).collect())
            })
            .unwrap_or_default()
    }

    /// The table version its plan was made at (None when it planned nothing).
    fn planned_at(&self) -> Option<u64> {
        let s = self.summary()?;
        (s["plan"]["bins"].as_u64()? > 0)
            .then(|| s["plan"]["table_version"].as_u64())
            .flatten()
    }

    fn describe(&self) -> String {
        let s = self.summary();
        let field = |k: &str| {
            s.as_ref()
                .map(|s| s[k].to_string())
                .unwrap_or_else(|| "-".into())
        };
        let tail: Vec<&str> = self.stderr.lines().rev().take(6).collect();
        format!(
            "{}: {} after {:.2}s, planned at v{:?}, commits {:?}, files -{} +{}, conflicts {}, errors {}; stderr tail: {}",
            self.name,
            self.status,
            self.seconds,
            self.planned_at(),
            self.commit_versions(),
            field("files_removed"),
            field("files_added"),
            field("conflicts"),
            field("errors"),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )
    }

    fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked"),
            "{} panicked: {}",
            self.name,
            self.stderr
        );
    }
}

/// Start offsets of the second process, in ms: spread from "at once" to "well after the first
/// one planned", in an order that is not monotonic.
const OFFSETS_MS: [u64; 20] = [
    0, 40, 5, 90, 15, 150, 1, 60, 25, 220, 10, 120, 2, 300, 35, 75, 8, 180, 50, 3,
];

/// Rounds of two `lakehealth compact` processes started `OFFSETS_MS` apart on the same
/// partitions, re-seeding fresh small files between rounds; after each round the independent
/// reader must see every written row exactly once.
fn race_two_processes(t: &mut Table, rounds: usize, reseed_files: usize) {
    // Files below 64 KiB are rewritten (a target below 1 MiB is refused).
    race_two_processes_with(
        t,
        rounds,
        reseed_files,
        &["--target", "1MiB", "--min-file-size", "64KiB"],
    );
}

/// `race_two_processes` with the compactions' own arguments.
fn race_two_processes_with(t: &mut Table, rounds: usize, reseed_files: usize, args: &[&str]) {
    let logs = tempfile::tempdir().unwrap();
    let mut contested = 0;
    let mut both_committed = 0;
    let started = Instant::now();
    for round in 0..rounds {
        if round > 0 {
            t.seed(reseed_files);
        }
        let offset = Duration::from_millis(OFFSETS_MS[round % OFFSETS_MS.len()]);
        let a = t.compact_with(args, logs.path(), &format!("r{round}-a"));
        std::thread::sleep(offset);
        let b = t.compact_with(args, logs.path(), &format!("r{round}-b"));
        let (a, b) = (a.finish(), b.finish());
        let back = t.read();
        if let Some(m) = t.mismatch(&back) {
            panic!(
                "round {round} (second process started {offset:?} after the first): {m}\n  {}\n  {}",
                a.describe(),
                b.describe()
            );
        }
        a.assert_no_panic();
        b.assert_no_panic();
        assert!(
            a.status.success() || b.status.success(),
            "round {round}: neither compaction succeeded\n  {}\n  {}",
            a.describe(),
            b.describe()
        );
        if a.planned_at().is_some() && a.planned_at() == b.planned_at() {
            contested += 1;
        }
        if !a.commit_versions().is_empty() && !b.commit_versions().is_empty() {
            both_committed += 1;
        }
    }
    eprintln!(
        "{rounds} rounds in {:.1}s: {contested} with both processes planning at the same version, \
         {both_committed} with both committing; {} rows exact",
        started.elapsed().as_secs_f64(),
        t.rows
    );
    assert!(
        contested >= 2,
        "the processes hardly ever raced ({contested} of {rounds} rounds planned at the same version): the test needs new timings"
    );
}

#[test]
fn two_compact_processes_on_the_same_partitions_never_duplicate_rows_local() {
    let mut t = Table::local();
    t.seed(60);
    let b = t.read();
    assert_eq!(b.files, 120);
    assert_eq!(t.mismatch(&b), None);
    race_two_processes(&mut t, 20, 15);
}

/// The same race with `--zorder`: each process rewrites every file of both partitions in
/// z-order, so whichever commits second would read every row twice; our commit validation
/// refuses it (delta-rs's conflict checker alone lets it through).
#[test]
fn two_zorder_compactions_of_the_same_partitions_never_duplicate_rows_local() {
    let mut t = Table::local();
    t.seed(40);
    race_two_processes_with(
        &mut t,
        12,
        10,
        &["--target", "1MiB", "--zorder", "sensor_id,reading"],
    );
}

#[test]
fn two_compact_processes_on_the_same_partitions_never_duplicate_rows_s3() {
    let moto = Moto::start();
    moto.create_bucket("lake");
    let mut t = Table::s3(&moto, "lake", "sensor");
    t.seed(50);
    let b = t.read();
    assert_eq!(b.files, 100);
    assert_eq!(t.mismatch(&b), None);
    race_two_processes(&mut t, 10, 15);
}

/// Proves that commits on moto are put-if-absent (`If-None-Match: *`): two writers of the same
/// version through delta-rs's log store, the second must get VersionAlreadyExists. Without it
/// (e.g. with AWS_S3_ALLOW_UNSAFE_RENAME) racing commits would silently overwrite each other and
/// the S3 race test would prove nothing.
#[test]
fn commits_on_moto_are_put_if_absent() {
    use deltalake::kernel::transaction::TransactionError;
    use deltalake::logstore::CommitOrBytes;

    let moto = Moto::start();
    moto.create_bucket("lake");
    let t = Table::s3(&moto, "lake", "proof");
    let commit = |n: u32| {
        bytes::Bytes::from(format!(
            "{{\"commitInfo\":{{\"timestamp\":{},\"operation\":\"WRITE\",\"operationParameters\":{{\"mode\":\"Append\"}},\"writer\":{n}}}}}\n",
            1_795_000_000_000u64 + u64::from(n)
        ))
    };
    let (first, second) = t.rt.block_on(async {
        // Two handles opened at version 0, as two processes would.
        let one = open_delta_table(&t.loc, &t.storage).await.unwrap();
        let two = open_delta_table(&t.loc, &t.storage).await.unwrap();
        assert_eq!(one.version(), Some(0));
        assert_eq!(two.version(), Some(0));
        let first = one
            .log_store()
            .write_commit_entry(1, CommitOrBytes::LogBytes(commit(1)), uuid::Uuid::new_v4())
            .await;
        let second = two
            .log_store()
            .write_commit_entry(1, CommitOrBytes::LogBytes(commit(2)), uuid::Uuid::new_v4())
            .await;
        (first, second)
    });
    first.expect("the first commit of version 1 lands");
    match second {
        Err(TransactionError::VersionAlreadyExists(1)) => {}
        other => panic!(
            "the second commit of version 1 must fail with VersionAlreadyExists, got {other:?}"
        ),
    }
    let store = t.loc.open_store(&t.storage).unwrap();
    let kept = t.rt.block_on(async {
        store
            .get(&object_store::path::Path::from(
                "_delta_log/00000000000000000001.json",
            ))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    assert_eq!(kept, commit(1), "the first writer's commit was kept");
    // Python deltalake reads the table through the same options.
    let b = t.read();
    assert_eq!((b.version, b.rows), (1, 0));
}

/// Python deltalake's optimize: loads the table, says so on stdout, compacts, prints the version
/// it committed.
const PY_OPTIMIZE: &str = r#"
import json, sys
from deltalake import DeltaTable
opts = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
dt = DeltaTable(sys.argv[1], storage_options=opts)
print(json.dumps({"loaded": dt.version()}), flush=True)
m = dt.optimize.compact()
print(json.dumps({"committed": dt.version(), "metrics": m}, default=str), flush=True)
"#;

/// `commitInfo.readVersion` and `operation` of every JSON commit of a local table.
fn commit_infos(table: &Path) -> HashMap<u64, (Option<u64>, String)> {
    let mut out = HashMap::new();
    for e in std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(v) = name
            .strip_suffix(".json")
            .filter(|s| s.len() == 20)
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        let text = std::fs::read_to_string(e.path()).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let a: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(ci) = a.get("commitInfo") {
                out.insert(
                    v,
                    (
                        ci["readVersion"].as_u64(),
                        ci["operation"].as_str().unwrap_or("").to_string(),
                    ),
                );
            }
        }
    }
    out
}

#[test]
fn python_optimize_racing_lakehealth_compact_never_duplicates_rows() {
    // One partition of larger files: Python's optimize (one bin, one commit) takes a few hundred
    // ms after it has read the log. lakehealth, started 0..100 ms after Python says it has
    // loaded the table, plans from the same version and (usually) commits after Python.
    let offsets_ms = [0u64, 5, 15, 30, 60, 100];
    let part = vec![PARTITIONS[0].to_string()];
    let logs = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    let mut python_last = Vec::new();
    let mut contested = 0;
    for (round, off) in offsets_ms.iter().enumerate() {
        let mut t = Table::local();
        t.seed_into(&part, 40, 5000);
        let mut c = Command::new(python());
        c.args(["-c", PY_OPTIMIZE, &t.uri]);
        let mut py = Proc::spawn(c, logs.path(), &format!("r{round}-python"));
        py.wait_for_stdout("\"loaded\"", Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(*off));
        // Everything is small for a 1 GiB target: one bin of the whole partition.
        let lh = t.compact("1GiB", logs.path(), &format!("r{round}-lakehealth"));
        let (py, lh) = (py.finish(), lh.finish());
        lh.assert_no_panic();
        let back = t.read();
        // Who committed when: Python's version from its own output, lakehealth's from its
        // summary, and what each commit had read from the log.
        let infos = commit_infos(t.local_path());
        let py_version = py
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find_map(|v| v["committed"].as_u64());
        let lh_versions = lh.commit_versions();
        if let (Some(planned), Some(pv)) = (lh.planned_at(), py_version) {
            contested += usize::from(planned < pv);
        }
        let story = format!(
            "round {round} (lakehealth {off} ms after Python loaded the table): Python: {} committed v{py_version:?} (read v{:?}); stderr tail: {}\n  {}",
            py.status,
            py_version.and_then(|v| infos.get(&v)).and_then(|i| i.0),
            py.stderr.lines().last().unwrap_or(""),
            lh.describe()
        );
        // Python committing last from a snapshot older than a lakehealth commit is delta-rs's
        // own race (Python deltalake 1.6.6 lets it through): nothing lakehealth does can stop
        // it, so such a round says nothing about lakehealth.
        let python_raced_last = py_version.is_some_and(|pv| {
            let read = infos.get(&pv).and_then(|i| i.0).unwrap_or(0);
            lh_versions.iter().any(|&l| read < l && l < pv)
        });
        match t.mismatch(&back) {
            Some(m) if !python_raced_last => panic!("{story}\n  {m}"),
            Some(m) => python_last.push(format!("{story}\n  {m}")),
            None => checked.push(story),
        }
    }
    eprintln!(
        "{} rounds checked ({contested} where lakehealth planned before Python committed), {} where Python committed last on a stale snapshot:\n{}\n{}",
        checked.len(),
        python_last.len(),
        checked.join("\n"),
        python_last.join("\n")
    );
    assert!(
        contested >= 2,
        "lakehealth planned before Python's commit in only {contested} rounds: the offsets need tuning"
    );
    assert!(
        checked.len() >= offsets_ms.len() / 2,
        "too few rounds where lakehealth was the one to commit last: the offsets need tuning"
    );
}

/// How many commits the log has after `version`.
fn commits_since(table: &Path, version: Option<u64>) -> usize {
    std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_suffix(".json")
                .filter(|s| s.len() == 20)
                .and_then(|s| s.parse::<u64>().ok())
        })
        .filter(|v| Some(*v) > version)
        .count()
}

/// The log replayed from version 0 (JSON commits): active files, every file ever added, and
/// every file removed.
struct LogFiles {
    active: BTreeSet<String>,
    ever_added: BTreeSet<String>,
    removed: BTreeSet<String>,
}

fn log_files(table: &Path) -> LogFiles {
    let mut commits: Vec<PathBuf> = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.len() == 25 && n.ends_with(".json")
        })
        .collect();
    commits.sort();
    let mut l = LogFiles {
        active: BTreeSet::new(),
        ever_added: BTreeSet::new(),
        removed: BTreeSet::new(),
    };
    let decode = |p: &str| {
        url::Url::parse(&format!("file:///{p}"))
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .map(|p| p.to_string_lossy().trim_start_matches('/').to_string())
            .unwrap_or_else(|| p.to_string())
    };
    for c in commits {
        for line in std::fs::read_to_string(&c).unwrap().lines() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(r) = v.get("remove") {
                let p = decode(r["path"].as_str().unwrap());
                l.active.remove(&p);
                l.removed.insert(p);
            }
            if let Some(a) = v.get("add") {
                let p = decode(a["path"].as_str().unwrap());
                l.active.insert(p.clone());
                l.ever_added.insert(p);
            }
        }
    }
    l
}

fn parquet_on_disk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("_delta_log") {
                parquet_on_disk(root, &p, out);
            }
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.insert(p.strip_prefix(root).unwrap().to_string_lossy().to_string());
        }
    }
}

#[test]
fn kill_9_at_twenty_moments_leaves_the_table_exact() {
    // The CLI packs each partition into one bin (a bin holds up to max(8 x target, 512 MiB) of
    // input) and commits each bin on its own: ten partitions give ten commits to fall between.
    // Every run has the same work: 8 fresh files of ~18 KiB per partition (below 64 KiB) become
    // one file of ~85 KiB, which later runs leave alone; a rerun after each kill finishes what the
    // killed run left.
    let parts = days(10);
    let mut t = Table::local();
    let logs = tempfile::tempdir().unwrap();
    let compact = |t: &Table, name: &str| t.compact_below("1MiB", "64KiB", logs.path(), name);
    let mut rounds = Vec::new();
    let mut killed_midway = 0;
    let mut between_commits = 0;
    let mut orphans_left = 0;
    for round in 0..20u32 {
        // Fresh small files, so every run has all partitions to compact.
        t.seed_into(&parts, 8, 500);
        let last_version = commit_infos(t.local_path()).keys().max().copied();
        let mut p = compact(&t, &format!("r{round}"));
        // The moment: the first five rounds at fixed times while the process starts, reads the
        // log, plans and rewrites; then right after the k-th commit landed (k = 1..9, cycling),
        // plus 0..2 ms. Watching the log rather than the clock keeps the moments spread over the
        // commits however busy the machine is.
        let moment = if round < 5 {
            let ms = [5, 15, 30, 50, 70][round as usize];
            std::thread::sleep(Duration::from_millis(ms));
            format!("{ms}ms")
        } else {
            let k = 1 + (round as usize - 5) % 9;
            while commits_since(t.local_path(), last_version) < k && p.running() {
                std::thread::sleep(Duration::from_micros(500));
            }
            std::thread::sleep(Duration::from_millis(u64::from(round % 3)));
            format!("commit{k}+{}ms", round % 3)
        };
        p.kill();
        let f = p.finish();
        let killed = f.status.signal() == Some(9);
        if killed {
            killed_midway += 1;
        } else {
            assert!(f.status.success(), "round {round}: {}", f.describe());
        }
        // The commits that landed before the kill.
        let commits = commits_since(t.local_path(), last_version);
        if killed && commits > 0 && commits < parts.len() {
            between_commits += 1;
        }
        rounds.push(format!(
            "{moment}:{}{commits}",
            if killed { "killed@" } else { "done@" }
        ));

        let back = t.read();
        if let Some(m) = t.mismatch(&back) {
            panic!(
                "round {round} (SIGKILL at {moment}, {commits} commits landed): {m}\n  {}",
                f.describe()
            );
        }
        let log = log_files(t.local_path());
        let reader: BTreeSet<String> = back.paths.iter().cloned().collect();
        assert_eq!(
            reader, log.active,
            "round {round}: Python deltalake and a plain replay of the JSON log agree on the active files"
        );
        let mut disk = BTreeSet::new();
        parquet_on_disk(t.local_path(), t.local_path(), &mut disk);
        let missing: Vec<_> = log.active.difference(&disk).collect();
        assert!(
            missing.is_empty(),
            "round {round} (SIGKILL at {moment}): the log references files that are not on disk: {missing:?}"
        );
        for f in disk.difference(&log.active) {
            assert!(
                log.removed.contains(f) || !log.ever_added.contains(f),
                "round {round}: {f} is on disk, was committed, and is neither active nor removed"
            );
        }
        orphans_left = disk.difference(&log.ever_added).count();

        // A rerun after the kill finishes the job (and leaves the next round the same work).
        let rerun = compact(&t, &format!("r{round}-rerun")).finish();
        assert!(
            rerun.status.success(),
            "round {round}: {}",
            rerun.describe()
        );
        if let Some(m) = t.mismatch(&t.read()) {
            panic!(
                "round {round}, the rerun after the kill: {m}\n  {}",
                rerun.describe()
            );
        }
    }
    eprintln!(
        "20 rounds (moment:outcome@commits) {}; {killed_midway} killed mid-run, {between_commits} between two commits; \
         {orphans_left} never-committed files left on disk; {} rows exact",
        rounds.join(" "),
        t.rows
    );
    assert!(
        killed_midway >= 14,
        "only {killed_midway} of 20 runs were still running when killed: the delays need tuning"
    );
    assert!(
        between_commits >= 8,
        "only {between_commits} runs were killed between two commits: the delays need tuning"
    );
}

/// One commit slot is spent on every bin that is ready, across partitions: three partitions'
/// bins finish while the slot is closed; meanwhile Python deltalake compacts the third
/// partition. When the slot opens, the two untouched bins land in one OPTIMIZE commit, the
/// third (its inputs taken) is left out and its outputs deleted, and the independent reader
/// sees every row once.
#[test]
fn one_commit_slot_takes_several_partitions_bins_and_leaves_out_the_one_python_took() {
    use crate::support::{RequestExt, request};
    use lakehealth::engine::compact::events::JobEvent;
    use lakehealth::engine::compact::job::{prepare, run_isolated};
    use lakehealth::engine::compact::locks::PartitionLocks;
    use lakehealth::engine::compact::spacing::{CommitSpacer, LastCommit};
    use lakehealth::engine::stream::batch::PARTITION_COLUMN;
    use std::sync::Arc;

    let mut t = Table::local();
    let parts = days(3);
    t.seed_into(&parts, 12, ROWS_PER_FILE);
    let taken = parts[2].clone();
    let req = request().target(1 << 30).min_file_size(1 << 30);
    let mut job =
        t.rt.block_on(prepare(&t.loc, &req, kib64_thresholds(), 1.0))
            .unwrap();
    assert_eq!(job.plan.bins, 3, "one bin per partition: {:?}", job.plan);
    // The slot is closed until the test opens it (a commit "just landed", a long interval).
    let last: LastCommit = Default::default();
    *last.lock().unwrap() = Some(Instant::now());
    job.exec.commit_spacing = Some(Arc::new(CommitSpacer::sharing(
        Duration::from_secs(3600),
        last.clone(),
    )));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let uri = t.uri.clone();
    let filter = format!("{PARTITION_COLUMN}={taken}");
    let summary = t.rt.block_on(async move {
        let run = tokio::spawn(run_isolated(
            job,
            Arc::new(PartitionLocks::default()),
            tokio_util::sync::CancellationToken::new(),
            tx,
        ));
        let mut python_out = None;
        while let Some(e) = rx.recv().await {
            let JobEvent::Progress(p) = e else { continue };
            if python_out.is_none() && p.bins_done == 3 && p.commit_wait_ms > 0 {
                // Every bin is ready and waits: Python takes the third partition's files.
                let (uri, filter) = (uri.clone(), filter.clone());
                let out = tokio::task::spawn_blocking(move || {
                    let script =
                        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/race_optimize.py");
                    Command::new(python())
                        .arg(script)
                        .arg(&uri)
                        .args(["--partition-filter", &filter])
                        .output()
                        .unwrap()
                })
                .await
                .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                python_out = Some(String::from_utf8_lossy(&out.stdout).to_string());
                // Open the slot.
                *last.lock().unwrap() = Instant::now().checked_sub(Duration::from_secs(7200));
            }
        }
        assert!(
            python_out.is_some(),
            "the bins never all waited for the slot"
        );
        run.await.unwrap()
    });
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert_eq!(summary.commits.len(), 1, "{:?}", summary.commits);
    let c = &summary.commits[0];
    assert_eq!(c.bins, 2, "{c:?}");
    let mut committed: Vec<String> = c.by_partition.iter().map(|p| p.partition.label()).collect();
    committed.sort();
    assert_eq!(
        committed,
        vec![
            format!("{PARTITION_COLUMN}={}", parts[0]),
            format!("{PARTITION_COLUMN}={}", parts[1])
        ]
    );
    assert_eq!(summary.conflicts.len(), 1, "{:?}", summary.conflicts);
    assert_eq!(
        summary.conflicts[0].partition.label(),
        format!("{PARTITION_COLUMN}={taken}")
    );
    assert!(
        summary.orphaned_files.is_empty(),
        "{:?}",
        summary.orphaned_files
    );
    // Python's commit and ours, nothing else; every file on disk is active or was removed
    // by a commit (the left-out bin's outputs are gone).
    let infos = commit_infos(t.local_path());
    let optimizes = infos.values().filter(|i| i.1 == "OPTIMIZE").count();
    assert_eq!(optimizes, 2, "{infos:?}");
    let back = t.read();
    assert_eq!(t.mismatch(&back), None);
    assert_eq!(
        back.files, 3,
        "one file per partition, the third one Python's"
    );
}

/// Rounds of two `lakehealth compact` processes on a table with deletion vectors: before each
/// round a DELETE marks rows of small files (inline, in a DV file, at an absolute path; some
/// over 5 %, some under). After each round delta-kernel (which applies the vectors) must read
/// exactly the rows it read before the round, and no active file may keep a vector.
#[test]
fn two_compact_processes_on_a_table_with_deletion_vectors_keep_exactly_the_rows_kernel_reads() {
    use crate::dv_tables::{Storage, active_adds, delete_rows, files_with_dv};
    use crate::kernel_reader::kernel_read;
    let mut t = Table::local();
    t.seed(30);
    let logs = tempfile::tempdir().unwrap();
    let mut contested = 0;
    for round in 0..8u64 {
        if round > 0 {
            t.seed(10);
        }
        let fresh: Vec<String> = active_adds(t.local_path())
            .into_iter()
            .filter(|(_, a)| {
                a.get("deletionVector").is_none() && a["size"].as_u64() < Some(64 * 1024)
            })
            .map(|(p, _)| p)
            .take(4)
            .collect();
        assert_eq!(fresh.len(), 4);
        delete_rows(
            t.local_path(),
            &[
                (&fresh[0], Storage::Inline, (0..20).collect()),
                (&fresh[1], Storage::Relative, vec![round]),
                (&fresh[2], Storage::Absolute, (50..80).collect()),
                (&fresh[3], Storage::Relative, (0..3).collect()),
            ],
        );
        let expected = kernel_read(t.local_path());
        let offset = Duration::from_millis(OFFSETS_MS[round as usize % OFFSETS_MS.len()]);
        let a = t.compact_below("1MiB", "64KiB", logs.path(), &format!("dv{round}-a"));
        std::thread::sleep(offset);
        let b = t.compact_below("1MiB", "64KiB", logs.path(), &format!("dv{round}-b"));
        let (a, b) = (a.finish(), b.finish());
        a.assert_no_panic();
        b.assert_no_panic();
        let got = kernel_read(t.local_path());
        assert!(
            got.rows == expected.rows,
            "round {round}: kernel reads {} rows, expected {}\n  {}\n  {}",
            got.rows.len(),
            expected.rows.len(),
            a.describe(),
            b.describe()
        );
        assert!(
            a.status.success() || b.status.success(),
            "round {round}: neither compaction succeeded\n  {}\n  {}",
            a.describe(),
            b.describe()
        );
        assert_eq!(
            files_with_dv(t.local_path()),
            Vec::<String>::new(),
            "round {round}"
        );
        if a.planned_at().is_some() && a.planned_at() == b.planned_at() {
            contested += 1;
        }
    }
    assert!(
        contested >= 2,
        "the processes hardly ever raced ({contested} of 8 rounds)"
    );
}
