//! A table's domain metadata, read by delta-kernel's log replay at the version delta-rs loaded:
//! delta-rs refuses to read `delta.*` domains (the clustering columns, row tracking's
//! high-water mark), the kernel reads them. The replay is the kernel's own (delta-rs keeps its
//! kernel snapshot private), so each call reads the log once more.

use deltalake::DeltaTable;

/// The first of `domains` the table's loaded snapshot holds, with its configuration; None
/// when it holds none of them (or no version is loaded). Err: why the log could not be read.
pub async fn first_domain(
    table: &DeltaTable,
    domains: &'static [&'static str],
) -> Result<Option<(&'static str, String)>, String> {
    let Some(version) = table.version() else {
        return Ok(None);
    };
    let engine = table.log_store().engine(None);
    let url = table.table_url().clone();
    tokio::task::spawn_blocking(move || {
        let snapshot = delta_kernel::Snapshot::builder_for(url)
            .at_version(version)
            .build(engine.as_ref())?;
        for domain in domains {
            if let Some(c) = snapshot.get_domain_metadata_internal(domain, engine.as_ref())? {
                return Ok::<_, delta_kernel::Error>(Some((*domain, c)));
            }
        }
        Ok(None)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())
}
