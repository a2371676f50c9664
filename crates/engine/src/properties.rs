//! The table properties lakehealth reads (`delta.targetFileSize`, `delta.checkpointInterval`,
//! `delta.deletedFileRetentionDuration`, `delta.columnMapping.mode`), parsed once by delta-kernel's `TableProperties`, the parser
//! delta-rs itself uses. What the kernel could not parse is kept, so callers can name the
//! property and its value instead of silently using a default.

use std::num::NonZero;
use std::time::Duration;

use delta_kernel::table_features::ColumnMappingMode;
use delta_kernel::table_properties::TableProperties;

pub const TARGET_FILE_SIZE: &str = "delta.targetFileSize";
pub const CHECKPOINT_INTERVAL: &str = "delta.checkpointInterval";
pub const DELETED_FILE_RETENTION_DURATION: &str = "delta.deletedFileRetentionDuration";
pub const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";

/// Delta's default `delta.checkpointInterval`.
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 10;
/// Delta's default `delta.deletedFileRetentionDuration` (7 days).
pub const DEFAULT_DELETED_FILE_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A property of ours whose value the kernel could not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidProperty {
    pub key: &'static str,
    pub value: String,
}

impl InvalidProperty {
    /// What a valid value looks like.
    pub fn expected(&self) -> &'static str {
        match self.key {
            TARGET_FILE_SIZE => "a positive number of bytes, e.g. 134217728",
            CHECKPOINT_INTERVAL => "a positive number of commits, e.g. 10",
            DELETED_FILE_RETENTION_DURATION => "an interval such as 'interval 7 days'",
            COLUMN_MAPPING_MODE => "none, id or name",
            _ => "a valid value",
        }
    }
}

impl std::fmt::Display for InvalidProperty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "table property {} = {:?} is not valid (expected {})",
            self.key,
            self.value,
            self.expected()
        )
    }
}

impl std::error::Error for InvalidProperty {}

/// The parsed properties of one table.
#[derive(Debug, Clone, Default)]
pub struct TableProps {
    parsed: TableProperties,
    invalid: Vec<InvalidProperty>,
}

const OURS: [&str; 4] = [
    TARGET_FILE_SIZE,
    CHECKPOINT_INTERVAL,
    DELETED_FILE_RETENTION_DURATION,
    COLUMN_MAPPING_MODE,
];

impl TableProps {
    /// Parses a metadata `configuration` (entries without a value are absent properties).
    pub fn parse<'a>(configuration: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let raw: Vec<(&str, &str)> = configuration.into_iter().collect();
        let parsed = TableProperties::from(raw.iter().copied());
        let invalid = OURS
            .iter()
            .filter_map(|&key| {
                let (_, value) = raw.iter().find(|(k, _)| *k == key)?;
                // The kernel keeps a value it cannot parse among the unknown properties, except
                // the column mapping mode, which it leaves unset.
                let failed = parsed.unknown_properties.contains_key(key)
                    || (key == COLUMN_MAPPING_MODE && parsed.column_mapping_mode.is_none());
                failed.then(|| InvalidProperty {
                    key,
                    value: value.to_string(),
                })
            })
            .collect();
        Self { parsed, invalid }
    }

    /// Properties the kernel could not parse, in a fixed order.
    pub fn invalid(&self) -> &[InvalidProperty] {
        &self.invalid
    }

    fn invalid_of(&self, key: &str) -> Option<&InvalidProperty> {
        self.invalid.iter().find(|p| p.key == key)
    }

    /// `delta.targetFileSize`, when set and valid.
    pub fn target_file_size(&self) -> Option<u64> {
        self.parsed.target_file_size.map(NonZero::get)
    }

    /// `delta.targetFileSize`: Err names the property when its value is not valid.
    pub fn checked_target_file_size(&self) -> Result<Option<u64>, InvalidProperty> {
        match self.invalid_of(TARGET_FILE_SIZE) {
            Some(p) => Err(p.clone()),
            None => Ok(self.target_file_size()),
        }
    }

    /// `delta.checkpointInterval`, else Delta's default.
    pub fn checkpoint_interval(&self) -> u64 {
        self.parsed
            .checkpoint_interval
            .map_or(DEFAULT_CHECKPOINT_INTERVAL, NonZero::get)
    }

    /// `delta.deletedFileRetentionDuration`, else Delta's default.
    pub fn deleted_file_retention(&self) -> Duration {
        self.parsed
            .deleted_file_retention_duration
            .unwrap_or(DEFAULT_DELETED_FILE_RETENTION)
    }

    /// `delta.columnMapping.mode` (absent: none); Err names an unknown mode.
    pub fn column_mapping_mode(&self) -> Result<ColumnMappingMode, InvalidProperty> {
        match self.invalid_of(COLUMN_MAPPING_MODE) {
            Some(p) => Err(p.clone()),
            None => Ok(self
                .parsed
                .column_mapping_mode
                .unwrap_or(ColumnMappingMode::None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> TableProps {
        TableProps::parse(kv.iter().copied())
    }

    #[test]
    fn absent_properties_are_delta_defaults() {
        let p = props(&[]);
        assert_eq!(p.target_file_size(), None);
        assert_eq!(p.checkpoint_interval(), 10);
        assert_eq!(p.deleted_file_retention().as_secs(), 7 * 24 * 3600);
        assert_eq!(p.column_mapping_mode(), Ok(ColumnMappingMode::None));
        assert!(p.invalid().is_empty());
    }

    #[test]
    fn valid_values_are_parsed_by_the_kernel() {
        let p = props(&[
            (TARGET_FILE_SIZE, "33554432"),
            (CHECKPOINT_INTERVAL, "100"),
            (DELETED_FILE_RETENTION_DURATION, "interval 2 hours"),
            (COLUMN_MAPPING_MODE, "name"),
            ("some.other", "x"),
        ]);
        assert_eq!(p.checked_target_file_size(), Ok(Some(33_554_432)));
        assert_eq!(p.checkpoint_interval(), 100);
        assert_eq!(p.deleted_file_retention().as_secs(), 2 * 3600);
        assert_eq!(p.column_mapping_mode(), Ok(ColumnMappingMode::Name));
        assert!(p.invalid().is_empty());
    }

    #[test]
    fn invalid_values_are_named_and_fall_back_to_defaults() {
        let p = props(&[
            (TARGET_FILE_SIZE, "12parsecs"),
            (CHECKPOINT_INTERVAL, "0"),
            (DELETED_FILE_RETENTION_DURATION, "soon"),
            (COLUMN_MAPPING_MODE, "sideways"),
        ]);
        let keys: Vec<&str> = p.invalid().iter().map(|i| i.key).collect();
        assert_eq!(
            keys,
            [
                TARGET_FILE_SIZE,
                CHECKPOINT_INTERVAL,
                DELETED_FILE_RETENTION_DURATION,
                COLUMN_MAPPING_MODE
            ]
        );
        assert_eq!(p.target_file_size(), None);
        let e = p.checked_target_file_size().unwrap_err().to_string();
        assert!(e.contains("delta.targetFileSize = \"12parsecs\""), "{e}");
        assert!(e.contains("positive number of bytes"), "{e}");
        assert_eq!(p.checkpoint_interval(), 10);
        assert_eq!(p.deleted_file_retention(), DEFAULT_DELETED_FILE_RETENTION);
        assert!(p.column_mapping_mode().is_err());
    }
}
