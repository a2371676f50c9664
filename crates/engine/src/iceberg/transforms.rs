//! Partition values as Iceberg shows them: a manifest's partition struct holds each field's
//! *transformed* value (days since 1970 for `day(ts)`, a bucket number for `bucket[16](id)`),
//! typed by the transform's result type. Rendering follows Iceberg's human strings:
//! `day` → `2026-11-30`, `month` → `2026-11`, `year` → `2026`, `hour` → `2026-11-30-10`,
//! `bucket`/`truncate`/`identity` → the value itself (dates and timestamps as ISO text).

use apache_avro::types::Value;
use chrono::{DateTime, Duration, NaiveDate};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Year,
    Month,
    Day,
    Hour,
    Bucket(u32),
    Truncate(u32),
    Void,
    /// A transform this reader does not know; values are shown raw.
    Other(String),
}

impl Transform {
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        let arg = |prefix: &str| {
            s.strip_prefix(prefix)
                .and_then(|r| r.strip_prefix('['))
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.trim().parse::<u32>().ok())
        };
        match s {
            "identity" => Transform::Identity,
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "void" => Transform::Void,
            _ => {
                if let Some(n) = arg("bucket") {
                    Transform::Bucket(n)
                } else if let Some(w) = arg("truncate") {
                    Transform::Truncate(w)
                } else {
                    Transform::Other(s.to_string())
                }
            }
        }
    }
}

fn epoch_day(days: i64) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(Duration::try_days(days)?)
}

fn date_text(days: i64) -> String {
    epoch_day(days).map_or_else(|| days.to_string(), |d| d.format("%Y-%m-%d").to_string())
}

/// Microseconds (or nanoseconds when `nanos`) since the epoch, as `2026-11-30T10:00:00`.
fn timestamp_text(v: i64, nanos: bool) -> String {
    let ts = if nanos {
        Some(DateTime::from_timestamp_nanos(v))
    } else {
        DateTime::from_timestamp_micros(v)
    };
    ts.map_or_else(
        || v.to_string(),
        |t| t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An integer held by any of Avro's integer-like kinds (plain or logical).
fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) | Value::Date(i) | Value::TimeMillis(i) => Some(i64::from(*i)),
        Value::Long(l)
        | Value::TimeMicros(l)
        | Value::TimestampMillis(l)
        | Value::TimestampMicros(l)
        | Value::TimestampNanos(l)
        | Value::LocalTimestampMillis(l)
        | Value::LocalTimestampMicros(l)
        | Value::LocalTimestampNanos(l) => Some(*l),
        _ => None,
    }
}

/// The most digits an Iceberg decimal has (`decimal(P,S)`: P <= 38).
const MAX_DECIMAL_DIGITS: u32 = 38;

/// A decimal's unscaled big-endian two's-complement bytes as text with `scale` digits.
fn decimal_text(bytes: &[u8], scale: u32) -> String {
    if bytes.len() > 16 {
        return hex(bytes);
    }
    let neg = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut buf = [if neg { 0xff } else { 0 }; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    let n = i128::from_be_bytes(buf);
    if scale == 0 {
        return n.to_string();
    }
    // Iceberg's decimals hold at most 38 digits; a larger scale is a corrupt or hostile schema
    // (and a format width above 65535 would panic): show the raw bytes.
    if scale > MAX_DECIMAL_DIGITS {
        return hex(bytes);
    }
    let digits = n.unsigned_abs().to_string();
    let scale = scale as usize;
    let zeros = (scale + 1).saturating_sub(digits.len());
    let padded = format!("{}{digits}", "0".repeat(zeros));
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{}{int}.{frac}", if n < 0 { "-" } else { "" })
}

/// `decimal(9,2)` → 2.
fn decimal_scale(source_type: &str) -> Option<u32> {
    let inner = source_type.strip_prefix("decimal(")?.strip_suffix(')')?;
    inner.split(',').nth(1)?.trim().parse().ok()
}

/// A value of the source column's type (identity and truncate keep it).
fn source_value_text(v: &Value, source_type: &str) -> String {
    match (source_type, v) {
        ("date", _) => as_i64(v).map_or_else(|| raw_text(v), date_text),
        ("timestamp" | "timestamptz", _) => {
            as_i64(v).map_or_else(|| raw_text(v), |t| timestamp_text(t, false))
        }
        ("timestamp_ns" | "timestamptz_ns", _) => {
            as_i64(v).map_or_else(|| raw_text(v), |t| timestamp_text(t, true))
        }
        (t, Value::Bytes(b) | Value::Fixed(_, b)) if t.starts_with("decimal") => {
            decimal_text(b, decimal_scale(t).unwrap_or(0))
        }
        (t, Value::Decimal(d)) if t.starts_with("decimal") => match <Vec<u8>>::try_from(d) {
            Ok(b) => decimal_text(&b, decimal_scale(t).unwrap_or(0)),
            Err(_) => raw_text(v),
        },
        _ => raw_text(v),
    }
}

fn raw_text(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Double(d) => d.to_string(),
        Value::String(s) | Value::Enum(_, s) => s.clone(),
        Value::Bytes(b) | Value::Fixed(_, b) => hex(b),
        Value::Uuid(u) => u.to_string(),
        Value::Union(_, inner) => raw_text(inner),
        other => as_i64(other).map_or_else(|| format!("{other:?}"), |i| i.to_string()),
    }
}

