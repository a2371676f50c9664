//! What a long-running janitor exposes: per table, files, small files, health, due partitions,
//! jobs run and failed, bytes compacted, the last decision's time (Prometheus text format on
//! `/metrics`; per-table series for the `series_limit` tables with the most small files, and
//! totals over every table, so a scrape stays the same size at 10,000 tables), and whether its
//! loop is alive (`/healthz`: the last cycle against the
//! interval). Served by a minimal HTTP/1.1 responder over tokio (GET only, one response per
//! connection): hyper is in the dependency tree only as a client.
//!
//! Availability: a scrape is answered from a snapshot the janitor refreshes (at each cycle's
//! start and end and each job's end), so it never waits on a cycle; each connection is a task
//! with a deadline to send its request and one to take the answer, so a slow client holds no
//! worker; at most `ServeLimits::connections` are open, and a new one beyond that displaces the
//! oldest still sending its request (an idle client), or is closed at once.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::model::cost::Requests;
use crate::secrets::scrub;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableMetrics {
    pub files: u64,
    pub small_files: u64,
    pub health: u8,
    pub due_partitions: u64,
    pub jobs_run: u64,
    pub jobs_failed: u64,
    /// Input bytes of the files compacted (Databricks' `amount_of_data_compacted_bytes`).
    pub bytes_compacted: u64,
    pub last_decision_ms: i64,
    /// Over the recent log: bytes compactions wrote, bytes the writers wrote, and their ratio.
    pub rewrite: crate::stats::log_health::Rewrite,
}

#[derive(Debug, Default)]
struct State {
    tables: BTreeMap<String, TableMetrics>,
    cycles: u64,
    cycle_started_ms: Option<i64>,
    last_cycle_end_ms: Option<i64>,
    /// What watching cost so far: the janitor's reads of logs and listings of roots.
    watch: Requests,
    /// Delta tables followed with their files, and idle ones kept as a summary.
    kept: (usize, usize),
}

/// What scrapes read: the per-table series as rendered at the last refresh, and the cycle
/// times liveness is computed from when a scrape comes.
#[derive(Debug, Default)]
struct Snapshot {
    tables_text: String,
    cycles: u64,
    cycle_started_ms: Option<i64>,
    last_cycle_end_ms: Option<i64>,
    watch: Requests,
    tables: usize,
    kept: (usize, usize),
}

/// Shared by the janitor (which records) and the server (which reads the snapshot only).
#[derive(Debug)]
pub struct Metrics {
    interval: Duration,
    /// Tables given per-table series (the most small files first); the totals cover all.
    series_limit: usize,
    started_ms: i64,
    state: Mutex<State>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// The process's heap in use, when the binary's allocator says (`with_heap`).
    heap: Option<fn() -> Option<u64>>,
}

/// A cycle that ended longer ago than this many intervals (plus a minute of slack for a slow
/// log read) means the loop is stuck or gone.
const STALE_INTERVALS: u32 = 3;
const STALE_SLACK_MS: i64 = 60_000;
/// Tables given per-table series by default.
pub const DEFAULT_SERIES_LIMIT: usize = 100;

impl Metrics {
    pub fn new(interval: Duration, now_ms: i64) -> Self {
        Self {
            interval,
            series_limit: DEFAULT_SERIES_LIMIT,
            started_ms: now_ms,
            state: Mutex::new(State::default()),
            snapshot: RwLock::new(Arc::new(Snapshot::default())),
            heap: None,
        }
    }

