//! The kinds of table lakehealth reads. Each reader produces the same statistics (a
//! `TableReport`); only Delta tables are compacted in place.

pub mod iceberg;

use serde::Serialize;

use crate::engine::stats::table_report::TableReport;

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
}

/// What the UI says, where compaction is offered, for a table lakehealth does not compact.
pub fn compaction_unsupported(t: &TableReport) -> String {
    match t.format {
        TableFormat::Iceberg => iceberg::compaction_unsupported(t),
        f => format!("compaction of {} tables is not supported", f.label()),
    }
}
