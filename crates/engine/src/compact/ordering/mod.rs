//! Orders a compaction can write a bin's rows in, beside the order it reads them
//! (bin-packing): a linear sort by columns, or a z-order over them (`zorder`, keys from
//! quantile boundaries sampled from the bin by `compact::order_sample`, computed per batch by
//! `keys`), both through DataFusion's spilling sort (`sorter`), so a bin larger than memory
//! sorts in bounded memory (`compact::ordered_bin` runs a bin so).
//! Such a bin is proven with the order-insensitive digest (`row_set_digest`): its rows are
//! only reordered.

pub mod keys;
pub mod sorter;
pub mod what_if;
pub mod zorder;

use arrow::datatypes::{DataType, Schema};

use crate::model::partition::PartitionValues;
use serde::{Deserialize, Serialize};

/// How a bin's rows are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    /// By the first column, then the next …
    Sort,
    /// By the interleaved bits of each column's quantile bucket.
    ZOrder,
}

impl OrderKind {
    pub fn label(self) -> &'static str {
        match self {
            OrderKind::Sort => "sort",
            OrderKind::ZOrder => "z-order",
        }
    }
}

/// An order over a table's columns, by logical name (as the user and the log's clustering
/// name them); `physical` are the names in the files (the same unless column-mapped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowOrder {
    pub kind: OrderKind,
    pub columns: Vec<String>,
    pub physical: Vec<String>,
}

impl RowOrder {
    /// The order as a user would type it: `z-order by sensor, ts`.
    pub fn describe(&self) -> String {
        format!(
            "{} by {}",
            self.effective_kind().label(),
            self.columns.join(", ")
        )
    }

    /// A z-order over one column is a sort by it (finer than its buckets).
    pub fn effective_kind(&self) -> OrderKind {
        if self.physical.len() == 1 {
            OrderKind::Sort
        } else {
            self.kind
        }
    }
}

/// How a compaction is asked to lay rows out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LayoutRequest {
    /// A clustered table's clustering (its clustering columns, the new files committed as
    /// liquid clustering's, as Spark's OPTIMIZE does); otherwise rows as read.
    #[default]
    Auto,
    /// Rows as read, even on a clustered table (its new files are then unclustered).
    Unclustered,
    /// Rows in this order: every file of each chosen partition rewritten (`whole_partitions`,
    /// as `compact --zorder` does), or each bin of small files ordered as it is merged (the
    /// janitor's: new data clustered as it is compacted, each byte rewritten as often as
    /// bin-packing rewrites it).
    Order {
        kind: OrderKind,
        columns: Vec<String>,
        whole_partitions: bool,
    },
}

impl LayoutRequest {
    /// An order as typed (the TUI preview): `zorder a,b`, `sort a`, `binpack`, or nothing
    /// (the table's default). An explicit order rewrites every file of the partitions, as
    /// `compact --zorder` does.
    pub fn parse_text(text: &str) -> Result<LayoutRequest, String> {
        let text = text.trim();
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let columns: Vec<String> = rest
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        let kind = match word.to_ascii_lowercase().as_str() {
            "" | "auto" => return Ok(LayoutRequest::Auto),
            "binpack" | "unclustered" if columns.is_empty() => {
                return Ok(LayoutRequest::Unclustered);
            }
            "zorder" | "z-order" => OrderKind::ZOrder,
            "sort" => OrderKind::Sort,
            _ => {
                return Err(format!(
                    "{text:?} is not an order: type zorder COLUMNS, sort COLUMNS (comma-separated), binpack, or nothing for the table's default"
                ));
            }
        };
        if columns.is_empty() {
            return Err(format!("{word} needs columns, e.g. {word} sensor,ts"));
        }
        Ok(LayoutRequest::Order {
            kind,
            columns,
            whole_partitions: true,
        })
    }

