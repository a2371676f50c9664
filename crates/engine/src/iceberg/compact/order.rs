//! A row order for an Iceberg compaction (`compact --sort-by` / `--zorder`): the columns the
//! user names, resolved against the table's current schema to their field ids (a file written
//! before a rename still holds the column under its old name: the rewrite finds it by id), and
//! the table sort order the new files may claim in their manifest entries (`sort_order_id`):
//! only a linear sort whose leading fields are exactly the table order's, ascending and nulls
//! first. A z-order is no Iceberg sort order, so its files claim none.

use serde::Serialize;

use crate::compact::ordering::what_if::{DepthWhatIf, what_if};
use crate::compact::ordering::{OrderKind, RowOrder};
use crate::iceberg::metadata::TableMetadata;

/// Types whose values sort as Iceberg orders them (and whose statistics bound them).
const ORDERABLE: &[&str] = &[
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "timestamp_ns",
    "timestamptz_ns",
    "string",
    "uuid",
    "binary",
];

fn orderable(ty: &str) -> bool {
    ORDERABLE.contains(&ty) || ty.starts_with("decimal(") || ty.starts_with("fixed[")
}

/// The order a job is asked for, as typed (`--sort-by a,b`, `--zorder a,b`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRequest {
    pub kind: OrderKind,
    pub columns: Vec<String>,
    /// Every file of each chosen partition rewritten (`compact --zorder`), else each bin of
    /// small files ordered as it is merged (the janitor's: new data lands ordered, each byte
    /// rewritten as often as bin-packing rewrites it).
    pub whole_partitions: bool,
}

/// An order resolved on one table's schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IceOrder {
    /// `physical`: the current schema's names (a file's own names are found by `field_ids`).
    pub order: RowOrder,
    pub field_ids: Vec<i32>,
    /// The table sort order the new files are written in, when one matches.
    pub sort_order_id: Option<i32>,
    /// See `OrderRequest::whole_partitions`.
    pub whole_partitions: bool,
    /// Each column's overlap depth expected among the largest bin's outputs.
    pub what_if: Vec<DepthWhatIf>,
}

impl IceOrder {
    /// One line for the plan: `z-order by id, ts (every file of each partition rewritten)`.
    pub fn describe(&self) -> String {
        let claim = match self.sort_order_id {
            Some(id) => format!("; new files claim the table's sort order {id}"),
            None => String::new(),
        };
        let scope = if self.whole_partitions {
            "every file of each partition rewritten"
        } else {
            "each bin of small files ordered as it is merged"
        };
        format!("{} ({scope}{claim})", self.order.describe())
    }

    /// The what-if as one line, as Delta's plan shows it.
    pub fn depths_text(&self) -> Option<String> {
        if self.what_if.is_empty() {
            return None;
        }
        let cols: Vec<String> = self
            .what_if
            .iter()
            .map(|w| format!("{} ~{:.0}", w.column, w.expected))
            .collect();
        Some(format!(
            "overlap depth expected among the largest bin's new files: {}",
            cols.join(", ")
        ))
    }

    /// Sets the what-if for a largest bin of `outputs` files.
    pub fn predict(&mut self, outputs: u64) {
        self.what_if = what_if(&self.order, outputs, |_| None);
    }
}

/// Resolves `columns` (as typed) on `meta`'s current schema. An unknown, repeated, nested or
/// unorderable column is refused, naming it and the columns there are.
pub fn resolve(meta: &TableMetadata, req: &OrderRequest) -> Result<IceOrder, String> {
    let (kind, columns) = (req.kind, &req.columns);
    if columns.is_empty() {
        return Err("an order needs at least one column".into());
    }
    let top = meta.top_level_columns();
    let mut field_ids = Vec::new();
    let mut names = Vec::new();
    for c in columns {
        let c = c.trim();
        let Some((id, name, ty)) = top.iter().find(|(_, n, _)| n == c) else {
            let known: Vec<&str> = top.iter().map(|(_, n, _)| n.as_str()).collect();
            return Err(format!(
                "the table has no top-level column {c:?} to order by; its columns: {}",
                known.join(", ")
            ));
        };
        if !orderable(ty) {
            return Err(format!(
                "column {name:?} is of type {ty}, which lakehealth does not order by"
            ));
        }
        if field_ids.contains(id) {
            return Err(format!("column {name:?} is named twice in the order"));
        }
        field_ids.push(*id);
        names.push(name.clone());
    }
    let order = RowOrder {
        kind,
        columns: names.clone(),
        physical: names,
    };
    let sort_order_id = if order.effective_kind() == OrderKind::Sort {
        claimed_sort_order(meta, &field_ids)
    } else {
        None
    };
    Ok(IceOrder {
        order,
        field_ids,
        sort_order_id,
        whole_partitions: req.whole_partitions,
        what_if: Vec::new(),
    })
}

