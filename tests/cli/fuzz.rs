//! Fuzzing the parsers of untrusted input (issue 26): commit JSON lines, log file names, the
//! replay of a whole `_delta_log/`, checkpoint Parquet, deletion-vector descriptors and files,
//! deleted-row statistics, Iceberg metadata JSON and manifest Avro, policy and config TOML,
//! `--where` predicates, size and duration strings, partition values, sealed job records (no
//! mutation of a sealed record is ever accepted); and whole tables opened
//! through the public API. Each property feeds arbitrary input and mutations of valid input
//! (fixtures, or files written here as the writers do); the parser must return Ok or a typed
//! error: no panic, no hang (see `fuzz_harness`).
//!
//! A bounded run is part of the suite; `LAKEHEALTH_FUZZ_SCALE=10 cargo test --release --test cli
//! fuzz -- --nocapture` runs ten times as many cases and prints each property's count and time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use apache_avro::types::Value as Avro;
use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use bytes::Bytes;
use chrono::NaiveDate;
use deltalake::kernel::{DeletionVectorDescriptor, StorageType};
use lakehealth::engine::compact::selection::Predicate;
use lakehealth::engine::delta::deletion_vectors::{RowFilter, deleted_rows};
use lakehealth::engine::delta::log::actions;
use lakehealth::engine::delta::log::checkpoint::{
    CheckpointMeta, CheckpointVisitor, OpenedFile, read_checkpoint_file, read_checkpoint_keys,
};
use lakehealth::engine::delta::log::listing::classify;
use lakehealth::engine::delta::log::partition_key::{
    PartitionSizes, decode, encode_into, resolve_key,
};
use lakehealth::engine::delta::log::replay::replay;
use lakehealth::engine::delta::log::walker::{FetchedCommit, Walker, parse_commit};
use lakehealth::engine::error::EngineError;
use lakehealth::engine::iceberg::compact::avro_file::AvroFile;
use lakehealth::engine::iceberg::manifests::{read_manifest, read_manifest_list};
use lakehealth::engine::iceberg::metadata::TableMetadata;
use lakehealth::engine::iceberg::transforms::{Transform, display};
use lakehealth::engine::janitor::policy::{Policy, expand_date_macros};
use lakehealth::engine::model::partition::PartitionValues;
use lakehealth::engine::open::load_table;
use lakehealth::engine::size::ByteSize;
use lakehealth::engine::stats::deleted_rows::{DeletedRows, FileRows};
use lakehealth::engine::stats::table_report::TableReport;
use object_store::memory::InMemory;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use url::Url;

use crate::fuzz_harness::{block_on, bytes, fuzz, mutated, mutated_text, text, within};
use crate::support::common::{copy_dir, fixture, fixture_tables, loc, opts, runtime};

/// Keys and values of Delta actions, inserted by mutations of commits.
const DELTA_TOKENS: &[&str] = &[
    "\"add\":",
    "\"remove\":",
    "\"metaData\":",
    "\"protocol\":",
    "\"txn\":",
    "\"commitInfo\":",
    "\"path\":",
    "\"size\":",
    "\"partitionValues\":",
    "\"deletionVector\":",
    "\"storageType\":",
    "\"pathOrInlineDv\":",
    "\"offset\":",
    "\"sizeInBytes\":",
    "\"cardinality\":",
    "\"deletionTimestamp\":",
    "\"dataChange\":",
    "\"schemaString\":",
    "\"partitionColumns\":",
    "\"configuration\":",
    "\"minReaderVersion\":",
    "\"readerFeatures\":",
    "\"operationMetrics\":",
    "\"operationParameters\":",
    "\"numAddedFiles\":",
    "\"stats\":",
    "\"numRecords\":",
    "\"appId\":",
    "\"version\":",
    "\"i\"",
    "\"u\"",
    "\"p\"",
    "\"deletionVectors\"",
];

fn read_all(paths: impl IntoIterator<Item = PathBuf>) -> Vec<Vec<u8>> {
    paths
        .into_iter()
        .map(|p| std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

fn log_files(table: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixture(table).join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Every JSON commit of every fixture table.
fn commit_seeds() -> Arc<Vec<Vec<u8>>> {
    static SEEDS: OnceLock<Arc<Vec<Vec<u8>>>> = OnceLock::new();
    SEEDS
        .get_or_init(|| {
            let paths = fixture_tables().into_iter().flat_map(|t| {
                log_files(&t)
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
            });
            Arc::new(read_all(paths))
        })
        .clone()
}

/// Runs every reader of a commit's bytes: the lenient scan, the replay's walker (newest first,
/// whole and head-only) and its parsed adds and removes.
fn read_commit(b: Vec<u8>) -> bool {
    let _ = actions::scan(&b).count();
    if let Some(ci) = actions::commit_info(&b) {
        let _ = (ci.engine(), ci.metric("numAddedFiles"), ci.param("queryId"));
    }
    let mut accepted = false;
    for head_only in [false, true] {
        let c = FetchedCommit {
            version: 3,
            path: "_delta_log/00000000000000000003.json".into(),
            modified_ms: Some(1),
            bytes: Bytes::from(b.clone()),
            head_only,
        };
        if let Ok(p) = parse_commit("t", &c) {
            let _ = (p.adds().count(), p.removes().count());
            accepted |= !head_only;
        }
        let mut w = Walker::new(2, 3, 10);
        if w.apply_commit("t", c).is_ok() {
            let _ = w.finish_runs(&HashSet::from(["a".to_string()]), Some(1));
        }
    }
    accepted
}

#[test]
fn fuzz_commit_json_lines() {
    fuzz(
        "commit_json_lines",
        210000,
        prop_oneof![
            1 => bytes(512),
            4 => mutated(commit_seeds(), DELTA_TOKENS),
        ],
        |b| within(&b, read_commit),
    );
}

/// Names found in `_delta_log/`: commits, checkpoints (classic, multi-part, v2), the hint.
#[test]
fn fuzz_log_file_names() {
    let seeds = [
        "00000000000000000010.json",
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000010.checkpoint.0000000001.0000000003.parquet",
        "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet",
        "_last_checkpoint",
        "00000000000000000010.crc",
    ];
    fuzz(
        "log_file_names",
        90000,
        prop_oneof![
            text(80),
            mutated_text(&seeds, &[".", "0", "9", "-", ".parquet"])
        ],
        |name| {
            within(&name, |n| {
                !matches!(
                    classify(&n),
                    lakehealth::engine::delta::log::listing::LogFile::Other
                )
            })
        },
    );
}

/// The `_delta_log/` of fixture tables with a checkpoint, deletion vectors and partitions.
const REPLAY_TABLES: &[&str] = &[
    "simple_table_with_checkpoint",
    "table-with-dv-small",
    "delta-0.8.0-partitioned",
    "checkpoints",
];

/// A log's files: name and bytes.
type LogFiles = Vec<(String, Vec<u8>)>;

fn replay_seeds() -> &'static Vec<LogFiles> {
    static SEEDS: OnceLock<Vec<LogFiles>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        REPLAY_TABLES
            .iter()
            .map(|t| {
                log_files(t)
                    .into_iter()
                    .map(|p| {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        (name, std::fs::read(&p).unwrap())
                    })
                    .collect()
            })
            .collect()
    })
}