    /// Per-table series for at most `n` tables (the most small files first).
    pub fn with_series_limit(mut self, n: usize) -> Self {
        self.series_limit = n;
        self
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    /// Renders the state into the snapshot scrapes read (the state's lock is not held while
    /// the snapshot is swapped in).
    fn refresh(&self) {
        let Some(snap) = self.with(|s| Snapshot {
            tables_text: tables_text(&s.tables, self.series_limit),
            cycles: s.cycles,
            cycle_started_ms: s.cycle_started_ms,
            last_cycle_end_ms: s.last_cycle_end_ms,
            watch: s.watch,
            tables: s.tables.len(),
            kept: s.kept,
        }) else {
            return;
        };
        if let Ok(mut current) = self.snapshot.write() {
            *current = Arc::new(snap);
        }
    }

    /// The last snapshot (an empty one if a writer panicked while swapping it).
    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .map(|s| Arc::clone(&*s))
            .unwrap_or_default()
    }

    pub fn cycle_started(&self, now_ms: i64) {
        self.with(|s| s.cycle_started_ms = Some(now_ms));
        self.refresh();
    }

    /// The requests watching has made so far (the janitor's store counters).
    pub fn watched(&self, requests: Requests) {
        self.with(|s| s.watch = requests);
    }

    /// Delta tables followed with their files, and idle ones kept only as a summary.
    pub fn kept(&self, followed: usize, summarized: usize) {
        self.with(|s| s.kept = (followed, summarized));
    }

    /// Reports the heap in use (and per table) from `heap` (the binary's allocator).
    pub fn with_heap(mut self, heap: fn() -> Option<u64>) -> Self {
        self.heap = Some(heap);
        self
    }

    pub fn cycle_ended(&self, now_ms: i64) {
        self.with(|s| {
            s.cycles += 1;
            s.cycle_started_ms = None;
            s.last_cycle_end_ms = Some(now_ms);
        });
        self.refresh();
    }

    /// A table as read this cycle, with its due partitions.
    pub fn table_read(
        &self,
        table: &str,
        files: u64,
        small_files: u64,
        health: u8,
        due: u64,
        now_ms: i64,
    ) {
        self.with(|s| {
            let t = s.tables.entry(table.to_string()).or_default();
            t.files = files;
            t.small_files = small_files;
            t.health = health;
            t.due_partitions = due;
            t.last_decision_ms = now_ms;
        });
    }

    /// The table's write amplification over its recent log, as read this cycle.
    pub fn rewrite(&self, table: &str, rewrite: crate::stats::log_health::Rewrite) {
        self.with(|s| {
            s.tables.entry(table.to_string()).or_default().rewrite = rewrite;
        });
    }

    pub fn job_done(&self, table: &str, failed: bool, bytes_compacted: u64) {
        self.with(|s| {
            let t = s.tables.entry(table.to_string()).or_default();
            t.jobs_run += 1;
            t.jobs_failed += u64::from(failed);
            t.bytes_compacted += bytes_compacted;
        });
        self.refresh();
    }

    pub fn table(&self, table: &str) -> Option<TableMetrics> {
        self.with(|s| s.tables.get(table).cloned()).flatten()
    }

    /// Alive, and why: a cycle is running, or the last one ended recently enough.
    pub fn health(&self, now_ms: i64) -> (bool, String) {
        let interval_ms = self.interval.as_millis().min(i64::MAX as u128) as i64;
        let limit = interval_ms
            .saturating_mul(STALE_INTERVALS as i64)
            .saturating_add(STALE_SLACK_MS);
        let snap = self.snapshot();
        let (cycles, started, ended) = (snap.cycles, snap.cycle_started_ms, snap.last_cycle_end_ms);
        let ago = |t: i64| crate::model::duration::whole_units_ms(now_ms.saturating_sub(t));
        let every = crate::model::duration::whole_units(self.interval);
        match (started, ended) {
            (Some(t), _) => (
                true,
                format!("alive: cycle {} running for {}", cycles + 1, ago(t)),
            ),
            (None, Some(t)) if now_ms.saturating_sub(t) <= limit => (
                true,
                format!("alive: last cycle ended {} ago, interval {every}", ago(t)),
            ),
            (None, Some(t)) => (
                false,
                format!(
                    "stale: last cycle ended {} ago, more than {STALE_INTERVALS} intervals of {every}",
                    ago(t)
                ),
            ),
            (None, None) => (
                now_ms.saturating_sub(self.started_ms) <= limit,
                format!(
                    "starting: no cycle yet, started {} ago",
                    ago(self.started_ms)
                ),
            ),
        }
    }

