//! Records lakehealth writes into a table folder and later acts on (job ledgers, Iceberg job
//! records, worker specs, results and output ledgers) are sealed: an HMAC-SHA256 under this
//! installation's key (`key`) binds each record's kind, its place in the table and its bytes
//! (`envelope`). A table's writers can write that folder but do not hold the key, so nothing
//! they plant or alter there can steer a delete or a commit: a record whose seal does not
//! verify is refused (reported with why) and left for a person, never acted on.

mod envelope;
mod key;

pub use envelope::{RecordKind, Refusal, SealError, open, seal};
pub use key::{
    KEY_ENV, Key, KeyError, Keyring, PREVIOUS_KEY_ENV, install, key_file, keyring, rotate_key_file,
};
