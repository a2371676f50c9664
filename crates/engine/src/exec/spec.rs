//! What a remote worker is given (`BinSpec`) and what it leaves behind (`BinReport`), as JSON.
//! Both live under the table's root in `_lakehealth/jobs/<job>/` (underscore-prefixed: Delta
//! readers and VACUUM's data listing skip it): a bin's result is durable there, so a coordinator
//! that restarts can still commit it (`pickup`). No credential is ever part of either: workers
//! take them from their own environment.

use deltalake::kernel::{Add, Remove};
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::compact::events::{Failure, FailureKind};
use crate::compact::fingerprint::{Fingerprint, RowsProof};
use crate::compact::ordering::RowOrder;
use crate::compact::ordering::sorter::DEFAULT_SORT_MEMORY;

fn default_sort_memory() -> usize {
    DEFAULT_SORT_MEMORY
}
use crate::compact::ledger_store::STATE_DIR;
use crate::compact::plan::{Bin, FileRef};
use crate::compact::rewrite::{BinError, BinFailure, BinOutput};
use crate::model::partition::PartitionValues;

/// The folder of one job's specs, results and output ledgers.
pub fn job_prefix(job_id: &str) -> String {
    format!("{STATE_DIR}/jobs/{job_id}")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecFile {
    /// As the log writes it (the `remove` action's path).
    pub path: String,
    /// The object-store path relative to the table root.
    pub store_path: String,
    pub size: u64,
    /// Its tier (`tiers`); absent in a spec of an older version.
    #[serde(default)]
    pub tier: u32,
    /// Its deletion vector: the worker leaves out the rows it marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_vector: Option<deltalake::kernel::DeletionVectorDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_records: Option<u64>,
}

/// One bin for a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinSpec {
    /// The table, as the coordinator opened it (a URI without credentials).
    pub table_uri: String,
    pub job_id: String,
    pub bin_id: u64,
    /// The version the bin was planned on.
    pub table_version: u64,
    /// Partition values in partition-column order (None: NULL).
    pub partition: Vec<(String, Option<String>)>,
    pub files: Vec<SpecFile>,
    pub target_file_size: u64,
    /// Parquet codec name (e.g. SNAPPY).
    pub compression: String,
    /// The order the worker writes rows in (absent: as read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<RowOrder>,
    /// Written on every output's `add` (a clustered table's `liquid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clustering_provider: Option<String>,
    /// Bytes the worker's sort holds before it spills.
    #[serde(default = "default_sort_memory")]
    pub sort_memory: usize,
    pub compression_ratio: f64,
    /// Where the result and the output ledger go, relative to the table root
    /// (`_lakehealth/jobs/<job>`). Data files go where the table's writer puts them.
    pub output_prefix: String,
}

impl BinSpec {
    pub fn new(
        table_uri: &str,
        job_id: &str,
        bin_id: u64,
        table_version: u64,
        values: &PartitionValues,
        bin: &Bin,
        rewrite: &crate::compact::rewrite::RewriteOptions,
    ) -> Self {
        Self {
            table_uri: table_uri.to_string(),
            job_id: job_id.to_string(),
            bin_id,
            table_version,
            partition: values.0.clone(),
            files: bin
                .files
                .iter()
                .map(|f| SpecFile {
                    path: f.path.clone(),
                    store_path: f.store_path.clone(),
                    size: f.size,
                    tier: f.tier,
                    deletion_vector: f.deletion_vector.clone(),
                    num_records: f.num_records,
                })
                .collect(),
            target_file_size: rewrite.target_file_size,
            compression: codec_name(rewrite.compression),
            order: rewrite.order.clone(),
            clustering_provider: rewrite.clustering_provider.clone(),
            sort_memory: rewrite.sort_memory,
            compression_ratio: rewrite.compression_ratio,
            output_prefix: job_prefix(job_id),
        }
    }

    /// The proof the bin's outputs give: in order, or as a multiset when sorted.
    pub fn proof(&self) -> RowsProof {
        match self.order {
            None => RowsProof::InOrder,
            Some(_) => RowsProof::AnyOrder,
        }
    }

    pub fn values(&self) -> PartitionValues {
        PartitionValues(self.partition.clone())
    }

    pub fn bin(&self) -> Bin {
        Bin {
            files: self
                .files
                .iter()
                .map(|f| FileRef {
                    path: f.path.clone(),
                    store_path: f.store_path.clone(),
                    size: f.size,
                    deletion_vector: f.deletion_vector.clone(),
                    num_records: f.num_records,
                    tier: f.tier,
                    row_ids: Default::default(),
                })
                .collect(),
            bytes: self.files.iter().map(|f| f.size).sum(),
            predicted_outputs: 0,
        }
    }

    pub fn result_key(&self) -> Path {
        result_key(&self.output_prefix, self.bin_id)
    }

    pub fn ledger_key(&self) -> Path {
        ledger_key(&self.output_prefix, self.bin_id)
    }

    /// Where the worker keeps the spec it was given, before it writes any output: what
    /// `pickup` checks a result against.
    pub fn spec_key(&self) -> Path {
        Path::from(format!(
            "{}/bin-{}.spec.json",
            self.output_prefix, self.bin_id
        ))
    }
}

pub fn result_key(prefix: &str, bin_id: u64) -> Path {
    Path::from(format!("{prefix}/bin-{bin_id}.result.json"))
}