    /// The Prometheus text exposition format (version 0.0.4), from the snapshot.
    pub fn render(&self, now_ms: i64) -> String {
        let snap = self.snapshot();
        let (cycles, last_end) = (snap.cycles, snap.last_cycle_end_ms);
        let mut out = snap.tables_text.clone();
        let (alive, _) = self.health(now_ms);
        let janitor = [
            (
                "janitor_cycles_total",
                "counter",
                "Cycles completed.",
                cycles.to_string(),
            ),
            (
                "janitor_last_cycle_timestamp_seconds",
                "gauge",
                "When the last cycle ended (Unix time; 0: none yet).",
                format!("{:.3}", last_end.unwrap_or(0) as f64 / 1000.0),
            ),
            (
                "janitor_up",
                "gauge",
                "Whether the janitor's loop is alive (see /healthz).",
                u8::from(alive).to_string(),
            ),
        ];
        // Numbers only: the table series were scrubbed when the snapshot was taken.
        for (name, kind, help, value) in janitor {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "lakehealth_{name} {value}");
        }
        watch_text(&mut out, &snap, now_ms - self.started_ms);
        memory_text(&mut out, &snap, self.heap.and_then(|f| f()));
        out
    }
}

/// What the tables cost in memory: how many keep their files, and the heap per table.
fn memory_text(out: &mut String, snap: &Snapshot, heap: Option<u64>) {
    header(
        out,
        "janitor_tables_kept",
        "gauge",
        "Delta tables whose log is followed with its files (log), and idle ones kept as a summary without them (summary).",
    );
    let (followed, summarized) = snap.kept;
    let _ = writeln!(
        out,
        "lakehealth_janitor_tables_kept{{as=\"log\"}} {followed}"
    );
    let _ = writeln!(
        out,
        "lakehealth_janitor_tables_kept{{as=\"summary\"}} {summarized}"
    );
    let Some(heap) = heap else { return };
    header(
        out,
        "janitor_heap_bytes",
        "gauge",
        "Heap in use by the process.",
    );
    let _ = writeln!(out, "lakehealth_janitor_heap_bytes {heap}");
    header(
        out,
        "janitor_heap_bytes_per_table",
        "gauge",
        "Heap in use per table watched (jobs in flight included).",
    );
    let per = heap / snap.tables.max(1) as u64;
    let _ = writeln!(out, "lakehealth_janitor_heap_bytes_per_table {per}");
}

/// What watching costs: requests by kind, and per table per hour of running.
fn watch_text(out: &mut String, snap: &Snapshot, running_ms: i64) {
    let w = &snap.watch;
    header(
        out,
        "janitor_watch_requests_total",
        "counter",
        "Requests made to read tables' logs and list roots (jobs' requests are in the history).",
    );
    for (kind, n) in [
        ("get", w.get),
        ("list", w.list),
        ("put", w.put),
        ("delete", w.delete),
    ] {
        let _ = writeln!(
            out,
            "lakehealth_janitor_watch_requests_total{{kind=\"{kind}\"}} {n}"
        );
    }
    let hours = running_ms.max(1) as f64 / 3_600_000.0;
    let per = w.total_requests() as f64 / snap.tables.max(1) as f64 / hours;
    header(
        out,
        "janitor_watch_requests_per_table_hour",
        "gauge",
        "Watching's requests per table per hour since the janitor started.",
    );
    let _ = writeln!(
        out,
        "lakehealth_janitor_watch_requests_per_table_hour {per:.2}"
    );
}

