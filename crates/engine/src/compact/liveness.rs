//! Whether the process that wrote a job's record still runs: a record names its host and
//! process id, and only a record whose process is gone may have its leftovers swept.

/// This machine's name (Linux); empty when unknown (then only age makes a record dead).
pub fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// A lakehealth process with this id runs here (a reused id of another program is not).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => String::from_utf8_lossy(&cmd).contains("lakehealth"),
        // Without /proc nothing can be told: alive, so that nothing is deleted.
        Err(_) => !std::path::Path::new("/proc/self").exists(),
    }
}
