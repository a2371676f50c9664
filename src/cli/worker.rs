//! `lakehealth worker --spec FILE_OR_URI`: rewrite one compaction bin for a remote executor
//! (a Ray task runs it). Prints one JSON line; exits non-zero when the bin failed, so the task
//! is retried. Storage credentials come from this machine's environment and config file only.

use anyhow::{Context, Result, bail};
use object_store::ObjectStoreExt;

use super::args::WorkerArgs;
use super::run::Settings;
use crate::engine::exec::spec::{BinSpec, Outcome};
use crate::engine::exec::worker::run_spec;

/// The spec's text: a local file, or an object at a URI.
async fn read_spec(s: &Settings, spec: &str) -> Result<String> {
    let url = url::Url::parse(spec).ok().filter(|u| u.scheme().len() > 1);
    let Some(url) = url else {
        return std::fs::read_to_string(spec).with_context(|| format!("reading the spec {spec}"));
    };
    let (store, path) = object_store::parse_url_opts(&url, s.open.storage_options.iter())
        .with_context(|| format!("opening {spec}"))?;
    let bytes = store
        .get(&path)
        .await
        .with_context(|| format!("reading the spec {spec}"))?
        .bytes()
        .await
        .with_context(|| format!("reading the spec {spec}"))?;
    String::from_utf8(bytes.to_vec()).with_context(|| format!("the spec {spec} is not UTF-8"))
}

pub async fn worker(a: WorkerArgs, s: &Settings) -> Result<()> {
    let text = read_spec(s, &a.spec).await?;
    let spec: BinSpec =
        serde_json::from_str(&text).with_context(|| format!("the spec {} is not valid", a.spec))?;
    let report = run_spec(&spec, &s.open.storage_options).await?;
    let line = match &report.outcome {
        Outcome::Done { rows, adds, .. } => serde_json::json!({
            "bin": report.bin_id, "status": "done", "rows": rows, "files_out": adds.len(),
            "seconds": report.metrics.seconds,
        }),
        Outcome::Failed { kind, error, .. } => serde_json::json!({
            "bin": report.bin_id, "status": "failed", "kind": kind, "error": error,
        }),
    };
    crate::outln!("{line}");
    if let Outcome::Failed { error, .. } = &report.outcome {
        bail!("bin {} failed: {error}", report.bin_id);
    }
    Ok(())
}
