//! Deleting a file beneath a folder with no symbolic link in any component, decided by the
//! kernel at the moment of the delete. A check first and a delete after ("is any component a
//! link?", then `remove_file`) leaves a window in which a writer of the table can swap a folder
//! for a link into another table; here the folder the name is removed from is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (or, where the kernel has no `openat2`, one
//! component at a time with `O_NOFOLLOW`), and the name is removed from that open folder with
//! `unlinkat`, which never follows a link either: what is removed is always an entry of a folder
//! reached from the root through real folders only.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Why a file was not deleted.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error(
        "{path}: not deleted: a symbolic link stands in its path{at}; lakehealth never deletes through a link"
    )]
    Link { path: PathBuf, at: String },
    #[error("{path}: not deleted: it is not beneath {root}")]
    Outside { path: PathBuf, root: PathBuf },
    #[error("{path}: no such file")]
    NotFound { path: PathBuf },
    #[error("{path}: not deleted: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How the folder holding the name is reached from the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux 5.6+), falling back to
    /// `Walk` where the kernel (or a seccomp filter) has no `openat2`.
    Kernel,
    /// One component at a time with `O_NOFOLLOW | O_DIRECTORY` from the root's descriptor.
    Walk,
}

/// Deletes `root/rel`, where `rel` is relative and made of plain names (no `..`, no `.`, no
/// root), through no symbolic link beneath `root`. `root` itself is the operator's choice and
/// is opened as given.
pub fn unlink_beneath(root: &Path, rel: &Path, how: Resolve) -> Result<(), BeneathError> {
    let names = plain_names(root, rel)?;
    let Some((name, folders)) = names.split_last() else {
        return Err(BeneathError::Outside {
            path: root.join(rel),
            root: root.to_path_buf(),
        });
    };
    sys::unlink(root, folders, name, how).map_err(|e| classify(root, rel, e))
}

/// `rel`'s components, each a plain name; anything else is not beneath the root.
fn plain_names<'a>(root: &Path, rel: &'a Path) -> Result<Vec<&'a OsStr>, BeneathError> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(BeneathError::Outside {
                path: root.join(rel),
                root: root.to_path_buf(),
            }),
        })
        .collect()
}

/// The error for what the system said, naming the first link found when it refused one.
fn classify(root: &Path, rel: &Path, e: std::io::Error) -> BeneathError {
    let path = root.join(rel);
    // `O_NOFOLLOW | O_DIRECTORY` on a link says ENOTDIR on some kernels: a link all the same.
    let link_now = || first_link(root, rel);
    if sys::Refusal::of(&e).is_none()
        && e.raw_os_error() == Some(20)
        && let Some(l) = link_now()
    {
        return BeneathError::Link {
            at: format!(" (at {})", l.display()),
            path,
        };
    }
    match sys::Refusal::of(&e) {
        Some(sys::Refusal::Link) => BeneathError::Link {
            at: first_link(root, rel)
                .map(|l| format!(" (at {})", l.display()))
                .unwrap_or_default(),
            path,
        },
        Some(sys::Refusal::Escape) => BeneathError::Outside {
            path,
            root: root.to_path_buf(),
        },
        None if e.kind() == std::io::ErrorKind::NotFound => BeneathError::NotFound { path },
        None => BeneathError::Io { path, source: e },
    }
}

