//! No input, flag or environment makes lakehealth panic: each case that once did (issue 26)
//! now ends with a clear message, or quietly where Unix tools end quietly.

use std::io::Read;
use std::process::Stdio;

use lakehealth::engine::error::EngineError;
use lakehealth::engine::stream::writer::{StreamOptions, run_stream};

use crate::support::common::*;
use crate::support::{RequestExt, request};

/// Neither Rust's panic text nor a panic's exit code (101) nor an abort (SIGABRT, no code).
fn assert_no_panic(case: &str, o: &std::process::Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "{case}: {err}");
    assert!(!err.contains("Already shut down"), "{case}: {err}");
    assert!(o.status.code().is_some(), "{case}: killed by a signal");
    assert_ne!(o.status.code(), Some(101), "{case}: {err}");
}

#[test]
fn a_zero_stream_interval_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let o = lakehealth(&["stream", t.to_str().unwrap(), "--interval", "0s"]);
    assert_no_panic("--interval 0s", &o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--interval"), "{}", stderr(&o));
    assert!(stderr(&o).contains("above zero"), "{}", stderr(&o));
    assert!(!t.exists(), "nothing may be created");
}

#[test]
fn a_zero_interval_in_the_config_file_is_refused_by_key() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("config.toml");
    std::fs::write(&config, "[stream]\ninterval = \"0s\"\n").unwrap();
    let t = d.path().join("t");
    let o = lakehealth_cmd()
        .args(["stream", t.to_str().unwrap(), "--batches", "1"])
        .env("LAKEHEALTH_CONFIG", &config)
        .output()
        .unwrap();
    assert_no_panic("stream.interval = 0s", &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stream.interval must be above zero"),
        "{}",
        stderr(&o)
    );
    assert!(!t.exists(), "nothing may be created");
}

#[tokio::test]
async fn the_engine_refuses_a_zero_stream_interval_before_touching_the_table() {
    let d = tempfile::tempdir().unwrap();
    let opts = StreamOptions {
        query_id: "q".into(),
        interval: std::time::Duration::ZERO,
        rows: 10,
        max_batches: Some(1),
        storage_options: Default::default(),
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let e = run_stream(&loc(d.path()), &opts, cancel, tx)
        .await
        .unwrap_err();
    assert!(matches!(e, EngineError::InvalidRequest(_)), "{e}");
    assert!(files_under(d.path()).is_empty(), "nothing may be written");
}

#[test]
fn parallelism_out_of_range_is_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    sensor_table_with(d.path(), &[("2026-11-30", 4)]);
    let before = files_under(d.path()).len();
    let t = d.path().to_str().unwrap();
    for n in ["100000", "0", "many"] {
        let o = lakehealth(&["compact", t, "--parallelism", n]);
        assert_no_panic(n, &o);
        assert_eq!(o.status.code(), Some(2), "{n}: {}", stderr(&o));
        assert!(stderr(&o).contains("--parallelism"), "{n}: {}", stderr(&o));
        assert!(stderr(&o).contains("1 to 256"), "{n}: {}", stderr(&o));
    }
    assert_eq!(
        files_under(d.path()).len(),
        before,
        "nothing may be written"
    );
}

#[test]
fn the_engine_bounds_a_huge_parallelism_and_compacts_exactly() {
    let d = tempfile::tempdir().unwrap();
    sensor_table_with(d.path(), &[("2026-11-30", 6)]);
    let rt = runtime();
    let table = rt
        .block_on(lakehealth::engine::compact::table::open_for_compaction(
            &loc(d.path()),
            &Default::default(),
        ))
        .unwrap();
    let req = request()
        .min_file_size(lakehealth::engine::size::MIB)
        .parallelism(100_000);
    let job = lakehealth::engine::compact::job::prepare_table(table, &req, kib64_thresholds(), 1.0)
        .unwrap();
    assert_eq!(
        job.exec.parallelism,
        lakehealth::engine::compact::budget::MAX_PARALLELISM
    );
    let summary = rt.block_on(run_job(job));
    assert!(summary.failures.is_empty(), "{:?}", summary.failures);
    assert_exact(d.path(), 6 * 50);
}

/// Runs `lakehealth ARGS` with its stdout a pipe whose reader is already gone (as after
/// `| head` has read its lines).
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let mut child = lakehealth_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut err).unwrap();
    }
    let status = child.wait().unwrap();
    std::process::Output {
        status,
        stdout: Vec::new(),
        stderr: err,
    }
}

#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    let d = tempfile::tempdir().unwrap();
    sensor_table_with(d.path(), &[("2026-11-30", 3)]);
    let t = d.path().to_str().unwrap();
    for args in [
        vec!["report", t],
        vec!["report", t, "--json"],
        vec!["config"],
        vec!["compact", t, "--dry-run", "--json"],
        vec!["vacuum", t, "--dry-run"],
    ] {
        let o = with_closed_stdout(&args);
        let case = args.join(" ");
        assert_no_panic(&case, &o);
        assert_eq!(o.status.code(), Some(0), "{case}: {}", stderr(&o));
        assert!(!stderr(&o).contains("error"), "{case}: {}", stderr(&o));
    }
}

/// A tmpfs of `size` mounted on a new folder, unmounted when dropped: a real disk that can be
/// filled or made read-only. (The tests run as root, as CI does.)
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .expect("mount runs");
        assert!(
            o.status.success(),
            "mounting a tmpfs needs root (CI runs as root): {}",
            stderr(&o)
        );
        Tmpfs { _dir: dir, path }
    }

    fn remount(&self, option: &str) {
        let o = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{option}")])
            .arg(&self.path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }

    /// Writes a filler file until the disk has no byte left.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![7u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        while f.write_all(&[7u8]).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}

#[test]
fn a_full_or_read_only_disk_fails_the_compaction_with_its_reason_and_no_panic() {
    let disk = Tmpfs::mount("8m");
    let table = disk.path.join("t");
    std::fs::create_dir(&table).unwrap();
    sensor_table_with(&table, &[("2026-11-30", 8)]);
    let t = table.to_str().unwrap();

    let filler = disk.fill();
    let o = lakehealth(&["compact", t]);
    assert_no_panic("full disk", &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(filler).unwrap();
    assert_eq!(
        leftover_files(&table),
        Vec::<String>::new(),
        "no output left"
    );
    assert_exact(&table, 8 * 50);

    disk.remount("ro");
    let o = lakehealth(&["compact", t]);
    assert_no_panic("read-only disk", &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Read-only file system"),
        "{}",
        stderr(&o)
    );
    disk.remount("rw");
    assert_exact(&table, 8 * 50);
}
