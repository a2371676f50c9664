//! Re-clustering (`max_depth`): whether a partition whose files overlap on the order the
//! janitor keeps is due for a job that rewrites it whole in that order. Due only when a
//! column's mean depth is past the bound *and* the rewrite is expected to at least halve it
//! (the what-if model, `compact::ordering::what_if`): a large partition whose best order
//! still overlaps is not rewritten cycle after cycle. The model assumes distinct, evenly
//! spread values; a column of few or skewed values stays deeper after its rewrite than it
//! says, so the depth a partition's last re-clustering left (its floor) replaces the model's
//! when higher. Pure: the depths come from `depth_read`.

use crate::compact::ordering::OrderKind;
use crate::compact::ordering::what_if::expected_depth;

/// A rewrite must bring the depth down at least this many times to be worth its bytes.
pub const MIN_GAIN: f64 = 2.0;

/// The order the janitor keeps on a table: the policy's (`strategy`, `columns`), else the
/// table's clustering columns.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptOrder {
    pub kind: OrderKind,
    pub columns: Vec<String>,
    /// From the table's clustering domain, not the policy.
    pub clustered: bool,
}

impl KeptOrder {
    /// A single column is sorted, whatever the kind says.
    fn effective_kind(&self) -> OrderKind {
        if self.columns.len() == 1 {
            OrderKind::Sort
        } else {
            self.kind
        }
    }

    /// "z-order by sensor, ts", "the table's clustering (z-order by sensor, ts)".
    pub fn label(&self) -> String {
        let by = format!(
            "{} by {}",
            self.effective_kind().label(),
            self.columns.join(", ")
        );
        if self.clustered {
            format!("the table's clustering ({by})")
        } else {
            by
        }
    }
}

/// One of the order's columns in a partition: its mean depth now.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnDepth {
    pub column: String,
    pub mean: f64,
}

/// A partition past the bound on one of the order's columns (the one judged).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub due: bool,
    pub column: String,
    pub now: f64,
    /// Among the outputs a rewrite in order would write.
    pub expected: f64,
    pub max_depth: f64,
    pub order: String,
}

impl Verdict {
    pub fn reason(&self) -> String {
        let (c, now, bound, exp) = (&self.column, self.now, self.max_depth, self.expected);
        if self.due {
            format!(
                "due for re-clustering: a lookup on {c} opens {now:.1} files on average (max_depth {bound}); rewriting the partition in {} is expected to bring it to {exp:.1}",
                self.order
            )
        } else {
            format!(
                "{c} overlaps {now:.1} files deep (max_depth {bound}), but rewriting the partition in {} is expected to leave {exp:.1}, less than a {MIN_GAIN:.0}x gain",
                self.order
            )
        }
    }
}

/// The partition's verdict: None when every column of the order is within `max_depth`.
/// `outputs`: the files a rewrite would write (the partition's bytes over the target);
/// `floor`: each column's depth right after the partition's last re-clustering, when it was
/// still past the bound. Of the columns past the bound, the first one a rewrite would improve
/// enough is judged, else the deepest.
pub fn judge(
    order: &KeptOrder,
    max_depth: f64,
    depths: &[ColumnDepth],
    outputs: u64,
    floor: &[ColumnDepth],
) -> Option<Verdict> {
    let kind = order.effective_kind();
    let d = order.columns.len();
    let mut over: Vec<Verdict> = depths
        .iter()
        .filter(|c| c.mean > max_depth)
        .filter_map(|c| {
            let position = order.columns.iter().position(|k| *k == c.column)?;
            let left = floor
                .iter()
                .find(|f| f.column == c.column)
                .map_or(0.0, |f| f.mean);
            let expected = expected_depth(kind, d, position, outputs).max(left);
            Some(Verdict {
                due: c.mean >= expected * MIN_GAIN,
                column: c.column.clone(),
                now: c.mean,
                expected,
                max_depth,
                order: order.label(),
            })
        })
        .collect();
    if let Some(i) = over.iter().position(|v| v.due) {
        return Some(over.swap_remove(i));
    }
    over.into_iter().max_by(|a, b| a.now.total_cmp(&b.now))
}