/// A log to replay: a fixture's files with one of them mutated (or dropped, or renamed).
#[derive(Debug, Clone)]
struct MutatedLog {
    files: LogFiles,
}

fn mutated_log() -> impl Strategy<Value = MutatedLog> {
    let tables = replay_seeds();
    (
        any::<Index>(),
        any::<Index>(),
        crate::fuzz_harness::mutations(),
        0u8..10,
    )
        .prop_map(move |(t, f, ms, how)| {
            let mut files = tables[t.index(tables.len())].clone();
            let k = f.index(files.len());
            match how {
                // Drop the file (a missing commit, a checkpoint gone).
                0 => {
                    files.remove(k);
                }
                // Rename it: its name is mutated, its bytes kept.
                1 => {
                    let mut name = files[k].0.clone().into_bytes();
                    for m in &ms {
                        crate::fuzz_harness::apply(&mut name, m, &[".json", ".checkpoint"]);
                    }
                    files[k].0 = String::from_utf8_lossy(&name).replace('/', "_");
                }
                _ => {
                    for m in &ms {
                        crate::fuzz_harness::apply(&mut files[k].1, m, DELTA_TOKENS);
                    }
                }
            }
            MutatedLog { files }
        })
}

async fn memory_store(files: &[(String, Vec<u8>)], prefix: &str) -> Arc<dyn ObjectStore> {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    for (name, b) in files {
        let Ok(path) = StorePath::parse(format!("{prefix}{name}")) else {
            continue;
        };
        store
            .put(&path, PutPayload::from(b.clone()))
            .await
            .expect("in-memory put");
    }
    store
}

/// The replay the report runs (listing, `_last_checkpoint`, commits, checkpoint, reconcile),
/// then the statistics of what it read.
fn replay_log(log: MutatedLog) -> bool {
    block_on(async {
        let store = memory_store(&log.files, "_delta_log/").await;
        let o = opts();
        match replay(&store, "memory:///t", o.replay, &|_| {}).await {
            Ok(state) => {
                let _ =
                    TableReport::build("memory:///t".into(), "t".into(), state, o.thresholds, 0);
                true
            }
            Err(_) => false,
        }
    })
}

#[test]
fn fuzz_log_replay() {
    fuzz("log_replay", 108000, mutated_log(), |log| {
        within(&log, replay_log)
    });
}

/// Counts what a checkpoint file hands over.
#[derive(Default)]
struct Counting {
    adds: u64,
    removes: u64,
    meta: CheckpointMeta,
}

impl CheckpointVisitor for Counting {
    fn add(&mut self, _row: u64, _key: Option<&str>, _part: &str, _size: u64) {
        self.adds += 1;
    }
    fn remove(&mut self, _row: u64, _key: Option<&str>, _ts: Option<i64>, _size: Option<i64>) {
        self.removes += 1;
    }
    fn meta(&mut self) -> &mut CheckpointMeta {
        &mut self.meta
    }
}

/// The fixture's checkpoint, and checkpoints delta-rs writes of tables with deletion vectors,
/// partitions and column mapping (their add structs hold those columns).
fn checkpoint_seeds() -> Arc<Vec<Vec<u8>>> {
    static SEEDS: OnceLock<Arc<Vec<Vec<u8>>>> = OnceLock::new();
    SEEDS
        .get_or_init(|| {
            let mut seeds = read_all([fixture("simple_table_with_checkpoint")
                .join("_delta_log/00000000000000000010.checkpoint.parquet")]);
            let d = tempfile::tempdir().unwrap();
            for t in [
                "table-with-dv-small",
                "delta-0.8.0-partitioned",
                "table_with_column_mapping",
            ] {
                let copy = d.path().join(t);
                copy_dir(&fixture(t), &copy);
                let written = runtime().block_on(async {
                    let table = deltalake::open_table(loc(&copy).url.clone()).await?;
                    deltalake::checkpoints::create_checkpoint(&table, None).await
                });
                if written.is_err() {
                    continue;
                }
                let log = copy.join("_delta_log");
                for e in std::fs::read_dir(&log).unwrap() {
                    let p = e.unwrap().path();
                    if p.to_string_lossy().ends_with(".checkpoint.parquet") {
                        seeds.push(std::fs::read(&p).unwrap());
                    }
                }
            }
            assert!(seeds.len() >= 2, "delta-rs wrote checkpoints to mutate");
            Arc::new(seeds)
        })
        .clone()
}

/// What a checkpoint is read for: its actions (with and without paths), then the keys of some
/// of its rows (the reconcile's second read).
fn read_checkpoint(b: Vec<u8>, with_paths: bool, rows: Vec<u64>) -> bool {
    block_on(async {
        let store = memory_store(&[("cp.parquet".into(), b)], "").await;
        let mut v = Counting::default();
        let Ok(file) = OpenedFile::open(&store, "cp.parquet", None).await else {
            return false;
        };
        let read = read_checkpoint_file(&file, with_paths, &mut v, &|_| {}).await;
        let _ = read_checkpoint_keys(&file, &rows).await;
        read.is_ok()
    })
}

fn checkpoint_rows() -> impl Strategy<Value = Vec<u64>> {
    vec(
        prop_oneof![0u64..16, Just(u64::MAX), Just(1 << 40), any::<u64>()],
        0..6,
    )
}

