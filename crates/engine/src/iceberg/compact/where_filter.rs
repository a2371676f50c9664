//! `compact --where` on an Iceberg table: a predicate on the columns partitions are derived from
//! (`ts >= '2026-11-30'`, `category IN ('a', 'b')`) or on the partition fields themselves
//! (`ts_day = '2026-11-30'`), parsed as Delta's is (`compact::selection`: DataFusion's SQL
//! parser), choosing every partition that may hold a matching row, as Iceberg's
//! `rewrite_data_files` chooses files by the inclusive projection of its `where` through each
//! partition transform: `day(ts) = 2026-11-30` holds the ts of that day, `truncate[10](id) = 20`
//! the ids 20 to 29. A partition is rewritten whole (rows outside the predicate with it, as
//! Iceberg does), so a partition is never wrongly left out, only a partition that cannot hold
//! a match. A column only bucketed cannot narrow anything and is refused.

use std::cmp::Ordering;

use apache_avro::types::Value;
use chrono::{DateTime, NaiveDate, NaiveDateTime};

use crate::compact::selection::{Cond, Filter, Literal, Op, Predicate};
use crate::iceberg::metadata::{PartitionSpec, TableMetadata};
use crate::iceberg::transforms::{Transform, display};

/// A value of a column, in the unit its partitions are compared in: microseconds since the
/// epoch for dates and timestamps (nanoseconds for `_ns` timestamps), the number for numbers,
/// the text for text.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Int(i128),
    Float(f64),
    Text(String),
}

