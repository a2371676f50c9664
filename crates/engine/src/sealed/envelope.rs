//! A sealed record as stored: a small JSON envelope around the record's exact bytes.
//!
//! ```json
//! {"sealed": 1, "kind": "output-ledger", "key_id": "3f0c…", "mac": "<hex>", "payload": "<the record's JSON text>"}
//! ```
//!
//! The MAC covers a version tag, the kind, the record's place (its key relative to the table
//! root) and the payload text, so a record cannot be altered, passed off as another kind, or
//! moved to another job's or bin's place. The payload stays text (never re-serialised before
//! it is verified), and it is parsed only after the MAC matched.

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::Sha256;

use super::key::{Key, Keyring};

/// What kind of record: part of what the MAC covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// The outputs a job or a worker lists before creating them (`LedgerStore`).
    OutputLedger,
    /// An Iceberg job's record (`iceberg/compact/ledger.rs`).
    IcebergJob,
    /// The spec a worker was given, as it keeps it beside the table.
    BinSpec,
    /// A worker's result.
    BinResult,
}

impl RecordKind {
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::OutputLedger => "output-ledger",
            RecordKind::IcebergJob => "iceberg-job",
            RecordKind::BinSpec => "bin-spec",
            RecordKind::BinResult => "bin-result",
        }
    }
}

const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    sealed: u32,
    kind: String,
    key_id: String,
    mac: String,
    payload: String,
}

/// Why a record is not acted on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "it is not sealed by lakehealth (a record of an earlier version, or a file someone else wrote)"
    )]
    Unsigned,
    #[error("it is not a sealed record: {0}")]
    Malformed(String),
    #[error("it is sealed as a {found} record where a {expected} record belongs")]
    OtherKind {
        expected: &'static str,
        found: String,
    },
    #[error(
        "it is sealed with key {key_id}, which this installation does not hold (another installation's, or rotated out)"
    )]
    UnknownKey { key_id: String },
    #[error("its seal does not match: it was altered, or moved here from another place or table")]
    BadMac,
    #[error("its sealed content does not parse: {0}")]
    Payload(String),
    #[error("no key to verify it with: {0}")]
    NoKey(String),
}

/// Why a record could not be sealed (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("serialising the record: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the installation key: {0}")]
    Key(#[from] super::key::KeyError),
    #[error("a record's place may not hold a line break: {0:?}")]
    Place(String),
}

fn mac(key: &Key, kind: RecordKind, place: &str, payload: &str) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key.bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    m.update(format!("lakehealth sealed record v{VERSION}\n").as_bytes());
    m.update(kind.name().as_bytes());
    m.update(b"\n");
    m.update(place.as_bytes());
    m.update(b"\n");
    m.update(payload.as_bytes());
    m
}

/// `value` sealed as a `kind` record at `place` (its key relative to the table root).
pub fn seal<T: Serialize>(
    keyring: &Keyring,
    kind: RecordKind,
    place: &str,
    value: &T,
) -> Result<Vec<u8>, SealError> {
    if place.contains('\n') {
        return Err(SealError::Place(place.to_string()));
    }
    let payload = serde_json::to_string_pretty(value)?;
    let key = keyring.current();
    let tag = mac(key, kind, place, &payload).finalize().into_bytes();
    let envelope = Envelope {
        sealed: VERSION,
        kind: kind.name().to_string(),
        key_id: key.id().to_string(),
        mac: hex::encode(tag),
        payload,
    };
    Ok(serde_json::to_vec_pretty(&envelope)?)
}

