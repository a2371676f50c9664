//! A compaction plan's requests and bytes, estimated before it runs from how the job uses the
//! store (`parquet_reader`, the writers' buffered uploads, `job_ledger`, `delta::commit`), so
//! `compact --dry-run`, the TUI's preview and each janitor decision show what a job will cost.
//! The job measures the same quantities (`CountingStore`), and the two stand side by side.

use super::plan::{Bin, CompactionPlan, FileRef, predicted_output_sizes};
use crate::model::cost::Requests;
use crate::parquet_reader::WHOLE_FILE_LIMIT;
use crate::size::MIB;

/// An upload up to this size is one PUT; above it, a multipart upload of parts this size
/// (`object_store::buffered::BufWriter`'s default, which both writers use).
const SINGLE_PUT_LIMIT: u64 = 10 * MIB;
/// Row groups a writer's large file is read in, when the plan cannot know: Spark's and
/// parquet-mr's default row group size.
const INPUT_ROW_GROUP: u64 = 128 * MIB;
/// Row groups per output file (`rewrite::ROW_GROUPS_PER_TARGET`).
const OUTPUT_ROW_GROUPS_PER_TARGET: u64 = 4;

/// Requests the job makes whatever its size: the look for a newer version before it runs
/// (one LIST of `_delta_log`), the sweep of killed jobs' ledgers (one LIST), and the removal
/// of its own ledger at the end (one DELETE).
fn per_job(has_outputs: bool) -> Requests {
    Requests {
        list: 2,
        delete: u64::from(has_outputs),
        ..Default::default()
    }
}

/// One commit per bin: our validation lists the log after the version it last read, one
/// conditional PUT of the commit file, and the version written read back (by our check and by
/// delta-rs's snapshot update). Measured on S3 (`tests/compaction/price.rs`).
fn per_commit() -> Requests {
    Requests {
        get: 2,
        put: 1,
        list: 1,
        ..Default::default()
    }
}

/// Reading one input: a small file whole in one GET; a large one's footer, then its row
/// groups; its deletion vector, when stored in a file of its own.
fn per_input(f: &FileRef) -> Requests {
    let data = input_gets(f.size);
    let dv = f
        .deletion_vector
        .as_ref()
        .is_some_and(|dv| dv.storage_type != deltalake::kernel::StorageType::Inline);
    Requests {
        get: data + u64::from(dv),
        bytes_read: f.size,
        ..Default::default()
    }
}

/// Writing one output: its ledger entry (one PUT), then the file (one PUT, or a multipart
/// upload's create, parts and complete); then reading it back to prove its rows.
fn per_output(size: u64, target: u64) -> Requests {
    Requests {
        get: output_read_back_gets(size, target),
        put: 1 + upload_puts(size),
        bytes_read: size,
        bytes_written: size,
        ..Default::default()
    }
}

/// GETs reading a writer's Parquet file of `size` bytes: whole in one when small, else its
/// footer and then its row groups.
pub(crate) fn input_gets(size: u64) -> u64 {
    if size <= WHOLE_FILE_LIMIT {
        1
    } else {
        1 + size.div_ceil(INPUT_ROW_GROUP)
    }
}

/// PUTs uploading an object of `size` bytes through a buffered writer: one, or a multipart
/// upload's create, parts and complete.
pub(crate) fn upload_puts(size: u64) -> u64 {
    if size <= SINGLE_PUT_LIMIT {
        1
    } else {
        2 + size.div_ceil(SINGLE_PUT_LIMIT)
    }
}

/// GETs reading back one of our outputs (its row groups a share of the target).
pub(crate) fn output_read_back_gets(size: u64, target: u64) -> u64 {
    if size <= WHOLE_FILE_LIMIT {
        1
    } else {
        let row_group = (target / OUTPUT_ROW_GROUPS_PER_TARGET).max(1);
        1 + size.div_ceil(row_group)
    }
}

fn per_bin(bin: &Bin, ratio: f64, target: u64) -> Requests {
    let inputs = bin
        .files
        .iter()
        .map(per_input)
        .fold(Requests::default(), |a, b| a + b);
    let outputs = predicted_output_sizes(bin.bytes, ratio, target)
        .into_iter()
        .map(|s| per_output(s, target))
        .fold(Requests::default(), |a, b| a + b);
    inputs + outputs + per_commit()
}

/// The requests and bytes `plan` will make when it runs against a table no one else writes
/// meanwhile (each concurrent commit adds a GET to each later validation).
pub fn estimate(plan: &CompactionPlan) -> Requests {
    let bins = plan
        .partitions
        .iter()
        .flat_map(|p| &p.bins)
        .map(|b| per_bin(b, plan.compression_ratio, plan.target_file_size))
        .fold(Requests::default(), |a, b| a + b);
    let job = if plan.bins == 0 {
        Requests::default()
    } else {
        per_job(true)
    };
    bins + job
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::RowIds;

    fn file(size: u64) -> FileRef {
        FileRef {
            path: format!("f{size}.parquet"),
            store_path: format!("f{size}.parquet"),
            size,
            deletion_vector: None,
            num_records: None,
            tier: 0,
            row_ids: RowIds::default(),
        }
    }

    #[test]
    fn a_small_input_is_one_get_and_a_large_one_its_footer_and_row_groups() {
        assert_eq!(per_input(&file(MIB)).get, 1);
        assert_eq!(per_input(&file(300 * MIB)).get, 1 + 3);
    }

    #[test]
    fn an_output_over_the_single_put_limit_is_a_multipart_upload() {
        let small = per_output(MIB, 128 * MIB);
        assert_eq!((small.put, small.get), (2, 1));
        // 128 MiB: ledger + create + 13 parts + complete; read back: footer + 4 row groups.
        let big = per_output(128 * MIB, 128 * MIB);
        assert_eq!((big.put, big.get), (1 + 2 + 13, 1 + 4));
    }

    #[test]
    fn an_empty_plan_costs_nothing() {
        let plan = CompactionPlan {
            table_version: 1,
            target_file_size: MIB,
            min_file_size: MIB,
            compression_ratio: 1.0,
            partitions: Vec::new(),
            files_in: 0,
            bytes_in: 0,
            predicted_files_out: 0,
            bins: 0,
            deletion_vector_files: 0,
            deleted_rows: 0,
            files_rewritten_for_deletes: 0,
            notes: Vec::new(),
            estimate: Default::default(),
            order: None,
        };
        assert_eq!(estimate(&plan), Requests::default());
    }
}