impl Scalar {
    fn cmp(&self, o: &Scalar) -> Option<Ordering> {
        match (self, o) {
            (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
            (Scalar::Float(a), Scalar::Float(b)) => a.partial_cmp(b),
            (Scalar::Int(a), Scalar::Float(b)) => (*a as f64).partial_cmp(b),
            (Scalar::Float(a), Scalar::Int(b)) => a.partial_cmp(&(*b as f64)),
            (Scalar::Text(a), Scalar::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// What a partition says about a column's values in its rows.
#[derive(Debug, Clone, PartialEq)]
enum Span {
    /// Every row's value is null.
    Null,
    /// Every row's value lies between these, inclusive.
    Range(Scalar, Scalar),
    /// Nothing (a bucket, or a field of another spec).
    Any,
}

const MICROS_PER_DAY: i128 = 86_400_000_000;
const MICROS_PER_HOUR: i128 = 3_600_000_000;

fn is_temporal(ty: &str) -> bool {
    matches!(
        ty,
        "date" | "timestamp" | "timestamptz" | "timestamp_ns" | "timestamptz_ns"
    )
}

/// Microseconds (or nanoseconds) per microsecond of the type: 1000 for `_ns` timestamps.
fn unit(ty: &str) -> i128 {
    if ty.ends_with("_ns") { 1000 } else { 1 }
}

/// The epoch microseconds of a date or timestamp as typed: `2026-11-30`,
/// `2026-11-30 10:00[:00[.ffffff]]` (or with `T`), or RFC 3339 with an offset.
fn parse_time(s: &str) -> Option<i128> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(i128::from(
            d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros(),
        ));
    }
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(i128::from(t.and_utc().timestamp_micros()));
        }
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| i128::from(t.timestamp_micros()))
}

/// Months since 1970-01 of a civil year and month.
fn months(y: i128, m: i128) -> i128 {
    (y - 1970) * 12 + (m - 1)
}

/// The start (epoch microseconds) of month `m` since 1970-01.
fn month_start(m: i128) -> Option<i128> {
    let y = i32::try_from(1970 + m.div_euclid(12)).ok()?;
    let mo = u32::try_from(m.rem_euclid(12) + 1).ok()?;
    let d = NaiveDate::from_ymd_opt(y, mo, 1)?;
    Some(i128::from(
        d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros(),
    ))
}

/// A literal as a value of a column of type `ty`.
fn scalar(l: &Literal, ty: &str) -> Result<Scalar, String> {
    match (l, ty) {
        (Literal::Str(s), t) if is_temporal(t) => parse_time(s)
            .map(|us| Scalar::Int(us * unit(t)))
            .ok_or_else(|| {
                format!("{s:?} is not a date or time (e.g. '2026-11-30' or '2026-11-30 10:00:00')")
            }),
        (Literal::Num(_), t) if is_temporal(t) => {
            Err("a date or time is written as text, e.g. '2026-11-30'".into())
        }
        (Literal::Num(n), "int" | "long") if n.fract() == 0.0 => Ok(Scalar::Int(*n as i128)),
        (Literal::Num(n), _) => Ok(Scalar::Float(*n)),
        (Literal::Str(s), "int" | "long" | "float" | "double") => {
            Err(format!("{s:?} is text; the column holds numbers"))
        }
        (Literal::Str(s), t) if t.starts_with("decimal") => s
            .trim()
            .parse::<f64>()
            .map(Scalar::Float)
            .map_err(|_| format!("{s:?} is not a number")),
        (Literal::Str(s), _) => Ok(Scalar::Text(s.clone())),
    }
}

/// A literal compared with a time partition field by its own display (`ts_day = '2026-11-30'`,
/// `ts_month = '2026-11'`, `ts_hour = '2026-11-30-10'`, `ts_year = '2026'` or `2026`): the
/// start of that period, in the source type's unit.
fn period_start(l: &Literal, t: &Transform, ty: &str) -> Result<Scalar, String> {
    let text = match l {
        Literal::Str(s) => s.trim().to_string(),
        Literal::Num(n) if n.fract() == 0.0 => format!("{n:.0}"),
        Literal::Num(n) => return Err(format!("{n} is not a period")),
    };
    let bad = || format!("{text:?} is not a {t:?} value (as the partition shows it)");
    let us = match t {
        Transform::Year => {
            let y: i128 = text.parse().map_err(|_| bad())?;
            month_start(months(y, 1))
        }
        Transform::Month => {
            let (y, m) = text.split_once('-').ok_or_else(bad)?;
            let (y, m): (i128, i128) =
                (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
            (1..=12)
                .contains(&m)
                .then(|| month_start(months(y, m)))
                .flatten()
        }
        Transform::Day => parse_time(&text).filter(|us| us % MICROS_PER_DAY == 0),
        Transform::Hour => {
            let (day, h) = text.rsplit_once('-').ok_or_else(bad)?;
            let h: i128 = h.parse().map_err(|_| bad())?;
            (0..24)
                .contains(&h)
                .then(|| parse_time(day).map(|d| d + h * MICROS_PER_HOUR))
                .flatten()
        }
        _ => return scalar(l, ty),
    };
    us.map(|us| Scalar::Int(us * unit(ty))).ok_or_else(bad)
}

/// The span of source values in a partition whose field (`t` of a `ty` column) holds `v`.
fn span(v: &Value, t: &Transform, ty: &str) -> Span {
    let v = match v {
        Value::Union(_, inner) => inner.as_ref(),
        other => other,
    };
    if matches!(v, Value::Null) {
        return Span::Null;
    }
    let int = || match v {
        Value::Int(i) | Value::Date(i) => Some(i128::from(*i)),
        Value::Long(l) => Some(i128::from(*l)),
        _ => None,
    };
    let scale = unit(ty);
    let period = |start: Option<i128>, end: Option<i128>| match (start, end) {
        (Some(s), Some(e)) => Span::Range(Scalar::Int(s * scale), Scalar::Int(e * scale - 1)),
        _ => Span::Any,
    };
    match t {
        Transform::Identity => match display(v, t, ty) {
            Some(text) => match scalar(&Literal::Str(text.clone()), ty) {
                Ok(s) => Span::Range(s.clone(), s),
                Err(_) => match text.parse::<f64>() {
                    Ok(f) => Span::Range(Scalar::Float(f), Scalar::Float(f)),
                    Err(_) => Span::Any,
                },
            },
            None => Span::Null,
        },
        Transform::Year => int().map_or(Span::Any, |y| {
            period(month_start(y * 12), month_start((y + 1) * 12))
        }),
        Transform::Month => int().map_or(Span::Any, |m| period(month_start(m), month_start(m + 1))),
        Transform::Day => int().map_or(Span::Any, |d| {
            period(Some(d * MICROS_PER_DAY), Some((d + 1) * MICROS_PER_DAY))
        }),
        Transform::Hour => int().map_or(Span::Any, |h| {
            period(Some(h * MICROS_PER_HOUR), Some((h + 1) * MICROS_PER_HOUR))
        }),
        Transform::Truncate(w) => match (ty, v) {
            ("int" | "long", _) => int().map_or(Span::Any, |n| {
                Span::Range(Scalar::Int(n), Scalar::Int(n + i128::from(*w) - 1))
            }),
            ("string", Value::String(p)) => Span::Range(
                Scalar::Text(p.clone()),
                Scalar::Text(format!("{p}\u{10FFFF}")),
            ),
            _ => Span::Any,
        },
        Transform::Bucket(_) | Transform::Void | Transform::Other(_) => Span::Any,
    }
}

/// The type a partition field's own values are compared as: a bucket's is its number, any
/// other's its source column's (a time field's literal is the start of its period).
fn field_type(t: &Transform, source_ty: &str) -> String {
    match t {
        Transform::Bucket(_) => "int".into(),
        _ => source_ty.to_string(),
    }
}

/// What a partition field named in the predicate holds: a time field the period of its value,
/// any other exactly its value.
fn field_span(v: &Value, t: &Transform, source_ty: &str) -> Span {
    match t {
        Transform::Year | Transform::Month | Transform::Day | Transform::Hour => {
            span(v, t, source_ty)
        }
        _ => span(v, &Transform::Identity, &field_type(t, source_ty)),
    }
}

/// Whether a partition where a column spans `s` may hold a row meeting `op value`.
fn may_cmp(s: &Span, op: Op, value: &Scalar) -> bool {
    let Span::Range(lo, hi) = s else {
        return matches!(s, Span::Any);
    };
    let (Some(l), Some(h)) = (lo.cmp(value), hi.cmp(value)) else {
        return true;
    };
    use Ordering::*;
    match op {
        Op::Eq => l != Greater && h != Less,
        Op::Ne => !(l == Equal && h == Equal),
        Op::Lt => l == Less,
        Op::Le => l != Greater,
        Op::Gt => h == Greater,
        Op::Ge => h != Less,
    }
}

/// How a predicate's column is read from a partition: a source column through each of its
/// partition fields, or one partition field by name.
#[derive(Debug, Clone)]
enum ColumnRef {
    Source { id: i32, ty: String },
    Field { name: String, source_ty: String },
}

/// A `--where` resolved on one table's metadata.
#[derive(Debug, Clone)]
pub struct IceWhere {
    pub predicate: Predicate,
    columns: Vec<(String, ColumnRef)>,
}

impl IceWhere {
    /// Parses `input` against `meta`'s partition fields and their source columns.
    pub fn parse(meta: &TableMetadata, input: &str) -> Result<IceWhere, String> {
        let types = meta.field_types();
        let specs = meta.specs();
        let mut columns: Vec<(String, ColumnRef)> = Vec::new();
        for f in specs.iter().flat_map(|s| &s.fields) {
            let ty = types.get(&f.source_id).cloned().unwrap_or_default();
            if !columns.iter().any(|(n, _)| *n == f.name) {
                columns.push((
                    f.name.clone(),
                    ColumnRef::Field {
                        name: f.name.clone(),
                        source_ty: ty.clone(),
                    },
                ));
            }
            if let Some((_, name, _)) = meta
                .top_level_columns()
                .into_iter()
                .find(|(id, _, _)| *id == f.source_id)
                && !columns.iter().any(|(n, _)| *n == name)
            {
                columns.push((
                    name,
                    ColumnRef::Source {
                        id: f.source_id,
                        ty,
                    },
                ));
            }
        }
        if columns.is_empty() {
            return Err("the table is not partitioned: --where selects partitions".into());
        }
        let names: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
        let predicate = Predicate::parse(input, &names).map_err(|e| e.to_string())?;
        let w = IceWhere { predicate, columns };
        w.check(&w.predicate.filter, &specs)
            .map_err(|e| format!("invalid --where {input:?}: {e}"))?;
        Ok(w)
    }

    fn column(&self, name: &str) -> Option<&ColumnRef> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// Every literal converts to its column's type, and every source column is narrowed by
    /// some transform.
    fn check(&self, f: &Filter, specs: &[PartitionSpec]) -> Result<(), String> {
        match f {
            Filter::And(a, b) | Filter::Or(a, b) => {
                self.check(a, specs)?;
                self.check(b, specs)
            }
            Filter::Cond(c) => {
                let (name, lits): (&str, Vec<&Literal>) = match c {
                    Cond::Cmp { column, value, .. } => (column, vec![value]),
                    Cond::In { column, values, .. } => (column, values.iter().collect()),
                    Cond::IsNull { column, .. } => (column, Vec::new()),
                };
                let Some(col) = self.column(name) else {
                    return Err(format!("{name:?} is not a partition column"));
                };
                match col {
                    ColumnRef::Source { id, ty } => {
                        let narrows = specs.iter().flat_map(|s| &s.fields).any(|f| {
                            f.source_id == *id
                                && !matches!(
                                    Transform::parse(&f.transform),
                                    Transform::Bucket(_) | Transform::Void | Transform::Other(_)
                                )
                        });
                        if !narrows {
                            return Err(format!(
                                "{name:?} is partitioned only by a bucket (or no transform lakehealth can invert): --where cannot choose partitions by it; name them with --partition"
                            ));
                        }
                        for l in lits {
                            scalar(l, ty).map_err(|e| format!("{name}: {e}"))?;
                        }
                    }
                    ColumnRef::Field {
                        name: field,
                        source_ty,
                    } => {
                        let t = field_transform(specs, field);
                        let ty = field_type(&t, source_ty);
                        for l in lits {
                            period_start(l, &t, &ty).map_err(|e| format!("{name}: {e}"))?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether the partition `values` (the manifest's partition record) of spec `spec` may hold
    /// a matching row.
    pub fn may_match(&self, spec: &PartitionSpec, values: &Value) -> bool {
        let fields: Vec<&Value> = match values {
            Value::Record(r) => r.iter().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        };
        self.may(&self.predicate.filter, spec, &fields)
    }

    fn may(&self, f: &Filter, spec: &PartitionSpec, fields: &[&Value]) -> bool {
        match f {
            Filter::And(a, b) => self.may(a, spec, fields) && self.may(b, spec, fields),
            Filter::Or(a, b) => self.may(a, spec, fields) || self.may(b, spec, fields),
            Filter::Cond(c) => self.may_cond(c, spec, fields),
        }
    }

    /// Each partition field the condition's column is read through must allow it (a row's
    /// value meets every field's span at once).
    fn may_cond(&self, c: &Cond, spec: &PartitionSpec, fields: &[&Value]) -> bool {
        let name = match c {
            Cond::Cmp { column, .. } | Cond::In { column, .. } | Cond::IsNull { column, .. } => {
                column
            }
        };
        let Some(col) = self.column(name) else {
            return true;
        };
        let mut spans = Vec::new();
        for (i, f) in spec.fields.iter().enumerate() {
            let t = Transform::parse(&f.transform);
            let (read, ty, by_period) = match col {
                ColumnRef::Source { id, ty } => (f.source_id == *id, ty, false),
                ColumnRef::Field { name, source_ty } => (f.name == *name, source_ty, true),
            };
            if !read {
                continue;
            }
            let Some(v) = fields.get(i) else { continue };
            if by_period {
                spans.push((field_span(v, &t, ty), field_type(&t, ty), t, true));
            } else {
                spans.push((span(v, &t, ty), ty.clone(), t, false));
            }
        }
        spans.iter().all(|(s, ty, t, by_period)| {
            let lit = |l: &Literal| {
                if *by_period {
                    period_start(l, t, ty)
                } else {
                    scalar(l, ty)
                }
            };
            match c {
                Cond::IsNull { negated, .. } => match s {
                    Span::Null => !negated,
                    Span::Range(..) => *negated,
                    Span::Any => true,
                },
                Cond::Cmp { op, value, .. } => lit(value).map_or(true, |v| may_cmp(s, *op, &v)),
                Cond::In {
                    values, negated, ..
                } => {
                    let vs: Vec<Scalar> = values.iter().filter_map(|l| lit(l).ok()).collect();
                    if *negated {
                        vs.iter().all(|v| may_cmp(s, Op::Ne, v))
                    } else {
                        vs.iter().any(|v| may_cmp(s, Op::Eq, v))
                    }
                }
            }
        })
    }
}

/// The transform of the partition field `name` (its latest spec's).
fn field_transform(specs: &[PartitionSpec], name: &str) -> Transform {
    specs
        .iter()
        .rev()
        .flat_map(|s| &s.fields)
        .find(|f| f.name == name)
        .map_or(Transform::Identity, |f| Transform::parse(&f.transform))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> TableMetadata {
        let json = serde_json::json!({
            "format-version": 2, "location": "/t",
            "partition-specs": [{"spec-id": 0, "fields": [
                {"source-id": 2, "field-id": 1000, "transform": "identity", "name": "category"},
                {"source-id": 3, "field-id": 1001, "transform": "day", "name": "ts_day"},
                {"source-id": 1, "field-id": 1002, "transform": "truncate[10]", "name": "id_t"},
                {"source-id": 4, "field-id": 1003, "transform": "bucket[4]", "name": "k_b"}]}],
            "schemas": [{"schema-id": 0, "type": "struct", "fields": [
                {"id": 1, "name": "id", "type": "long", "required": false},
                {"id": 2, "name": "category", "type": "string", "required": false},
                {"id": 3, "name": "ts", "type": "timestamp", "required": false},
                {"id": 4, "name": "k", "type": "string", "required": false}]}],
            "current-schema-id": 0,
        });
        TableMetadata::parse(json.to_string().as_bytes()).unwrap()
    }

    /// A partition: category, day (days since 1970), truncated id, bucket.
    fn part(cat: Option<&str>, day: Option<i32>, id_t: i64) -> Value {
        Value::Record(vec![
            (
                "category".into(),
                cat.map_or(Value::Null, |c| Value::String(c.into())),
            ),
            ("ts_day".into(), day.map_or(Value::Null, Value::Int)),
            ("id_t".into(), Value::Long(id_t)),
            ("k_b".into(), Value::Int(1)),
        ])
    }

    const NOV30: i32 = 20_787;

    fn may(w: &str, p: &Value) -> bool {
        let m = meta();
        IceWhere::parse(&m, w).unwrap().may_match(&m.specs()[0], p)
    }

    #[test]
    fn a_source_column_condition_chooses_the_partitions_that_may_hold_a_match() {
        let nov30 = part(Some("a"), Some(NOV30), 20);
        let nov29 = part(Some("b"), Some(NOV30 - 1), 30);
        // Through day(ts): the whole day, its first and last microsecond.
        assert!(may("ts >= '2026-11-30'", &nov30));
        assert!(!may("ts >= '2026-11-30'", &nov29));
        assert!(may("ts >= '2026-11-29 23:59:59.999999'", &nov29));
        assert!(may("ts < '2026-11-30 00:00:00.000001'", &nov30));
        assert!(!may("ts < '2026-11-30'", &nov30));
        assert!(may("ts = '2026-11-30T12:00:00'", &nov30));
        assert!(may("ts = '2026-11-30T12:00:00Z'", &nov30));
        // Through truncate[10](id): 20..=29.
        assert!(may("id = 29", &nov30) && !may("id = 30", &nov30));
        assert!(may("id > 28 AND id < 40", &nov30));
        assert!(!may("id IN (1, 2, 30)", &nov30));
        // Identity, with AND and OR across columns.
        assert!(may("category = 'a' AND ts >= '2026-11-30'", &nov30));
        assert!(!may("category = 'a' AND ts < '2026-11-30'", &nov30));
        assert!(may("category = 'b' OR ts >= '2026-11-30'", &nov30));
        assert!(may("category NOT IN ('b')", &nov30));
        assert!(!may("category NOT IN ('a')", &nov30));
        // Nulls: a null partition value holds only null values.
        let null = part(None, None, 0);
        assert!(may("category IS NULL", &null) && !may("category IS NOT NULL", &null));
        assert!(!may("ts >= '2000-01-01'", &null));
        assert!(may("ts IS NULL", &null) && !may("ts IS NULL", &nov30));
    }

    #[test]
    fn a_partition_field_is_compared_as_the_partition_shows_it() {
        let nov30 = part(Some("a"), Some(NOV30), 20);
        assert!(may("ts_day = '2026-11-30'", &nov30));
        assert!(!may("ts_day = '2026-11-29'", &nov30));
        assert!(may("ts_day > '2026-11-29'", &nov30));
        assert!(!may("ts_day < '2026-11-30'", &nov30));
        assert!(may("ts_day IN ('2026-11-01', '2026-11-30')", &nov30));
        // A truncated field's value is exact; so is a bucket's number.
        assert!(may("id_t = 20", &nov30) && !may("id_t = 25", &nov30));
        assert!(may("k_b = 1", &nov30) && !may("k_b = 2", &nov30));
    }

    #[test]
    fn bad_predicates_are_refused_naming_the_column_and_why() {
        let m = meta();
        let e = |w: &str| IceWhere::parse(&m, w).unwrap_err();
        assert!(
            e("k = 'x'").contains("only by a bucket"),
            "{}",
            e("k = 'x'")
        );
        assert!(e("ts = 5").contains("written as text"));
        assert!(e("ts >= 'yesterday'").contains("not a date"));
        assert!(e("id = 'x'").contains("holds numbers"));
        assert!(e("ts_day = '2026-11'").contains("not a Day value"));
        assert!(e("payload = 1").contains("not a partition column"));
    }

    #[test]
    fn month_year_and_hour_periods_cover_their_whole_span() {
        let t = "timestamp";
        // 2026-11 is month 682.
        let s = span(&Value::Int(682), &Transform::Month, t);
        let lo = Scalar::Int(parse_time("2026-11-01").unwrap());
        let last = Scalar::Int(parse_time("2026-11-30 23:59:59.999999").unwrap());
        assert_eq!(s, Span::Range(lo.clone(), last));
        assert!(may_cmp(&s, Op::Eq, &lo));
        let y = span(&Value::Int(56), &Transform::Year, t);
        assert!(may_cmp(
            &y,
            Op::Eq,
            &Scalar::Int(parse_time("2026-07-04").unwrap())
        ));
        assert!(!may_cmp(
            &y,
            Op::Ge,
            &Scalar::Int(parse_time("2027-01-01").unwrap())
        ));
        let h = span(&Value::Int(NOV30 * 24 + 10), &Transform::Hour, t);
        assert!(may_cmp(
            &h,
            Op::Eq,
            &Scalar::Int(parse_time("2026-11-30 10:59:59").unwrap())
        ));
        assert!(!may_cmp(
            &h,
            Op::Eq,
            &Scalar::Int(parse_time("2026-11-30 11:00").unwrap())
        ));
        assert_eq!(
            period_start(&Literal::Str("2026-11-30-10".into()), &Transform::Hour, t),
            Ok(Scalar::Int(parse_time("2026-11-30 10:00").unwrap()))
        );
        assert_eq!(
            period_start(&Literal::Num(2026.0), &Transform::Year, t),
            Ok(Scalar::Int(parse_time("2026-01-01").unwrap()))
        );
    }
}
