//! Replay of hand-written logs (data files need not exist: only the log is read) with
//! checkpoints written by delta-rs, each checked against delta-rs's own snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use serde_json::{Value, json};

use super::partition_key::PartitionSizes;
use super::replay::replay;
use super::state::LogState;
use crate::delta::log::actions::physical_names;
use crate::options::ReplayOptions;

pub(super) struct Log {
    pub(super) dir: tempfile::TempDir,
    pub(super) next: u64,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(super) fn add(path: &str, pv: Value, size: u64) -> Value {
    json!({"add": {"path": path, "partitionValues": pv, "size": size,
        "modificationTime": 1, "dataChange": true}})
}

/// A remove with its partition values and size when given (extended file metadata).
pub(super) fn remove(path: &str, pv: Option<Value>, size: Option<u64>) -> Value {
    let mut r = json!({"path": path, "deletionTimestamp": now_ms(), "dataChange": false});
    if let Some(pv) = pv {
        r["partitionValues"] = pv;
        r["extendedFileMetadata"] = json!(true);
    }
    if let Some(s) = size {
        r["size"] = json!(s);
    }
    json!({"remove": r})
}

pub(super) fn optimize() -> Value {
    json!({"commitInfo": {"timestamp": now_ms(), "operation": "OPTIMIZE",
        "clientVersion": "delta-rs.test"}})
}

impl Log {
    /// Version 0: protocol and metadata of a table of string partition columns and `x: long`.
    pub(super) fn new(partition_columns: &[&str]) -> Self {
        let mut fields =
            vec![json!({"name": "x", "type": "long", "nullable": true, "metadata": {}})];
        fields.extend(
            partition_columns
                .iter()
                .map(|c| json!({"name": c, "type": "string", "nullable": true, "metadata": {}})),
        );
        let schema = json!({"type": "struct", "fields": fields}).to_string();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("_delta_log")).expect("log dir");
        let mut log = Log { dir, next: 0 };
        log.commit(&[
            json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                "schemaString": schema, "partitionColumns": partition_columns,
                "configuration": {}, "createdTime": 0}}),
        ]);
        log
    }

    pub(super) fn commit(&mut self, actions: &[Value]) {
        let text: Vec<String> = actions.iter().map(Value::to_string).collect();
        let path = self
            .dir
            .path()
            .join(format!("_delta_log/{:020}.json", self.next));
        std::fs::write(path, text.join("\n") + "\n").expect("write commit");
        self.next += 1;
    }

    pub(super) fn url(&self) -> url::Url {
        url::Url::from_directory_path(self.dir.path()).expect("absolute temp path")
    }

    /// A checkpoint of the latest version, written by delta-rs.
    pub(super) async fn checkpoint(&self) {
        let t = deltalake::open_table(self.url())
            .await
            .expect("delta-rs opens");
        deltalake::checkpoints::create_checkpoint(&t, None)
            .await
            .expect("delta-rs writes a checkpoint");
    }

    async fn replay_with(&self, opts: ReplayOptions) -> LogState {
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(self.dir.path()).expect("local store"));
        replay(&store, "test", opts, &|_| {}).await.expect("replay")
    }

    pub(super) async fn replay(&self) -> LogState {
        self.replay_with(ReplayOptions::default()).await
    }

    /// (files, bytes) of delta-rs's snapshot.
    async fn delta_rs(&self) -> (u64, u64) {
        let t = deltalake::open_table(self.url())
            .await
            .expect("delta-rs opens");
        let (mut files, mut bytes) = (0, 0);
        for f in t.snapshot().expect("snapshot").log_data() {
            files += 1;
            bytes += f.size() as u64;
        }
        (files, bytes)
    }
}

fn totals(s: &LogState) -> (u64, u64) {
    let files = s.partitions.files();
    let bytes = s.partitions.groups.iter().flat_map(|(_, v)| v).sum();
    (files, bytes)
}

/// Files per partition (logical values, NULL as None).
fn per_partition(s: LogState) -> BTreeMap<Vec<Option<String>>, usize> {
    let columns = s.metadata.partition_columns.clone();
    let phys = physical_names(&s.metadata.schema_string);
    let parts: PartitionSizes = s.partitions;
    parts
        .resolve(&columns, &phys)
        .into_iter()
        .map(|(v, sizes)| (v, sizes.len()))
        .collect()
}

/// Checks lakehealth's totals against delta-rs's and the expected ones.
async fn check(log: &Log, s: &LogState, files: u64, bytes: u64) {
    assert_eq!(totals(s), (files, bytes), "lakehealth");
    assert_eq!(log.delta_rs().await, (files, bytes), "delta-rs");
}

