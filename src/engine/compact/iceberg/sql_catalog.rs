//! An Iceberg SQL catalog on sqlite, as pyiceberg's and iceberg-rust's `SqlCatalog` keep it: the
//! table `iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
//! previous_metadata_location)`. A commit is a compare-and-swap of `metadata_location`: the
//! UPDATE only matches while the row still names the metadata file the commit was built on.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::catalog::{CatalogError, TableId, is_under_folder, one_hit};

pub struct SqlCatalog {
    path: PathBuf,
}

impl SqlCatalog {
    /// `sqlite:///FILE` (SQLAlchemy's form: a fourth slash makes the path absolute).
    pub fn open(uri: &str) -> Result<Self, CatalogError> {
        let rest = uri
            .strip_prefix("sqlite:///")
            .ok_or_else(|| CatalogError::Scheme(uri.to_string()))?;
        if rest.is_empty() {
            return Err(CatalogError::Scheme(uri.to_string()));
        }
        Ok(Self {
            path: PathBuf::from(rest),
        })
    }

    fn sql(&self, source: rusqlite::Error) -> CatalogError {
        CatalogError::Sql {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn connect(&self) -> Result<Connection, CatalogError> {
        // Never create a catalog: a wrong path is an error, not an empty catalog.
        let c = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.sql(e))?;
        // pyiceberg writers hold the database briefly while they commit.
        c.busy_timeout(Duration::from_secs(30))
            .map_err(|e| self.sql(e))?;
        Ok(c)
    }

    /// The table named `ns.name`, or else the one whose metadata lives under `folder`, and its
    /// current metadata location.
    pub fn find(
        &self,
        folder: &str,
        named: Option<&str>,
    ) -> Result<(TableId, String), CatalogError> {
        let c = self.connect()?;
        let mut stmt = c
            .prepare(
                "SELECT catalog_name, table_namespace, table_name, metadata_location FROM iceberg_tables WHERE metadata_location IS NOT NULL",
            )
            .map_err(|e| self.sql(e))?;
        let rows: Vec<(TableId, String)> = stmt
            .query_map([], |r| {
                Ok((
                    TableId {
                        catalog_name: r.get(0)?,
                        namespace: r.get(1)?,
                        name: r.get(2)?,
                    },
                    r.get(3)?,
                ))
            })
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        let hits: Vec<(TableId, String)> = match named {
            Some(n) => {
                let (ns, name) = n.rsplit_once('.').unwrap_or(("", n));
                rows.into_iter()
                    .filter(|(t, _)| t.namespace == ns && t.name == name)
                    .collect()
            }
            None => rows
                .into_iter()
                .filter(|(_, m)| is_under_folder(folder, m))
                .collect(),
        };
        one_hit(hits, &self.path.display().to_string(), folder, named)
    }

    /// The table's current metadata location.
    pub fn current(&self, t: &TableId) -> Result<String, CatalogError> {
        let c = self.connect()?;
        c.query_row(
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3",
            params![t.catalog_name, t.namespace, t.name],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()
        .map_err(|e| self.sql(e))?
        .flatten()
        .ok_or_else(|| CatalogError::NotFound {
            path: self.path.display().to_string(),
            wanted: t.to_string(),
        })
    }

    /// Points the table at `new` if it still points at `expected`; whether it did.
    pub fn swap(&self, t: &TableId, expected: &str, new: &str) -> Result<bool, CatalogError> {
        let c = self.connect()?;
        let n = c
            .execute(
                "UPDATE iceberg_tables SET metadata_location = ?1, previous_metadata_location = ?2 WHERE catalog_name = ?3 AND table_namespace = ?4 AND table_name = ?5 AND metadata_location = ?2",
                params![new, expected, t.catalog_name, t.namespace, t.name],
            )
            .map_err(|e| self.sql(e))?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog_with(rows: &[(&str, &str, &str)]) -> (tempfile::TempDir, SqlCatalog) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("c.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))",
        )
        .unwrap();
        for (ns, name, loc) in rows {
            c.execute(
                "INSERT INTO iceberg_tables VALUES ('lh', ?1, ?2, ?3, NULL)",
                params![ns, name, loc],
            )
            .unwrap();
        }
        let cat = SqlCatalog::open(&format!("sqlite:///{}", path.display())).unwrap();
        (d, cat)
    }

    #[test]
    fn a_table_is_found_by_folder_or_name_and_swapped_only_from_what_it_was_built_on() {
        let (_d, cat) = catalog_with(&[
            (
                "db",
                "events",
                "file:///w/events/metadata/00001-a.metadata.json",
            ),
            (
                "db",
                "events2",
                "file:///w/events2/metadata/00001-b.metadata.json",
            ),
        ]);
        let (t, loc) = cat.find("/w/events/", None).unwrap();
        assert_eq!(
            (t.to_string(), loc.as_str()),
            (
                "db.events".into(),
                "file:///w/events/metadata/00001-a.metadata.json"
            )
        );
        assert_eq!(
            cat.find("file:///w/events2", None).unwrap().0.name,
            "events2"
        );
        assert_eq!(
            cat.find("/elsewhere", Some("db.events2")).unwrap().0.name,
            "events2"
        );
        assert!(matches!(
            cat.find("/w/none", None),
            Err(CatalogError::NotFound { .. })
        ));
        // A stale expectation does not swap; the current one does, once.
        assert!(
            !cat.swap(&t, "file:///w/events/metadata/00000-old.metadata.json", "x")
                .unwrap()
        );
        assert!(
            cat.swap(&t, &loc, "file:///w/events/metadata/00002-c.metadata.json")
                .unwrap()
        );
        assert!(
            !cat.swap(&t, &loc, "file:///w/events/metadata/00002-d.metadata.json")
                .unwrap()
        );
        assert_eq!(
            cat.current(&t).unwrap(),
            "file:///w/events/metadata/00002-c.metadata.json"
        );
    }

    #[test]
    fn only_sqlite_catalogs_are_opened_and_a_missing_file_is_not_created() {
        assert!(matches!(
            SqlCatalog::open("postgresql://h/db"),
            Err(CatalogError::Scheme(_))
        ));
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.db");
        let cat = SqlCatalog::open(&format!("sqlite:///{}", missing.display())).unwrap();
        assert!(cat.find("/w", None).is_err());
        assert!(!missing.exists());
    }
}