#[test]
fn fuzz_checkpoint_parquet() {
    fuzz(
        "checkpoint_parquet",
        108000,
        (
            mutated(checkpoint_seeds(), &["PAR1"]),
            any::<bool>(),
            checkpoint_rows(),
        ),
        |(b, with_paths, rows)| {
            within(&(b, with_paths, rows), |(b, p, r)| read_checkpoint(b, p, r))
        },
    );
}

/// Found by `fuzz_checkpoint_parquet`: a page whose bit width trips an assertion in the
/// `parquet` crate (`BitReader::get_batch`) panicked the checkpoint reader; it is now a corrupt
/// checkpoint, named, and the table's replay says so.
#[test]
fn fuzz_regression_a_checkpoint_page_with_a_bad_bit_width_is_a_corrupt_checkpoint() {
    use lakehealth::engine::delta::log::checkpoint::CheckpointReadError;
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/fuzz/checkpoint-page-bit-width.parquet"),
    )
    .unwrap();
    block_on(async {
        let store = memory_store(&[("cp.parquet".into(), bytes.clone())], "").await;
        let mut v = Counting::default();
        let file = OpenedFile::open(&store, "cp.parquet", None).await.unwrap();
        let e = read_checkpoint_file(&file, false, &mut v, &|_| {})
            .await
            .unwrap_err();
        assert!(matches!(e, CheckpointReadError::Malformed(_)), "{e:?}");
        assert!(e.to_string().contains("malformed page"), "{e}");
        // As a table's only checkpoint: the replay names the file as corrupt.
        let log = vec![
            ("00000000000000000000.checkpoint.parquet".to_string(), bytes),
            (
                "_last_checkpoint".to_string(),
                br#"{"version":0,"size":1}"#.to_vec(),
            ),
        ];
        let store = memory_store(&log, "_delta_log/").await;
        let e = replay(&store, "memory:///t", opts().replay, &|_| {})
            .await
            .unwrap_err();
        assert!(matches!(e, EngineError::CorruptCheckpoint { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("00000000000000000000.checkpoint.parquet"),
            "{e}"
        );
    });
}

/// A Parquet footer of arbitrary Thrift bytes behind valid magic and a length that may lie.
#[test]
fn fuzz_checkpoint_parquet_footer() {
    let footer = (
        bytes(256),
        bytes(768),
        prop_oneof![Just(None), any::<u32>().prop_map(Some)],
    )
        .prop_map(|(body, meta, len)| {
            let mut b = b"PAR1".to_vec();
            b.extend(&body);
            b.extend(&meta);
            let len = len.unwrap_or(meta.len() as u32);
            b.extend(len.to_le_bytes());
            b.extend(b"PAR1");
            b
        });
    fuzz(
        "checkpoint_parquet_footer",
        120000,
        (footer, any::<bool>(), checkpoint_rows()),
        |(b, with_paths, rows)| {
            within(&(b, with_paths, rows), |(b, p, r)| read_checkpoint(b, p, r))
        },
    );
}

/// The deletion vector of `table-with-dv-small`: its file, its descriptor's path, its bitmap.
const DV_FILE: &str = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin";
const DV_PATH: &str = "vBn[lx{q8@P<9BNH/isA";

fn dv_file() -> Vec<u8> {
    std::fs::read(fixture("table-with-dv-small").join(DV_FILE)).unwrap()
}

/// The inline form of the fixture's vector: magic and bitmap, z85-encoded.
fn inline_dv(mutations: &[crate::fuzz_harness::Mutation]) -> String {
    let file = dv_file();
    // version (1), size (4, big endian), then magic and bitmap, then a CRC (4).
    let mut raw = file[5..file.len() - 4].to_vec();
    for m in mutations {
        crate::fuzz_harness::apply(&mut raw, m, &[]);
    }
    raw.truncate(raw.len() / 4 * 4);
    z85::encode(raw)
}

/// A descriptor as a log may write it, and the bytes its file holds.
#[derive(Debug, Clone)]
struct DvCase {
    dv: DeletionVectorDescriptor,
    file: Vec<u8>,
}

/// One field of a valid descriptor changed.
#[derive(Debug, Clone)]
enum DvEdit {
    Storage(StorageType),
    Path(String),
    Offset(Option<i32>),
    Size(i32),
    Cardinality(i64),
}

fn dv_edit() -> impl Strategy<Value = DvEdit> {
    use crate::fuzz_harness::mutation_strategy as m;
    let storage = prop_oneof![
        Just(StorageType::UuidRelativePath),
        Just(StorageType::Inline),
        Just(StorageType::AbsolutePath),
    ];
    let path = prop_oneof![
        Just(DV_PATH.to_string()),
        vec(m(), 1..4).prop_map(|ms| inline_dv(&ms)),
        vec(any::<u8>(), 0..64).prop_map(|b| z85::encode(&b[..b.len() / 4 * 4])),
        mutated_text(&[DV_PATH, "ab^-aqEH.-t@S}K{vb[*k^"], &[]),
        Just(format!("memory:///t/{DV_FILE}")),
        Just("file:///elsewhere/deletion_vector_x.bin".to_string()),
        text(40),
    ];
    let offset = prop_oneof![
        Just(None),
        (0i32..64).prop_map(Some),
        any::<i32>().prop_map(Some)
    ];
    prop_oneof![
        storage.prop_map(DvEdit::Storage),
        path.prop_map(DvEdit::Path),
        offset.prop_map(DvEdit::Offset),
        prop_oneof![0i32..8, 30i32..40, any::<i32>()].prop_map(DvEdit::Size),
        prop_oneof![0i64..4, Just(1 << 40), any::<i64>()].prop_map(DvEdit::Cardinality),
    ]
}

/// A valid descriptor (the fixture's stored vector, or its inline form) with 0 to 2 fields
/// changed, over its file as written or mutated.
fn dv_case() -> impl Strategy<Value = DvCase> {
    let file = prop_oneof![Just(dv_file()), mutated(Arc::new(vec![dv_file()]), &[]),];
    (any::<bool>(), vec(dv_edit(), 0..3), file).prop_map(|(stored, edits, file)| {
        let mut dv = DeletionVectorDescriptor {
            storage_type: StorageType::UuidRelativePath,
            path_or_inline_dv: DV_PATH.into(),
            offset: Some(1),
            size_in_bytes: 36,
            cardinality: 2,
        };
        if !stored {
            dv.storage_type = StorageType::Inline;
            dv.path_or_inline_dv = inline_dv(&[]);
            dv.offset = None;
        }
        for e in edits {
            match e {
                DvEdit::Storage(t) => dv.storage_type = t,
                DvEdit::Path(p) => dv.path_or_inline_dv = p,
                DvEdit::Offset(o) => dv.offset = o,
                DvEdit::Size(n) => dv.size_in_bytes = n,
                DvEdit::Cardinality(c) => dv.cardinality = c,
            }
        }
        DvCase { dv, file }
    })
}

fn read_dv(c: DvCase) -> bool {
    block_on(async {
        let store = memory_store(&[(DV_FILE.into(), c.file)], "").await;
        let root = Url::parse("memory:///t/").unwrap();
        if let Ok(bitmap) = deleted_rows(&store, &root, &c.dv).await {
            // As a rewrite applies it: batch by batch, then what lies past the last row.
            let mut f = RowFilter::new(bitmap);
            for (from, n) in [(0i64, 3i64), (3, 100)] {
                let batch = RecordBatch::try_from_iter([(
                    "v",
                    Arc::new(Int64Array::from_iter_values(from..from + n)) as ArrayRef,
                )])
                .unwrap();
                let kept = f.apply(batch).unwrap();
                assert!(kept.num_rows() <= n as usize);
            }
            let _ = f.unmatched();
            return true;
        }
        false
    })
}

#[test]
fn fuzz_deletion_vector_descriptors() {
    fuzz("deletion_vector_descriptors", 150000, dv_case(), |c| {
        within(&c, read_dv)
    });
}

/// The deleted-rows statistics of any counts a log can claim.
#[test]
fn fuzz_deleted_rows_statistics() {
    let file = (text(8), any::<u64>(), proptest::option::of(any::<u64>())).prop_map(
        |(path, deleted, records)| FileRows {
            path,
            deleted,
            records,
        },
    );
    let group = (
        vec((text(4), proptest::option::of(text(4))), 0..3),
        vec(file, 0..4),
    )
        .prop_map(|(v, f)| (PartitionValues(v), f));
    fuzz(
        "deleted_rows_statistics",
        45000,
        (vec(group, 0..4), prop_oneof![any::<f64>(), 0.0f64..1.0]),
        |(groups, ratio)| {
            within(&(groups, ratio), |(g, r)| {
                DeletedRows::compute(&g, r)
                    .map(|d| d.over_ratio_message())
                    .is_some()
            })
        },
    )
}

const ICEBERG_V2: &str = r#"{
  "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "s3://bucket/warehouse/db/t", "last-sequence-number": 2,
  "last-updated-ms": 1700000000000, "last-column-id": 4, "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": false, "type": "long"},
    {"id": 2, "name": "ts", "required": false, "type": "timestamp"},
    {"id": 3, "name": "s", "required": false, "type": {"type": "struct", "fields": [
      {"id": 4, "name": "d", "required": false, "type": "date"}]}}]}],
  "default-spec-id": 0,
  "partition-specs": [{"spec-id": 0, "fields": [
    {"source-id": 2, "field-id": 1000, "transform": "day", "name": "ts_day"},
    {"source-id": 1, "field-id": 1001, "transform": "bucket[16]", "name": "id_bucket"}]}],
  "last-partition-id": 1001, "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],
  "properties": {"write.target-file-size-bytes": "1048576"},
  "current-snapshot-id": 22,
  "snapshots": [
    {"snapshot-id": 11, "sequence-number": 1, "timestamp-ms": 1000,
     "manifest-list": "s3://bucket/warehouse/db/t/metadata/snap-11.avro",
     "summary": {"operation": "append", "added-data-files": "3", "added-files-size": "300"},
     "schema-id": 0},
    {"snapshot-id": 22, "parent-snapshot-id": 11, "sequence-number": 2, "timestamp-ms": 2000,
     "manifest-list": "s3://bucket/warehouse/db/t/metadata/snap-22.avro",
     "summary": {"operation": "delete", "deleted-data-files": "1"}, "schema-id": 0}],
  "snapshot-log": [{"snapshot-id": 11, "timestamp-ms": 1000}],
  "metadata-log": []
}"#;