/// The files a partition of `bytes` is rewritten into at `target` bytes each.
pub fn outputs(bytes: u64, target: u64) -> u64 {
    bytes.div_ceil(target.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z() -> KeptOrder {
        KeptOrder {
            kind: OrderKind::ZOrder,
            columns: vec!["sensor".into(), "ts".into()],
            clustered: false,
        }
    }

    fn depths(sensor: f64, ts: f64) -> Vec<ColumnDepth> {
        vec![
            ColumnDepth {
                column: "sensor".into(),
                mean: sensor,
            },
            ColumnDepth {
                column: "ts".into(),
                mean: ts,
            },
        ]
    }

    #[test]
    fn a_partition_past_the_bound_is_due_only_when_the_order_would_at_least_halve_its_depth() {
        assert_eq!(judge(&z(), 4.0, &depths(3.0, 4.0), 9, &[]), None, "within");
        // 9 outputs z-ordered on two columns: expected depth 3 each; 12 is 4x that.
        let v = judge(&z(), 4.0, &depths(12.0, 2.0), 9, &[]).unwrap();
        assert!(v.due);
        assert_eq!((v.column.as_str(), v.expected), ("sensor", 3.0));
        assert!(
            v.reason().starts_with(
                "due for re-clustering: a lookup on sensor opens 12.0 files on average (max_depth 4); rewriting the partition in z-order by sensor, ts is expected to bring it to 3.0"
            ),
            "{}",
            v.reason()
        );
        // 400 outputs: expected 20; a depth of 30 is past 4 but not twice 20.
        let v = judge(&z(), 4.0, &depths(30.0, 2.0), 400, &[]).unwrap();
        assert!(!v.due);
        assert!(
            v.reason().contains("expected to leave 20.0"),
            "{}",
            v.reason()
        );
    }

    #[test]
    fn a_sort_judges_its_first_column_and_a_column_it_cannot_tile_is_never_due() {
        let sort = KeptOrder {
            kind: OrderKind::Sort,
            columns: vec!["sensor".into(), "ts".into()],
            clustered: true,
        };
        // ts stays spread over every output of a sort by sensor: no gain, however deep.
        let v = judge(&sort, 4.0, &depths(2.0, 50.0), 50, &[]).unwrap();
        assert!(!v.due && v.column == "ts");
        let v = judge(&sort, 4.0, &depths(6.0, 50.0), 50, &[]).unwrap();
        assert!(v.due && v.column == "sensor" && v.expected == 1.0);
        assert!(
            v.order
                .starts_with("the table's clustering (sort by sensor, ts)")
        );
    }

    #[test]
    fn a_column_its_last_re_clustering_left_deep_is_due_again_only_at_twice_that_depth() {
        let sort = KeptOrder {
            kind: OrderKind::Sort,
            columns: vec!["sensor".into()],
            clustered: false,
        };
        let one = |mean: f64| {
            vec![ColumnDepth {
                column: "sensor".into(),
                mean,
            }]
        };
        // Three sensor values over 50 outputs: the model says 1, the rewrite left 17.
        assert!(judge(&sort, 4.0, &one(20.0), 50, &[]).unwrap().due);
        let v = judge(&sort, 4.0, &one(20.0), 50, &one(17.0)).unwrap();
        assert!(!v.due, "the same rewrite again would gain nothing");
        assert_eq!(v.expected, 17.0);
        assert!(judge(&sort, 4.0, &one(34.0), 50, &one(17.0)).unwrap().due);
    }

    #[test]
    fn outputs_round_up_and_are_never_zero() {
        assert_eq!(outputs(0, 128), 1);
        assert_eq!(outputs(129, 128), 2);
        assert_eq!(outputs(5, 0), 5);
    }
}
