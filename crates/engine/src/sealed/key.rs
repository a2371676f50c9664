//! The installation key that seals records (`envelope`). Where it comes from, first found:
//! a keyring installed by the program (the config file's `key`), `LAKEHEALTH_KEY`, else the
//! file `key` in the data dir, created on first use with owner-only permissions. A rotation
//! keeps the previous key for verifying (`LAKEHEALTH_KEY_PREVIOUS`, or `key.previous` beside the
//! file): records sealed before it are still acted on, new ones are sealed with the new key.
//! Every key is registered as a secret, so it is scrubbed from any output.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

/// The variable that gives the key (at least `MIN_KEY_LEN` characters).
pub const KEY_ENV: &str = "LAKEHEALTH_KEY";
/// The variable that gives the key being rotated out: still accepted, never used to seal.
pub const PREVIOUS_KEY_ENV: &str = "LAKEHEALTH_KEY_PREVIOUS";

/// A key shorter than this is refused: it would be guessable.
const MIN_KEY_LEN: usize = 32;

/// Why no key can be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{source_name} is {len} characters long; a key needs at least {MIN_KEY_LEN}")]
    TooShort { source_name: String, len: usize },
    #[error(
        "the key file {path} can be read by others (mode {mode:o}): `chmod 600 {path}`, or rotate it if it may have leaked"
    )]
    Exposed { path: String, mode: u32 },
    #[error("the key file {path}: {detail}")]
    File { path: String, detail: String },
    #[error(
        "no data directory to keep the installation key in: set {KEY_ENV} (at least {MIN_KEY_LEN} characters)"
    )]
    NoDataDir,
    #[error("no random bytes for a new key: {0}")]
    Random(String),
}

/// One key: its bytes and a short public id (records name the key that sealed them).
#[derive(Clone)]
pub struct Key {
    bytes: Vec<u8>,
    id: String,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the bytes.
        write!(f, "Key({})", self.id)
    }
}

impl Key {
    /// A key from its text (trimmed); `source_name` says where it came from in errors.
    pub fn from_text(text: &str, source_name: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        if text.chars().count() < MIN_KEY_LEN {
            return Err(KeyError::TooShort {
                source_name: source_name.to_string(),
                len: text.chars().count(),
            });
        }
        crate::secrets::register([text.to_string()]);
        let digest = Sha256::new()
            .chain_update(b"lakehealth key id\n")
            .chain_update(text.as_bytes())
            .finalize();
        Ok(Key {
            bytes: text.as_bytes().to_vec(),
            id: hex::encode(&digest[..6]),
        })
    }

    /// Its public id: says which key sealed a record, reveals nothing of the key.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The key that seals, and the one a rotation keeps for verifying.
#[derive(Debug, Clone)]
pub struct Keyring {
    current: Key,
    previous: Option<Key>,
}

impl Keyring {
    pub fn new(current: Key, previous: Option<Key>) -> Self {
        Keyring { current, previous }
    }

    /// The key new records are sealed with.
    pub fn current(&self) -> &Key {
        &self.current
    }

    /// The key named `id`, among those accepted.
    pub fn accepted(&self, id: &str) -> Option<&Key> {
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|k| k.id == id)
    }

    /// The ids of the keys accepted, current first.
    pub fn ids(&self) -> Vec<String> {
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .map(|k| k.id.clone())
            .collect()
    }

    /// From the environment, else the data dir's key file (created on first use).
    pub fn load() -> Result<Self, KeyError> {
        if let Ok(text) = std::env::var(KEY_ENV) {
            let previous = match std::env::var(PREVIOUS_KEY_ENV) {
                Ok(p) if !p.trim().is_empty() => Some(Key::from_text(&p, PREVIOUS_KEY_ENV)?),
                _ => None,
            };
            return Ok(Keyring::new(Key::from_text(&text, KEY_ENV)?, previous));
        }
        let file = key_file().ok_or(KeyError::NoDataDir)?;
        Keyring::from_file(&file)
    }

    /// The key in `file` (created when missing) and `<file>.previous` when there is one.
    pub fn from_file(file: &Path) -> Result<Self, KeyError> {
        let current = read_or_create(file)?;
        let previous_file = previous_of(file);
        let previous = match read_key_file(&previous_file) {
            Ok(k) => Some(k),
            Err(KeyError::File { .. }) if !previous_file.exists() => None,
            Err(e) => return Err(e),
        };
        Ok(Keyring::new(current, previous))
    }
}

