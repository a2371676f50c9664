//! The wall clock, in the epoch milliseconds the table formats record.

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
