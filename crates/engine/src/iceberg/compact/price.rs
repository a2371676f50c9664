//! An Iceberg compaction's requests and bytes, estimated from its plan and the snapshot it was
//! planned on, as `compact::price` does for Delta, so `compact --dry-run --json` says what the
//! job will cost. It covers every request the job makes to the table's store, reading the
//! table included: the metadata file, manifest list and manifests (`TableState::load`, once
//! to plan and again after each commit), the check that no bin's file is another table's,
//! the sweep of dead jobs' records, the job's record,
//! each bin's inputs (and a z-order's sample of them), outputs and their read-back, and each
//! commit's manifests, list and metadata file. The catalog's own traffic (a SQL database or a
//! REST service) is not a store request and is not counted. The job counts the same requests
//! as they are made (`Stores::counted`): `IceSummary::actual`.

use super::order::IceOrder;
use super::plan::IcePlan;
use super::table_state::TableState;
use crate::compact::order_sample::SAMPLED_FILES;
use crate::compact::ordering::OrderKind;
use crate::compact::price::{input_gets, upload_puts};
use crate::model::cost::Requests;
use crate::parquet_reader::WHOLE_FILE_LIMIT;

/// Rows per row group of an output (the Parquet writer's default row limit).
const OUTPUT_ROW_GROUP_ROWS: u64 = 1024 * 1024;

/// Reading the table: its metadata file, its manifest list and each of `manifests`.
fn load(manifests: u64) -> Requests {
    Requests {
        get: 2 + manifests,
        ..Default::default()
    }
}

/// The sweep's listing of the job records' folder: every job makes it.
fn sweep() -> Requests {
    Requests {
        list: 1,
        ..Default::default()
    }
}

/// Made once by a job that runs bins: its record written and, at the end, removed.
fn per_job() -> Requests {
    Requests {
        put: 1,
        delete: 1,
        ..Default::default()
    }
}

/// Writing one output of `size` bytes and `rows` rows: the record naming it first, the upload,
/// the HEAD that reads its size, and reading it back for the proof.
fn per_output(size: u64, rows: u64) -> Requests {
    let read_back = if size <= WHOLE_FILE_LIMIT {
        1
    } else {
        1 + rows.div_ceil(OUTPUT_ROW_GROUP_ROWS)
    };
    Requests {
        get: 1 + read_back,
        put: 1 + upload_puts(size),
        bytes_read: size,
        bytes_written: size,
        ..Default::default()
    }
}

/// A z-order samples up to `SAMPLED_FILES` of a bin's files again (its columns only).
fn sample(files: &[u64], order: Option<&IceOrder>) -> Requests {
    let z = order.is_some_and(|o| o.order.effective_kind() == OrderKind::ZOrder);
    if !z {
        return Requests::default();
    }
    let n = files.len().min(SAMPLED_FILES);
    let chosen: Vec<u64> = (0..n).map(|i| files[i * files.len() / n.max(1)]).collect();
    Requests {
        get: chosen.iter().map(|&s| input_gets(s)).sum(),
        // A small file is read whole; a large one's footer and the columns' chunks (a guess:
        // its prefetched footer).
        bytes_read: chosen
            .iter()
            .map(|&s| if s <= WHOLE_FILE_LIMIT { s } else { 64 * 1024 })
            .sum(),
        ..Default::default()
    }
}

/// The job's requests and bytes if it runs `plan` on `state` with no one else committing
/// meanwhile (a lost race adds a reload and a rebuilt commit).
pub fn estimate(state: &TableState, plan: &IcePlan) -> Requests {
    let manifests = state.manifests.len() as u64;
    let mut r = load(manifests) + sweep();
    if plan.bins.is_empty() {
        return r;
    }
    r = r + per_job() + nested_check(state, plan);
    let target = plan.target_file_size.max(1);
    for (i, bin) in plan.bins.iter().enumerate() {
        let sizes: Vec<u64> = bin.files.iter().map(|f| f.size).collect();
        for &s in &sizes {
            r = r + Requests {
                get: input_gets(s),
                bytes_read: s,
                ..Default::default()
            };
        }
        r = r + sample(&sizes, plan.order.as_ref());
        let bytes = bin.bytes();
        // Outputs roll once the written and buffered bytes reach the target.
        let outputs = bytes.div_ceil(target).max(1);
        let rows = bin.records().div_ceil(outputs);
        for k in 0..outputs {
            let size = if k + 1 == outputs {
                bytes - (bytes / outputs) * (outputs - 1)
            } else {
                bytes / outputs
            };
            r = r + per_output(size, rows);
        }
        // The commit: the manifests holding the bin's files rewritten, the outputs' manifest,
        // the list and the metadata file; then the table read again (one manifest more).
        let touched = touched_manifests(state, bin);
        r = r + Requests {
            put: touched + 3,
            ..Default::default()
        };
        r = r + load(manifests + i as u64 + 1);
    }
    r
}

/// The check that no bin's file lies in a table nested in this one: two LISTs (`metadata/`,
/// `_delta_log/`) of each folder between the table's root and a bin's file, each folder once.
fn nested_check(state: &TableState, plan: &IcePlan) -> Requests {
    let root = state.meta.location.trim_end_matches('/');
    let folders: std::collections::HashSet<String> = plan
        .bins
        .iter()
        .flat_map(|b| &b.files)
        .filter_map(|f| super::confine::folders_between(root, &f.path))
        .flatten()
        .collect();
    Requests {
        list: 2 * folders.len() as u64,
        ..Default::default()
    }
}

/// How many of the snapshot's manifests hold a file of `bin`.
fn touched_manifests(state: &TableState, bin: &super::plan::IceBin) -> u64 {
    let paths = bin.paths();
    state
        .manifests
        .iter()
        .filter(|m| !m.deletes)
        .filter(|m| {
            m.file
                .rows
                .iter()
                .filter_map(super::table_state::file_path)
                .any(|p| paths.contains(&p))
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::MIB;

    #[test]
    fn an_output_is_its_record_its_upload_its_size_and_its_read_back() {
        let small = per_output(MIB, 10);
        assert_eq!((small.put, small.get), (2, 2));
        // 128 MiB of 3M rows: record + multipart (create, 13 parts, complete); HEAD + footer
        // + 3 row groups.
        let big = per_output(128 * MIB, 3_000_000);
        assert_eq!((big.put, big.get), (1 + 2 + 13, 1 + 1 + 3));
    }

    #[test]
    fn only_a_z_order_samples_and_at_most_its_sampled_files() {
        assert_eq!(sample(&[1; 100], None), Requests::default());
        let z = IceOrder {
            order: crate::compact::ordering::RowOrder {
                kind: OrderKind::ZOrder,
                columns: vec!["a".into(), "b".into()],
                physical: vec!["a".into(), "b".into()],
            },
            field_ids: vec![1, 2],
            sort_order_id: None,
            whole_partitions: true,
            what_if: Vec::new(),
        };
        assert_eq!(sample(&[1; 100], Some(&z)).get, SAMPLED_FILES as u64);
        assert_eq!(sample(&[1; 3], Some(&z)).get, 3);
    }
}
