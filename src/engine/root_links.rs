//! A local table's folder may hold symbolic links; one that leads out of the folder would make
//! lakehealth read another folder's files as the table's (`convert`), write outputs there
//! (`compact`) or delete files there (`vacuum`). Object stores have no links; locally,
//! lakehealth never follows a link out of the table root and refuses to change such a table,
//! naming the link.

use std::path::{Path, PathBuf};

use crate::engine::error::{EngineError, Result};
use crate::engine::location::Location;

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
    Err(EngineError::Unsupported {
        uri: loc.display(),
        detail: format!(
            "{} is a symbolic link to {}, outside the table's folder{}; lakehealth never follows a link out of the table root, so it does not {action} this table (nothing was changed). Replace the link with the files it points to, or open that folder as its own table",
            first.link.display(),
            first.target,
            if links.len() > 1 {
                format!(" ({} such links)", links.len())
            } else {
                String::new()
            }
        ),
    })
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
}