#[tokio::test]
async fn a_path_the_checkpoint_holds_added_again_is_live_once() {
    let mut log = Log::new(&["k"]);
    let k1 = json!({"k": "1"});
    log.commit(&[
        add("a", k1.clone(), 100),
        add("b", k1.clone(), 100),
        add("c", k1.clone(), 200),
    ]);
    log.checkpoint().await;
    // Added again (a writer refreshing its stats, say), and a new file of the same size.
    log.commit(&[add("a", k1.clone(), 100), add("n", k1.clone(), 100)]);
    let s = log.replay().await;
    check(&log, &s, 4, 500).await;
    assert!(
        !s.checkpoint_paths_read,
        "only the ambiguous rows' paths are read"
    );
}

#[tokio::test]
async fn a_path_removed_and_added_again_after_the_checkpoint_is_live_once() {
    let mut log = Log::new(&["k"]);
    let k1 = json!({"k": "1"});
    log.commit(&[add("a", k1.clone(), 100), add("b", k1.clone(), 100)]);
    log.checkpoint().await;
    log.commit(&[remove("a", Some(k1.clone()), Some(100))]);
    log.commit(&[add("a", k1.clone(), 100)]);
    let s = log.replay().await;
    check(&log, &s, 2, 200).await;
    assert!(s.tombstones.entries.is_empty(), "{:?}", s.tombstones);
    // Added and removed by one commit (the actions of a commit have no order): delta-rs
    // takes the first of the two.
    log.commit(&[
        remove("b", Some(k1.clone()), Some(100)),
        add("b", k1.clone(), 100),
    ]);
    let s = log.replay().await;
    check(&log, &s, 1, 100).await;
    assert_eq!(s.tombstones.entries.len(), 1);
    log.commit(&[
        add("b", k1.clone(), 100),
        remove("b", Some(k1.clone()), Some(100)),
    ]);
    let s = log.replay().await;
    check(&log, &s, 2, 200).await;
    assert!(s.tombstones.entries.is_empty());
}

#[tokio::test]
async fn a_remove_without_partition_values_is_matched_by_the_paths_of_the_rows_of_its_size() {
    let mut log = Log::new(&["k"]);
    log.commit(&[
        add("a", json!({"k": "1"}), 100),
        add("b", json!({"k": "2"}), 100),
        add("c", json!({"k": "2"}), 300),
    ]);
    log.checkpoint().await;
    log.commit(&[remove("a", None, Some(100))]);
    let s = log.replay().await;
    check(&log, &s, 2, 400).await;
    assert!(!s.checkpoint_paths_read, "only the rows of size 100");
    assert_eq!(
        per_partition(s),
        BTreeMap::from([(vec![Some("2".to_string())], 2)])
    );
}

#[tokio::test]
async fn partition_less_and_extended_removes_of_one_size_each_drop_their_own_file() {
    let mut log = Log::new(&["k"]);
    log.commit(&[
        add("a", json!({"k": "1"}), 100),
        add("b", json!({"k": "1"}), 100),
        add("c", json!({"k": "1"}), 100),
        add("d", json!({"k": "2"}), 100),
    ]);
    log.checkpoint().await;
    // One remove an older writer wrote (no partition), one with extended metadata, same size.
    log.commit(&[
        remove("c", None, Some(100)),
        remove("a", Some(json!({"k": "1"})), Some(100)),
    ]);
    let s = log.replay().await;
    check(&log, &s, 2, 200).await;
    assert!(!s.checkpoint_paths_read);
    assert_eq!(
        per_partition(s),
        BTreeMap::from([
            (vec![Some("1".to_string())], 1),
            (vec![Some("2".to_string())], 1)
        ])
    );
}

#[tokio::test]
async fn a_partition_less_remove_of_a_file_no_row_of_its_size_holds_falls_back_to_paths() {
    let mut log = Log::new(&["k"]);
    log.commit(&[
        add("a", json!({"k": "1"}), 100),
        add("b", json!({"k": "2"}), 100),
    ]);
    log.checkpoint().await;
    // The remove's size is not the size the checkpoint holds for "a" (a writer's mistake).
    log.commit(&[remove("a", None, Some(101))]);
    let s = log.replay().await;
    check(&log, &s, 1, 100).await;
    assert!(s.checkpoint_paths_read, "exact by every path");
}