/// The record in `bytes`, found at `place`, if its seal verifies; else why it is refused.
pub fn open<T: DeserializeOwned>(
    keyring: &Keyring,
    kind: RecordKind,
    place: &str,
    bytes: &[u8],
) -> Result<T, Refusal> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| Refusal::Malformed(e.to_string()))?;
    if value.get("sealed").is_none() {
        return Err(Refusal::Unsigned);
    }
    let envelope: Envelope =
        serde_json::from_value(value).map_err(|e| Refusal::Malformed(e.to_string()))?;
    if envelope.sealed != VERSION {
        return Err(Refusal::Malformed(format!(
            "seal version {} (this lakehealth reads {VERSION})",
            envelope.sealed
        )));
    }
    if envelope.kind != kind.name() {
        return Err(Refusal::OtherKind {
            expected: kind.name(),
            found: envelope.kind,
        });
    }
    let key = keyring
        .accepted(&envelope.key_id)
        .ok_or_else(|| Refusal::UnknownKey {
            key_id: envelope.key_id.clone(),
        })?;
    let tag = hex::decode(&envelope.mac).map_err(|_| Refusal::BadMac)?;
    // Constant-time comparison.
    mac(key, kind, place, &envelope.payload)
        .verify_slice(&tag)
        .map_err(|_| Refusal::BadMac)?;
    serde_json::from_str(&envelope.payload).map_err(|e| Refusal::Payload(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(text: &str) -> Keyring {
        Keyring::new(Key::from_text(text, "test").unwrap(), None)
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const PLACE: &str = "_lakehealth/local-jobs/j.1@h.ledger";

    #[test]
    fn a_sealed_record_opens_where_it_was_sealed() {
        let bytes = seal(
            &ring(A),
            RecordKind::OutputLedger,
            PLACE,
            &vec!["d=1/x.parquet"],
        )
        .unwrap();
        let back: Vec<String> = open(&ring(A), RecordKind::OutputLedger, PLACE, &bytes).unwrap();
        assert_eq!(back, vec!["d=1/x.parquet"]);
    }

    #[test]
    fn an_altered_moved_retyped_or_foreign_record_is_refused() {
        let bytes = seal(
            &ring(A),
            RecordKind::OutputLedger,
            PLACE,
            &vec!["d=1/x.parquet"],
        )
        .unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let altered = text.replace("x.parquet", "y.parquet");
        assert_eq!(
            open::<Vec<String>>(
                &ring(A),
                RecordKind::OutputLedger,
                PLACE,
                altered.as_bytes()
            ),
            Err(Refusal::BadMac)
        );
        assert_eq!(
            open::<Vec<String>>(&ring(A), RecordKind::OutputLedger, "elsewhere", &bytes),
            Err(Refusal::BadMac)
        );
        assert!(matches!(
            open::<Vec<String>>(&ring(A), RecordKind::BinResult, PLACE, &bytes),
            Err(Refusal::OtherKind { .. })
        ));
        assert!(matches!(
            open::<Vec<String>>(&ring(B), RecordKind::OutputLedger, PLACE, &bytes),
            Err(Refusal::UnknownKey { .. })
        ));
        // The key id of another key, with a MAC made up: still refused.
        let forged = text.replace(
            &serde_json::from_str::<serde_json::Value>(&text).unwrap()["mac"]
                .as_str()
                .unwrap()
                .to_string(),
            &"0".repeat(64),
        );
        assert_eq!(
            open::<Vec<String>>(&ring(A), RecordKind::OutputLedger, PLACE, forged.as_bytes()),
            Err(Refusal::BadMac)
        );
    }

    #[test]
    fn a_plain_record_of_an_earlier_version_is_unsigned_and_garbage_is_malformed() {
        assert_eq!(
            open::<Vec<String>>(
                &ring(A),
                RecordKind::OutputLedger,
                PLACE,
                b"[\"d=1/x.parquet\"]"
            ),
            Err(Refusal::Unsigned)
        );
        assert!(matches!(
            open::<Vec<String>>(&ring(A), RecordKind::OutputLedger, PLACE, b"\x00\xff"),
            Err(Refusal::Malformed(_))
        ));
    }

    #[test]
    fn a_record_sealed_before_a_rotation_still_opens_with_the_previous_key() {
        let old = Key::from_text(A, "old").unwrap();
        let new = Key::from_text(B, "new").unwrap();
        let bytes = seal(
            &Keyring::new(old.clone(), None),
            RecordKind::BinSpec,
            PLACE,
            &1u32,
        )
        .unwrap();
        let rotated = Keyring::new(new, Some(old));
        assert_eq!(
            open::<u32>(&rotated, RecordKind::BinSpec, PLACE, &bytes),
            Ok(1)
        );
        let resealed = seal(&rotated, RecordKind::BinSpec, PLACE, &2u32).unwrap();
        assert!(
            String::from_utf8(resealed)
                .unwrap()
                .contains(rotated.current().id())
        );
    }
}
