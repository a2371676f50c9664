//! The janitor's reads of overlap depth (`max_depth`): a Delta table's file statistics through
//! delta-rs, measured per partition for the columns of the order it keeps only. A read costs
//! a log replay with statistics, so it is kept per table: read again once the table has moved
//! and `depth_every` has passed, never while the table's job runs, and afresh after a
//! re-clustering job was planned from it. A job plans from the latest version whatever the
//! read's age: a stale depth can only make a rewrite early or late, never wrong.

use std::collections::HashMap;
use std::time::Duration;

use super::clustering::{ColumnDepth, KeptOrder};
use super::policy::{Policy, Recluster};
use crate::compact::ordering::{LayoutRequest, OrderKind};
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::model::partition::PartitionValues;
use crate::stats::skipping::columns::AddColumns;
use crate::stats::skipping::partition_depths;

/// One table's depth as last read.
#[derive(Debug, Clone)]
pub struct TableDepth {
    pub version: u64,
    pub read_ms: i64,
    pub order: KeptOrder,
    /// Partitions with a column of the order past the bound, and their depths (the others
    /// are decided without: memory follows what is due, not the partitions).
    pub over: HashMap<PartitionValues, Vec<ColumnDepth>>,
    pub partitions: usize,
    /// Why some of the order's columns could not be judged (they have no statistics).
    pub note: Option<String>,
}

impl TableDepth {
    /// Whether this read still serves the table at `version`: the same version, or a younger
    /// read than `every` (a streamed table moves every few seconds; depth drifts over hours).
    pub fn serves(&self, version: u64, now_ms: i64, every: Duration) -> bool {
        let every_ms = every.as_millis().min(i64::MAX as u128) as i64;
        self.version == version || now_ms.saturating_sub(self.read_ms) < every_ms
    }
}

/// What the janitor knows of a table's depth this cycle.
#[derive(Debug, Clone)]
pub enum DepthState {
    /// The policy judges no depth on this table (no `max_depth`, an Iceberg table, or an
    /// unclustered table under `strategy = "auto"`): nothing to read.
    NotJudged,
    Read(TableDepth),
    /// The read failed: decisions say so.
    Failed(String),
}

/// The order the janitor keeps on a Delta table: the policy's, else (`auto`) its clustering
/// columns when its protocol lists clustering; None: none to keep.
pub fn wanted(policy: &Policy, features: &[String]) -> Option<Wanted> {
    policy.recluster?;
    match &policy.layout {
        LayoutRequest::Order { kind, columns, .. } => Some(Wanted::Columns(KeptOrder {
            kind: *kind,
            columns: columns.clone(),
            clustered: false,
        })),
        LayoutRequest::Auto if features.iter().any(|f| f == "clustering" || f == "liquid") => {
            Some(Wanted::Clustering)
        }
        LayoutRequest::Auto | LayoutRequest::Unclustered => None,
    }
}

/// The order to judge, before the table is read.
#[derive(Debug, Clone)]
pub enum Wanted {
    Columns(KeptOrder),
    /// The table's clustering columns, read with its statistics.
    Clustering,
}

/// Reads `loc`'s file statistics and keeps the partitions past `recluster`'s bound, measured
/// among their files of at least `min_size` bytes (small files are the small-file rule's: a
/// streamed partition's newest files overlap everything until they are merged).
pub async fn read(
    loc: &Location,
    storage_options: &HashMap<String, String>,
    wanted: Wanted,
    recluster: Recluster,
    min_size: u64,
    now_ms: i64,
) -> Result<TableDepth> {
    let uri = loc.display();
    let what = "reading file statistics for depth";
    let table = crate::delta::delta_rs::load(loc, storage_options, what).await?;
    let order = match wanted {
        Wanted::Columns(o) => o,
        // No clustering columns (`CLUSTER BY NONE`): nothing to keep, as a compaction sees it.
        Wanted::Clustering => KeptOrder {
            kind: OrderKind::ZOrder,
            columns: crate::delta::skipping::clustering_of(&table, &uri).await?,
            clustered: true,
        },
    };
    let state = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(&uri, what, e))?;
    let adds = AddColumns::new(
        state
            .add_actions_batches(true)
            .map_err(|e| EngineError::from_delta(&uri, what, e))?,
    );
    let with_stats = adds.stat_columns();
    let missing: Vec<&str> = order
        .columns
        .iter()
        .filter(|c| !with_stats.contains(c))
        .map(String::as_str)
        .collect();
    let note = (!missing.is_empty()).then(|| {
        format!(
            "no min/max statistics for {} (not a column of the table, or past delta.dataSkippingNumIndexedCols)",
            missing.join(", ")
        )
    });
    let all = partition_depths(&adds, &order.columns, min_size);
    let partitions = all.len();
    let over = all
        .into_iter()
        .filter(|p| p.columns.iter().any(|c| c.mean_depth > recluster.max_depth))
        .map(|p| {
            let depths = p
                .columns
                .into_iter()
                .map(|c| ColumnDepth {
                    column: c.column,
                    mean: c.mean_depth,
                })
                .collect();
            (p.partition, depths)
        })
        .collect();
    Ok(TableDepth {
        version: state.version(),
        read_ms: now_ms,
        order,
        over,
        partitions,
        note,
    })
}