#[tokio::test]
async fn a_remove_spelling_its_partition_unlike_the_checkpoint_falls_back_to_paths() {
    let mut log = Log::new(&["k"]);
    log.commit(&[
        add("a", json!({"k": "1"}), 100),
        add("b", json!({"k": "1"}), 300),
    ]);
    log.checkpoint().await;
    // An empty map where the checkpoint has {"k": "1"}: nothing of (partition, size) matches.
    log.commit(&[remove("a", Some(json!({})), Some(100))]);
    let s = log.replay().await;
    check(&log, &s, 1, 300).await;
    assert!(s.checkpoint_paths_read);
}

#[tokio::test]
async fn key_order_and_empty_for_null_match_by_partition_and_size() {
    let mut log = Log::new(&["a", "b"]);
    log.commit(&[
        add("f1", json!({"a": "1", "b": ""}), 100),
        add("f2", json!({"a": "1", "b": null}), 100),
        add("f3", json!({"a": "1", "b": "null"}), 100),
        add("f4", json!({"a": "1", "b": "x"}), 50),
    ]);
    log.checkpoint().await;
    log.commit(&[remove("f1", Some(json!({"b": null, "a": "1"})), Some(100))]);
    let s = log.replay().await;
    check(&log, &s, 3, 250).await;
    assert!(!s.checkpoint_paths_read);
    // NULL and "" are one partition; the string "null" is another.
    assert_eq!(
        per_partition(s),
        BTreeMap::from([
            (vec![Some("1".to_string()), None], 1),
            (vec![Some("1".to_string()), Some("null".to_string())], 1),
            (vec![Some("1".to_string()), Some("x".to_string())], 1),
        ])
    );
}

/// Version 1 adds a and b (and e, the same size as a), version 2 compacts a and b into c, the
/// checkpoint is at 2, version 3 compacts a and b again into d.
async fn removed_again_after_checkpoint(with_twin: bool) -> Log {
    let mut log = Log::new(&["k"]);
    let k = json!({"k": "1"});
    let mut first = vec![add("a", k.clone(), 100), add("b", k.clone(), 200)];
    if with_twin {
        first.push(add("e", k.clone(), 100));
    }
    log.commit(&first);
    log.commit(&[
        optimize(),
        remove("a", Some(k.clone()), Some(100)),
        remove("b", Some(k.clone()), Some(200)),
        add("c", k.clone(), 250),
    ]);
    log.checkpoint().await;
    log.commit(&[
        optimize(),
        remove("a", Some(k.clone()), Some(100)),
        remove("b", Some(k.clone()), Some(200)),
        add("d", k.clone(), 260),
    ]);
    log
}

#[tokio::test]
async fn files_removed_again_after_the_checkpoint_leave_its_other_files_alone() {
    for with_twin in [false, true] {
        let log = removed_again_after_checkpoint(with_twin).await;
        // Commits before the checkpoint unread: only its tombstones show the first remove.
        let opts = ReplayOptions {
            scan_commits: 0,
            history_commits: 1,
            ..ReplayOptions::default()
        };
        let s = log.replay_with(opts).await;
        let (files, bytes) = if with_twin { (3, 610) } else { (2, 510) };
        check(&log, &s, files, bytes).await;
        assert!(!s.checkpoint_paths_read, "with_twin={with_twin}");
        assert_eq!(s.fully_read_from, Some(3));
        assert_eq!(s.repeated_removes.len(), 2);
        assert!(
            s.repeated_removes
                .iter()
                .all(|r| r.versions == vec![3] && r.removed_by_checkpoint == Some(2))
        );
        assert_eq!(s.origins[&3].operation, "OPTIMIZE");

        // With the older commits read, the first remove has its version.
        let s = log.replay().await;
        assert_eq!(s.fully_read_from, Some(0));
        assert!(
            s.repeated_removes
                .iter()
                .all(|r| r.versions == vec![2, 3] && r.removed_by_checkpoint.is_none())
        );
    }
}

#[tokio::test]
async fn a_table_compacted_once_has_no_repeated_removes() {
    let mut log = Log::new(&["k"]);
    let k = json!({"k": "1"});
    log.commit(&[add("a", k.clone(), 100), add("b", k.clone(), 200)]);
    log.commit(&[
        optimize(),
        remove("a", Some(k.clone()), Some(100)),
        remove("b", Some(k.clone()), Some(200)),
        add("c", k.clone(), 250),
    ]);
    log.checkpoint().await;
    log.commit(&[
        optimize(),
        remove("c", Some(k.clone()), Some(250)),
        add("d", k, 240),
    ]);
    let s = log.replay().await;
    check(&log, &s, 1, 240).await;
    assert!(s.repeated_removes.is_empty());
}
