//! Delta tables: statistics from the transaction log (`engine::log::replay`).

use std::sync::Arc;

use object_store::ObjectStore;

use crate::engine::error::Result;
use crate::engine::location::Location;
use crate::engine::log::replay::replay;
use crate::engine::open::{OpenOptions, now_ms};
use crate::engine::progress::LoadProgress;
use crate::engine::stats::table_report::TableReport;

pub async fn load_delta(
    loc: &Location,
    store: &Arc<dyn ObjectStore>,
    opts: &OpenOptions,
    progress: &(dyn Fn(LoadProgress) + Send + Sync),
) -> Result<TableReport> {
    let uri = loc.display();
    let state = replay(store, &uri, opts.replay, progress).await?;
    Ok(TableReport::build(
        uri,
        loc.name(),
        state,
        opts.thresholds,
        now_ms(),
    ))
}