/// The per-table series of the `limit` tables with the most small files (then the most files,
/// then by name), and totals over every table; scrubbed.
fn tables_text(tables: &BTreeMap<String, TableMetrics>, limit: usize) -> String {
    let mut shown: Vec<(&String, &TableMetrics)> = tables.iter().collect();
    shown.sort_by(|(an, a), (bn, b)| {
        b.small_files
            .cmp(&a.small_files)
            .then(b.files.cmp(&a.files))
            .then(an.cmp(bn))
    });
    shown.truncate(limit);
    let mut out = String::new();
    for series in TABLE_SERIES {
        header(&mut out, series.name, series.kind, series.help);
        for (t, m) in &shown {
            let _ = writeln!(
                out,
                "lakehealth_{}{{table=\"{}\"}} {}",
                series.name,
                label(t),
                (series.value)(m)
            );
        }
    }
    let sum = |f: fn(&TableMetrics) -> u64| tables.values().map(f).sum::<u64>().to_string();
    let totals = [
        (
            "tables",
            "gauge",
            "Tables the janitor reads.",
            tables.len().to_string(),
        ),
        (
            "tables_with_series",
            "gauge",
            "Tables given per-table series (the most small files first).",
            shown.len().to_string(),
        ),
        (
            "files",
            "gauge",
            "Active data files over every table.",
            sum(|m| m.files),
        ),
        (
            "small_files",
            "gauge",
            "Small files over every table.",
            sum(|m| m.small_files),
        ),
        (
            "due_partitions",
            "gauge",
            "Partitions the last cycle found due, over every table.",
            sum(|m| m.due_partitions),
        ),
        (
            "jobs_total",
            "counter",
            "Compaction jobs run.",
            sum(|m| m.jobs_run),
        ),
        (
            "jobs_failed_total",
            "counter",
            "Compaction jobs that failed.",
            sum(|m| m.jobs_failed),
        ),
        (
            "compacted_bytes_total",
            "counter",
            "Input bytes of the files compacted, over every table.",
            sum(|m| m.bytes_compacted),
        ),
    ];
    for (name, kind, help, value) in totals {
        header(&mut out, name, kind, help);
        let _ = writeln!(out, "lakehealth_{name} {value}");
    }
    scrub(&out).into_owned()
}

/// One series per table: its name (after `lakehealth_`), Prometheus type, help and value.
struct TableSeries {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&TableMetrics) -> String,
}

const TABLE_SERIES: &[TableSeries] = &[
    TableSeries {
        name: "table_files",
        kind: "gauge",
        help: "Active data files of the table.",
        value: |m| m.files.to_string(),
    },
    TableSeries {
        name: "table_small_files",
        kind: "gauge",
        help: "Active files below the policy's small-file size.",
        value: |m| m.small_files.to_string(),
    },
    TableSeries {
        name: "table_health_score",
        kind: "gauge",
        help: "Health score 0-100 (100 * ideal files / files).",
        value: |m| m.health.to_string(),
    },
    TableSeries {
        name: "table_due_partitions",
        kind: "gauge",
        help: "Partitions the last cycle found due.",
        value: |m| m.due_partitions.to_string(),
    },
    TableSeries {
        name: "table_jobs_total",
        kind: "counter",
        help: "Compaction jobs run since the janitor started.",
        value: |m| m.jobs_run.to_string(),
    },
    TableSeries {
        name: "table_jobs_failed_total",
        kind: "counter",
        help: "Compaction jobs that failed.",
        value: |m| m.jobs_failed.to_string(),
    },
    TableSeries {
        name: "table_compacted_bytes_total",
        kind: "counter",
        help: "Bytes of the files compacted (amount_of_data_compacted_bytes).",
        value: |m| m.bytes_compacted.to_string(),
    },
    TableSeries {
        name: "table_write_amplification",
        kind: "gauge",
        help: "Bytes the janitor's compactions wrote per byte the writers wrote, over the recent log (jobs run by hand left out; NaN: no ingest).",
        value: |m| {
            m.rewrite
                .write_amplification
                .map_or("NaN".into(), |w| format!("{w:.4}"))
        },
    },
    TableSeries {
        name: "table_rewritten_bytes",
        kind: "gauge",
        help: "Bytes compactions wrote over the recent log.",
        value: |m| m.rewrite.compaction_bytes.to_string(),
    },
    TableSeries {
        name: "table_janitor_rewritten_bytes",
        kind: "gauge",
        help: "Bytes the janitor's compactions wrote over the recent log (the numerator of write amplification).",
        value: |m| m.rewrite.janitor_bytes.to_string(),
    },
    TableSeries {
        name: "table_recluster_rewritten_bytes",
        kind: "gauge",
        help: "Bytes the janitor's re-clustering (max_depth) wrote over the recent log, counted apart from its small-file merges.",
        value: |m| m.rewrite.recluster_bytes.to_string(),
    },
    TableSeries {
        name: "table_recluster_amplification",
        kind: "gauge",
        help: "Bytes the janitor's re-clustering wrote per byte the writers wrote, over the recent log (NaN: no ingest).",
        value: |m| {
            m.rewrite
                .recluster_amplification
                .map_or("NaN".into(), |w| format!("{w:.4}"))
        },
    },
    TableSeries {
        name: "table_ingested_bytes",
        kind: "gauge",
        help: "Bytes the writers wrote over the recent log.",
        value: |m| m.rewrite.writer_bytes.to_string(),
    },
    TableSeries {
        name: "table_last_decision_timestamp_seconds",
        kind: "gauge",
        help: "When the last decision on the table was made (Unix time).",
        value: |m| format!("{:.3}", m.last_decision_ms as f64 / 1000.0),
    },
];