const ICEBERG_V1: &str = r#"{"format-version": 1, "location": "/t", "last-updated-ms": 1,
  "last-column-id": 1, "current-snapshot-id": -1,
  "schema": {"type": "struct", "fields": [{"id": 1, "name": "c", "required": true, "type": "string"}]},
  "partition-spec": [{"source-id": 1, "field-id": 1000, "transform": "truncate[4]", "name": "c"}]}"#;

const ICEBERG_TOKENS: &[&str] = &[
    "\"format-version\":",
    "\"current-snapshot-id\":",
    "\"snapshots\":",
    "\"snapshot-id\":",
    "\"partition-specs\":",
    "\"default-spec-id\":",
    "\"schemas\":",
    "\"fields\":",
    "\"type\":",
    "\"transform\":",
    "\"bucket[0]\"",
    "\"truncate[4294967295]\"",
    "\"void\"",
    "\"hour\"",
    "\"decimal(38,10)\"",
    "\"summary\":",
    "\"manifest-list\":",
];

fn read_iceberg_metadata(b: Vec<u8>) -> bool {
    let Ok(m) = TableMetadata::parse(&b) else {
        return false;
    };
    if let Some(s) = m.current_snapshot() {
        let _ = (s.count("added-data-files"), s.operation());
    }
    for spec in m.specs() {
        for f in &spec.fields {
            let _ = Transform::parse(&f.transform);
        }
    }
    let _ = (m.default_spec(), m.field_types());
    true
}

#[test]
fn fuzz_iceberg_metadata_json() {
    fuzz(
        "iceberg_metadata_json",
        210000,
        prop_oneof![
            1 => bytes(512),
            4 => mutated(
                Arc::new(vec![ICEBERG_V2.as_bytes().to_vec(), ICEBERG_V1.as_bytes().to_vec()]),
                ICEBERG_TOKENS
            ),
        ],
        |b| within(&b, read_iceberg_metadata),
    );
}