/// The read's partitions keyed as the log's report keys them. delta-rs gives partition values
/// typed and prints them its way (`2026-11-01T00:00:00`, `1.5`), the log keeps the writer's
/// text (`2026-11-01 00:00:00.000000`, `1.50`): a partition no key of `known` spells alike is
/// matched by value. Returns the keyed map and the partitions that match none.
pub fn keyed_as<V>(
    over: HashMap<PartitionValues, V>,
    known: &[&PartitionValues],
) -> (HashMap<PartitionValues, V>, Vec<PartitionValues>) {
    let mut out = HashMap::new();
    let mut unmatched = Vec::new();
    for (p, v) in over {
        if known.contains(&&p) {
            out.insert(p, v);
            continue;
        }
        let alike = known.iter().find(|k| {
            k.0.len() == p.0.len()
                && k.0
                    .iter()
                    .zip(&p.0)
                    .all(|(a, b)| a.0 == b.0 && same_value(a.1.as_deref(), b.1.as_deref()))
        });
        match alike {
            Some(k) => {
                out.insert((*k).clone(), v);
            }
            None => unmatched.push(p),
        }
    }
    (out, unmatched)
}

/// Two spellings of one partition value: equal as text, as numbers, or as timestamps written
/// with `T` or a space, a `Z`, or trailing fractional zeros.
fn same_value(a: Option<&str>, b: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return a.is_none() && b.is_none();
    };
    if a == b {
        return true;
    }
    if let (Ok(x), Ok(y)) = (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        return x == y;
    }
    let time = |s: &str| {
        let s = s.trim().trim_end_matches('Z').replacen('T', " ", 1);
        match s.split_once('.') {
            Some((whole, frac)) => {
                let frac = frac.trim_end_matches('0');
                if frac.is_empty() {
                    whole.to_string()
                } else {
                    format!("{whole}.{frac}")
                }
            }
            None => s,
        }
    };
    time(a) == time(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::thresholds::Thresholds;

    #[test]
    fn a_partition_delta_rs_prints_its_way_is_keyed_as_the_log_spells_it() {
        let pv = |v: &str| PartitionValues(vec![("t".into(), Some(v.into()))]);
        let log = [
            pv("2026-11-01 00:00:00.000000"),
            pv("1.50"),
            PartitionValues(vec![("t".into(), None)]),
        ];
        let known: Vec<&PartitionValues> = log.iter().collect();
        let over: HashMap<PartitionValues, u8> = [
            (pv("2026-11-01T00:00:00Z"), 1),
            (pv("1.5"), 2),
            (PartitionValues(vec![("t".into(), None)]), 3),
            (pv("2026-11-02T00:00:00"), 4),
        ]
        .into();
        let (keyed, unmatched) = keyed_as(over, &known);
        assert_eq!(keyed[&log[0]], 1);
        assert_eq!(keyed[&log[1]], 2);
        assert_eq!(keyed[&log[2]], 3);
        assert_eq!(unmatched, [pv("2026-11-02T00:00:00")]);
        assert!(!same_value(Some("a"), None));
        assert!(!same_value(
            Some("2026-11-01 00:00:01"),
            Some("2026-11-01T00:00:00")
        ));
    }

    fn policy(text: &str) -> Policy {
        let base = Thresholds {
            target_file_size: 1 << 27,
            small_file_size: 1 << 27,
            max_file_size: 1 << 30,
        };
        Policy::parse(text, "p.toml", base).unwrap()
    }

    #[test]
    fn depth_is_wanted_for_the_policys_columns_or_a_clustered_tables_and_nothing_else() {
        let none = policy("");
        assert!(
            wanted(&none, &["clustering".into()]).is_none(),
            "no max_depth"
        );
        let auto = policy("max_depth = 4");
        assert!(wanted(&auto, &[]).is_none(), "an unclustered table");
        assert!(matches!(
            wanted(&auto, &["liquid".into()]),
            Some(Wanted::Clustering)
        ));
        let z = policy("strategy = \"zorder\"\ncolumns = [\"a\", \"b\"]\nmax_depth = 4");
        match wanted(&z, &[]) {
            Some(Wanted::Columns(o)) => assert_eq!(o.columns, ["a", "b"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_read_serves_its_version_and_any_later_one_until_depth_every_passes() {
        let read = |over: bool| TableDepth {
            version: 5,
            read_ms: 0,
            order: KeptOrder {
                kind: OrderKind::Sort,
                columns: vec!["a".into()],
                clustered: false,
            },
            over: if over {
                HashMap::from([(PartitionValues(Vec::new()), Vec::new())])
            } else {
                HashMap::new()
            },
            partitions: 1,
            note: None,
        };
        let every = Duration::from_secs(60);
        assert!(read(true).serves(5, 1_000_000, every), "same version");
        assert!(
            read(true).serves(6, 59_999, every),
            "moved, but read recently"
        );
        assert!(!read(false).serves(6, 60_000, every));
    }
}