/// A series' `# HELP` and `# TYPE` lines.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP lakehealth_{name} {help}");
    let _ = writeln!(out, "# TYPE lakehealth_{name} {kind}");
}

/// A label value escaped as the text format wants (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The response to one request line.
fn respond(request_line: &str, m: &Metrics, now_ms: i64) -> (u16, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    if method != "GET" && method != "HEAD" {
        return (405, "text/plain", "only GET\n".into());
    }
    match path {
        "/metrics" => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            m.render(now_ms),
        ),
        "/healthz" => {
            let (alive, why) = m.health(now_ms);
            (
                if alive { 200 } else { 503 },
                "text/plain",
                format!("{}\n", scrub(&why)),
            )
        }
        _ => (
            404,
            "text/plain",
            "not found: try /metrics or /healthz\n".into(),
        ),
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    }
}

/// Binds `addr` (so a bad address fails before the janitor starts).
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// How many connections are open at once, and how long a client may take to send its request
/// and to take the answer.
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    pub connections: usize,
    pub request_timeout: Duration,
    pub write_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            connections: 64,
            request_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// How long a new connection waits for the slot of the connection it displaced (which only
/// waits to read, so it ends at once).
const DISPLACE_WAIT: Duration = Duration::from_secs(1);

/// Largest request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Connections still sending their request, oldest first: the ones a new connection may
/// displace when every slot is taken.
#[derive(Debug, Default)]
struct Waiting {
    next_id: u64,
    queue: VecDeque<(u64, CancellationToken)>,
}

impl Waiting {
    fn push(&mut self) -> (u64, CancellationToken) {
        self.next_id += 1;
        let token = CancellationToken::new();
        self.queue.push_back((self.next_id, token.clone()));
        (self.next_id, token)
    }

    fn remove(&mut self, id: u64) {
        self.queue.retain(|(i, _)| *i != id);
    }

    fn pop_oldest(&mut self) -> Option<CancellationToken> {
        self.queue.pop_front().map(|(_, t)| t)
    }
}

/// Serves `/metrics` and `/healthz` until `cancel`.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, cancel: CancellationToken) {
    serve_with(listener, metrics, cancel, ServeLimits::default()).await
}

