//! Running the janitor for long: its metrics endpoint scraped over HTTP (the Prometheus text
//! format parsed, values equal to the table's report and to the history's results), its
//! liveness, and credentials: a distinctive secret given with `-o` never appears in stdout,
//! stderr, the history file, the log file or the metrics page of watch, compact and report
//! against moto (S3).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use object_store::ObjectStoreExt;
use serde_json::Value;

use crate::support::common::*;
use crate::support::harness::{Moto, free_port, http};

/// Prometheus text format: `name{table="..."} value` (or `name value`) -> value, by
/// (name, table label or "").
fn parse_metrics(text: &str) -> HashMap<(String, String), f64> {
    let mut out = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        let (name, label) = match series.split_once('{') {
            Some((n, rest)) => {
                // One label: `table="..."`, or `kind="..."` of the watch's requests.
                let v = rest
                    .split_once("=\"")
                    .and_then(|(_, r)| r.strip_suffix("\"}"))
                    .unwrap_or_else(|| panic!("bad labels in {line}"));
                (n.to_string(), v.replace("\\\"", "\"").replace("\\\\", "\\"))
            }
            None => (series.to_string(), String::new()),
        };
        out.insert((name, label), value);
    }
    out
}

fn scrape(port: u16) -> Option<HashMap<(String, String), f64>> {
    match http(port, "GET", "/metrics") {
        Ok((200, body)) => Some(parse_metrics(&body)),
        _ => None,
    }
}

/// Waits until the metrics page says `cycles` cycles have ended.
fn wait_cycles(port: u16, child: &mut Child, cycles: f64) -> HashMap<(String, String), f64> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("watch exited early: {s}");
        }
        if let Some(m) = scrape(port)
            && m.get(&("lakehealth_janitor_cycles_total".into(), String::new()))
                .copied()
                .unwrap_or(0.0)
                >= cycles
        {
            return m;
        }
        assert!(Instant::now() < deadline, "no {cycles} cycles in time");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn stop(child: &mut Child) -> (String, String) {
    // It may already be gone; the wait below is what this checks.
    let _ = sigterm(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "watch did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (out, err)
}

#[test]
fn metrics_equal_the_tables_report_and_the_history_and_healthz_says_alive() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    sensor_table_with(&table, &[("2026-11-01", 60), ("2026-11-02", 5)]);
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, "interval = \"1s\"\n").unwrap();
    let history = d.path().join("h.jsonl");
    let port = free_port();
    let mut child = lakehealth_cmd()
        .stdin(Stdio::null())
        .arg("watch")
        .arg(&table)
        .arg("--policy")
        .arg(&policy)
        .arg("--history")
        .arg(&history)
        .arg("--log-file")
        .arg(d.path().join("log"))
        .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Cycle 1 compacts the due partition, cycle 2 reads the table after it (nothing due).
    let m = wait_cycles(port, &mut child, 2.0);
    let (code, body) = http(port, "GET", "/healthz").unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(body.starts_with("alive"), "{body}");
    assert_eq!(http(port, "GET", "/nothing").unwrap().0, 404);
    let (_, err) = stop(&mut child);
    assert!(
        err.contains(&format!("metrics: http://127.0.0.1:{port}/metrics")),
        "{err}"
    );

    let o = lakehealth_cmd()
        .stdin(Stdio::null())
        .args(["report", table.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = r["uri"].as_str().unwrap().trim_end_matches('/').to_string();
    let get = |name: &str| {
        *m.get(&(name.to_string(), id.clone()))
            .unwrap_or_else(|| panic!("{name}{{table={id}}} missing in {m:?}"))
    };
    assert_eq!(get("lakehealth_table_files"), r["files"].as_f64().unwrap());
    // Watching's own requests: the log listed once, then read by GETs.
    let watch = |kind: &str| {
        m.get(&(
            "lakehealth_janitor_watch_requests_total".to_string(),
            kind.to_string(),
        ))
        .copied()
        .unwrap_or_else(|| panic!("watch requests {kind} missing in {m:?}"))
    };
    assert!(watch("get") >= 1.0 && watch("list") >= 1.0, "{m:?}");
    assert_eq!(
        get("lakehealth_table_small_files"),
        r["small_files"].as_f64().unwrap()
    );
    assert_eq!(
        get("lakehealth_table_health_score"),
        r["health_score"].as_f64().unwrap()
    );
    assert_eq!(
        get("lakehealth_table_due_partitions"),
        0.0,
        "after the compaction"
    );
    let lines = json_lines(&std::fs::read_to_string(&history).unwrap());
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 1, "one job: the due partition");
    assert_eq!(results[0]["outcome"], "compacted");
    assert_eq!(get("lakehealth_table_jobs_total"), 1.0);
    assert_eq!(get("lakehealth_table_jobs_failed_total"), 0.0);
    assert_eq!(
        get("lakehealth_table_compacted_bytes_total"),
        results[0]["amount_of_data_compacted_bytes"]
            .as_f64()
            .unwrap()
    );
    assert!(get("lakehealth_table_compacted_bytes_total") > 0.0);
    // The table's two seeding appends: the result says what the janitor made of them (a
    // load that stopped by the time the job starts, or still within its rhythm; which one
    // depends on the clock, `throttle`'s unit tests pin the rule) and what that chose.
    let throttle = results[0]["throttle"].as_str().unwrap();
    assert!(
        (throttle.starts_with("writer active: ") && throttle.contains("1 bin at a time"))
            || (throttle.starts_with("no active writer: the last data commit was ")
                && throttle.contains("every core")),
        "{throttle}"
    );
    let last = get("lakehealth_table_last_decision_timestamp_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(last > now - 600.0 && last <= now, "{last} vs {now}");
    assert_eq!(
        m[&("lakehealth_janitor_up".to_string(), String::new())],
        1.0
    );
}

/// Uploads every file of a local table to `prefix` in the store.
fn upload(
    dir: &Path,
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    rt: &tokio::runtime::Runtime,
) {
    for e in files_under(dir) {
        let rel = e.strip_prefix(dir).unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&e).unwrap();
        rt.block_on(store.put(&object_store::path::Path::from(rel), bytes.into()))
            .unwrap();
    }
}

