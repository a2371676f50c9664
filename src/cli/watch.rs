//! `lakehealth watch`: the headless janitor. Decisions and results are JSON lines in the
//! history file (and on stdout with `--json`); for humans, one line each on stdout; what the
//! janitor is doing and what a signal stopped go to stderr.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use super::args::WatchArgs;
use super::run::Settings;
use crate::engine::clock::now_ms;
use crate::engine::janitor::Janitor;
use crate::engine::janitor::decide::DecisionKind;
use crate::engine::janitor::history::{self, History, Line};
use crate::engine::janitor::metrics::{self, Metrics};
use crate::engine::janitor::policy::Policy;
use crate::engine::location::Location;
use crate::engine::model::duration::whole_units_ms;
use crate::engine::secrets::scrub;

/// One line for humans, on stdout or stderr (None: not shown).
fn human(line: &Line, once: bool) -> Option<(bool, String)> {
    let out = |s: String| Some((false, s));
    let err = |s: String| Some((true, s));
    match line {
        // In a loop, "not due" every few seconds is noise: the cycle line counts them.
        Line::Decision(d) if !once && matches!(d.decision, DecisionKind::NotDue) => None,
        Line::Decision(d) => out(format!("{} {}: {}", d.table, d.partition.label(), d.reason)),
        Line::Result(r) => out(format!(
            "{} {}: {}",
            r.table,
            r.partition.label(),
            r.summary
        )),
        Line::Maintenance(m) if !once && m.decision == "not_due" => None,
        Line::Maintenance(m) => out(format!(
            "{} {}: {}{}",
            m.table,
            m.action.label(),
            m.reason,
            m.summary
                .as_deref()
                .map(|s| format!("; {s}"))
                .unwrap_or_default()
        )),
        Line::TableError { table, error, .. } => err(format!("{table}: cannot read: {error}")),
        Line::Cycle {
            cycle,
            tables,
            partitions,
            due,
            not_due,
            skipped,
            backing_off,
            suspended,
            running,
            jobs,
            failed_jobs,
            jobs_in_flight,
            duration_ms,
            ..
        } => err(format!(
            "cycle {cycle}: {tables} table(s), {partitions} partition(s): {due} due, {not_due} not due, \
             {skipped} skipped, {backing_off} backing off, {suspended} suspended, {running} running; \
             {jobs} job(s) ended, {failed_jobs} failed, {jobs_in_flight} in flight; {}",
            whole_units_ms(*duration_ms as i64)
        )),
        Line::Activity {
            table,
            partitions,
            message,
            ..
        } => err(format!(
            "{table} {}: {message}",
            crate::engine::janitor::jobs::labels(partitions)
        )),
        Line::Stopped { reason, .. } => err(format!("stopped: {reason}")),
        Line::Warning { message, .. } => err(format!("warning: {message}")),
        Line::Schedule {
            table, schedule, ..
        } if schedule.failures > 0 => err(format!(
            "{table}: {} failed cycle(s) in a row (last: {})",
            schedule.failures,
            schedule.last_error.as_deref().unwrap_or("unknown")
        )),
        Line::Schedule { .. } | Line::Policy { .. } | Line::Floor { .. } => None,
    }
}

fn print(line: &Line, json: bool, once: bool) {
    if json {
        match serde_json::to_string(line) {
            Ok(s) => crate::outln!("{}", scrub(&s)),
            Err(e) => crate::errln!("warning: a JSON line could not be written: {e}"),
        }
        // What stopped matters to whoever pressed Ctrl-C, JSON or not.
        if let Line::Stopped { reason, .. } = line {
            crate::errln!("stopped: {}", scrub(reason));
        }
        return;
    }
    match human(line, once) {
        Some((false, s)) => crate::outln!("{}", scrub(&s)),
        Some((true, s)) => crate::errln!("{}", scrub(&s)),
        None => {}
    }
}

/// Resolves on SIGINT or SIGTERM, with the signal's name.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    "SIGINT"
}

pub async fn watch(a: WatchArgs, s: &Settings) -> Result<()> {
    let mut policy = match &a.policy {
        Some(p) => Policy::load(p, s.open.thresholds)?,
        None => Policy::builtin(s.open.thresholds),
    };
    if let Some(uri) = &a.catalog {
        policy.set_iceberg_catalog(uri)?;
    }
    let targets = a
        .uris
        .iter()
        .map(|u| Location::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let path = a.history.clone().unwrap_or_else(history::default_path);
    let history = History::open_with(&path, s.config.history.rotation())
        .with_context(|| format!("cannot open the history file {}", path.display()))?;
    crate::errln!("policy: {}", policy.summary());
    if a.policy.is_none() {
        crate::errln!(
            "  (no --policy given: the built-in default; a commented example is assets/janitor-policy.toml)"
        );
    }
    crate::errln!("history: {}", path.display());
    let (json, once) = (a.json, a.once);
    let cancel = CancellationToken::new();
    let reader_gone = cancel.clone();
    let sink = Box::new(move |line: &Line| {
        print(line, json, once);
        if super::print::stdout_lost().is_some() {
            // `watch ... | head`: as on Ctrl-C, no new job starts and a running one stops
            // before its next commit.
            reader_gone.cancel();
        }
    });
    let interval = policy.interval;
    let mut janitor = Janitor::new(targets, policy, s.open.clone(), history, sink, a.resume);
    if a.no_throttle {
        crate::errln!("throttle: off (every job uses every core, whatever the writers do)");
        janitor = janitor.unthrottled();
    }

    if let Some(addr) = a.metrics_addr {
        let listener = metrics::bind(addr)
            .await
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let bound = listener.local_addr().unwrap_or(addr);
        crate::errln!("metrics: http://{bound}/metrics, liveness: http://{bound}/healthz");
        let m = Arc::new(
            Metrics::new(interval, now_ms())
                .with_series_limit(a.metrics_tables)
                .with_heap(crate::heap::heap_in_use),
        );
        janitor = janitor.with_metrics(m.clone());
        tokio::spawn(metrics::serve(listener, m, cancel.clone()));
    }
    let c2 = cancel.clone();
    tokio::spawn(async move {
        let sig = stop_signal().await;
        crate::errln!(
            "{sig}: stopping; no new job starts, a running job stops before its next commit \
             (again to exit at once)"
        );
        c2.cancel();
        let sig = stop_signal().await;
        // Safe even mid-job: every commit is validated and a landed one is never undone.
        crate::errln!("{sig} again: exiting now");
        std::process::exit(130);
    });
    if let Some(limit) = a.max_duration {
        let c3 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            crate::errln!(
                "--max-duration {} reached: stopping; no new job starts, a running job stops \
                 before its next commit",
                humantime::format_duration(limit)
            );
            c3.cancel();
        });
    }
    let stats = janitor.run(once, cancel).await;
    if once && (stats.failed_jobs > 0 || stats.table_errors > 0) {
        bail!(
            "{} job(s) failed, {} table(s) could not be read (see the lines above and {})",
            stats.failed_jobs,
            stats.table_errors,
            path.display()
        );
    }
    Ok(())
}