/// The outputs a worker has written so far (rewritten as each is flushed): what to delete when
/// the worker never finished.
pub fn ledger_key(prefix: &str, bin_id: u64) -> Path {
    Path::from(format!("{prefix}/bin-{bin_id}.outputs.json"))
}

/// The codec's name as parquet's `FromStr` reads it.
pub fn codec_name(c: parquet::basic::Compression) -> String {
    use parquet::basic::Compression as C;
    match c {
        C::UNCOMPRESSED => "UNCOMPRESSED".into(),
        C::SNAPPY => "SNAPPY".into(),
        C::LZ4 => "LZ4".into(),
        C::LZ4_RAW => "LZ4_RAW".into(),
        C::LZO => "LZO".into(),
        C::GZIP(l) => format!("GZIP({})", l.compression_level()),
        C::BROTLI(l) => format!("BROTLI({})", l.compression_level()),
        C::ZSTD(l) => format!("ZSTD({})", l.compression_level()),
    }
}

/// What the worker measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerMetrics {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub files_read: u64,
    pub seconds: f64,
    pub verify_seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Outputs proven to hold exactly the inputs' rows, ready to commit.
    Done {
        adds: Vec<Add>,
        removes: Vec<Remove>,
        rows: u64,
        /// Rows the inputs' deletion vectors left out (absent from older workers: none).
        #[serde(default)]
        deleted_rows: u64,
        bytes_in: u64,
        fingerprint: Fingerprint,
    },
    /// No outputs may commit; `outputs` are those the worker could not delete.
    Failed {
        kind: FailureKind,
        error: String,
        outputs: Vec<String>,
    },
}

/// A worker's result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinReport {
    pub job_id: String,
    pub bin_id: u64,
    pub table_uri: String,
    pub table_version: u64,
    pub partition: Vec<(String, Option<String>)>,
    pub metrics: WorkerMetrics,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl BinReport {
    /// The bin as the coordinator commits it, or the failure it reports.
    pub fn into_result(self) -> Result<BinOutput, BinError> {
        let partition = PartitionValues(self.partition);
        match self.outcome {
            Outcome::Done {
                adds,
                removes,
                rows,
                deleted_rows,
                bytes_in,
                fingerprint,
            } => Ok(BinOutput {
                partition,
                adds,
                removes,
                rows,
                deleted_rows,
                bytes_in,
                fingerprint,
                verify_seconds: self.metrics.verify_seconds,
                // A worker's spill is its own machine's.
                spilled_bytes: 0,
            }),
            Outcome::Failed {
                kind,
                error,
                outputs,
            } => Err(BinError {
                partition,
                failure: remote_failure(Failure {
                    kind,
                    message: error,
                }),
                outputs,
            }),
        }
    }
}

/// A failure a worker reported, typed as the local executor would have.
pub fn remote_failure(f: Failure) -> BinFailure {
    match f.kind {
        FailureKind::Cancelled => BinFailure::Cancelled,
        FailureKind::Verify => BinFailure::Verify(f.message),
        FailureKind::Write => BinFailure::Write(f.message),
        FailureKind::Panicked => BinFailure::Panicked(f.message),
        FailureKind::Read => BinFailure::Read {
            path: "(worker)".into(),
            detail: f.message,
        },
        _ => BinFailure::Setup(f.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_round_trips_through_json_and_names_its_result_under_the_job_folder() {
        let values = PartitionValues(vec![("d".into(), Some("1".into())), ("k".into(), None)]);
        let bin = Bin {
            files: vec![FileRef {
                path: "d=1/k=__HIVE_DEFAULT_PARTITION__/a%20b.parquet".into(),
                store_path: "d=1/k=__HIVE_DEFAULT_PARTITION__/a b.parquet".into(),
                size: 10,
                deletion_vector: None,
                num_records: None,
                tier: 0,
                row_ids: Default::default(),
            }],
            bytes: 10,
            predicted_outputs: 1,
        };
        let rw = crate::compact::rewrite::RewriteOptions {
            target_file_size: 100,
            compression: parquet::basic::Compression::SNAPPY,
            compression_ratio: 0.5,
            pace: None,
            order: None,
            clustering_provider: None,
            sort_memory: DEFAULT_SORT_MEMORY,
            output_job: "j1".into(),
        };
        let spec = BinSpec::new("/t", "j1", 3, 7, &values, &bin, &rw);
        let back: BinSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        assert_eq!(back.values(), values);
        assert_eq!(back.bin().files, bin.files);
        assert_eq!(
            back.result_key().as_ref(),
            "_lakehealth/jobs/j1/bin-3.result.json"
        );
        let c: parquet::basic::Compression = back.compression.parse().unwrap();
        assert_eq!(c, parquet::basic::Compression::SNAPPY);
    }

    #[test]
    fn a_failed_report_becomes_a_bin_error_listing_its_outputs() {
        let r = BinReport {
            job_id: "j".into(),
            bin_id: 1,
            table_uri: "/t".into(),
            table_version: 1,
            partition: vec![],
            metrics: WorkerMetrics::default(),
            outcome: Outcome::Failed {
                kind: FailureKind::Verify,
                error: "rows differ".into(),
                outputs: vec!["a.parquet".into()],
            },
        };
        let json = serde_json::to_string(&r).unwrap();
        let back: BinReport = serde_json::from_str(&json).unwrap();
        let e = back.into_result().unwrap_err();
        assert_eq!(e.failure, BinFailure::Verify("rows differ".into()));
        assert_eq!(e.outputs, vec!["a.parquet".to_string()]);
    }
}