#[test]
fn a_secret_storage_option_appears_nowhere_watch_compact_report_on_s3() {
    const SECRET: &str = "LHs3cr3t-Zq8/w+Xv7Kp2";
    const KEY_ID: &str = "LHKEYID7Q2W9E4R";
    let moto = Moto::start();
    moto.create_bucket("lake");
    let mut opts = moto.storage_options();
    opts.insert("AWS_SECRET_ACCESS_KEY".into(), SECRET.into());
    opts.insert("AWS_ACCESS_KEY_ID".into(), KEY_ID.into());
    let d = tempfile::tempdir().unwrap();
    let local = d.path().join("t");
    std::fs::create_dir_all(&local).unwrap();
    sensor_table_with(&local, &[("2026-11-01", 55)]);
    let rt = runtime();
    let uri = "s3://lake/t";
    let store = lakehealth::engine::location::Location::parse(uri)
        .unwrap()
        .open_store(&opts)
        .unwrap();
    upload(&local, &store, &rt);

    let mut args: Vec<String> = Vec::new();
    let mut sorted: Vec<_> = opts.iter().collect();
    sorted.sort();
    for (k, v) in sorted {
        args.push("-o".into());
        args.push(format!("{k}={v}"));
    }
    let history = d.path().join("h.jsonl");
    let log = d.path().join("lakehealth.log");
    let run = |extra: &[&str]| {
        let o = lakehealth_cmd()
            .stdin(Stdio::null())
            .args(extra)
            .args(&args)
            .arg("--log-file")
            .arg(&log)
            .env("LAKEHEALTH_LOG", "debug")
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let mut seen = Vec::new();
    let (ok, out, err) = run(&["report", uri, "--json"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"small_files\": 55"), "{out}");
    seen.push(("report", out, err));
    // Errors name the location: a missing table, and a URI carrying the credentials itself.
    let (ok, out, err) = run(&["report", "s3://lake/missing"]);
    assert!(!ok);
    seen.push(("report missing", out, err));
    let with_userinfo = format!(
        "s3://{KEY_ID}:{}@lake/missing?sig={SECRET}",
        SECRET.replace('/', "%2F").replace('+', "%2B")
    );
    let (ok, out, err) = run(&["report", &with_userinfo]);
    assert!(!ok);
    seen.push(("report userinfo", out, err));
    let (ok, out, err) = run(&["compact", uri, "--json", "--dry-run"]);
    assert!(ok, "{err}");
    seen.push(("compact dry run", out, err));

    // watch: long-running with metrics, compacts the due partition, stopped by SIGTERM.
    let port = free_port();
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, "interval = \"1s\"\n").unwrap();
    let mut child = lakehealth_cmd()
        .stdin(Stdio::null())
        .args(["watch", uri])
        .args(&args)
        .arg("--log-file")
        .arg(&log)
        .env("LAKEHEALTH_LOG", "debug")
        .args(["--json", "--history"])
        .arg(&history)
        .arg("--policy")
        .arg(&policy)
        .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_cycles(port, &mut child, 2.0);
    let (_, page) = http(port, "GET", "/metrics").unwrap();
    let (_, health) = http(port, "GET", "/healthz").unwrap();
    let (out, err) = stop(&mut child);
    assert!(out.contains("\"outcome\":\"compacted\""), "{out}\n{err}");
    assert!(
        page.contains("lakehealth_table_jobs_total{table=\"s3://lake/t\"} 1"),
        "{page}"
    );
    seen.push(("watch", out, err));
    seen.push(("metrics", page, health));
    // compact itself (nothing left to do after the janitor), and a failing compact.
    let (ok, out, err) = run(&["compact", uri, "--json"]);
    assert!(ok, "{err}");
    seen.push(("compact", out, err));
    let (ok, out, err) = run(&["compact", "s3://lake/missing", "--json"]);
    assert!(!ok);
    seen.push(("compact missing", out, err));

    let files = [
        ("history", std::fs::read_to_string(&history).unwrap()),
        ("log", std::fs::read_to_string(&log).unwrap()),
    ];
    assert!(
        files[1].1.len() > 100,
        "the log file has content: {}",
        files[1].1
    );
    let encoded = SECRET.replace('/', "%2F").replace('+', "%2B");
    for (what, out, err) in &seen {
        for (stream, text) in [("stdout", out), ("stderr", err)] {
            for s in [SECRET, encoded.as_str(), KEY_ID] {
                assert!(
                    !text.contains(s),
                    "{what} {stream} shows a credential:\n{text}"
                );
            }
        }
    }
    for (what, text) in &files {
        for s in [SECRET, encoded.as_str(), KEY_ID] {
            assert!(!text.contains(s), "the {what} file shows a credential");
        }
    }
}