    /// The request as `parse_text` reads it back.
    pub fn text(&self) -> String {
        match self {
            LayoutRequest::Auto => String::new(),
            LayoutRequest::Unclustered => "binpack".into(),
            LayoutRequest::Order { kind, columns, .. } => {
                let word = match kind {
                    OrderKind::Sort => "sort",
                    OrderKind::ZOrder => "zorder",
                };
                format!("{word} {}", columns.join(","))
            }
        }
    }

    /// The `compact` flags that ask for it.
    pub fn flags(&self) -> Vec<String> {
        match self {
            LayoutRequest::Auto => Vec::new(),
            LayoutRequest::Unclustered => vec!["--unclustered".into()],
            LayoutRequest::Order { kind, columns, .. } => vec![
                match kind {
                    OrderKind::Sort => "--sort-by".into(),
                    OrderKind::ZOrder => "--zorder".into(),
                },
                columns.join(","),
            ],
        }
    }
}

/// The order a plan writes rows in, and what it rewrites for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedOrder {
    pub order: RowOrder,
    /// The table's clustering: new files carry `clusteringProvider`.
    pub clustering: bool,
    /// Every file of a partition is rewritten (an explicit order), not only its small ones
    /// (a clustered table's incremental clustering of its new files).
    pub whole_partitions: bool,
    /// Each column's overlap depth now and expected among the largest bin's outputs (set by
    /// the job).
    pub what_if: Vec<what_if::DepthWhatIf>,
    /// The partition of that bin (None: the table is unpartitioned).
    pub what_if_partition: Option<PartitionValues>,
}

/// Spark's liquid clustering's `clusteringProvider`.
pub const LIQUID_PROVIDER: &str = "liquid";

impl PlannedOrder {
    pub fn clustering_provider(&self) -> Option<String> {
        self.clustering.then(|| LIQUID_PROVIDER.to_string())
    }

    /// The what-if as one line: `overlap depth now → expected: sensor 400 → ~20, ts 400 → ~20`.
    pub fn depths_text(&self) -> Option<String> {
        if self.what_if.is_empty() {
            return None;
        }
        let cols: Vec<String> = self
            .what_if
            .iter()
            .map(|w| {
                let now = w.now.map_or("?".to_string(), |n| format!("{n:.0}"));
                format!("{} {now} → ~{:.0}", w.column, w.expected)
            })
            .collect();
        let place = match &self.what_if_partition {
            Some(p) => format!(" in {}", p.label()),
            None => String::new(),
        };
        Some(format!(
            "overlap depth{place} now → expected among the new files: {}",
            cols.join(", ")
        ))
    }

    /// One line for the plan: `z-order by sensor, ts (the table's clustering), every file`.
    pub fn describe(&self) -> String {
        let mut s = self.order.describe();
        if self.clustering {
            s.push_str(" (the table's clustering)");
        }
        s.push_str(if self.whole_partitions {
            ", every file of each partition"
        } else {
            ", the small files"
        });
        s
    }
}

/// Why columns cannot order a table's rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("no columns to order by")]
    Empty,
    #[error("column {0:?} is named twice")]
    Repeated(String),
    #[error("column {column:?} is not a data column of the table (its columns: {known})")]
    Unknown { column: String, known: String },
    #[error("column {column:?} is a partition column: every row of a partition holds one value")]
    Partition { column: String },
    #[error("column {column:?} is of type {data_type}, which has no order to cluster by")]
    NotOrderable { column: String, data_type: String },
    #[error("a z-order takes at most {max} columns (got {got})")]
    TooMany { max: usize, got: usize },
    #[error(
        "the table is clustered by {clustering}: ordering it by {asked} would undo its \
         clustering (compact without an order to keep it, or change it with ALTER TABLE ... \
         CLUSTER BY)"
    )]
    NotItsClustering { clustering: String, asked: String },
}

/// Types whose values have a total order a file's min/max describe.
fn orderable(t: &DataType) -> bool {
    t.is_primitive()
        || matches!(
            t,
            DataType::Boolean
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::FixedSizeBinary(_)
        )
}

