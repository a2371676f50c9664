//! Loading a table with delta-rs, for what our own log reader does not read (file statistics,
//! domain metadata) and the operations delta-rs runs.

use std::collections::HashMap;

use deltalake::DeltaTable;
use deltalake::table::builder::DeltaTableBuilder;

use crate::error::{EngineError, Result};
use crate::location::Location;

/// Loads the latest version of the table with delta-rs (any storage the other commands read);
/// `what` names the operation in its error.
pub(crate) async fn load(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    what: &str,
) -> Result<DeltaTable> {
    let uri = loc.display();
    // Our store, not one delta-rs opens: on a local disk its deletes (VACUUM's, a checkpoint's
    // log cleanup) never go through a link or leave the table (`local_fs`).
    let store = loc.open_root_store(storage_options)?;
    DeltaTableBuilder::from_url(loc.url.clone())
        .map_err(|e| EngineError::from_delta(&uri, what, e))?
        .with_storage_backend(store, loc.url.clone())
        .with_storage_options(storage_options.clone())
        .load()
        .await
        .map_err(|e| EngineError::from_delta(&uri, what, e))
}
