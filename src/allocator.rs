//! The binary's allocator: jemalloc, giving what a finished job held back to the system within
//! about a second. glibc's malloc keeps it: after two compactions of the demo the TUI's heap was
//! 8.5x what it was before (3.9x its resident memory), and a janitor's would grow with the
//! largest job it ever ran (`bench/tui_memory.py`). Background threads purge while the program idles (a TUI waiting for
//! keys allocates nothing that would trigger a purge); freed pages go straight back (no "muzzy"
//! stage, whose pages still count as resident until the kernel needs them).

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How long freed pages stay with the allocator for reuse before they go back.
#[cfg(not(target_env = "msvc"))]
const DIRTY_DECAY_MS: isize = 1000;

/// Configures the allocator; first thing in `main`. A setting the allocator refuses leaves its
/// default, which is only slower to give memory back.
#[cfg(not(target_env = "msvc"))]
pub fn configure() {
    use tikv_jemalloc_ctl::{Access, AsName};
    let _ = tikv_jemalloc_ctl::background_thread::write(true);
    // New arenas take the `arenas.` defaults; arena 0 exists already.
    for (key, value) in [
        (&b"arenas.dirty_decay_ms\0"[..], DIRTY_DECAY_MS),
        (&b"arenas.muzzy_decay_ms\0"[..], 0),
        (&b"arena.0.dirty_decay_ms\0"[..], DIRTY_DECAY_MS),
        (&b"arena.0.muzzy_decay_ms\0"[..], 0),
    ] {
        if let Err(e) = key.name().write(value) {
            tracing::debug!("allocator setting {:?}: {e}", String::from_utf8_lossy(key));
        }
    }
}

/// Windows with MSVC keeps the system allocator.
#[cfg(target_env = "msvc")]
pub fn configure() {}
