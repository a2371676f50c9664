//! One attempt's commit file, as the table's features ask (`features`): every attempt builds it
//! anew for the exact version it tries, because row tracking's fresh ids and commit versions and
//! an in-commit timestamp depend on that version and on the commits before it.
//!
//! - `rowTracking`: each new add gets a `baseRowId` above the table's row id high-water mark
//!   (the `delta.rowTracking` domain, read at the version the attempt builds on) and the commit
//!   raises the mark in that domain; removes keep the ids of the adds they remove.
//! - `rowTracking` or `typeWidening`: new adds carry `defaultRowCommitVersion` = this version.
//! - row tracking enabled: the rows' stable ids and commit versions are materialized in the
//!   outputs (`row_tracking`), and the commit says so (`delta.rowTracking.preserved`).
//! - `inCommitTimestamp` enabled: `commitInfo` comes first with an `inCommitTimestamp` one
//!   millisecond past the previous commit's at least.

use std::collections::HashMap;

use bytes::Bytes;
use deltalake::DeltaTable;
use deltalake::kernel::transaction::CommitData;
use deltalake::kernel::{Action, Add, DomainMetadata};
use deltalake::logstore::LogStore;
use deltalake::protocol::DeltaOperation;
use serde_json::Value;

use crate::delta::domains::first_domain;
use crate::delta::features::WriteFeatures;
use crate::delta::log::actions::commit_info;

/// The domain that holds a row-tracking table's high-water mark.
pub const ROW_TRACKING_DOMAIN: &str = "delta.rowTracking";

/// Why an attempt's commit file could not be built (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("reading the table's row id high-water mark: {0}")]
    HighWaterMark(String),
    #[error(
        "the output {path} has no row count in its statistics, so no row ids can be assigned to it"
    )]
    NoRowCount { path: String },
    #[error("reading the previous commit's in-commit timestamp: {0}")]
    PreviousCommit(#[source] deltalake::DeltaTableError),
    #[error(transparent)]
    Serialize(#[from] deltalake::kernel::transaction::TransactionError),
}

/// What one attempt commits.
pub struct AttemptInput<'a> {
    pub removes: &'a [deltalake::kernel::Remove],
    pub adds: &'a [Add],
    pub operation: DeltaOperation,
    pub app_metadata: HashMap<String, Value>,
    /// The version this attempt writes (the snapshot's + 1).
    pub version: u64,
}

/// The bytes of the commit file for `input`, built for `table`'s loaded snapshot.
pub async fn commit_file(
    table: &DeltaTable,
    features: &WriteFeatures,
    input: AttemptInput<'_>,
) -> Result<Bytes, PrepareError> {
    let mut adds: Vec<Add> = input.adds.to_vec();
    let mut extra: Vec<Action> = Vec::new();
    if features.row_commit_versions {
        for a in &mut adds {
            a.default_row_commit_version = Some(input.version as i64);
        }
    }
    if features.row_ids {
        let mark = high_water_mark(table).await?;
        extra.push(Action::DomainMetadata(assign_row_ids(&mut adds, mark)?));
    }
    let mut app_metadata = input.app_metadata;
    if features.materialize.is_some() {
        app_metadata.insert(
            "tags".to_string(),
            serde_json::json!({ "delta.rowTracking.preserved": "true" }),
        );
    }
    let mut actions: Vec<Action> = input.removes.iter().cloned().map(Action::Remove).collect();
    actions.extend(adds.into_iter().map(Action::Add));
    actions.extend(extra);
    let mut data = CommitData::new(actions, input.operation, app_metadata, vec![]);
    if features.in_commit_timestamps {
        let ict = in_commit_timestamp(table.log_store().as_ref(), input.version).await?;
        if let Some(Action::CommitInfo(ci)) = data.actions.first_mut() {
            ci.in_commit_timestamp = Some(ict);
            ci.timestamp = Some(ict);
        }
    }
    Ok(data.get_bytes()?)
}

