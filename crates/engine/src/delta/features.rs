//! What a compaction honours of a table's protocol, feature by feature, by the rule Delta's
//! `PROTOCOL.md` gives for it. lakehealth writes its OPTIMIZE commits itself (`commit`), so it
//! answers for every feature a table lists: a feature is honoured (and this says how the commit
//! or the rewrite does it) or refused by name before anything is rewritten.
//!
//! Honoured: features that constrain values (`appendOnly`, `invariants`, `checkConstraints`,
//! `generatedColumns`, `identityColumns`, `allowColumnDefaults`; a compaction copies every value
//! as it is and `dataChange=false` keeps `changeDataFeed` silent), `deletionVectors` (applied
//! while rewriting), `timestampNtz`, `typeWidening` (outputs in the table's widened type, every
//! cast checked to cast back exactly; new adds carry `defaultRowCommitVersion`),
//! `domainMetadata` (never dropped: the commit writes no domain but row tracking's),
//! `clustering`/`liquid` (a clustered table's bins are z-ordered by its clustering columns and
//! their adds carry `clusteringProvider`, as Spark marks the files its clustering wrote; compacting it
//! unclustered must be asked for, and the plan says what it costs), `rowTracking` (fresh
//! row ids and commit versions on new adds and the high-water mark, and, when enabled, every
//! row's stable id and commit version materialized), `inCommitTimestamp`, `v2Checkpoint` and
//! `checkpointProtection` (a compaction writes no checkpoint and cleans no log),
//! `vacuumProtocolCheck` (it constrains vacuum only), `columnMapping` (outputs are written
//! with physical names and field ids, `column_mapping`).

use std::collections::HashMap;

/// The table property that turns row tracking on (stable ids must be preserved).
pub const ENABLE_ROW_TRACKING: &str = "delta.enableRowTracking";
pub const ROW_ID_COLUMN_KEY: &str = "delta.rowTracking.materializedRowIdColumnName";
pub const ROW_COMMIT_VERSION_COLUMN_KEY: &str =
    "delta.rowTracking.materializedRowCommitVersionColumnName";
pub const ENABLE_IN_COMMIT_TIMESTAMPS: &str = "delta.enableInCommitTimestamps";

/// What a table's protocol and properties ask of a compaction's rewrite and commit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteFeatures {
    /// `rowTracking` is supported: new adds get fresh `baseRowId`s above the high-water mark,
    /// which the commit raises.
    pub row_ids: bool,
    /// New adds carry `defaultRowCommitVersion` (row tracking or type widening).
    pub row_commit_versions: bool,
    /// Row tracking is enabled: the outputs hold every row's stable id and commit version in
    /// these hidden columns.
    pub materialize: Option<MaterializedColumns>,
    /// The commit carries `inCommitTimestamp` (the first action, monotonic).
    pub in_commit_timestamps: bool,
    /// A clustered (liquid) table: compacted, not re-clustered.
    pub clustered: bool,
}

/// What a plan says about how the table's features shape the compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureNote {
    /// A clustered (liquid) table compacted without its clustering (asked for): its new files
    /// are unclustered.
    NotReclustered,
    /// Row tracking is enabled: every row keeps its row id and row commit version.
    RowIdsKept,
    /// Commits carry an in-commit timestamp.
    InCommitTimestamps,
}

impl FeatureNote {
    /// Short enough for the TUI preview's line.
    pub fn text(self) -> &'static str {
        match self {
            FeatureNote::NotReclustered => {
                "clustered table compacted unclustered: lookups on its clustering columns open more files until it is clustered again"
            }
            FeatureNote::RowIdsKept => {
                "row tracking: every row keeps its row id and commit version"
            }
            FeatureNote::InCommitTimestamps => "commits carry in-commit timestamps",
        }
    }
}

impl WriteFeatures {
    pub fn notes(&self) -> Vec<FeatureNote> {
        let mut n = Vec::new();
        if self.clustered {
            n.push(FeatureNote::NotReclustered);
        }
        if self.materialize.is_some() {
            n.push(FeatureNote::RowIdsKept);
        }
        if self.in_commit_timestamps {
            n.push(FeatureNote::InCommitTimestamps);
        }
        n
    }
}

/// The hidden columns of a row-tracking table that hold materialized row ids and commit
/// versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaterializedColumns {
    pub row_id: String,
    pub row_commit_version: String,
}

/// A feature a compaction cannot honour yet, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedFeature {
    pub name: String,
    pub why: &'static str,
}