/// The displayed value of one partition field, None for NULL (and for `void`).
pub fn display(v: &Value, transform: &Transform, source_type: &str) -> Option<String> {
    let v = match v {
        Value::Union(_, inner) => inner.as_ref(),
        other => other,
    };
    if matches!(v, Value::Null) || *transform == Transform::Void {
        return None;
    }
    let n = as_i64(v);
    Some(match (transform, n) {
        // Checked: a hostile manifest's year near i64::MAX would wrap (or panic in debug).
        (Transform::Year, Some(y)) => 1970i64.checked_add(y).unwrap_or(y).to_string(),
        (Transform::Month, Some(m)) => {
            let (y, mo) = (1970 + m.div_euclid(12), m.rem_euclid(12) + 1);
            format!("{y:04}-{mo:02}")
        }
        (Transform::Day, Some(d)) => date_text(d),
        (Transform::Hour, Some(h)) => epoch_day(h.div_euclid(24)).map_or_else(
            || h.to_string(),
            |d| format!("{}-{:02}", d.format("%Y-%m-%d"), h.rem_euclid(24)),
        ),
        (Transform::Identity | Transform::Truncate(_), _) => source_value_text(v, source_type),
        _ => raw_text(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_transform_names() {
        assert_eq!(Transform::parse("day"), Transform::Day);
        assert_eq!(Transform::parse("bucket[16]"), Transform::Bucket(16));
        assert_eq!(Transform::parse("truncate[4]"), Transform::Truncate(4));
        assert_eq!(
            Transform::parse("zorder"),
            Transform::Other("zorder".into())
        );
    }

    /// A manifest's year partition value is untrusted: near i64::MAX, 1970 + y wrapped to a
    /// negative year (and panicked in a debug build); it shows raw.
    #[test]
    fn a_year_past_the_largest_integer_shows_raw() {
        assert_eq!(
            display(&Value::Long(i64::MAX), &Transform::Year, "timestamp").as_deref(),
            Some(i64::MAX.to_string().as_str())
        );
    }

    #[test]
    fn time_transforms_render_as_iceberg_shows_them() {
        // 2026-11-30 is day 20_787 since 1970-01-01.
        assert_eq!(
            display(&Value::Int(20_787), &Transform::Day, "timestamp").as_deref(),
            Some("2026-11-30")
        );
        assert_eq!(
            display(&Value::Date(20_787), &Transform::Day, "date").as_deref(),
            Some("2026-11-30")
        );
        assert_eq!(
            display(&Value::Int(56), &Transform::Year, "timestamp").as_deref(),
            Some("2026")
        );
        // 682 months = 56 years and 10 months: November.
        assert_eq!(
            display(&Value::Int(682), &Transform::Month, "date").as_deref(),
            Some("2026-11")
        );
        assert_eq!(
            display(&Value::Int(20_787 * 24 + 10), &Transform::Hour, "timestamp").as_deref(),
            Some("2026-11-30-10")
        );
        assert_eq!(
            display(&Value::Int(-1), &Transform::Day, "date").as_deref(),
            Some("1969-12-31")
        );
    }

    #[test]
    fn identity_bucket_truncate_and_null() {
        let s = |v: &str| Value::Union(1, Box::new(Value::String(v.into())));
        assert_eq!(
            display(&s("a/b"), &Transform::Identity, "string").as_deref(),
            Some("a/b")
        );
        assert_eq!(
            display(
                &Value::Union(0, Box::new(Value::Null)),
                &Transform::Identity,
                "string"
            ),
            None
        );
        assert_eq!(
            display(&Value::Int(7), &Transform::Bucket(16), "long").as_deref(),
            Some("7")
        );
        assert_eq!(
            display(&s("abc"), &Transform::Truncate(3), "string").as_deref(),
            Some("abc")
        );
        assert_eq!(
            display(
                &Value::Long(1_796_040_000_000_000),
                &Transform::Identity,
                "timestamp"
            )
            .as_deref(),
            Some("2026-11-30T12:00:00")
        );
        assert_eq!(
            display(
                &Value::Bytes(vec![0xff, 0x85]),
                &Transform::Identity,
                "decimal(9,2)"
            )
            .as_deref(),
            Some("-1.23")
        );
        assert_eq!(display(&Value::Int(3), &Transform::Void, "int"), None);
    }

    #[test]
    fn a_decimal_with_an_absurd_scale_shows_its_bytes_instead_of_panicking() {
        let v = Value::Bytes(vec![0x01, 0x02]);
        for t in ["decimal(9,70000)", "decimal(9,4294967295)", "decimal(9,39)"] {
            assert_eq!(
                display(&v, &Transform::Identity, t).as_deref(),
                Some("0102"),
                "{t}"
            );
        }
        assert_eq!(
            display(&v, &Transform::Identity, "decimal(38,38)").as_deref(),
            Some("0.00000000000000000000000000000000000258")
        );
    }
}
