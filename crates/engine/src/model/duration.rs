//! Every duration lakehealth shows, formatted here. Three styles, each kept because screens,
//! history lines and messages that tests and users match on use it:
//! - `ago`: "3m ago", compact, for table cells and headers on screen;
//! - `whole_units` / `whole_units_ms`: "8 min", one whole unit, for janitor reasons and lines;
//! - `exact` / `exact_secs`: humantime's "7days 1h 30m", every unit, for retention and age
//!   limits in messages, where rounding would misstate a limit.

use std::time::Duration;

/// "12s ago", "3m ago", "5h ago", "2d ago" for a timestamp `ts_ms` seen at `now_ms`; "-"
/// when there is none. A timestamp in the future reads "0s ago".
pub fn ago(ts_ms: Option<i64>, now_ms: i64) -> String {
    let Some(ts) = ts_ms else {
        return "-".into();
    };
    let s = ((now_ms - ts) / 1000).max(0);
    if s < 60 {
        format!("{s}s ago")
    } else if s < 3600 {
        format!("{}m ago", s / 60)
    } else if s < 86_400 {
        format!("{}h ago", s / 3600)
    } else {
        format!("{}d ago", s / 86_400)
    }
}

/// "4 s", "60 s", "8 min", "3 h", "2 d": one whole unit, rounded down, for reasons.
pub fn whole_units(d: Duration) -> String {
    whole_units_ms(d.as_millis().min(i64::MAX as u128) as i64)
}

/// `whole_units` of milliseconds; a negative span reads "0 s".
pub fn whole_units_ms(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s < 120 {
        format!("{s} s")
    } else if s < 120 * 60 {
        format!("{} min", s / 60)
    } else if s < 48 * 3600 {
        format!("{} h", s / 3600)
    } else {
        format!("{} d", s / 86400)
    }
}

/// Every unit of `d`, as humantime writes it: "7days", "1h 30m", "1s 500ms".
pub fn exact(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `exact` to the whole second: "7days", "1h 30m" (sub-second parts dropped).
pub fn exact_secs(d: Duration) -> String {
    exact(Duration::from_secs(d.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ago_is_one_compact_unit() {
        let now = 10 * 86_400_000;
        assert_eq!(ago(None, now), "-");
        assert_eq!(ago(Some(now - 12_000), now), "12s ago");
        assert_eq!(ago(Some(now - 3 * 60_000 - 1), now), "3m ago");
        assert_eq!(ago(Some(now - 5 * 3_600_000), now), "5h ago");
        assert_eq!(ago(Some(now - 2 * 86_400_000), now), "2d ago");
        assert_eq!(ago(Some(now + 5_000), now), "0s ago");
    }

    #[test]
    fn whole_units_round_down_to_one_unit() {
        assert_eq!(whole_units_ms(4_200), "4 s");
        assert_eq!(whole_units_ms(60_000), "60 s");
        assert_eq!(whole_units_ms(8 * 60_000 + 5), "8 min");
        assert_eq!(whole_units_ms(3 * 3_600_000), "3 h");
        assert_eq!(whole_units_ms(3 * 86_400_000), "3 d");
        assert_eq!(whole_units_ms(-5), "0 s");
        assert_eq!(whole_units(Duration::from_secs(3600)), "60 min");
    }

    #[test]
    fn exact_keeps_every_unit() {
        assert_eq!(exact(Duration::from_secs(7 * 86_400)), "7days");
        assert_eq!(exact(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(exact(Duration::from_millis(1500)), "1s 500ms");
        assert_eq!(exact_secs(Duration::from_millis(1500)), "1s");
    }
}