/// Gives each add fresh row ids above `mark`, in order; returns the domain action that raises
/// the mark to the last id given.
fn assign_row_ids(adds: &mut [Add], mark: i64) -> Result<DomainMetadata, PrepareError> {
    let mut next = mark + 1;
    for a in adds.iter_mut() {
        let rows = records(a).ok_or_else(|| PrepareError::NoRowCount {
            path: a.path.clone(),
        })?;
        a.base_row_id = Some(next);
        next += rows;
    }
    Ok(DomainMetadata {
        domain: ROW_TRACKING_DOMAIN.to_string(),
        configuration: serde_json::json!({ "rowIdHighWaterMark": next - 1 }).to_string(),
        removed: false,
    })
}

fn records(a: &Add) -> Option<i64> {
    let stats: Value = serde_json::from_str(a.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_i64()
}

/// The row id high-water mark of `table`'s loaded snapshot (-1 before any id was given), read
/// by delta-kernel's log replay of the `delta.rowTracking` domain.
async fn high_water_mark(table: &DeltaTable) -> Result<i64, PrepareError> {
    let err = |e: String| PrepareError::HighWaterMark(e);
    if table.version().is_none() {
        return Err(err("no version loaded".into()));
    }
    match first_domain(table, &[ROW_TRACKING_DOMAIN])
        .await
        .map_err(err)?
    {
        None => Ok(-1),
        Some((_, c)) => {
            parse_high_water_mark(&c).ok_or_else(|| err(format!("unreadable domain {c}")))
        }
    }
}

fn parse_high_water_mark(config: &str) -> Option<i64> {
    serde_json::from_str::<Value>(config)
        .ok()?
        .get("rowIdHighWaterMark")?
        .as_i64()
}

/// The in-commit timestamp of the commit at `version`: now, or one millisecond past the
/// previous commit's when that is later (clocks differ between writers).
async fn in_commit_timestamp(log: &dyn LogStore, version: u64) -> Result<i64, PrepareError> {
    let now = chrono::Utc::now().timestamp_millis();
    let previous = match version.checked_sub(1) {
        Some(v) => log
            .read_commit_entry(v)
            .await
            .map_err(PrepareError::PreviousCommit)?
            .and_then(|b| commit_info(&b))
            .and_then(|ci| ci.in_commit_timestamp),
        None => None,
    };
    Ok(match previous {
        Some(p) => now.max(p + 1),
        None => now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(path: &str, rows: Option<i64>) -> Add {
        Add {
            path: path.into(),
            stats: rows.map(|r| format!("{{\"numRecords\":{r}}}")),
            ..Default::default()
        }
    }

    #[test]
    fn fresh_row_ids_start_above_the_mark_and_the_mark_covers_every_row() {
        let mut adds = vec![add("a", Some(10)), add("b", Some(5))];
        let domain = assign_row_ids(&mut adds, 9).unwrap();
        assert_eq!(adds[0].base_row_id, Some(10));
        assert_eq!(adds[1].base_row_id, Some(20));
        assert_eq!(domain.domain, ROW_TRACKING_DOMAIN);
        assert_eq!(parse_high_water_mark(&domain.configuration), Some(24));
        assert!(!domain.removed);
    }

    #[test]
    fn a_table_without_a_mark_gives_ids_from_zero() {
        let mut adds = vec![add("a", Some(3))];
        let domain = assign_row_ids(&mut adds, -1).unwrap();
        assert_eq!(adds[0].base_row_id, Some(0));
        assert_eq!(parse_high_water_mark(&domain.configuration), Some(2));
    }

    #[test]
    fn an_output_without_a_row_count_gets_no_ids() {
        let mut adds = vec![add("a", None)];
        assert!(matches!(
            assign_row_ids(&mut adds, 0),
            Err(PrepareError::NoRowCount { .. })
        ));
    }

    #[test]
    fn spark_s_domain_with_its_name_is_read() {
        let c = r#"{"rowIdHighWaterMark":9,"domainName":"delta.rowTracking"}"#;
        assert_eq!(parse_high_water_mark(c), Some(9));
    }
}
