//! `lakehealth convert`: preview converting a Parquet folder (or a Spark file-sink folder) to a
//! Delta table in place, ask, then convert. `--dry-run` stops after the preview.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Instant;

use anyhow::{Result, bail};

use super::args::ConvertArgs;
use super::run::Settings;
use crate::engine::location::Location;
use crate::engine::parquet_folder::convert::{convert, plan_convert};
use crate::engine::progress::LoadProgress;
use crate::engine::size::format_bytes;

/// Listing progress on stderr, at most once a second.
pub fn stderr_progress() -> impl Fn(LoadProgress) + Send + Sync {
    let last = std::sync::Mutex::new(Instant::now());
    move |p: LoadProgress| {
        if let LoadProgress::ListingObjects { .. } = p
            && let Ok(mut l) = last.lock()
            && l.elapsed().as_secs_f64() >= 1.0
        {
            *l = Instant::now();
            crate::errln!("{}", p.describe());
        }
    }
}

pub async fn convert_cmd(a: ConvertArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    let plan = plan_convert(&loc, &s.open, &a.partition_by, &stderr_progress()).await?;
    if a.json && a.dry_run {
        crate::outln!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(());
    }
    let text = plan.text();
    if a.json {
        crate::err!("{text}");
    } else {
        crate::out!("{text}");
    }
    if a.dry_run {
        crate::errln!("dry run: nothing was changed");
        return Ok(());
    }
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "not converting without a confirmation: run it in a terminal, or pass --yes once the steps above are done"
            );
        }
        crate::err!("Has the writer been stopped, and convert now? Type yes: ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            bail!("not converted (answer was not yes); nothing was changed");
        }
    }
    let outcome = convert(&loc, &plan, &s.open).await?;
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        crate::outln!(
            "converted: {} is a Delta table at version {} with {} files ({}). Next: restart the writer with the Delta sink, then `lakehealth compact {}`",
            outcome.uri,
            outcome.version,
            outcome.files,
            format_bytes(outcome.bytes),
            outcome.uri
        );
    }
    Ok(())
}
