//! Waiting for a condition, not for a time: a loaded machine is slower, an idle one faster.

use std::time::{Duration, Instant};

/// Polls `done` every 10 ms until it holds; panics naming `what` after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut done: impl FnMut() -> bool) {
    assert!(
        eventually(timeout, &mut done),
        "{what}: not within {timeout:?}"
    );
}

/// Polls `done` every 10 ms until it holds (true) or `timeout` passed (false), for callers that
/// clean up before they fail.
pub fn eventually(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