/// A manifest as Iceberg writers lay one out (v2: status, data_file with content, partition,
/// counts; unions for optional fields), with `codec`.
fn manifest(codec: apache_avro::Codec) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(
        r#"{"type": "record", "name": "manifest_entry", "fields": [
          {"name": "status", "type": "int", "field-id": 0},
          {"name": "snapshot_id", "type": ["null", "long"], "default": null, "field-id": 1},
          {"name": "sequence_number", "type": ["null", "long"], "default": null},
          {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
            {"name": "content", "type": "int"},
            {"name": "file_path", "type": "string"},
            {"name": "file_format", "type": "string"},
            {"name": "partition", "type": {"type": "record", "name": "r102", "fields": [
              {"name": "ts_day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": null},
              {"name": "category", "type": ["null", "string"], "default": null},
              {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}], "default": null}]}},
            {"name": "record_count", "type": "long"},
            {"name": "file_size_in_bytes", "type": "long"},
            {"name": "column_sizes", "type": ["null", {"type": "array", "items": {
              "type": "record", "name": "k117_v118", "fields": [
                {"name": "key", "type": "int"}, {"name": "value", "type": "long"}]},
              "logicalType": "map"}], "default": null},
            {"name": "lower_bounds", "type": ["null", {"type": "map", "values": "bytes"}], "default": null}]}}]}"#,
    )
    .unwrap();
    let mut w = apache_avro::Writer::with_codec(&schema, Vec::new(), codec).unwrap();
    // Before the first row: the header is written with it.
    w.add_user_metadata("partition-spec".into(), "[]").unwrap();
    for (status, content, path, day) in [
        (1, 0, "s3://b/t/data/a.parquet", Some(20_787)),
        (0, 0, "s3://b/t/data/b.parquet", None),
        (2, 1, "s3://b/t/data/pos.parquet", Some(-1)),
    ] {
        let day = match day {
            Some(d) => Avro::Union(1, Box::new(Avro::Date(d))),
            None => Avro::Union(0, Box::new(Avro::Null)),
        };
        let partition = Avro::Record(vec![
            ("ts_day".into(), day),
            (
                "category".into(),
                Avro::Union(1, Box::new(Avro::String("eu".into()))),
            ),
            (
                "amount".into(),
                Avro::Union(
                    1,
                    Box::new(Avro::Decimal(apache_avro::Decimal::from(vec![1u8, 2]))),
                ),
            ),
        ]);
        let sizes = Avro::Array(vec![Avro::Record(vec![
            ("key".into(), Avro::Int(1)),
            ("value".into(), Avro::Long(10)),
        ])]);
        let df = Avro::Record(vec![
            ("content".into(), Avro::Int(content)),
            ("file_path".into(), Avro::String(path.into())),
            ("file_format".into(), Avro::String("PARQUET".into())),
            ("partition".into(), partition),
            ("record_count".into(), Avro::Long(10)),
            ("file_size_in_bytes".into(), Avro::Long(1000)),
            ("column_sizes".into(), Avro::Union(1, Box::new(sizes))),
            (
                "lower_bounds".into(),
                Avro::Union(
                    1,
                    Box::new(Avro::Map(HashMap::from([(
                        "1".to_string(),
                        Avro::Bytes(vec![0; 8]),
                    )]))),
                ),
            ),
        ]);
        w.append_value(Avro::Record(vec![
            ("status".into(), Avro::Int(status)),
            (
                "snapshot_id".into(),
                Avro::Union(1, Box::new(Avro::Long(7))),
            ),
            (
                "sequence_number".into(),
                Avro::Union(0, Box::new(Avro::Null)),
            ),
            ("data_file".into(), df),
        ]))
        .unwrap();
    }
    w.into_inner().unwrap()
}

fn manifest_list(codec: apache_avro::Codec) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(
        r#"{"type": "record", "name": "manifest_file", "fields": [
          {"name": "manifest_path", "type": "string"},
          {"name": "manifest_length", "type": "long"},
          {"name": "partition_spec_id", "type": "int"},
          {"name": "content", "type": "int"},
          {"name": "added_snapshot_id", "type": "long"}]}"#,
    )
    .unwrap();
    let mut w = apache_avro::Writer::with_codec(&schema, Vec::new(), codec).unwrap();
    for (path, content) in [
        ("s3://b/t/metadata/m0.avro", 0),
        ("s3://b/t/metadata/m1.avro", 1),
    ] {
        w.append_value(Avro::Record(vec![
            ("manifest_path".into(), Avro::String(path.into())),
            ("manifest_length".into(), Avro::Long(1234)),
            ("partition_spec_id".into(), Avro::Int(0)),
            ("content".into(), Avro::Int(content)),
            ("added_snapshot_id".into(), Avro::Long(7)),
        ]))
        .unwrap();
    }
    w.into_inner().unwrap()
}

fn avro_seeds() -> Arc<Vec<Vec<u8>>> {
    static SEEDS: OnceLock<Arc<Vec<Vec<u8>>>> = OnceLock::new();
    SEEDS
        .get_or_init(|| {
            use apache_avro::Codec;
            let codecs = [
                Codec::Null,
                Codec::Deflate(Default::default()),
                Codec::Snappy,
                Codec::Zstandard(Default::default()),
            ];
            Arc::new(
                codecs
                    .iter()
                    .flat_map(|c| [manifest(*c), manifest_list(*c)])
                    .collect(),
            )
        })
        .clone()
}

/// Every reader of a manifest or manifest list, and the display of its partition values.
fn read_avro(b: Vec<u8>) -> bool {
    let manifest = read_manifest(&b);
    if let Ok(files) = &manifest {
        for f in files {
            for (_, v) in &f.partition {
                for t in [
                    "day",
                    "month",
                    "year",
                    "hour",
                    "identity",
                    "bucket[16]",
                    "void",
                ] {
                    let _ = display(v, &Transform::parse(t), "date");
                }
                for source in [
                    "timestamptz",
                    "timestamp_ns",
                    "decimal(9,2)",
                    "decimal(38,38)",
                ] {
                    let _ = display(v, &Transform::Identity, source);
                }
            }
        }
    }
    let list = read_manifest_list(&b);
    if let Ok(f) = AvroFile::read(&b) {
        let _ = f.meta_str("partition-spec");
        let _ = f.write(&f.rows);
    }
    manifest.is_ok() || list.is_ok()
}

#[test]
fn fuzz_iceberg_manifest_avro() {
    fuzz(
        "iceberg_manifest_avro",
        210000,
        prop_oneof![
            1 => bytes(512),
            1 => bytes(256).prop_map(|b| [b"Obj\x01".as_slice(), &b].concat()),
            6 => mutated(avro_seeds(), &["Obj\u{1}", "avro.schema", "avro.codec", "deflate", "null"]),
        ],
        |b| within(&b, read_avro),
    );
}

