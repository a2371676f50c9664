//! A local table's folder may hold symbolic links; one that leads out of the folder would make
//! lakehealth read another folder's files as the table's (`convert`), write outputs there
//! (`compact`) or delete files there (`vacuum`). Object stores have no links; locally,
//! lakehealth never follows a link out of the table root and refuses to change such a table,
//! naming the link.

use std::path::{Path, PathBuf};

use crate::error::{EngineError, LinkLeaves, Result};
use crate::location::Location;

/// A link under the table folder whose target is outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkOut {
    /// The link, relative to the table folder.
    pub link: PathBuf,
    /// Where it leads (resolved), or why it cannot be resolved.
    pub target: String,
}

/// Every link under `root` (not followed) that resolves outside `root`, or does not resolve.
pub fn links_leaving(root: &Path) -> std::io::Result<Vec<LinkOut>> {
    let root = std::fs::canonicalize(root)?;
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            // The entry's own type: a link is not followed.
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_symlink() {
                let target = match std::fs::canonicalize(&path) {
                    Ok(t) if t.starts_with(&root) => continue,
                    Ok(t) => t.display().to_string(),
                    Err(e) => format!("(cannot be resolved: {e})"),
                };
                let link = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
                out.push(LinkOut { link, target });
            }
        }
    }
    out.sort_by(|a, b| a.link.cmp(&b.link));
    Ok(out)
}

/// Refuses to `action` a local table whose folder holds a link leading out of it.
pub fn refuse_links_leaving(loc: &Location, action: &str) -> Result<()> {
    if !loc.is_local() {
        return Ok(());
    }
    let Ok(root) = loc.url.to_file_path() else {
        return Ok(());
    };
    let links = links_leaving(&root).map_err(|e| EngineError::Io {
        uri: loc.display(),
        what: "looking for symbolic links in the table's folder".into(),
        source: e,
    })?;
    let Some(first) = links.first() else {
        return Ok(());
    };
    Err(EngineError::LinkLeavesTable(Box::new(LinkLeaves {
        uri: loc.display(),
        link: first.link.display().to_string(),
        target: first.target.clone(),
        more: if links.len() > 1 {
            format!(" ({} such links)", links.len())
        } else {
            String::new()
        },
        action: action.to_string(),
    })))
}

/// Where `file` (a path lexically inside `root`) really is, when that is outside `root`: it is
/// a link, or lies behind one, leading out. A file not yet created is judged by its nearest
/// existing folder. None: it stays inside.
pub fn resolves_outside(root: &Path, file: &Path) -> Option<String> {
    let root = match std::fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) => return Some(format!("(the table folder cannot be resolved: {e})")),
    };
    // The nearest existing ancestor (or the file itself) decides: what is below it is created
    // by lakehealth inside it.
    let mut probe: PathBuf = file.to_path_buf();
    loop {
        if std::fs::symlink_metadata(&probe).is_ok() {
            break;
        }
        if !probe.pop() {
            return None;
        }
    }
    match std::fs::canonicalize(&probe) {
        Ok(t) if t.starts_with(&root) => None,
        Ok(t) => Some(t.display().to_string()),
        Err(e) => Some(format!("(cannot be resolved: {e})")),
    }
}

/// Refuses to `action` the table at `uri` (local folder `root`) through `file`, a path inside
/// it that a link leads out of.
pub fn refuse_link_out(uri: &str, root: &Path, file: &Path, action: &str) -> Result<()> {
    let Some(target) = resolves_outside(root, file) else {
        return Ok(());
    };
    let link = file.strip_prefix(root).unwrap_or(file);
    Err(EngineError::LinkLeavesTable(Box::new(LinkLeaves {
        uri: uri.to_string(),
        link: link.display().to_string(),
        target,
        more: String::new(),
        action: action.to_string(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_partition_folder_linked_outside_is_found_and_one_inside_is_not() {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("t");
        let outside = d.path().join("elsewhere");
        std::fs::create_dir_all(table.join("day=1")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, table.join("day=2")).unwrap();
        std::os::unix::fs::symlink(table.join("day=1"), table.join("day=3")).unwrap();
        std::os::unix::fs::symlink(d.path().join("gone"), table.join("day=1/x.parquet")).unwrap();
        let links = links_leaving(&table).unwrap();
        let names: Vec<String> = links.iter().map(|l| l.link.display().to_string()).collect();
        assert_eq!(names, vec!["day=1/x.parquet", "day=2"]);
        let loc = Location::parse(table.to_str().unwrap()).unwrap();
        let e = refuse_links_leaving(&loc, "compact")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("day=1/x.parquet") && e.contains("(2 such links)"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_behind_a_link_out_of_the_root_resolves_outside_and_one_inside_does_not() {
        let d = tempfile::tempdir().unwrap();
        let table = d.path().join("t");
        let outside = d.path().join("elsewhere");
        std::fs::create_dir_all(table.join("data/a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(&outside, table.join("data/b")).unwrap();
        std::os::unix::fs::symlink(outside.join("x.parquet"), table.join("data/a/l.parquet"))
            .unwrap();
        std::os::unix::fs::symlink(table.join("data/a"), table.join("data/c")).unwrap();
        let out = |p: &str| resolves_outside(&table, &table.join(p));
        assert!(out("data/b/x.parquet").is_some(), "through a linked folder");
        assert!(out("data/b/not-yet.parquet").is_some(), "a new file there");
        assert!(out("data/a/l.parquet").is_some(), "a linked file");
        assert_eq!(out("data/a/not-yet.parquet"), None);
        assert_eq!(
            out("data/c/not-yet.parquet"),
            None,
            "a link inside the root"
        );
        assert_eq!(out("data/new/deeper/f.parquet"), None);
        let e =
            refuse_link_out("t", &table, &table.join("data/b/x.parquet"), "compact").unwrap_err();
        assert!(
            matches!(&e, EngineError::LinkLeavesTable(l) if l.link == "data/b/x.parquet"),
            "{e}"
        );
    }
}
