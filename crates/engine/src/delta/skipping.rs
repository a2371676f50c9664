//! A Delta table's skipping health: its add actions' statistics through delta-rs (parsed as
//! Python's `get_add_actions` shows them) and its clustering columns from the
//! `delta.clustering` domain (Delta's liquid clustering, as Spark writes it) or the older
//! `delta.liquid` one Databricks wrote.

use std::collections::HashMap;

use delta_kernel::schema::{DataType as KernelType, StructType};
use delta_kernel::table_features::ColumnMappingMode;
use deltalake::DeltaTable;
use serde::Deserialize;

use super::column_mapping::physical_name;
use super::domains::first_domain;
use crate::error::{EngineError, Result};
use crate::location::Location;
use crate::stats::skipping::SkippingHealth;
use crate::stats::skipping::columns::AddColumns;

/// The domain Spark's liquid clustering keeps its columns in.
pub const CLUSTERING_DOMAIN: &str = "delta.clustering";
/// The same, as Databricks wrote it before the protocol named it.
pub const LIQUID_DOMAIN: &str = "delta.liquid";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusteringDomain {
    clustering_columns: Vec<ClusteringColumn>,
}

/// A column as its path of (physical) field names: `["a", "b"]` (`delta.clustering`) or
/// `{"physicalName": ["a", "b"]}` (`delta.liquid`).
#[derive(Deserialize)]
#[serde(untagged)]
enum ClusteringColumn {
    Path(Vec<String>),
    Named {
        #[serde(rename = "physicalName")]
        physical_name: Vec<String>,
    },
}

impl ClusteringColumn {
    fn dotted(&self) -> String {
        match self {
            Self::Path(p) | Self::Named { physical_name: p } => p.join("."),
        }
    }
}

/// The clustering columns a clustering domain's configuration names, as dotted paths.
pub fn clustering_columns(
    domain: &str,
    configuration: &str,
) -> std::result::Result<Vec<String>, String> {
    serde_json::from_str::<ClusteringDomain>(configuration)
        .map(|d| d.clustering_columns.iter().map(|c| c.dotted()).collect())
        .map_err(|e| format!("its {domain} domain does not parse: {e}"))
}

/// The table's clustering columns by logical name, from the newest clustering domain its
/// snapshot holds (read by delta-kernel's log replay: delta-rs refuses `delta.*` domains).
pub(crate) async fn clustering_of(table: &DeltaTable, uri: &str) -> Result<Vec<String>> {
    let found = first_domain(table, &[CLUSTERING_DOMAIN, LIQUID_DOMAIN])
        .await
        .map_err(|e| EngineError::Unsupported {
            uri: uri.to_string(),
            detail: format!("reading the clustering domain: {e}"),
        })?;
    let Some((domain, configuration)) = found else {
        return Ok(Vec::new());
    };
    let physical =
        clustering_columns(domain, &configuration).map_err(|detail| EngineError::Unsupported {
            uri: uri.to_string(),
            detail,
        })?;
    let logical = logical_names(table);
    Ok(physical
        .into_iter()
        .map(|p| logical.get(&p).cloned().unwrap_or(p))
        .collect())
}

/// Logical dotted paths by physical ones (the same when the table is not column-mapped).
fn logical_names(table: &DeltaTable) -> HashMap<String, String> {
    let Ok(state) = table.snapshot() else {
        return HashMap::new();
    };
    let mode = state.snapshot().table_configuration().column_mapping_mode();
    let mut out = HashMap::new();
    fn walk(
        s: &StructType,
        mode: ColumnMappingMode,
        prefix: (&str, &str),
        out: &mut HashMap<String, String>,
    ) {
        for f in s.fields() {
            let join = |a: &str, b: &str| {
                if a.is_empty() {
                    b.to_string()
                } else {
                    format!("{a}.{b}")
                }
            };
            let physical = join(prefix.0, physical_name(f, mode));
            let logical = join(prefix.1, f.name());
            if let KernelType::Struct(inner) = f.data_type() {
                walk(inner, mode, (&physical, &logical), out);
            }
            out.insert(physical, logical);
        }
    }
    walk(state.schema().as_ref(), mode, ("", ""), &mut out);
    out
}

/// Reads `loc` at its latest version and measures how its files skip.
pub async fn skipping_health(
    loc: &Location,
    storage_options: &HashMap<String, String>,
) -> Result<SkippingHealth> {
    let uri = loc.display();
    let what = "reading file statistics";
    let table = crate::delta::delta_rs::load(loc, storage_options, what).await?;
    let clustering = clustering_of(&table, &uri).await?;
    let state = table
        .snapshot()
        .map_err(|e| EngineError::from_delta(&uri, what, e))?;
    let batches = state
        .add_actions_batches(true)
        .map_err(|e| EngineError::from_delta(&uri, what, e))?;
    Ok(SkippingHealth::from_adds(
        state.version(),
        &AddColumns::new(batches),
        clustering,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clustering_columns_are_read_as_dotted_paths_in_both_domains_and_a_bad_one_is_said() {
        assert_eq!(
            clustering_columns(
                CLUSTERING_DOMAIN,
                r#"{"clusteringColumns":[["sensor"],["loc","city"]],"domainName":"delta.clustering"}"#
            ),
            Ok(vec!["sensor".to_string(), "loc.city".to_string()])
        );
        assert_eq!(
            clustering_columns(
                LIQUID_DOMAIN,
                r#"{"clusteringColumns":[{"physicalName":["id"]}],"domainName":"delta.liquid"}"#
            ),
            Ok(vec!["id".to_string()])
        );
        let bad = clustering_columns(CLUSTERING_DOMAIN, "{}").unwrap_err();
        assert!(bad.contains("delta.clustering"), "{bad}");
    }
}