/// Whether parsing `text` as TOML would register a secret (the registry's own rule):
/// secrets are process-wide and scrubbed from every other test's output (a registered `s`
/// would star every `s` on the TUI tests' screens), so such inputs are left to the secrets
/// tests.
fn registers_a_secret(text: &str) -> bool {
    !lakehealth::engine::secrets::toml_text_secrets(text).is_empty()
}

const POLICY_TOKENS: &[&str] = &[
    "preset = ",
    "\"glue\"",
    "\"amoro\"",
    "min_small_files = ",
    "small_file_size = ",
    "target_file_size = ",
    "\"0B\"",
    "\"16EiB\"",
    "\"18446744073709551615B\"",
    "aged_after = ",
    "partitions = ",
    "\"today - 99999999999d\"",
    "\"d = (SELECT 1)\"",
    "interval = ",
    "\"0s\"",
    "\"18446744073709551615s\"",
    "\"584542046091y\"",
    "max_jobs = ",
    "tier_fanout = ",
    "strategy = ",
    "\"zorder\"",
    "columns = ",
    "max_depth = ",
    "depth_every = ",
    "[\"a\", \"b\"]",
    "max_deleted_ratio = ",
    "commit_spacing = ",
    "executor = ",
    "\"ray\"",
    "[x]",
    "[[x]]",
    "\"\"\"",
    "'''",
    "1979-05-27T07:32:00Z",
    "inf",
    "nan",
    "0x7fffffffffffffff",
];

fn policy_example() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/janitor-policy.toml"),
    )
    .unwrap()
}

fn config_example() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/config.toml"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains("AWS_") && !l.contains("AZURE_") && !l.contains("GOOGLE_"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The policy and config parsers, and what a loaded policy is used for.
fn read_policy(text: String) -> bool {
    let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    let policy = Policy::parse(&text, "fuzz.toml", opts().thresholds);
    if let Ok(p) = &policy {
        let _ = (p.summary(), p.to_json(), p.horizon(), p.rule());
        if let Some(f) = &p.partitions
            && let Ok(expanded) = f.expand(today)
        {
            let _ = Predicate::parse(&expanded, &["ingestion_date".to_string()]);
        }
    }
    let config = lakehealth::config::Config::parse(&text, Path::new("fuzz-config.toml"));
    policy.is_ok() || config.is_ok()
}

#[test]
fn fuzz_policy_and_config_toml() {
    let policy = policy_example();
    let config = config_example();
    fuzz(
        "policy_and_config_toml",
        135000,
        prop_oneof![
            1 => text(200),
            4 => mutated_text(&[&policy, &config, "partitions = \"d >= today - 2d\"\ninterval = 10\n"], POLICY_TOKENS),
        ],
        |t| {
            if registers_a_secret(&t) {
                return Err(TestCaseError::reject("would register a secret"));
            }
            within(&t, read_policy)
        },
    );
}

const PREDICATES: &[&str] = &[
    "ingestion_date = '2026-11-30'",
    "ingestion_date >= today - 2d AND region IN ('eu', 'us')",
    "(region = 'eu' OR region = 'us') AND hour = 1",
    "region IS NOT NULL and region not in ('eu')",
    "\"my col\" = 'it''s' AND `Day` >= '2026-01-01'",
    "'2026-01-01' < d OR hour <> -1.5e3",
];

const SQL_TOKENS: &[&str] = &[
    " AND ",
    " OR ",
    " NOT ",
    " IN ",
    " IS ",
    " NULL ",
    " BETWEEN ",
    " LIKE ",
    "(SELECT 1)",
    "f(x)",
    "CASE WHEN 1 THEN 2 END",
    "1e309",
    "-",
    "+",
    "*",
    "/",
    "<=",
    ">=",
    "<>",
    "!=",
    "::",
    "[1]",
    "today",
    "yesterday",
    " - 3d",
    " + 99999999999999999999d",
    "`",
    "$1",
    "@x",
    "?",
    "((((((((((((((((",
    "))))))))))))))))",
    "x.y.z",
];

/// `--where` and a policy's `partitions`: date macros first, then the predicate, then matching.
fn read_predicate(input: String) -> bool {
    let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    let cols: Vec<String> = ["ingestion_date", "region", "hour", "d", "my col", "Day"]
        .map(String::from)
        .to_vec();
    let expanded = expand_date_macros(&input, today).unwrap_or_else(|_| input.clone());
    let mut accepted = false;
    for text in [&input, &expanded] {
        if let Ok(p) = Predicate::parse(text, &cols) {
            let values: Vec<(String, Option<String>)> = cols
                .iter()
                .map(|c| (c.clone(), Some("2026-11-30".to_string())))
                .collect();
            let _ = p.matches(&values);
            let _ = p.matches(&[("hour".into(), None), ("region".into(), Some("1e3".into()))]);
            accepted = true;
        }
    }
    accepted
}

#[test]
fn fuzz_where_predicates() {
    let tokens = vec(proptest::sample::select(SQL_TOKENS.to_vec()), 0..24).prop_map(|t| t.concat());
    fuzz(
        "where_predicates",
        150000,
        prop_oneof![
            1 => text(120),
            1 => tokens,
            3 => mutated_text(PREDICATES, SQL_TOKENS),
        ],
        |t| within(&t, read_predicate),
    );
}

/// Sizes (`--target`, policy and config sizes) and durations (`--interval`, `--poll`, policy
/// and config durations, humantime's parser).
fn read_size_and_duration(s: String) -> bool {
    let size = s.parse::<ByteSize>();
    if let Ok(b) = size {
        let shown = b.to_string();
        let again: ByteSize = shown
            .parse()
            .unwrap_or_else(|e| panic!("{shown:?}, the display of {b:?}, does not parse: {e}"));
        // The display rounds to 3 significant digits or so: within 1 % of the value.
        let (a, b) = (again.0 as f64, b.0 as f64);
        assert!(
            (a - b).abs() <= b * 0.01 + 1.0,
            "{shown:?} reads {a}, was {b}"
        );
    }
    let duration = humantime::parse_duration(&s);
    let _ = lakehealth::cli::args::parse_from(["lakehealth", "stream", "x", "--interval", &s]);
    let _ = lakehealth::cli::args::parse_from(["lakehealth", "compact", "x", "--target", &s]);
    size.is_ok() || duration.is_ok()
}

