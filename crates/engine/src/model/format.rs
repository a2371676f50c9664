//! Which kind of table a folder holds, and what lakehealth may do to each kind.

use serde::Serialize;

/// What a table is, as found on storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableFormat {
    /// A folder with `_delta_log/`.
    Delta,
    /// A folder (or prefix) of Parquet files, Hive-style `key=value/` partitions, no log.
    ParquetFolder,
    /// A folder written by Spark's Parquet file sink: `_spark_metadata/` lists the valid files.
    SparkFileSink,
    /// An Iceberg table (`metadata/*.metadata.json`), read-only.
    Iceberg,
}

impl TableFormat {
    /// Short label for lists and reports.
    pub fn label(self) -> &'static str {
        match self {
            TableFormat::Delta => "delta",
            TableFormat::ParquetFolder => "parquet",
            TableFormat::SparkFileSink => "spark-sink",
            TableFormat::Iceberg => "iceberg",
        }
    }

    /// Only Delta tables are compacted in place (atomically, by the log).
    pub fn can_compact(self) -> bool {
        matches!(self, TableFormat::Delta)
    }

    /// Plain Parquet folders (with or without Spark's sink log) can become Delta tables in place.
    pub fn can_convert(self) -> bool {
        matches!(
            self,
            TableFormat::ParquetFolder | TableFormat::SparkFileSink
        )
    }

    /// Why compaction is not offered, said where it would be.
    pub fn why_not_compactable(self) -> Option<&'static str> {
        match self {
            TableFormat::Delta => None,
            TableFormat::ParquetFolder | TableFormat::SparkFileSink => Some(
                "plain Parquet files are never rewritten in place (readers listing the folder mid-rewrite would see rows twice or not at all, and Spark's sink log would undo it): convert the folder to Delta first (`lakehealth convert`, or `C` in the table view), then compact it",
            ),
            TableFormat::Iceberg => Some(
                "Iceberg tables are read-only in lakehealth: compact them with Iceberg's rewrite_data_files",
            ),
        }
    }
}