/// `serve` with explicit limits: at most `connections` are open; every connection is accepted
/// at once (none waits in the kernel's backlog behind idle ones) and, when every slot is taken,
/// takes the slot of the oldest one still sending its request or else is closed. A failed
/// accept (no file descriptor left) pauses the loop instead of spinning on it.
pub async fn serve_with(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    cancel: CancellationToken,
    limits: ServeLimits,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections.max(1)));
    let waiting = Arc::new(Mutex::new(Waiting::default()));
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            _ = cancel.cancelled() => return,
        };
        let sock = match conn {
            Ok((sock, _)) => sock,
            Err(e) => {
                tracing::warn!("metrics endpoint: accept failed: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                    _ = cancel.cancelled() => return,
                }
            }
        };
        // Every slot is answering a request: refused (closed at once, never queued).
        let Some(permit) = slot(&slots, &waiting).await else {
            continue;
        };
        let Some((id, token)) = waiting.lock().ok().map(|mut w| w.push()) else {
            continue;
        };
        let conn = Connection {
            waiting: waiting.clone(),
            id,
            token,
            limits,
        };
        tokio::spawn(conn.serve(sock, permit, metrics.clone()));
    }
}

/// A slot for a new connection: a free one, or the one of the oldest connection still sending
/// its request, which is closed. None when every slot is answering a request.
async fn slot(
    slots: &Arc<tokio::sync::Semaphore>,
    waiting: &Mutex<Waiting>,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(p) = slots.clone().try_acquire_owned() {
        return Some(p);
    }
    let oldest = waiting.lock().ok()?.pop_oldest()?;
    oldest.cancel();
    tokio::time::timeout(DISPLACE_WAIT, slots.clone().acquire_owned())
        .await
        .ok()?
        .ok()
}

/// One accepted connection: its place among those still sending their request.
struct Connection {
    waiting: Arc<Mutex<Waiting>>,
    id: u64,
    /// Cancelled when a newer connection takes its slot.
    token: CancellationToken,
    limits: ServeLimits,
}

impl Connection {
    async fn serve(
        self,
        mut sock: tokio::net::TcpStream,
        _permit: tokio::sync::OwnedSemaphorePermit,
        m: Arc<Metrics>,
    ) {
        let head = tokio::select! {
            h = tokio::time::timeout(self.limits.request_timeout, read_head(&mut sock)) => h.ok(),
            _ = self.token.cancelled() => None,
        };
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(self.id);
        }
        // No request in time, or displaced: dropping the socket closes it.
        let Some(head) = head else {
            return;
        };
        let resp = response(&head, &m);
        let _ = tokio::time::timeout(self.limits.write_timeout, async {
            let _ = sock.write_all(resp.as_bytes()).await;
            let _ = sock.shutdown().await;
        })
        .await;
    }
}

/// The request head (a GET has no body), bounded in size; what arrived when the client closed.
async fn read_head(sock: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_HEAD_BYTES {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf
}

/// The whole HTTP response to a request head.
fn response(head: &[u8], m: &Metrics) -> String {
    let head = String::from_utf8_lossy(head);
    let line = head.lines().next().unwrap_or("");
    let (code, ctype, body) = respond(line, m, crate::clock::now_ms());
    let mut resp = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(code),
        body.len()
    );
    if !line.starts_with("HEAD ") {
        resp.push_str(&body);
    }
    resp
}

#[cfg(test)]
mod tests {

    #[test]
    fn memory_is_reported_as_tables_kept_with_and_without_files_and_heap_per_table() {
        let m = Metrics::new(Duration::from_secs(10), 0).with_heap(|| Some(1_000_000));
        m.cycle_started(0);
        for t in ["a", "b", "c", "d"] {
            m.table_read(t, 10, 1, 90, 0, 0);
        }
        m.kept(1, 3);
        m.cycle_ended(1_000);
        let body = m.render(1_000);
        for line in [
            "lakehealth_janitor_tables_kept{as=\"log\"} 1",
            "lakehealth_janitor_tables_kept{as=\"summary\"} 3",
            "lakehealth_janitor_heap_bytes 1000000",
            "lakehealth_janitor_heap_bytes_per_table 250000",
        ] {
            assert!(body.contains(line), "{line} in {body}");
        }
    }