#[test]
fn fuzz_size_and_duration_strings() {
    let seeds = [
        "128MiB",
        "1.5GB",
        "4096B",
        "0",
        "1e3KiB",
        "  7 tb ",
        "10s",
        "1h 30m",
        "7days",
        "500ms",
        "2m",
        "18446744073709551615B",
        "16384PiB",
    ];
    fuzz(
        "size_and_duration_strings",
        54000,
        prop_oneof![
            1 => text(40),
            1 => (proptest::num::f64::ANY, proptest::sample::select(vec!["B", "KiB", "MB", "GiB", "TB", "s", "ms", "d", "y"]))
                .prop_map(|(n, u)| format!("{n}{u}")),
            2 => mutated_text(&seeds, &["9", ".", "e", "E", "-", "KiB", "TiB", "ns", "y", "days"]),
        ],
        |s| within(&s, read_size_and_duration),
    );
}

/// Partition values as the log writes them (any text, NULL, ""): the canonical key reads back
/// what was written, with "" read as NULL; and typed partition values as delta-kernel parses
/// them for a rewrite.
fn read_partition_values(pairs: Vec<(String, Option<String>)>, raw: String) -> bool {
    use delta_kernel::schema::{DecimalType, PrimitiveType};
    let mut buf = String::new();
    encode_into(
        &mut buf,
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_deref())),
    );
    let reserved = |s: &str| s.contains(['\u{0}', '\u{1e}', '\u{1f}']) || s.starts_with('=');
    let plain = pairs
        .iter()
        .all(|(k, v)| !reserved(k) && !k.is_empty() && v.as_deref().is_none_or(|v| !reserved(v)));
    if plain {
        let mut want: Vec<(String, Option<String>)> = pairs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().filter(|v| !v.is_empty())))
            .collect();
        // By key and value: a generated list may repeat a key (a log's map cannot), and the
        // key's sort leaves repeated keys in any order.
        want.sort();
        let mut got = decode(&buf);
        got.sort();
        assert_eq!(got, want, "the key {buf:?}");
    }
    let cols: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    let _ = resolve_key(&raw, &cols, &HashMap::new());
    let mut sizes = PartitionSizes::default();
    sizes.push(&raw, 1);
    sizes.push(&buf, 2);
    let _ = sizes.resolve(&cols, &HashMap::new());
    let types = [
        PrimitiveType::String,
        PrimitiveType::Long,
        PrimitiveType::Integer,
        PrimitiveType::Short,
        PrimitiveType::Byte,
        PrimitiveType::Float,
        PrimitiveType::Double,
        PrimitiveType::Boolean,
        PrimitiveType::Date,
        PrimitiveType::Timestamp,
        PrimitiveType::TimestampNtz,
        PrimitiveType::Binary,
        PrimitiveType::Decimal(DecimalType::try_new(38, 10).unwrap()),
        PrimitiveType::Decimal(DecimalType::try_new(5, 0).unwrap()),
    ];
    let mut typed = false;
    for v in pairs
        .iter()
        .filter_map(|(_, v)| v.as_deref())
        .chain([raw.as_str()])
    {
        for t in &types {
            let parsed = t.parse_scalar(v).is_ok();
            // A string column takes anything: count the typed ones.
            typed |= parsed && !v.is_empty() && *t != PrimitiveType::String;
        }
    }
    typed
}

#[test]
fn fuzz_partition_values() {
    let value = prop_oneof![
        text(12),
        mutated_text(
            &[
                "2026-11-30",
                "2026-11-30 10:00:00.123",
                "12.50",
                "-1e-3",
                "true"
            ],
            &["e", "E", "-", "9", "."]
        ),
    ];
    fuzz(
        "partition_values",
        90000,
        (vec((text(8), proptest::option::of(value)), 0..10), text(40)),
        |(pairs, raw)| within(&(pairs, raw), |(p, r)| read_partition_values(p, r)),
    );
}

/// An Iceberg table on disk (metadata, manifest list, manifest) as `load_table` finds one.
fn iceberg_table(dir: &Path) {
    let meta = dir.join("metadata");
    std::fs::create_dir_all(&meta).unwrap();
    let url = |p: &Path| Url::from_file_path(p).unwrap().to_string();
    let m = meta.join("m0.avro");
    std::fs::write(
        &m,
        manifest(apache_avro::Codec::Deflate(Default::default())),
    )
    .unwrap();
    let schema = apache_avro::Schema::parse_str(
        r#"{"type": "record", "name": "manifest_file", "fields": [
          {"name": "manifest_path", "type": "string"},
          {"name": "manifest_length", "type": "long"},
          {"name": "partition_spec_id", "type": "int"},
          {"name": "content", "type": "int"}]}"#,
    )
    .unwrap();
    let mut w = apache_avro::Writer::new(&schema, Vec::new()).unwrap();
    w.append_value(Avro::Record(vec![
        ("manifest_path".into(), Avro::String(url(&m))),
        ("manifest_length".into(), Avro::Long(1)),
        ("partition_spec_id".into(), Avro::Int(0)),
        ("content".into(), Avro::Int(0)),
    ]))
    .unwrap();
    let list = meta.join("snap-7.avro");
    std::fs::write(&list, w.into_inner().unwrap()).unwrap();
    let metadata = serde_json::json!({
        "format-version": 2, "location": url(dir), "current-snapshot-id": 7,
        "default-spec-id": 0, "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"source-id": 2, "field-id": 1000, "transform": "day", "name": "ts_day"},
            {"source-id": 3, "field-id": 1001, "transform": "identity", "name": "category"}]}],
        "schemas": [{"schema-id": 0, "type": "struct", "fields": [
            {"id": 1, "name": "id", "type": "long", "required": false},
            {"id": 2, "name": "ts", "type": "timestamp", "required": false},
            {"id": 3, "name": "category", "type": "string", "required": false}]}],
        "properties": {"write.target-file-size-bytes": "1000"},
        "snapshots": [{"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 1000,
            "manifest-list": url(&list), "summary": {"operation": "append"}}]
    });
    std::fs::write(meta.join("v1.metadata.json"), metadata.to_string()).unwrap();
    std::fs::write(meta.join("version-hint.text"), "1\n").unwrap();
}

/// Whole tables opened as the CLI and the TUI open them (discovery of the format, the log or
/// metadata, the deletion vectors' count by delta-rs), one of their files mutated: the open
/// returns a report or a typed error, never a panic caught by its guard.
#[derive(Debug, Clone)]
struct TableCase {
    table: usize,
    file: Index,
    mutations: Vec<crate::fuzz_harness::Mutation>,
}

