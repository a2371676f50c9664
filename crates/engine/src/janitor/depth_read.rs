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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::thresholds::Thresholds;

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