/// Why a table cannot be compacted as its protocol asks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureError {
    #[error("the table uses table features lakehealth cannot honour yet: {}", refused_text(.0))]
    Refused(Vec<RefusedFeature>),
    #[error(
        "row tracking is enabled but the table property {key} (the materialized column's name) is not set"
    )]
    MissingColumnName { key: &'static str },
}

fn refused_text(features: &[RefusedFeature]) -> String {
    features
        .iter()
        .map(|f| format!("{} ({})", f.name, f.why))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A table's protocol as the feature check needs it: versions and named features.
#[derive(Debug, Clone, Default)]
pub struct ProtocolFeatures {
    pub min_writer_version: i32,
    pub reader_features: Vec<String>,
    pub writer_features: Vec<String>,
}

impl ProtocolFeatures {
    pub fn of(p: &deltalake::kernel::Protocol) -> Self {
        let names = |f: Option<&[delta_kernel::table_features::TableFeature]>| {
            f.map(|f| f.iter().map(|f| f.to_string()).collect())
                .unwrap_or_default()
        };
        ProtocolFeatures {
            min_writer_version: p.min_writer_version(),
            reader_features: names(p.reader_features()),
            writer_features: names(p.writer_features()),
        }
    }

    fn supports(&self, name: &str) -> bool {
        self.writer_features.iter().any(|f| f == name)
    }
}

/// Why a feature is refused, or None when a compaction honours it.
fn refusal(name: &str) -> Option<&'static str> {
    match name {
        "appendOnly"
        | "invariants"
        | "checkConstraints"
        | "changeDataFeed"
        | "generatedColumns"
        | "identityColumns"
        | "allowColumnDefaults"
        | "deletionVectors"
        | "timestampNtz"
        | "timestampWithoutTimezone"
        | "typeWidening"
        | "typeWidening-preview"
        | "domainMetadata"
        | "clustering"
        | "liquid"
        | "rowTracking"
        | "inCommitTimestamp"
        | "v2Checkpoint"
        | "checkpointProtection"
        | "vacuumProtocolCheck"
        | "columnMapping" => None,
        "materializePartitionColumns" => Some(
            "its data files must hold the partition columns, which lakehealth's writer leaves out",
        ),
        "icebergCompatV1" | "icebergCompatV2" | "icebergCompatV3" => {
            Some("lakehealth does not keep the table's Iceberg metadata in step")
        }
        "variantType" | "variantType-preview" | "variantShredding" | "variantShredding-preview" => {
            Some("lakehealth does not rewrite variant columns yet")
        }
        "geospatial" => Some("lakehealth does not rewrite geospatial columns yet"),
        "catalogManaged" | "catalogOwned-preview" => {
            Some("its commits go through a catalog lakehealth does not speak")
        }
        _ => Some("unknown to lakehealth"),
    }
}

/// What a compaction must do for `protocol` and table properties `config`, or the features it
/// cannot honour (all of them, by name).
pub fn check(
    protocol: &ProtocolFeatures,
    config: &HashMap<String, String>,
) -> Result<WriteFeatures, FeatureError> {
    let mut refused: Vec<RefusedFeature> = Vec::new();
    for name in protocol
        .writer_features
        .iter()
        .chain(protocol.reader_features.iter())
    {
        if let Some(why) = refusal(name)
            && !refused.iter().any(|r| &r.name == name)
        {
            refused.push(RefusedFeature {
                name: name.clone(),
                why,
            });
        }
    }
    if !refused.is_empty() {
        refused.sort_by(|a, b| a.name.cmp(&b.name));
        return Err(FeatureError::Refused(refused));
    }
    let on = |key: &str| {
        config
            .get(key)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    };
    let row_ids = protocol.supports("rowTracking");
    let materialize = if row_ids && on(ENABLE_ROW_TRACKING) {
        Some(materialized_columns(config)?)
    } else {
        None
    };
    Ok(WriteFeatures {
        row_ids,
        row_commit_versions: row_ids
            || protocol.supports("typeWidening")
            || protocol.supports("typeWidening-preview"),
        materialize,
        in_commit_timestamps: protocol.supports("inCommitTimestamp")
            && on(ENABLE_IN_COMMIT_TIMESTAMPS),
        clustered: protocol.supports("clustering") || protocol.supports("liquid"),
    })
}

fn materialized_columns(
    config: &HashMap<String, String>,
) -> Result<MaterializedColumns, FeatureError> {
    let get = |key: &'static str| {
        config
            .get(key)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or(FeatureError::MissingColumnName { key })
    };
    Ok(MaterializedColumns {
        row_id: get(ROW_ID_COLUMN_KEY)?,
        row_commit_version: get(ROW_COMMIT_VERSION_COLUMN_KEY)?,
    })
}