/// The id of a table sort order the rows sorted by `field_ids` (ascending, nulls first) are
/// in: an order of identity fields, ascending, nulls first, that is a prefix of them. Order 0
/// (unsorted) is never claimed.
fn claimed_sort_order(meta: &TableMetadata, field_ids: &[i32]) -> Option<i32> {
    meta.sort_orders
        .iter()
        .filter(|o| o.order_id != 0 && !o.fields.is_empty() && o.fields.len() <= field_ids.len())
        .filter(|o| {
            o.fields.iter().zip(field_ids).all(|(f, id)| {
                f.source_id == *id
                    && f.transform == "identity"
                    && f.direction.as_deref().unwrap_or("asc") == "asc"
                    && f.null_order.as_deref().unwrap_or("nulls-first") == "nulls-first"
            })
        })
        // The longest order they satisfy says most.
        .max_by_key(|o| o.fields.len())
        .map(|o| o.order_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(sort_orders: serde_json::Value) -> TableMetadata {
        let json = serde_json::json!({
            "format-version": 2, "location": "/t",
            "schemas": [{"schema-id": 0, "type": "struct", "fields": [
                {"id": 1, "name": "id", "type": "long", "required": false},
                {"id": 2, "name": "ts", "type": "timestamp", "required": false},
                {"id": 3, "name": "tags", "type": {"type": "list", "element-id": 4, "element": "string", "element-required": false}, "required": false},
                {"id": 5, "name": "amount", "type": "decimal(9,2)", "required": false}]}],
            "current-schema-id": 0,
            "sort-orders": sort_orders,
        });
        TableMetadata::parse(json.to_string().as_bytes()).unwrap()
    }

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    fn resolve(m: &TableMetadata, kind: OrderKind, c: &[String]) -> Result<IceOrder, String> {
        super::resolve(
            m,
            &OrderRequest {
                kind,
                columns: c.to_vec(),
                whole_partitions: true,
            },
        )
    }

    #[test]
    fn columns_resolve_to_field_ids_and_bad_ones_are_named() {
        let m = meta(serde_json::json!([]));
        let o = resolve(&m, OrderKind::ZOrder, &cols(&["id", " ts"])).unwrap();
        assert_eq!(o.field_ids, vec![1, 2]);
        assert_eq!(o.order.columns, cols(&["id", "ts"]));
        assert_eq!(o.sort_order_id, None);
        assert!(resolve(&m, OrderKind::Sort, &cols(&["amount"])).is_ok());
        let e = resolve(&m, OrderKind::Sort, &cols(&["sensor"])).unwrap_err();
        assert!(e.contains("\"sensor\"") && e.contains("id, ts"), "{e}");
        let e = resolve(&m, OrderKind::Sort, &cols(&["tags"])).unwrap_err();
        assert!(e.contains("no top-level column \"tags\""), "{e}");
        let e = resolve(&m, OrderKind::Sort, &cols(&["id", "id"])).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        assert!(resolve(&m, OrderKind::Sort, &[]).is_err());
    }

    #[test]
    fn a_sort_claims_a_table_order_it_satisfies_and_a_z_order_claims_none() {
        let m = meta(serde_json::json!([
            {"order-id": 0, "fields": []},
            {"order-id": 1, "fields": [{"source-id": 2, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]},
            {"order-id": 2, "fields": [{"source-id": 2, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]},
            {"order-id": 3, "fields": [{"source-id": 2, "transform": "day", "direction": "asc", "null-order": "nulls-first"}]},
            {"order-id": 4, "fields": [
                {"source-id": 2, "transform": "identity", "direction": "asc", "null-order": "nulls-first"},
                {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}
        ]));
        let sort = |c: &[&str]| {
            resolve(&m, OrderKind::Sort, &cols(c))
                .unwrap()
                .sort_order_id
        };
        assert_eq!(sort(&["ts"]), Some(1));
        assert_eq!(sort(&["ts", "id"]), Some(4), "the longest order satisfied");
        assert_eq!(sort(&["ts", "amount"]), Some(1));
        assert_eq!(sort(&["id"]), None, "no order leads with id");
        let z = resolve(&m, OrderKind::ZOrder, &cols(&["ts", "id"])).unwrap();
        assert_eq!(z.sort_order_id, None);
        // A z-order over one column is a sort by it.
        let z1 = resolve(&m, OrderKind::ZOrder, &cols(&["ts"])).unwrap();
        assert_eq!(z1.sort_order_id, Some(1));
    }
}
