//! What an order is expected to do to a column's overlap depth (`stats::skipping`), from the
//! plan alone: `k` outputs holding the rows in order. Sorted by a column, the outputs tile its
//! range (depth 1); every other column stays spread over each output (depth `k`). Z-ordered
//! over `d` columns, each output covers about `k^(-1/d)` of each column's range, so a point of
//! it lies in `k^(1-1/d)` outputs. A model, not a measure: the preview shows it beside the depth
//! measured now, and `report --skipping` measures the result.

use serde::Serialize;

use super::{OrderKind, RowOrder};

/// One ordering column's depth now (the table's mean, when its statistics were read) and the
/// depth expected among a bin's outputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DepthWhatIf {
    pub column: String,
    pub now: Option<f64>,
    pub expected: f64,
}

/// The expected mean depth of the `position`-th of an order's columns among `outputs` files.
pub fn expected_depth(kind: OrderKind, columns: usize, position: usize, outputs: u64) -> f64 {
    let k = outputs.max(1) as f64;
    match kind {
        OrderKind::Sort if position == 0 => 1.0,
        OrderKind::Sort => k,
        OrderKind::ZOrder => k.powf(1.0 - 1.0 / columns.max(1) as f64).max(1.0),
    }
}

/// Each of the order's columns: its depth now (`now` by column name) and the depth expected
/// among `outputs` files (the plan's largest bin).
pub fn what_if(
    order: &RowOrder,
    outputs: u64,
    now: impl Fn(&str) -> Option<f64>,
) -> Vec<DepthWhatIf> {
    let kind = order.effective_kind();
    let d = order.columns.len();
    order
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| DepthWhatIf {
            column: c.clone(),
            now: now(c),
            expected: expected_depth(kind, d, i, outputs),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sort_tiles_its_first_column_and_a_z_order_shares_the_gain_between_its_columns() {
        assert_eq!(expected_depth(OrderKind::Sort, 2, 0, 100), 1.0);
        assert_eq!(expected_depth(OrderKind::Sort, 2, 1, 100), 100.0);
        assert!((expected_depth(OrderKind::ZOrder, 2, 1, 100) - 10.0).abs() < 1e-9);
        assert!((expected_depth(OrderKind::ZOrder, 3, 0, 1000) - 100.0).abs() < 1e-6);
        assert_eq!(
            expected_depth(OrderKind::ZOrder, 2, 0, 1),
            1.0,
            "one output"
        );
        let order = RowOrder {
            kind: OrderKind::ZOrder,
            columns: vec!["sensor".into(), "ts".into()],
            physical: vec!["sensor".into(), "ts".into()],
        };
        let w = what_if(&order, 400, |c| (c == "sensor").then_some(400.0));
        assert_eq!(w[0].now, Some(400.0));
        assert_eq!(w[1].now, None);
        assert!((w[1].expected - 20.0).abs() < 1e-9);
    }
}
