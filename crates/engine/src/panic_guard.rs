//! Reading untrusted input must not end the process: a table whose metadata trips a bug (ours
//! or a dependency's) becomes one error, and the other tables of a root are still reported.
//!
//! `guarded` runs a future and turns a panic inside it into `Err(message)`. While such a future
//! is being polled, the panic hook installed by `install_hook` only logs the panic: it does not
//! print it over the TUI or restore the terminal (ratatui's hook would), because the program
//! goes on. Any other panic reaches the previous hook unchanged.

use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt;

thread_local! {
    /// How many guarded futures this thread is polling right now.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

/// Whether a panic on this thread now would be caught by `guarded`.
pub fn is_guarded() -> bool {
    GUARDED.with(|g| g.get() > 0)
}

/// Marks the thread as guarded while alive (also while unwinding).
struct Mark;

impl Mark {
    fn enter() -> Self {
        GUARDED.with(|g| g.set(g.get() + 1));
        Mark
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        GUARDED.with(|g| g.set(g.get().saturating_sub(1)));
    }
}

struct Guarded<'a, T> {
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<T> Future for Guarded<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let _mark = Mark::enter();
        self.inner.as_mut().poll(cx)
    }
}

/// The text of a panic's payload.
fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// A panic caught by `guarded`: its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

/// Runs `fut`; a panic inside it is `Err` with its message.
pub async fn guarded<'a, T>(fut: impl Future<Output = T> + Send + 'a) -> Result<T, Panicked> {
    AssertUnwindSafe(Guarded {
        inner: Box::pin(fut),
    })
    .catch_unwind()
    .await
    .map_err(|p| Panicked(message(p)))
}

/// Runs `f`; a panic inside it is `Err` with its message (`guarded` for synchronous code).
pub fn guarded_sync<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    let _mark = Mark::enter();
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| Panicked(message(p)))
}

/// Wraps the current panic hook: panics inside `guarded` are logged, not printed, and so is the
/// one panic a dependency raises and catches by design (`caught_by_its_raiser`).
pub fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if is_guarded() {
            tracing::error!("caught while reading untrusted input: {info}");
            return;
        }
        if caught_by_its_raiser(&payload_text(info), info.location().map(|l| l.file())) {
            tracing::warn!("a write failed and its upload could not be aborted: {info}");
            return;
        }
        // A panic's message may quote a credential (a library's state): printed scrubbed then.
        let text = info.to_string();
        let shown = crate::secrets::scrub(&text);
        if shown == text {
            previous(info);
        } else {
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "{shown}");
        }
    }));
}

fn payload_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    let p = info.payload();
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// object_store's `BufWriter::abort` panics "Already shut down" once a failed `shutdown` began,
/// and delta-rs's writer calls it after a failed finish (a full or read-only disk) inside
/// `catch_unwind`, by design: the write fails with its own error. A hook runs before any
/// `catch_unwind`, so without this the user would see a panic's text above a clean error.
fn caught_by_its_raiser(message: &str, file: Option<&str>) -> bool {
    message == "Already shut down"
        && file.is_some_and(|f| f.contains("object_store") && f.ends_with("buffered.rs"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_object_stores_abort_after_shutdown_panic_is_taken_for_caught() {
        let f = "/root/.cargo/registry/src/x/object_store-0.13.2/src/buffered.rs";
        assert!(caught_by_its_raiser("Already shut down", Some(f)));
        assert!(!caught_by_its_raiser(
            "Already shut down",
            Some("src/engine/x.rs")
        ));
        assert!(!caught_by_its_raiser("index out of bounds", Some(f)));
        assert!(!caught_by_its_raiser("Already shut down", None));
    }

    #[tokio::test]
    async fn a_panic_inside_becomes_an_error_and_the_guard_is_released() {
        let r: Result<u8, Panicked> = guarded(async {
            tokio::task::yield_now().await;
            if is_guarded() {
                panic!("a bug met while reading a table");
            }
            0u8
        })
        .await;
        let e = r.unwrap_err().0;
        assert!(!e.is_empty());
        assert!(!is_guarded());
        assert_eq!(guarded(async { 7 }).await, Ok(7));
    }
}