const OPEN_TABLES: &[&str] = &[
    "table-with-dv-small",
    "simple_table_with_checkpoint",
    "iceberg",
];

fn open_mutated(c: TableCase) -> Result<bool, String> {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap().join("t");
    let name = OPEN_TABLES[c.table];
    let files: Vec<PathBuf> = if name == "iceberg" {
        iceberg_table(&root);
        let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("metadata"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    } else {
        copy_dir(&fixture(name), &root);
        let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v.push(root.join(DV_FILE));
        v.retain(|p| p.exists());
        v
    };
    let target = &files[c.file.index(files.len())];
    let mut b = std::fs::read(target).unwrap();
    for m in &c.mutations {
        crate::fuzz_harness::apply(&mut b, m, DELTA_TOKENS);
    }
    std::fs::write(target, b).unwrap();
    let outcome = block_on(load_table(&loc(&root), &opts(), &|_| {}));
    match outcome {
        Err(EngineError::Panicked { detail, .. }) => Err(format!(
            "opening {name} with {} mutated panicked: {detail}",
            target.display()
        )),
        outcome => Ok(outcome.is_ok()),
    }
}

/// Found by `fuzz_whole_table_open` (10x run): delta-rs 1.1 unwraps a deletion vector's storage
/// type when it converts a file action, so `"storageType":"t"` panicked the count of deleted
/// rows (and a compaction's plan); it is now an error, and the report says why it has no count.
#[test]
fn fuzz_regression_an_unknown_deletion_vector_storage_type_is_an_error_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("t");
    copy_dir(&fixture("table-with-dv-small"), &root);
    let commit = root.join("_delta_log/00000000000000000001.json");
    let text = std::fs::read_to_string(&commit).unwrap();
    assert!(text.contains(r#""storageType":"u""#));
    std::fs::write(
        &commit,
        text.replace(r#""storageType":"u""#, r#""storageType":"t""#),
    )
    .unwrap();
    let report = block_on(load_table(&loc(&root), &opts(), &|_| {})).unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("deleted rows could not be counted")
                && w.contains("deletion vector")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn fuzz_whole_table_open() {
    let case = (
        0..OPEN_TABLES.len(),
        any::<Index>(),
        crate::fuzz_harness::mutations(),
    )
        .prop_map(|(table, file, mutations)| TableCase {
            table,
            file,
            mutations,
        });
    fuzz("whole_table_open", 5400, case, |c| {
        within(&c, open_mutated)?.map_err(TestCaseError::fail)
    });
}

/// Keys of a sealed record's envelope, inserted by mutations.
const SEAL_TOKENS: &[&str] = &[
    "\"sealed\":",
    "\"kind\":",
    "\"key_id\":",
    "\"mac\":",
    "\"payload\":",
    "\"outputs\":",
    "\"job\":",
    "\"adds\":",
    "\"removes\":",
    "\\\"",
    "output-ledger",
    "bin-result",
    "bin-spec",
    "iceberg-job",
    "../",
];

/// Each kind of sealed record, its place and the values sealed as seeds.
type SealedSeeds = (
    lakehealth::engine::sealed::Keyring,
    Vec<(
        lakehealth::engine::sealed::RecordKind,
        &'static str,
        Vec<serde_json::Value>,
    )>,
    Arc<Vec<Vec<u8>>>,
);

fn sealed_seeds() -> &'static SealedSeeds {
    use lakehealth::engine::sealed::{Key, Keyring, RecordKind, seal};
    static SEEDS: OnceLock<SealedSeeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let ring = Keyring::new(
            Key::from_text("fuzzing-key-0123456789abcdef0123456789", "fuzz").unwrap(),
            None,
        );
        let kinds = vec![
            (
                RecordKind::OutputLedger,
                "_lakehealth/local-jobs/j.1@h.ledger",
                vec![
                    serde_json::json!({"job": "j", "outputs": ["d=1/part-00000-lakehealth-j-a.parquet"]}),
                    serde_json::json!({"job": "j", "outputs": []}),
                ],
            ),
            (
                RecordKind::BinResult,
                "_lakehealth/jobs/j/bin-1.result.json",
                vec![serde_json::json!({"job_id": "j", "bin_id": 1, "status": "done",
                    "adds": [{"path": "d=1/part-00000-lakehealth-j-a.parquet"}],
                    "removes": [{"path": "d=1/x.parquet"}]})],
            ),
            (
                RecordKind::BinSpec,
                "_lakehealth/jobs/j/bin-1.spec.json",
                vec![serde_json::json!({"job_id": "j", "bin_id": 1,
                    "files": [{"path": "d=1/x.parquet", "store_path": "d=1/x.parquet", "size": 10}]})],
            ),
            (
                RecordKind::IcebergJob,
                "_lakehealth/iceberg-jobs/j.json",
                vec![serde_json::json!({"job": "j", "host": "h", "pid": 1, "started_ms": 0,
                    "outputs": ["file:///t/data/00000-lakehealth-j-ab.parquet"]})],
            ),
        ];
        let mut seeds = Vec::new();
        for (kind, place, values) in &kinds {
            for v in values {
                seeds.push(seal(&ring, *kind, place, v).unwrap());
            }
        }
        (ring, kinds, Arc::new(seeds))
    })
}

/// Opens `b` as every kind of record: no panic, and whatever opens is exactly a value that
/// was sealed for that kind and place (a mutation never yields an accepted record of other
/// content).
fn open_sealed(b: Vec<u8>) -> Result<bool, String> {
    let (ring, kinds, _) = sealed_seeds();
    let mut accepted = false;
    for (kind, place, values) in kinds {
        if let Ok(v) = lakehealth::engine::sealed::open::<serde_json::Value>(ring, *kind, place, &b)
        {
            if !values.contains(&v) {
                return Err(format!("a mutated record opened as {kind:?}: {v}"));
            }
            accepted = true;
        }
    }
    Ok(accepted)
}

#[test]
fn fuzz_sealed_records() {
    fuzz(
        "sealed_records",
        20000,
        prop_oneof![
            1 => bytes(512),
            6 => mutated(sealed_seeds().2.clone(), SEAL_TOKENS),
        ],
        |b| within(&b, open_sealed)?.map_err(TestCaseError::fail),
    );
}
