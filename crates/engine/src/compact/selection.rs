//! Which partitions a compaction touches: a predicate on partition columns, in SQL
//! (`ingestion_date = '2026-11-30'`, `day >= '2026-11-01' AND region IN ('eu', 'us')`,
//! `k IS NULL OR (k = 'a' AND h < 3)`). The SQL is parsed by sqlparser (DataFusion's parser);
//! this module only translates its syntax tree into partition filters. A predicate on a
//! non-partition column is an error: compaction rewrites whole partitions.

use std::cmp::Ordering;

use deltalake::datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, UnaryOperator, Value,
};
use deltalake::datafusion::sql::sqlparser::dialect::GenericDialect;
use deltalake::datafusion::sql::sqlparser::keywords::Keyword;
use deltalake::datafusion::sql::sqlparser::parser::{Parser, ParserError};
use deltalake::datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, TokenizerError};

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Str(String),
    Num(f64),
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

impl Op {
    /// The operator with its operands swapped (`1 < a` is `a > 1`).
    fn flipped(self) -> Op {
        match self {
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
            o => o,
        }
    }
}

/// Conditions joined by AND and OR.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Cond(Cond),
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
}

/// A filter on partition columns, and its SQL as the parser renders it (recorded as the
/// OPTIMIZE commit's `predicate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    pub filter: Filter,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --where {input:?}: {reason}")]
pub struct PredicateError {
    pub input: String,
    pub reason: String,
}

const SUPPORTED: &str = "use =, !=, <, <=, >, >=, [NOT] IN, IS [NOT] NULL, AND, OR and parentheses";

/// Why a predicate is refused (the `reason` of a `PredicateError`). Syntax is kept as text:
/// the SQL parser's messages are already the explanation.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error(
        "{name:?} is not a partition column (partition columns: {columns}); compaction selects whole partitions"
    )]
    NotAPartitionColumn { name: String, columns: String },
    #[error("expected a partition column, found {0}")]
    ExpectedColumn(String),
    #[error("a comparison with NULL selects nothing: use IS NULL or IS NOT NULL")]
    NullComparison,
    #[error("expected a literal ('text' or a number), found {0}")]
    ExpectedLiteral(String),
    /// A column name where a text literal was meant (`day = "x"` names a column `x`).
    #[error(
        "expected a literal, found the column name {found}: text literals take single quotes ('{bare}')"
    )]
    ColumnForLiteral { found: String, bare: String },
    #[error("bad number {text}")]
    BadNumber {
        text: String,
        #[source]
        source: std::num::ParseFloatError,
    },
    #[error("operator {0} is not supported: {supported}", supported = SUPPORTED)]
    Operator(String),
    #[error("{0}: a comparison needs a partition column on one side")]
    NoColumn(String),
    #[error(
        "NOT is supported only as NOT IN and IS NOT NULL (write != for a single value); {}",
        SUPPORTED
    )]
    Not,
    #[error("{0} alone is not a condition: compare a partition column with a value")]
    NotACondition(String),
    #[error("{0} is not supported: {supported}", supported = SUPPORTED)]
    Unsupported(String),
    #[error("not valid SQL: {0}")]
    Tokens(#[source] TokenizerError),
    #[error("not valid SQL: {0}")]
    Syntax(String),
    #[error("the predicate is nested too deeply")]
    TooDeep,
    #[error(
        "it joins {0} conditions with AND/OR; at most {max} are accepted (list many values with IN (...))",
        max = MAX_CONDITIONS
    )]
    TooManyConditions(usize),
    #[error("unexpected {token} after {expr} (join conditions with AND or OR)")]
    Trailing { token: String, expr: String },
}

/// Resolves names to the table's partition columns (an exact match first, then ignoring
/// case, as Spark resolves columns); `Any` takes every name for a column, to check a
/// predicate's shape before its tables are known.
enum Columns<'a> {
    Of(&'a [String]),
    Any,
}