/// The features of `table`'s loaded snapshot (Err: it has none loaded).
pub fn of_table(
    table: &deltalake::DeltaTable,
) -> Result<Result<WriteFeatures, FeatureError>, deltalake::DeltaTableError> {
    let snapshot = table.snapshot()?;
    let protocol = ProtocolFeatures::of(snapshot.protocol());
    Ok(check(&protocol, snapshot.metadata().configuration()))
}

/// Row tracking's hidden columns, when `table` has row tracking enabled (and its features can
/// be honoured at all).
pub fn hidden_columns(
    table: &deltalake::DeltaTable,
) -> Result<Option<MaterializedColumns>, deltalake::DeltaTableError> {
    Ok(of_table(table)?.ok().and_then(|f| f.materialize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v7(writer: &[&str], reader: &[&str]) -> ProtocolFeatures {
        ProtocolFeatures {
            min_writer_version: 7,
            reader_features: reader.iter().map(|s| s.to_string()).collect(),
            writer_features: writer.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_liquid_row_tracking_table_is_honoured_with_materialized_row_ids() {
        let p = v7(
            &["domainMetadata", "deletionVectors", "rowTracking", "liquid"],
            &["deletionVectors"],
        );
        let c = config(&[
            (ENABLE_ROW_TRACKING, "true"),
            (ROW_ID_COLUMN_KEY, "_row-id-col"),
            (ROW_COMMIT_VERSION_COLUMN_KEY, "_row-commit-version-col"),
        ]);
        let f = check(&p, &c).unwrap();
        assert!(f.row_ids && f.row_commit_versions && f.clustered);
        assert!(!f.in_commit_timestamps);
        assert_eq!(
            f.materialize,
            Some(MaterializedColumns {
                row_id: "_row-id-col".into(),
                row_commit_version: "_row-commit-version-col".into(),
            })
        );
    }

    #[test]
    fn row_tracking_supported_but_not_enabled_assigns_fresh_ids_only() {
        let f = check(&v7(&["rowTracking", "domainMetadata"], &[]), &config(&[])).unwrap();
        assert!(f.row_ids && f.row_commit_versions);
        assert_eq!(f.materialize, None);
    }

    #[test]
    fn enabled_row_tracking_without_its_column_names_is_an_error_naming_the_key() {
        let e = check(
            &v7(&["rowTracking", "domainMetadata"], &[]),
            &config(&[(ENABLE_ROW_TRACKING, "true"), (ROW_ID_COLUMN_KEY, "r")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            FeatureError::MissingColumnName {
                key: ROW_COMMIT_VERSION_COLUMN_KEY
            }
        );
    }

    #[test]
    fn in_commit_timestamps_need_the_feature_and_the_property() {
        let p = v7(&["inCommitTimestamp"], &[]);
        assert!(!check(&p, &config(&[])).unwrap().in_commit_timestamps);
        let on = config(&[(ENABLE_IN_COMMIT_TIMESTAMPS, "true")]);
        assert!(check(&p, &on).unwrap().in_commit_timestamps);
        assert!(!check(&v7(&[], &[]), &on).unwrap().in_commit_timestamps);
    }

    #[test]
    fn type_widening_alone_sets_row_commit_versions_but_no_row_ids() {
        let f = check(&v7(&["typeWidening"], &["typeWidening"]), &config(&[])).unwrap();
        assert!(f.row_commit_versions && !f.row_ids);
    }

    #[test]
    fn every_refused_feature_is_named_once_with_its_reason() {
        let e = check(
            &v7(
                &[
                    "variantType",
                    "domainMetadata",
                    "mysteryFeature",
                    "icebergCompatV2",
                ],
                &["variantType"],
            ),
            &config(&[]),
        )
        .unwrap_err();
        let FeatureError::Refused(r) = &e else {
            panic!("{e}")
        };
        let names: Vec<&str> = r.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["icebergCompatV2", "mysteryFeature", "variantType"]);
        let text = e.to_string();
        assert!(text.contains("variantType (lakehealth does not rewrite variant columns yet)"));
        assert!(text.contains("mysteryFeature (unknown to lakehealth)"));
    }

    #[test]
    fn a_legacy_protocol_needs_nothing() {
        let p = ProtocolFeatures {
            min_writer_version: 4,
            ..Default::default()
        };
        assert_eq!(check(&p, &config(&[])).unwrap(), WriteFeatures::default());
    }
}
