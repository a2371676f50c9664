//! The real binary in a pseudo-terminal at 80×24 and 100×30, as a user meets it: `demo` opens
//! its table (its own streaming writer running), two partitions are marked, their compaction
//! previewed and started, the live log is on screen while the job commits, and `q` while the
//! job runs asks first (`n` keeps it, `y` quits with the terminal restored). The screen is read
//! through a terminal emulator (`tests/py/pty_journey.py`, Python `pyte`), so what is checked
//! is what a terminal shows, drawn by the real event loop, runner and job.

use serde_json::Value;

use crate::support::common::*;

/// Runs the journey at `cols`×`rows` in a fresh folder; returns its steps' screens.
fn journey(cols: u16, rows: u16) -> Value {
    let d = tempfile::tempdir().unwrap();
    let o = py_script("pty_journey.py")
        .args(["--bin", env!("CARGO_BIN_EXE_lakehealth")])
        .args(["--cols", &cols.to_string(), "--rows", &rows.to_string()])
        .arg("--demo-dir")
        .arg(d.path().join("demo"))
        .args(["--timeout", "240"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the journey at {cols}x{rows} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_code"], 0, "{v:#}");
    v
}

/// Every step's screen fits the terminal, and the ones beside the running job show both the
/// job and the live log.
fn assert_steps(v: &Value, cols: usize, rows: usize) {
    let steps = v["steps"].as_object().unwrap();
    for step in [
        "table",
        "marked",
        "preview",
        "running",
        "live_commit",
        "question",
        "kept",
    ] {
        let screen = steps[step]
            .as_str()
            .unwrap_or_else(|| panic!("no {step} step: {v:#}"));
        assert_eq!(screen.lines().count(), rows, "{step}:\n{screen}");
        assert!(
            screen.lines().all(|l| l.chars().count() <= cols),
            "{step}:\n{screen}"
        );
    }
    for step in ["running", "live_commit"] {
        let screen = steps[step].as_str().unwrap();
        assert!(screen.contains("#1 running"), "{step}:\n{screen}");
        assert!(screen.contains("Live log"), "{step}:\n{screen}");
    }
    let question = steps["question"].as_str().unwrap();
    assert!(question.contains("Quit? 1 job is running"), "{question}");
}

#[test]
fn at_80x24_open_the_demo_mark_preview_start_watch_it_commit_and_quit_asks_first() {
    let v = journey(80, 24);
    assert_steps(&v, 80, 24);
}

#[test]
fn at_100x30_open_the_demo_mark_preview_start_watch_it_commit_and_quit_asks_first() {
    let v = journey(100, 30);
    assert_steps(&v, 100, 30);
}