/// The first component of `rel` that is a link now: only to name it in the message (the
/// refusal itself came from the kernel at the delete).
fn first_link(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut at = PathBuf::new();
    for c in rel.components() {
        at.push(c);
        if std::fs::symlink_metadata(root.join(&at)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

#[cfg(unix)]
mod sys {
    use std::ffi::OsStr;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;

    use super::Resolve;

    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::CLOEXEC);

    /// What a refusal of the resolution means.
    pub(super) enum Refusal {
        /// A component was a link (`ELOOP`).
        Link,
        /// The path left the root (`EXDEV` from `RESOLVE_BENEATH`).
        Escape,
    }

    impl Refusal {
        pub(super) fn of(e: &std::io::Error) -> Option<Self> {
            match e.raw_os_error().map(Errno::from_raw_os_error) {
                Some(Errno::LOOP) => Some(Self::Link),
                Some(Errno::XDEV) => Some(Self::Escape),
                _ => None,
            }
        }
    }

    pub(super) fn unlink(
        root: &Path,
        folders: &[&OsStr],
        name: &OsStr,
        how: Resolve,
    ) -> std::io::Result<()> {
        let root = rustix::fs::open(root, DIR, Mode::empty())?;
        let dir = open_folder(&root, folders, how)?;
        // `unlinkat` removes the entry itself: a link named so is removed, never its target.
        rustix::fs::unlinkat(&dir, name, AtFlags::empty())?;
        Ok(())
    }

    fn open_folder(root: &OwnedFd, folders: &[&OsStr], how: Resolve) -> std::io::Result<OwnedFd> {
        #[cfg(target_os = "linux")]
        if how == Resolve::Kernel {
            match open_beneath(root, folders) {
                // No openat2 here (an old kernel, a sandbox's filter): walk instead.
                Err(Errno::NOSYS) | Err(Errno::PERM) => {}
                other => return Ok(other?),
            }
        }
        let _ = how;
        walk(root, folders)
    }

    #[cfg(target_os = "linux")]
    fn open_beneath(root: &OwnedFd, folders: &[&OsStr]) -> Result<OwnedFd, Errno> {
        use rustix::fs::ResolveFlags;
        let mut rel = std::path::PathBuf::from(".");
        rel.extend(folders);
        rustix::fs::openat2(
            root,
            rel.as_path(),
            DIR,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
    }

    /// Each folder opened from the one before with `O_NOFOLLOW`: a link is `ELOOP`.
    fn walk(root: &OwnedFd, folders: &[&OsStr]) -> std::io::Result<OwnedFd> {
        let mut at = rustix::fs::openat(root, ".", DIR, Mode::empty())?;
        for f in folders {
            at = rustix::fs::openat(&at, *f, DIR | OFlags::NOFOLLOW, Mode::empty())?;
        }
        Ok(at)
    }
}

/// Without descriptor-relative calls the check and the delete are apart: each component is
/// checked not to be a link, then the file removed (a window remains; said in the threat model).
#[cfg(not(unix))]
mod sys {
    use std::ffi::OsStr;
    use std::path::Path;

    use super::Resolve;

    pub(super) enum Refusal {
        Link,
        Escape,
    }

    impl Refusal {
        pub(super) fn of(e: &std::io::Error) -> Option<Self> {
            (e.kind() == std::io::ErrorKind::Other && e.to_string() == LINK).then_some(Self::Link)
        }
    }

    const LINK: &str = "a symbolic link in the path";

    pub(super) fn unlink(
        root: &Path,
        folders: &[&OsStr],
        name: &OsStr,
        _how: Resolve,
    ) -> std::io::Result<()> {
        let mut at = root.to_path_buf();
        for c in folders.iter().chain(std::iter::once(&name)) {
            at.push(c);
            if std::fs::symlink_metadata(&at)?.file_type().is_symlink() {
                return Err(std::io::Error::other(LINK));
            }
        }
        std::fs::remove_file(at)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("table");
        let other = d.path().join("other");
        std::fs::create_dir_all(table.join("p=1")).unwrap();
        std::fs::create_dir_all(other.join("p=1")).unwrap();
        std::fs::write(table.join("p=1/a.parquet"), b"a").unwrap();
        std::fs::write(other.join("p=1/a.parquet"), b"theirs").unwrap();
        (d, table, other)
    }

    const BOTH: [Resolve; 2] = [Resolve::Kernel, Resolve::Walk];

    #[test]
    fn a_file_beneath_the_root_through_real_folders_is_deleted() {
        for how in BOTH {
            let (_d, table, _) = setup();
            unlink_beneath(&table, Path::new("p=1/a.parquet"), how).unwrap();
            assert!(!table.join("p=1/a.parquet").exists(), "{how:?}");
        }
    }

    #[test]
    fn a_folder_that_is_a_link_is_never_deleted_through() {
        for how in BOTH {
            let (_d, table, other) = setup();
            std::fs::create_dir_all(table.join("q")).unwrap();
            symlink(other.join("p=1"), table.join("q/p=2")).unwrap();
            let e = unlink_beneath(&table, Path::new("q/p=2/a.parquet"), how).unwrap_err();
            assert!(matches!(e, BeneathError::Link { .. }), "{how:?}: {e}");
            assert!(e.to_string().contains("q/p=2"), "{e}");
            assert!(other.join("p=1/a.parquet").exists(), "{how:?}");
        }
    }

    #[test]
    fn a_link_inside_the_root_into_a_nested_folder_is_not_followed_either() {
        for how in BOTH {
            let (_d, table, _) = setup();
            std::fs::create_dir_all(table.join("nested/p=1")).unwrap();
            std::fs::write(table.join("nested/p=1/b.parquet"), b"b").unwrap();
            symlink(table.join("nested/p=1"), table.join("p=9")).unwrap();
            let e = unlink_beneath(&table, Path::new("p=9/b.parquet"), how).unwrap_err();
            assert!(matches!(e, BeneathError::Link { .. }), "{how:?}: {e}");
            assert!(table.join("nested/p=1/b.parquet").exists());
        }
    }

    #[test]
    fn a_file_that_is_a_link_is_removed_as_a_link_and_its_target_kept() {
        for how in BOTH {
            let (_d, table, other) = setup();
            symlink(other.join("p=1/a.parquet"), table.join("p=1/l.parquet")).unwrap();
            unlink_beneath(&table, Path::new("p=1/l.parquet"), how).unwrap();
            assert!(std::fs::symlink_metadata(table.join("p=1/l.parquet")).is_err());
            assert_eq!(
                std::fs::read(other.join("p=1/a.parquet")).unwrap(),
                b"theirs"
            );
        }
    }

    #[test]
    fn parent_steps_and_absolute_paths_are_not_beneath() {
        let (_d, table, other) = setup();
        for rel in [
            "../other/p=1/a.parquet",
            "/etc/passwd",
            "./p=1/a.parquet",
            "",
        ] {
            let e = unlink_beneath(&table, Path::new(rel), Resolve::Kernel).unwrap_err();
            assert!(matches!(e, BeneathError::Outside { .. }), "{rel}: {e}");
        }
        assert!(other.join("p=1/a.parquet").exists());
    }

    #[test]
    fn a_missing_file_is_not_found_and_a_folder_is_not_removed() {
        let (_d, table, _) = setup();
        let e = unlink_beneath(&table, Path::new("p=1/gone.parquet"), Resolve::Kernel).unwrap_err();
        assert!(matches!(e, BeneathError::NotFound { .. }), "{e}");
        let e = unlink_beneath(&table, Path::new("p=1"), Resolve::Kernel).unwrap_err();
        assert!(matches!(e, BeneathError::Io { .. }), "{e}");
        assert!(table.join("p=1/a.parquet").exists());
    }
}
