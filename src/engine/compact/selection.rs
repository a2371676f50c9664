//! Which partitions a compaction touches: an explicit list, or a predicate on partition columns
//! (`ingestion_date = '2026-11-30'`, `day >= '2026-11-01' AND region IN ('eu', 'us')`, `k IS NULL`).
//! A predicate on a non-partition column is an error: compaction rewrites whole partitions.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Str(String),
    Num(f64),
}

impl Literal {
    fn text(&self) -> String {
        match self {
            Literal::Str(s) => s.clone(),
            Literal::Num(n) => n.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Cmp {
        column: String,
        op: Op,
        value: Literal,
    },
    In {
        column: String,
        values: Vec<Literal>,
        negated: bool,
    },
    IsNull {
        column: String,
        negated: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A conjunction of conditions on partition columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    pub conds: Vec<Cond>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --where {input:?}: {reason}")]
pub struct PredicateError {
    pub input: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(f64),
    Op(String),
    LParen,
    RParen,
    Comma,
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                match cs.get(i) {
                    None => return Err("unterminated string literal".into()),
                    Some('\'') if cs.get(i + 1) == Some(&'\'') => {
                        v.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&ch) => {
                        v.push(ch);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(v));
        } else if c == '"' || c == '`' {
            let close = c;
            let start = i + 1;
            let end = cs[start..]
                .iter()
                .position(|&x| x == close)
                .ok_or("unterminated quoted column name")?;
            out.push(Tok::Ident(cs[start..start + end].iter().collect()));
            i = start + end + 1;
        } else if c.is_ascii_digit()
            || (c == '-' && cs.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            i += 1;
            while i < cs.len() && (cs[i].is_ascii_digit() || cs[i] == '.') {
                i += 1;
            }
            let t: String = cs[start..i].iter().collect();
            out.push(Tok::Num(t.parse().map_err(|_| format!("bad number {t}"))?));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                i += 1;
            }
            out.push(Tok::Ident(cs[start..i].iter().collect()));
        } else if "=<>!".contains(c) {
            let two: String = cs[i..(i + 2).min(cs.len())].iter().collect();
            if ["<=", ">=", "!=", "<>"].contains(&two.as_str()) {
                out.push(Tok::Op(two));
                i += 2;
            } else {
                out.push(Tok::Op(c.to_string()));
                i += 1;
            }
        } else if c == '(' {
            out.push(Tok::LParen);
            i += 1;
        } else if c == ')' {
            out.push(Tok::RParen);
            i += 1;
        } else if c == ',' {
            out.push(Tok::Comma);
            i += 1;
        } else {
            return Err(format!("unexpected character {c:?}"));
        }
    }
    Ok(out)
}

fn kw(t: Option<&Tok>, word: &str) -> bool {
    matches!(t, Some(Tok::Ident(s)) if s.eq_ignore_ascii_case(word))
}

fn literal(t: Option<Tok>) -> Result<Literal, String> {
    match t {
        Some(Tok::Str(s)) => Ok(Literal::Str(s)),
        Some(Tok::Num(n)) => Ok(Literal::Num(n)),
        other => Err(format!(
            "expected a literal ('text' or a number), found {other:?}"
        )),
    }
}

impl Predicate {
    /// Parses and checks every column against the table's partition columns.
    pub fn parse(input: &str, partition_columns: &[String]) -> Result<Self, PredicateError> {
        let err = |reason: String| PredicateError {
            input: input.to_string(),
            reason,
        };
        let toks = tokenize(input).map_err(err)?;
        let mut it = toks.into_iter().peekable();
        let mut conds = Vec::new();
        loop {
            let column = match it.next() {
                Some(Tok::Ident(c)) => c,
                other => return Err(err(format!("expected a column name, found {other:?}"))),
            };
            let col = partition_columns
                .iter()
                .find(|p| p.eq_ignore_ascii_case(&column))
                .cloned()
                .ok_or_else(|| {
                    err(format!(
                        "{column:?} is not a partition column (partition columns: {}); compaction selects whole partitions",
                        if partition_columns.is_empty() {
                            "none, the table is unpartitioned".to_string()
                        } else {
                            partition_columns.join(", ")
                        }
                    ))
                })?;
            let cond = if kw(it.peek(), "is") {
                it.next();
                let negated = kw(it.peek(), "not");
                if negated {
                    it.next();
                }
                if !kw(it.next().as_ref(), "null") {
                    return Err(err("expected NULL after IS [NOT]".into()));
                }
                Cond::IsNull {
                    column: col,
                    negated,
                }
            } else if kw(it.peek(), "in") || kw(it.peek(), "not") {
                let negated = kw(it.peek(), "not");
                it.next();
                if negated && !kw(it.next().as_ref(), "in") {
                    return Err(err("expected IN after NOT".into()));
                }
                if it.next() != Some(Tok::LParen) {
                    return Err(err("expected ( after IN".into()));
                }
                let mut values = Vec::new();
                loop {
                    values.push(literal(it.next()).map_err(err)?);
                    match it.next() {
                        Some(Tok::Comma) => continue,
                        Some(Tok::RParen) => break,
                        other => {
                            return Err(err(format!(
                                "expected , or ) in IN list, found {other:?}"
                            )));
                        }
                    }
                }
                Cond::In {
                    column: col,
                    values,
                    negated,
                }
            } else {
                let op = match it.next() {
                    Some(Tok::Op(o)) => match o.as_str() {
                        "=" => Op::Eq,
                        "!=" | "<>" => Op::Ne,
                        "<" => Op::Lt,
                        "<=" => Op::Le,
                        ">" => Op::Gt,
                        ">=" => Op::Ge,
                        _ => return Err(err(format!("unknown operator {o}"))),
                    },
                    other => {
                        return Err(err(format!(
                            "expected an operator after {column}, found {other:?}"
                        )));
                    }
                };
                Cond::Cmp {
                    column: col,
                    op,
                    value: literal(it.next()).map_err(err)?,
                }
            };
            conds.push(cond);
            match it.next() {
                None => break,
                Some(t) if kw(Some(&t), "and") => continue,
                Some(t) => {
                    return Err(err(format!(
                        "expected AND or the end, found {t:?} (OR is not supported)"
                    )));
                }
            }
        }
        Ok(Predicate {
            conds,
            text: input.trim().to_string(),
        })
    }

    /// Whether a partition (column → value, None for null) matches.
    pub fn matches(&self, values: &[(String, Option<String>)]) -> bool {
        let get = |c: &str| {
            values
                .iter()
                .find(|(k, _)| k == c)
                .and_then(|(_, v)| v.as_deref())
        };
        self.conds.iter().all(|cond| match cond {
            Cond::IsNull { column, negated } => get(column).is_none() != *negated,
            Cond::In {
                column,
                values,
                negated,
            } => match get(column) {
                None => false,
                Some(v) => {
                    values
                        .iter()
                        .any(|l| compare(v, l) == Some(Ordering::Equal))
                        != *negated
                }
            },
            Cond::Cmp { column, op, value } => match get(column).and_then(|v| compare(v, value)) {
                None => false,
                Some(o) => match op {
                    Op::Eq => o == Ordering::Equal,
                    Op::Ne => o != Ordering::Equal,
                    Op::Lt => o == Ordering::Less,
                    Op::Le => o != Ordering::Greater,
                    Op::Gt => o == Ordering::Greater,
                    Op::Ge => o != Ordering::Less,
                },
            },
        })
    }
}

/// Numbers compare numerically, everything else as text (ISO dates sort correctly as text).
fn compare(v: &str, l: &Literal) -> Option<Ordering> {
    match l {
        Literal::Num(n) => v.trim().parse::<f64>().ok().and_then(|x| x.partial_cmp(n)),
        Literal::Str(_) => Some(v.cmp(l.text().as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<String> {
        vec!["ingestion_date".into(), "region".into(), "hour".into()]
    }

    fn part(d: &str, r: Option<&str>, h: &str) -> Vec<(String, Option<String>)> {
        vec![
            ("ingestion_date".into(), Some(d.into())),
            ("region".into(), r.map(str::to_string)),
            ("hour".into(), Some(h.into())),
        ]
    }

    #[test]
    fn equality_ranges_in_and_null() {
        let p = Predicate::parse("ingestion_date = '2026-11-30'", &cols()).unwrap();
        assert!(p.matches(&part("2026-11-30", Some("eu"), "1")));
        assert!(!p.matches(&part("2026-11-29", Some("eu"), "1")));
        let p = Predicate::parse(
            "ingestion_date >= '2026-11-01' and region IN ('eu', 'us') AND hour < 10",
            &cols(),
        )
        .unwrap();
        assert!(p.matches(&part("2026-11-02", Some("us"), "9")));
        assert!(
            !p.matches(&part("2026-11-02", Some("us"), "10")),
            "numeric, not text, comparison"
        );
        assert!(!p.matches(&part("2026-10-31", Some("us"), "1")));
        assert!(!p.matches(&part("2026-11-02", None, "1")));
        let p = Predicate::parse("region IS NULL", &cols()).unwrap();
        assert!(p.matches(&part("d", None, "1")));
        let p = Predicate::parse("region is not null and region not in ('eu')", &cols()).unwrap();
        assert!(p.matches(&part("d", Some("us"), "1")));
        assert!(!p.matches(&part("d", Some("eu"), "1")));
    }

    #[test]
    fn non_partition_columns_are_refused_with_the_list() {
        let e = Predicate::parse("temperature > 3", &cols())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a partition column"), "{e}");
        assert!(e.contains("ingestion_date, region, hour"), "{e}");
    }

    #[test]
    fn syntax_errors_say_what_was_expected() {
        assert!(
            Predicate::parse("region = ", &cols())
                .unwrap_err()
                .reason
                .contains("literal")
        );
        assert!(
            Predicate::parse("region = 'eu' or hour = 1", &cols())
                .unwrap_err()
                .reason
                .contains("OR")
        );
        assert!(
            Predicate::parse("region = 'eu", &cols())
                .unwrap_err()
                .reason
                .contains("unterminated")
        );
        assert!(Predicate::parse("region ~ 'x'", &cols()).is_err());
    }
}
