//! The heap in use as jemalloc counts it (the binary's allocator, `allocator.rs`), for the
//! janitor's `/metrics` (heap bytes per table watched).

/// Bytes allocated and not freed; None if the allocator does not say.
#[cfg(not(target_env = "msvc"))]
pub fn heap_in_use() -> Option<u64> {
    // Statistics are cached until the epoch advances.
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    tikv_jemalloc_ctl::stats::allocated::read()
        .ok()
        .map(|b| b as u64)
}

#[cfg(target_env = "msvc")]
pub fn heap_in_use() -> Option<u64> {
    None
}