/// Whether the server closed `s` (an idle client's stream): EOF or a reset, without blocking.
fn closed_by_server(s: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    let _ = s.set_nonblocking(true);
    let mut b = [0u8; 16];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

#[test]
fn metrics_answer_while_hundreds_of_idle_clients_connect_and_the_server_holds_no_more_than_its_cap()
{
    use lakehealth::engine::janitor::metrics::{Metrics, ServeLimits, bind, serve_with};
    use tokio_util::sync::CancellationToken;
    const IDLE: usize = 300;
    const CAP: usize = 64;
    let rt = runtime();
    let cancel = CancellationToken::new();
    let m = std::sync::Arc::new(Metrics::new(Duration::from_secs(10), 0));
    m.table_read("s3://lake/t", 9, 8, 10, 1, 0);
    m.cycle_ended(1_000);
    // Idle clients are never timed out here: what keeps scrapes answered is the cap.
    let limits = ServeLimits {
        connections: CAP,
        request_timeout: Duration::from_secs(3600),
        ..ServeLimits::default()
    };
    let listener = rt.block_on(bind("127.0.0.1:0".parse().unwrap())).unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(serve_with(listener, m, cancel.clone(), limits));
    let mut idle: Vec<std::net::TcpStream> = (0..IDLE)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let body = loop {
        match http(port, "GET", "/metrics") {
            Ok((200, body)) => break body,
            other => assert!(
                Instant::now() < deadline,
                "no scrape answered behind {IDLE} idle clients: {other:?}"
            ),
        }
    };
    assert!(
        body.contains("lakehealth_table_files{table=\"s3://lake/t\"} 9"),
        "{body}"
    );
    // Beyond the cap, idle clients were closed (the server holds at most CAP connections).
    let mut closed = vec![false; IDLE];
    loop {
        for (c, s) in closed.iter_mut().zip(idle.iter_mut()) {
            *c = *c || closed_by_server(s);
        }
        let n = closed.iter().filter(|c| **c).count();
        if n >= IDLE - CAP {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {n} of {IDLE} idle clients closed with a cap of {CAP}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    cancel.cancel();
}