impl Columns<'_> {
    fn resolve(&self, name: &str) -> Result<String, Refused> {
        let cols = match self {
            Columns::Of(cols) => *cols,
            Columns::Any => return Ok(name.to_string()),
        };
        cols.iter()
            .find(|p| p.as_str() == name)
            .or_else(|| cols.iter().find(|p| p.eq_ignore_ascii_case(name)))
            .cloned()
            .ok_or_else(|| Refused::NotAPartitionColumn {
                name: name.to_string(),
                columns: if cols.is_empty() {
                    "none, the table is unpartitioned".to_string()
                } else {
                    cols.join(", ")
                },
            })
    }

    /// The partition column `e` names, None when `e` is not a column reference.
    fn of(&self, e: &Expr) -> Option<Result<String, Refused>> {
        let name = match e {
            Expr::Identifier(i) => i.value.clone(),
            // `a.b` names a column whose name holds a dot.
            Expr::CompoundIdentifier(parts) => parts
                .iter()
                .map(|i: &Ident| i.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
            Expr::Nested(inner) => return self.of(inner),
            _ => return None,
        };
        Some(self.resolve(&name))
    }

    fn required(&self, e: &Expr) -> Result<String, Refused> {
        self.of(e)
            .unwrap_or_else(|| Err(Refused::ExpectedColumn(e.to_string())))
    }
}

fn literal(e: &Expr) -> Result<Literal, Refused> {
    match e {
        Expr::Nested(inner) => literal(inner),
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Ok(Literal::Str(s.clone())),
            Value::Number(n, _) => number(&n.to_string(), 1.0),
            // Partition values of boolean columns are the strings "true" and "false".
            Value::Boolean(b) => Ok(Literal::Str(b.to_string())),
            Value::Null => Err(Refused::NullComparison),
            other => Err(Refused::ExpectedLiteral(other.to_string())),
        },
        Expr::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) if matches!(v.value, Value::Number(..)) => {
                let Value::Number(n, _) = &v.value else {
                    unreachable!("matched a number above")
                };
                number(
                    &n.to_string(),
                    if *op == UnaryOperator::Minus {
                        -1.0
                    } else {
                        1.0
                    },
                )
            }
            _ => Err(Refused::ExpectedLiteral(e.to_string())),
        },
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => Err(Refused::ColumnForLiteral {
            found: e.to_string(),
            bare: e
                .to_string()
                .trim_matches(|c| c == '"' || c == '`')
                .to_string(),
        }),
        other => Err(Refused::ExpectedLiteral(other.to_string())),
    }
}

fn number(text: &str, sign: f64) -> Result<Literal, Refused> {
    text.parse::<f64>()
        .map(|n| Literal::Num(sign * n))
        .map_err(|source| Refused::BadNumber {
            text: text.to_string(),
            source,
        })
}

fn comparison(op: &BinaryOperator) -> Option<Op> {
    Some(match op {
        BinaryOperator::Eq => Op::Eq,
        BinaryOperator::NotEq => Op::Ne,
        BinaryOperator::Lt => Op::Lt,
        BinaryOperator::LtEq => Op::Le,
        BinaryOperator::Gt => Op::Gt,
        BinaryOperator::GtEq => Op::Ge,
        _ => return None,
    })
}

/// Translates the syntax tree into a filter, refusing what is not a partition filter.
fn translate(e: &Expr, cols: &Columns) -> Result<Filter, Refused> {
    let cond = |c: Cond| Ok(Filter::Cond(c));
    match e {
        Expr::Nested(inner) => translate(inner, cols),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => Ok(Filter::And(
            Box::new(translate(left, cols)?),
            Box::new(translate(right, cols)?),
        )),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Or,
            right,
        } => Ok(Filter::Or(
            Box::new(translate(left, cols)?),
            Box::new(translate(right, cols)?),
        )),
        Expr::BinaryOp { left, op, right } => {
            let Some(op) = comparison(op) else {
                return Err(Refused::Operator(op.to_string()));
            };
            // The column may be on either side: `'2026-11-01' <= day` is `day >= '2026-11-01'`.
            let (column, op, value) = match (cols.of(left), cols.of(right)) {
                (Some(c), _) => (c?, op, literal(right)?),
                (None, Some(c)) => (c?, op.flipped(), literal(left)?),
                (None, None) => return Err(Refused::NoColumn(e.to_string())),
            };
            cond(Cond::Cmp { column, op, value })
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => cond(Cond::In {
            column: cols.required(expr)?,
            values: list.iter().map(literal).collect::<Result<_, _>>()?,
            negated: *negated,
        }),
        Expr::IsNull(expr) | Expr::IsNotNull(expr) => cond(Cond::IsNull {
            column: cols.required(expr)?,
            negated: matches!(e, Expr::IsNotNull(_)),
        }),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            ..
        } => Err(Refused::Not),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_) => {
            Err(Refused::NotACondition(e.to_string()))
        }
        other => Err(Refused::Unsupported(other.to_string())),
    }
}

/// The most conditions a predicate may join (`a = 1 OR a = 2 ...`).
pub const MAX_CONDITIONS: usize = 256;

