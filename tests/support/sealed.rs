//! Job records as lakehealth writes them (sealed under the installation key this machine's
//! binary uses too: the same data dir, or `$LAKEHEALTH_KEY`): tests read them, and tamper with
//! them as a holder of the key could, to prove the checks that stand behind the seal.

use std::path::Path;

use lakehealth::engine::sealed::{self, RecordKind};

/// The record at `rel` (relative to the table root), opened as JSON.
pub fn open_record(table: &Path, rel: &str, kind: RecordKind) -> serde_json::Value {
    let ring = sealed::keyring().expect("the installation key");
    let bytes = std::fs::read(table.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    sealed::open(&ring, kind, rel, &bytes).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Writes `value` at `rel` sealed as lakehealth would.
pub fn write_sealed(table: &Path, rel: &str, kind: RecordKind, value: &impl serde::Serialize) {
    let ring = sealed::keyring().expect("the installation key");
    let bytes = sealed::seal(&ring, kind, rel, value).unwrap();
    let at = table.join(rel);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::write(at, bytes).unwrap();
}

/// The outputs a sealed ledger lists (`{"job", "outputs"}`).
pub fn ledger_outputs(table: &Path, rel: &str) -> Vec<String> {
    open_record(table, rel, RecordKind::OutputLedger)["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}
