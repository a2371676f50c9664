//! Iceberg compaction committed through the table's catalog: lakehealth writes the `replace`
//! snapshot itself (format v2: manifests, manifest list, metadata JSON), as it reads manifests
//! itself, and swaps it in with the catalog's compare-and-swap. Bins are planned as
//! `rewrite_data_files` would (`plan`; with `--sort-by`/`--zorder`, `order`: whole
//! partitions), rewritten and proven by content fingerprint (`rewrite`; sorted through
//! `sorted_bin`), and committed one by one (`job`).

pub mod avro_file;
pub(crate) mod catalog;
pub(crate) mod commit;
pub(crate) mod confine;
pub(crate) mod data_file_stats;
pub mod job;
pub(crate) mod ledger;
pub(crate) mod manifest_write;
pub mod order;
pub(crate) mod plan;
pub mod price;
pub(crate) mod rest_catalog;
pub(crate) mod rewrite;
pub(crate) mod snapshot;
pub(crate) mod sorted_bin;
pub(crate) mod sql_catalog;
pub(crate) mod table_state;
pub mod where_filter;

use crate::error::EngineError;

#[derive(Debug, thiserror::Error)]
pub enum IcebergCompactError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    #[error("{what} {file}: {source}")]
    Avro {
        what: &'static str,
        file: String,
        #[source]
        source: avro_file::AvroFileError,
    },
    #[error("the job record {file} cannot be sealed: {detail}")]
    Seal { file: String, detail: String },
    #[error("metadata file {file}: {source}")]
    Json {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} {file}: {detail}")]
    Malformed {
        what: &'static str,
        file: String,
        detail: String,
    },
    #[error("{0}")]
    Unsupported(String),
    /// The table moved so that the bin may not commit.
    #[error("{0}")]
    Conflict(String),
    /// The order's columns could not be sampled from an input.
    #[error("{path}: sampling the order's columns: {detail}")]
    Sample { path: String, detail: String },
    /// The bin's rows could not be sorted.
    #[error("sorting the bin's rows: {0}")]
    Sort(String),
    /// The outputs do not prove to hold the inputs' rows.
    #[error("content check failed: {0}; bin not committed")]
    Proof(String),
    #[error("{path}: {source}")]
    Store {
        path: String,
        #[source]
        source: object_store::Error,
    },
    #[error("{path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A data file that is empty or no Parquet file at all.
    #[error("{path}: {source}")]
    NotParquet {
        path: String,
        #[source]
        source: crate::parquet_reader::NotParquet,
    },
}