    #[test]
    fn watching_is_reported_by_request_kind_and_per_table_hour() {
        let m = Metrics::new(Duration::from_secs(10), 0);
        for t in ["a", "b"] {
            m.table_read(t, 10, 5, 90, 1, 0);
        }
        m.watched(Requests {
            get: 30,
            list: 10,
            ..Default::default()
        });
        m.cycle_ended(1_800_000);
        let body = m.render(1_800_000);
        assert!(
            body.contains("lakehealth_janitor_watch_requests_total{kind=\"get\"} 30"),
            "{body}"
        );
        assert!(
            body.contains("lakehealth_janitor_watch_requests_total{kind=\"list\"} 10"),
            "{body}"
        );
        // 40 requests over 2 tables in half an hour.
        assert!(
            body.contains("lakehealth_janitor_watch_requests_per_table_hour 40.00"),
            "{body}"
        );
    }

    use super::*;

    #[test]
    fn per_table_series_are_bounded_to_the_tables_with_most_small_files_and_totals_cover_all() {
        let m = Metrics::new(Duration::from_secs(10), 0).with_series_limit(2);
        for (i, small) in [3u64, 9, 1, 7, 5].into_iter().enumerate() {
            m.table_read(&format!("t{i}"), 10, small, 50, 1, 0);
        }
        m.cycle_ended(1);
        let text = m.render(2);
        let with_series: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("lakehealth_table_files{table=\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert_eq!(
            with_series,
            ["t1", "t3"].into_iter().collect(),
            "the two with the most small files:\n{text}"
        );
        for line in [
            "lakehealth_tables 5",
            "lakehealth_tables_with_series 2",
            "lakehealth_files 50",
            "lakehealth_small_files 25",
            "lakehealth_due_partitions 5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn renders_per_table_series_and_health() {
        let m = Metrics::new(Duration::from_secs(10), 1_000);
        m.cycle_started(1_000);
        m.table_read("s3://b/t\"x", 10, 7, 30, 2, 2_000);
        m.job_done("s3://b/t\"x", false, 500);
        m.job_done("s3://b/t\"x", true, 0);
        m.rewrite(
            "s3://b/t\"x",
            crate::stats::log_health::Rewrite {
                compaction_bytes: 300,
                janitor_bytes: 300,
                recluster_bytes: 600,
                writer_bytes: 1200,
                write_amplification: Some(0.25),
                recluster_amplification: Some(0.5),
            },
        );
        m.cycle_ended(3_000);
        let text = m.render(4_000);
        for line in [
            "lakehealth_table_files{table=\"s3://b/t\\\"x\"} 10",
            "lakehealth_table_small_files{table=\"s3://b/t\\\"x\"} 7",
            "lakehealth_table_health_score{table=\"s3://b/t\\\"x\"} 30",
            "lakehealth_table_due_partitions{table=\"s3://b/t\\\"x\"} 2",
            "lakehealth_table_jobs_total{table=\"s3://b/t\\\"x\"} 2",
            "lakehealth_table_jobs_failed_total{table=\"s3://b/t\\\"x\"} 1",
            "lakehealth_table_compacted_bytes_total{table=\"s3://b/t\\\"x\"} 500",
            "lakehealth_table_write_amplification{table=\"s3://b/t\\\"x\"} 0.2500",
            "lakehealth_table_rewritten_bytes{table=\"s3://b/t\\\"x\"} 300",
            "lakehealth_table_janitor_rewritten_bytes{table=\"s3://b/t\\\"x\"} 300",
            "lakehealth_table_ingested_bytes{table=\"s3://b/t\\\"x\"} 1200",
            "lakehealth_table_recluster_rewritten_bytes{table=\"s3://b/t\\\"x\"} 600",
            "lakehealth_table_recluster_amplification{table=\"s3://b/t\\\"x\"} 0.5000",
            "lakehealth_table_last_decision_timestamp_seconds{table=\"s3://b/t\\\"x\"} 2.000",
            "lakehealth_janitor_cycles_total 1",
            "lakehealth_janitor_up 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[tokio::test]
    async fn a_new_connection_takes_the_slot_of_the_oldest_idle_one_when_all_are_taken() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cancel = CancellationToken::new();
        let limits = ServeLimits {
            connections: 2,
            request_timeout: Duration::from_secs(600),
            ..ServeLimits::default()
        };
        let m = Arc::new(Metrics::new(Duration::from_secs(10), 0));
        tokio::spawn(serve_with(listener, m, cancel.clone(), limits));
        // Two idle clients hold both slots (each is accepted before the next connects: a
        // byte-less request reaching the server is what proves it).
        let mut idle1 = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _idle2 = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
        third
            .write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(60), third.read_to_string(&mut answer))
            .await
            .expect("served although both slots were held by idle clients")
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let mut buf = [0u8; 16];
        let closed = tokio::time::timeout(Duration::from_secs(60), idle1.read(&mut buf))
            .await
            .expect("the oldest idle client was closed");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
        cancel.cancel();
    }

    #[tokio::test]
    async fn a_client_that_sends_nothing_is_closed_after_the_request_timeout() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cancel = CancellationToken::new();
        let limits = ServeLimits {
            request_timeout: Duration::from_millis(100),
            ..ServeLimits::default()
        };
        let m = Arc::new(Metrics::new(Duration::from_secs(10), 0));
        tokio::spawn(serve_with(listener, m, cancel.clone(), limits));
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 16];
        let closed = tokio::time::timeout(Duration::from_secs(60), idle.read(&mut buf))
            .await
            .expect("closed by the server");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
        cancel.cancel();
    }

    #[test]
    fn a_scrape_is_answered_from_the_snapshot_while_the_janitor_holds_its_state() {
        let m = Arc::new(Metrics::new(Duration::from_secs(10), 0));
        m.table_read("s3://b/t", 4, 3, 50, 1, 0);
        m.cycle_ended(1_000);
        // The janitor in the middle of recording a cycle.
        let held = m.state.lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let m2 = m.clone();
        std::thread::spawn(move || {
            let _ = tx.send(respond("GET /metrics HTTP/1.1", &m2, 2_000));
        });
        let answer = rx.recv_timeout(Duration::from_secs(60));
        drop(held);
        let (code, _, body) = answer.expect("a scrape waited on the janitor's state");
        assert_eq!(code, 200);
        assert!(
            body.contains("lakehealth_table_files{table=\"s3://b/t\"} 4"),
            "{body}"
        );
        assert!(body.contains("lakehealth_janitor_cycles_total 1"), "{body}");
    }

    #[test]
    fn healthz_is_stale_after_three_intervals_and_a_minute() {
        let m = Metrics::new(Duration::from_secs(10), 0);
        assert!(m.health(1_000).0, "starting");
        m.cycle_started(0);
        assert!(
            m.health(10_000_000).0,
            "a running cycle is alive (jobs take long)"
        );
        m.cycle_ended(1_000);
        assert!(m.health(1_000 + 90_000).0);
        let (alive, why) = m.health(1_000 + 90_001);
        assert!(!alive);
        assert!(why.starts_with("stale: last cycle ended"), "{why}");
        assert_eq!(respond("GET /healthz HTTP/1.1", &m, 1_000 + 90_001).0, 503);
        assert_eq!(respond("GET /healthz HTTP/1.1", &m, 2_000).0, 200);
        assert_eq!(respond("GET /nope HTTP/1.1", &m, 2_000).0, 404);
        assert_eq!(respond("POST /metrics HTTP/1.1", &m, 2_000).0, 405);
    }
}
