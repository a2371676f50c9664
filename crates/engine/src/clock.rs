//! The wall clock, in the epoch milliseconds the table formats record.

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// How far "never" is when a deadline overflows the clock (tokio's own far future).
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);

/// `from + d`, or a far future when that overflows the clock: a deadline built from a
/// configured duration never panics (`Instant + Duration` does on overflow).
pub fn deadline(from: tokio::time::Instant, d: std::time::Duration) -> tokio::time::Instant {
    from.checked_add(d)
        .or_else(|| from.checked_add(FAR_FUTURE))
        .unwrap_or(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_past_the_clocks_range_is_a_far_future_not_a_panic() {
        let now = tokio::time::Instant::now();
        let d = deadline(now, std::time::Duration::MAX);
        assert!(d >= now + FAR_FUTURE, "far away");
        let s = std::time::Duration::from_secs(5);
        assert_eq!(deadline(now, s), now + s);
    }
}