fn parse_sql(input: &str) -> Result<Expr, Refused> {
    let syntax = |e: ParserError| match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => Refused::Syntax(m),
        ParserError::RecursionLimitExceeded => Refused::TooDeep,
    };
    let tokens = Tokenizer::new(&GenericDialect {}, input)
        .tokenize()
        .map_err(Refused::Tokens)?;
    // The parser chains AND/OR without recursion, but the tree it builds is as deep as the
    // chain, and walking or dropping it recurses: bound it before parsing.
    let joins = tokens
        .iter()
        .filter(|t| matches!(t, Token::Word(w) if w.keyword == Keyword::AND || w.keyword == Keyword::OR))
        .count();
    if joins >= MAX_CONDITIONS {
        return Err(Refused::TooManyConditions(joins + 1));
    }
    let mut parser = Parser::new(&GenericDialect {}).with_tokens(tokens);
    let expr = parser.parse_expr().map_err(syntax)?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(Refused::Trailing {
            token: next.token.to_string(),
            expr: expr.to_string(),
        });
    }
    Ok(expr)
}

impl Predicate {
    /// Parses and checks every column against the table's partition columns.
    pub fn parse(input: &str, partition_columns: &[String]) -> Result<Self, PredicateError> {
        let err = |reason: Refused| PredicateError {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let expr = parse_sql(input).map_err(err)?;
        let filter = translate(&expr, &Columns::Of(partition_columns)).map_err(err)?;
        Ok(Predicate {
            filter,
            text: expr.to_string(),
        })
    }

    /// Checks everything but the column names (unknown until a table is open): a subquery, a
    /// function or an unsupported operator is refused here, when a policy loads.
    pub fn check_shape(input: &str) -> Result<(), PredicateError> {
        let err = |reason: Refused| PredicateError {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let expr = parse_sql(input).map_err(err)?;
        translate(&expr, &Columns::Any).map_err(err)?;
        Ok(())
    }

    /// Whether a partition (column → value, None for null) matches. A comparison involving a
    /// NULL value is false, as SQL's unknown is for selection (there is no NOT to invert it).
    pub fn matches(&self, values: &[(String, Option<String>)]) -> bool {
        self.filter.matches(values)
    }
}

impl Filter {
    fn matches(&self, values: &[(String, Option<String>)]) -> bool {
        match self {
            Filter::And(a, b) => a.matches(values) && b.matches(values),
            Filter::Or(a, b) => a.matches(values) || b.matches(values),
            Filter::Cond(c) => c.matches(values),
        }
    }
}

impl Cond {
    fn matches(&self, values: &[(String, Option<String>)]) -> bool {
        let get = |c: &str| {
            values
                .iter()
                .find(|(k, _)| k == c)
                .and_then(|(_, v)| v.as_deref())
        };
        match self {
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
        }
    }
}

/// Numbers compare numerically, everything else as text (ISO dates sort correctly as text).
fn compare(v: &str, l: &Literal) -> Option<Ordering> {
    match l {
        Literal::Num(n) => v.trim().parse::<f64>().ok().and_then(|x| x.partial_cmp(n)),
        Literal::Str(s) => Some(v.cmp(s.as_str())),
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

    fn reason(input: &str) -> String {
        Predicate::parse(input, &cols()).unwrap_err().reason
    }

    #[test]
    fn an_or_of_eighteen_thousand_terms_is_refused_without_overflowing_the_stack() {
        let chain = |n: usize| {
            (0..n)
                .map(|i| format!("hour = {i}"))
                .collect::<Vec<_>>()
                .join(" OR ")
        };
        // Run on a small stack, as a tokio worker's: a recursion this deep would abort.
        let r = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || reason(&chain(18_000)))
            .unwrap()
            .join()
            .unwrap();
        assert!(r.contains("18000 conditions") && r.contains("IN ("), "{r}");
        let ok = Predicate::parse(&chain(MAX_CONDITIONS), &cols()).unwrap();
        assert!(ok.matches(&part("2026-11-30", None, "3")));
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
        let p = Predicate::parse("region <> 'eu' AND hour != -1", &cols()).unwrap();
        assert!(p.matches(&part("d", Some("us"), "1")));
        assert!(!p.matches(&part("d", Some("eu"), "1")));
        assert!(
            !p.matches(&part("d", None, "1")),
            "NULL <> 'eu' is not true"
        );
    }

    #[test]
    fn or_and_parentheses_group_as_sql_does() {
        // AND binds tighter than OR.
        let p = Predicate::parse("region = 'eu' OR region = 'us' AND hour = 1", &cols()).unwrap();
        assert!(p.matches(&part("d", Some("eu"), "5")));
        assert!(!p.matches(&part("d", Some("us"), "5")));
        assert!(p.matches(&part("d", Some("us"), "1")));
        let p = Predicate::parse("(region = 'eu' OR region = 'us') AND hour = 1", &cols()).unwrap();
        assert!(!p.matches(&part("d", Some("eu"), "5")));
        assert!(p.matches(&part("d", Some("eu"), "1")));
        let p = Predicate::parse(
            "region IS NULL OR (ingestion_date >= '2026-11-01' AND (hour < 2 OR hour > 22))",
            &cols(),
        )
        .unwrap();
        assert!(p.matches(&part("2020-01-01", None, "12")));
        assert!(p.matches(&part("2026-11-02", Some("eu"), "23")));
        assert!(!p.matches(&part("2026-11-02", Some("eu"), "12")));
        assert!(!p.matches(&part("2026-10-02", Some("eu"), "23")));
    }

    #[test]
    fn quoted_identifiers_and_literals_on_the_left() {
        let cols = vec!["my col".to_string(), "Day".to_string(), "a.b".to_string()];
        let p = Predicate::parse("\"my col\" = 'x' AND `Day` >= '2026-01-01'", &cols).unwrap();
        let v = |c: &str, d: &str| {
            vec![
                ("my col".to_string(), Some(c.to_string())),
                ("Day".to_string(), Some(d.to_string())),
                ("a.b".to_string(), Some("1".to_string())),
            ]
        };
        assert!(p.matches(&v("x", "2026-02-01")));
        assert!(!p.matches(&v("y", "2026-02-01")));
        // Names resolve ignoring case; a dotted name is one column.
        let p = Predicate::parse("day = '2026-01-01' AND a.b = 1", &cols).unwrap();
        assert!(p.matches(&v("x", "2026-01-01")));
        // `'2026-01-01' < Day` is `Day > '2026-01-01'`.
        let p = Predicate::parse("'2026-01-01' < Day", &cols).unwrap();
        assert!(p.matches(&v("x", "2026-01-02")));
        assert!(!p.matches(&v("x", "2026-01-01")));
        // Quotes inside a literal.
        let p = Predicate::parse("\"my col\" = 'it''s'", &cols).unwrap();
        assert!(p.matches(&v("it's", "d")));
    }

    #[test]
    fn the_text_is_the_parsed_sql() {
        let p = Predicate::parse(
            "ingestion_date>='2026-11-01' and (region in ('eu','us') or region is null)",
            &cols(),
        )
        .unwrap();
        assert_eq!(
            p.text,
            "ingestion_date >= '2026-11-01' AND (region IN ('eu', 'us') OR region IS NULL)"
        );
        let p = Predicate::parse("region = 'it''s'", &cols()).unwrap();
        assert_eq!(p.text, "region = 'it''s'");
        // The rendering parses back to the same filter.
        let again = Predicate::parse(&p.text, &cols()).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn non_partition_columns_are_refused_with_the_list() {
        let e = Predicate::parse("temperature > 3", &cols())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a partition column"), "{e}");
        assert!(e.contains("ingestion_date, region, hour"), "{e}");
        let e = reason("region = 'eu' OR temperature > 3");
        assert!(
            e.contains("\"temperature\" is not a partition column"),
            "{e}"
        );
        let e = Predicate::parse("d = 1", &[]).unwrap_err().reason;
        assert!(e.contains("unpartitioned"), "{e}");
    }

    #[test]
    fn syntax_errors_say_what_was_expected() {
        assert!(reason("region = ").contains("not valid SQL"));
        assert!(
            reason("region = 'eu")
                .to_lowercase()
                .contains("unterminated")
        );
        assert!(reason("region ~ 'x'").contains("not supported"));
        assert!(reason("region LIKE 'e%'").contains("not supported"));
        assert!(reason("NOT region = 'eu'").contains("NOT IN"));
        assert!(reason("region = 'eu' hour = 1").contains("AND or OR"));
        assert!(reason("region = NULL").contains("IS NULL"));
        assert!(reason("region = \"eu\"").contains("single quotes"));
        assert!(reason("region = hour").contains("single quotes"));
        assert!(reason("1 = 1").contains("partition column on one side"));
        assert!(reason("region").contains("not a condition"));
        assert!(reason("").contains("not valid SQL"));
    }
}