/// Checks `columns` (logical names) against the table: `data_columns` are its top-level data
/// columns as (logical, physical) names, `file_schema` is the files'.
pub fn resolve(
    kind: OrderKind,
    columns: &[String],
    partition_columns: &[String],
    data_columns: &[(String, String)],
    file_schema: &Schema,
) -> Result<RowOrder, OrderError> {
    let physical_of = |c: &str| {
        data_columns
            .iter()
            .find(|(l, _)| l == c)
            .map(|(_, p)| p.clone())
    };
    if columns.is_empty() {
        return Err(OrderError::Empty);
    }
    if kind == OrderKind::ZOrder && columns.len() > zorder::MAX_COLUMNS {
        return Err(OrderError::TooMany {
            max: zorder::MAX_COLUMNS,
            got: columns.len(),
        });
    }
    let mut physical = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(OrderError::Repeated(c.clone()));
        }
        if partition_columns.contains(c) {
            return Err(OrderError::Partition { column: c.clone() });
        }
        let field = physical_of(c).and_then(|p| file_schema.field_with_name(&p).ok().cloned());
        let Some(field) = field else {
            return Err(OrderError::Unknown {
                column: c.clone(),
                known: data_columns
                    .iter()
                    .map(|(l, _)| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if !orderable(field.data_type()) {
            return Err(OrderError::NotOrderable {
                column: c.clone(),
                data_type: field.data_type().to_string(),
            });
        }
        physical.push(field.name().clone());
    }
    Ok(RowOrder {
        kind,
        columns: columns.to_vec(),
        physical,
    })
}

/// The order `request` asks of a table clustered by `clustering` (logical names, empty when
/// it is not clustered), with its columns resolved (`resolve`).
pub fn plan_order(
    request: &LayoutRequest,
    clustering: &[String],
    partition_columns: &[String],
    data_columns: &[(String, String)],
    file_schema: &Schema,
) -> Result<Option<PlannedOrder>, OrderError> {
    let resolve = |kind, columns: &[String]| {
        resolve(kind, columns, partition_columns, data_columns, file_schema)
    };
    match request {
        LayoutRequest::Unclustered => Ok(None),
        LayoutRequest::Auto if clustering.is_empty() => Ok(None),
        // Spark clusters by a Hilbert curve over the columns; a z-order is the same kind of
        // space-filling order (and a sort for one column). Clustering columns it cannot order
        // by (a nested field) leave the table bin-packed as before, and the plan says its
        // new files are unclustered.
        LayoutRequest::Auto => {
            Ok(resolve(OrderKind::ZOrder, clustering)
                .ok()
                .map(|order| PlannedOrder {
                    order,
                    clustering: true,
                    whole_partitions: false,
                    what_if: Vec::new(),
                    what_if_partition: None,
                }))
        }
        LayoutRequest::Order {
            kind,
            columns,
            whole_partitions,
        } => {
            if !clustering.is_empty() && columns.as_slice() != clustering {
                return Err(OrderError::NotItsClustering {
                    clustering: clustering.join(", "),
                    asked: columns.join(", "),
                });
            }
            Ok(Some(PlannedOrder {
                order: resolve(*kind, columns)?,
                clustering: !clustering.is_empty(),
                whole_partitions: *whole_partitions,
                what_if: Vec::new(),
                what_if_partition: None,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("sensor", DataType::Utf8, true),
            Field::new("ts", DataType::Int64, true),
            Field::new(
                "tags",
                DataType::List(std::sync::Arc::new(Field::new(
                    "item",
                    DataType::Utf8,
                    true,
                ))),
                true,
            ),
        ])
    }

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    fn same() -> Vec<(String, String)> {
        ["sensor", "ts", "tags"]
            .iter()
            .map(|c| (c.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn columns_resolve_to_their_names_in_the_files_and_bad_ones_are_named() {
        let s = schema();
        let parts = cols(&["day"]);
        let o = resolve(
            OrderKind::ZOrder,
            &cols(&["sensor", "ts"]),
            &parts,
            &same(),
            &s,
        )
        .unwrap();
        assert_eq!(o.physical, cols(&["sensor", "ts"]));
        assert_eq!(o.describe(), "z-order by sensor, ts");
        let mapped = resolve(
            OrderKind::Sort,
            &cols(&["Sensor"]),
            &parts,
            &[("Sensor".to_string(), "sensor".to_string())],
            &s,
        )
        .unwrap();
        assert_eq!(mapped.physical, cols(&["sensor"]));
        assert_eq!(mapped.columns, cols(&["Sensor"]));
        let err =
            |c: &[&str]| resolve(OrderKind::ZOrder, &cols(c), &parts, &same(), &s).unwrap_err();
        assert_eq!(err(&[]), OrderError::Empty);
        assert!(matches!(err(&["nope"]), OrderError::Unknown { .. }));
        assert!(err(&["nope"]).to_string().contains("sensor, ts"));
        assert!(matches!(err(&["day"]), OrderError::Partition { .. }));
        assert!(matches!(err(&["tags"]), OrderError::NotOrderable { .. }));
        assert_eq!(err(&["ts", "ts"]), OrderError::Repeated("ts".into()));
    }

    #[test]
    fn a_clustered_table_is_clustered_by_default_and_never_by_other_columns() {
        let s = schema();
        let clustering = cols(&["sensor", "ts"]);
        let auto = plan_order(&LayoutRequest::Auto, &clustering, &[], &same(), &s)
            .unwrap()
            .unwrap();
        assert!(auto.clustering && !auto.whole_partitions);
        assert_eq!(auto.order.columns, clustering);
        assert_eq!(auto.clustering_provider().as_deref(), Some(LIQUID_PROVIDER));
        assert_eq!(
            plan_order(&LayoutRequest::Auto, &[], &[], &same(), &s).unwrap(),
            None,
            "not clustered: rows as read"
        );
        assert_eq!(
            plan_order(&LayoutRequest::Unclustered, &clustering, &[], &same(), &s).unwrap(),
            None
        );
        // Clustered by a nested field it cannot order by: bin-packed, not refused.
        let nested = cols(&["loc.city"]);
        assert_eq!(
            plan_order(&LayoutRequest::Auto, &nested, &[], &same(), &s).unwrap(),
            None
        );
        let other = LayoutRequest::Order {
            kind: OrderKind::Sort,
            columns: cols(&["ts"]),
            whole_partitions: true,
        };
        assert!(matches!(
            plan_order(&other, &clustering, &[], &same(), &s),
            Err(OrderError::NotItsClustering { .. })
        ));
        let explicit = plan_order(&other, &[], &[], &same(), &s).unwrap().unwrap();
        assert!(explicit.whole_partitions && !explicit.clustering);
        assert_eq!(explicit.clustering_provider(), None);
    }

    #[test]
    fn an_order_as_typed_reads_back_and_gives_the_compact_flags() {
        for text in ["zorder sensor,ts", "sort ts", "binpack", ""] {
            let l = LayoutRequest::parse_text(text).unwrap();
            assert_eq!(l.text(), text);
        }
        let z = LayoutRequest::parse_text("  Z-Order sensor , ts ").unwrap();
        assert_eq!(z.flags(), ["--zorder", "sensor,ts"]);
        assert_eq!(
            LayoutRequest::parse_text("binpack").unwrap().flags(),
            ["--unclustered"]
        );
        assert!(
            LayoutRequest::parse_text("zorder")
                .unwrap_err()
                .contains("needs columns")
        );
        assert!(
            LayoutRequest::parse_text("hilbert a")
                .unwrap_err()
                .contains("not an order")
        );
    }

    #[test]
    fn a_z_order_over_one_column_is_a_sort() {
        let s = schema();
        let o = resolve(OrderKind::ZOrder, &cols(&["ts"]), &[], &same(), &s).unwrap();
        assert_eq!(o.effective_kind(), OrderKind::Sort);
    }
}
