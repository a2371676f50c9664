//! Background CPU priority for a job's threads while a writer is active: the kernel then gives
//! a core to the writer the moment it wants one, and the compaction only what is left (on an
//! idle machine that is everything, so nothing is lost). Pacing (`pace`) bounds the job's
//! reads; this bounds its claim on the CPU when the two compete. Linux only: there a thread's
//! nice value is its own (elsewhere `setpriority` would lower the whole process, a TUI's
//! included), and the I/O scheduler derives the thread's I/O priority from it.

/// The nice value of a background job's threads: the lowest priority there is.
pub const BACKGROUND_NICE: i32 = 19;

/// Lowers the calling thread to the background priority; false when the system refused.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() -> bool {
    // `None`: the calling thread (Linux applies PRIO_PROCESS with who = 0 per thread).
    rustix::process::setpriority_process(None, BACKGROUND_NICE).is_ok()
}

#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() -> bool {
    false
}

/// The calling thread's nice value (tests).
#[cfg(all(test, target_os = "linux"))]
pub fn this_thread_nice() -> Option<i32> {
    rustix::process::getpriority_process(None).ok()
}

#[cfg(all(test, not(target_os = "linux")))]
pub fn this_thread_nice() -> Option<i32> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn lowering_a_thread_leaves_the_others_at_their_priority() {
        let before = this_thread_nice();
        let lowered = std::thread::spawn(|| (lower_this_thread(), this_thread_nice()))
            .join()
            .unwrap();
        assert_eq!(lowered, (true, Some(BACKGROUND_NICE)));
        assert_eq!(
            this_thread_nice(),
            before,
            "only the calling thread changed"
        );
    }
}
