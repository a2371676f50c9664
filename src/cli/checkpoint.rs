//! `lakehealth checkpoint`: writes a checkpoint of the table's current version (or says why
//! none is needed).

use anyhow::Result;

use super::args::CheckpointArgs;
use super::run::Settings;
use crate::engine::location::Location;
use crate::engine::maintenance::checkpoint::{CheckpointOutcome, checkpoint};
use crate::engine::size::format_bytes;

pub fn checkpoint_text(o: &CheckpointOutcome) -> String {
    if o.written {
        format!(
            "checkpoint of {} at version {} written ({} file(s), {}): {}\n",
            o.table,
            o.version,
            o.files.len(),
            format_bytes(o.bytes),
            o.reason.trim_start_matches("written: ")
        )
    } else {
        format!("{}: {}\n", o.table, o.reason)
    }
}

pub async fn run(a: CheckpointArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    let outcome = checkpoint(&loc, &s.open.storage_options).await?;
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        crate::out!("{}", checkpoint_text(&outcome));
    }
    Ok(())
}