/// Where the installation key is kept: `key` in the platform data dir.
pub fn key_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
        .map(|d| d.data_dir().join("key"))
}

fn previous_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".previous");
    PathBuf::from(name)
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> KeyError {
    KeyError::File {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

/// A key file's key; refused when others may read it.
fn read_key_file(path: &Path) -> Result<Key, KeyError> {
    let meta = std::fs::metadata(path).map_err(|e| file_error(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Exposed {
                path: path.display().to_string(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
    Key::from_text(&text, &path.display().to_string())
}

/// Reads the key file, or creates it with a new random key (owner-only, never overwritten:
/// two processes starting at once both end up with the one that landed).
fn read_or_create(path: &Path) -> Result<Key, KeyError> {
    if path.exists() {
        return read_key_file(path);
    }
    write_new_key(path)?;
    read_key_file(path)
}

/// Writes a new random key to `path` unless a file is there already.
fn write_new_key(path: &Path) -> Result<(), KeyError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir).map_err(|e| file_error(dir, e))?;
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
    let text = hex::encode(bytes);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(text.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| file_error(path, e))
        }
        // Another process created it first: its key is the one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(file_error(path, e)),
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Rotates the key file: the current key becomes `key.previous` (still accepted), a new key
/// seals from now on. Returns (new id, previous id). Run it again once no record sealed with
/// the previous key is left (a finished job removes its own).
pub fn rotate_key_file(file: &Path) -> Result<(String, String), KeyError> {
    let old = read_or_create(file)?;
    let previous = previous_of(file);
    std::fs::rename(file, &previous).map_err(|e| file_error(file, e))?;
    write_new_key(file)?;
    let new = read_key_file(file)?;
    Ok((new.id.clone(), old.id.clone()))
}

static INSTALLED: OnceLock<Result<Arc<Keyring>, KeyError>> = OnceLock::new();

/// Installs the keyring this process uses (the CLI's, from its config); false when one was
/// already in use (the first stays: records must not change keys midway).
pub fn install(keyring: Keyring) -> bool {
    INSTALLED.set(Ok(Arc::new(keyring))).is_ok()
}

/// This process's keyring: the installed one, else loaded once (`Keyring::load`).
pub fn keyring() -> Result<Arc<Keyring>, KeyError> {
    INSTALLED
        .get_or_init(|| Keyring::load().map(Arc::new))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_key_is_refused_naming_where_it_came_from() {
        let e = Key::from_text("short", "LAKEHEALTH_KEY").unwrap_err();
        assert!(
            e.to_string().contains("LAKEHEALTH_KEY is 5 characters"),
            "{e}"
        );
    }

    #[test]
    fn a_key_id_is_stable_and_says_nothing_of_the_key() {
        let text = "0123456789abcdef0123456789abcdef";
        let a = Key::from_text(text, "t").unwrap();
        let b = Key::from_text(text, "t").unwrap();
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id().len(), 12);
        assert!(!text.contains(a.id()));
        assert!(!format!("{a:?}").contains(text));
    }

    #[cfg(unix)]
    #[test]
    fn the_key_file_is_created_owner_only_once_and_an_exposed_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("data/key");
        let first = Keyring::from_file(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(d.path().join("data"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let again = Keyring::from_file(&file).unwrap();
        assert_eq!(first.current().id(), again.current().id());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            Keyring::from_file(&file),
            Err(KeyError::Exposed { mode: 0o644, .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_rotation_seals_with_the_new_key_and_still_accepts_the_previous_one() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("key");
        let before = Keyring::from_file(&file).unwrap();
        let (new_id, old_id) = rotate_key_file(&file).unwrap();
        assert_eq!(old_id, before.current().id());
        let after = Keyring::from_file(&file).unwrap();
        assert_eq!(after.current().id(), new_id);
        assert_ne!(new_id, old_id);
        assert!(after.accepted(&old_id).is_some());
        assert!(after.accepted(&new_id).is_some());
        assert!(after.accepted("000000000000").is_none());
    }
}
