//! An Iceberg SQL catalog on sqlite or PostgreSQL, as pyiceberg's and iceberg-rust's
//! `SqlCatalog` keep it: the table `iceberg_tables(catalog_name, table_namespace, table_name,
//! metadata_location, previous_metadata_location)`. A commit is a compare-and-swap of
//! `metadata_location`: the UPDATE only matches while the row still names the metadata file the
//! commit was built on. Both databases run the same three statements.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::catalog::{CatalogError, TableId, is_under_folder, one_hit};
use crate::secrets::{redact_url, register_address};

const ROWS: &str = "SELECT catalog_name, table_namespace, table_name, metadata_location FROM iceberg_tables WHERE metadata_location IS NOT NULL";
const CURRENT: &str = "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3";
const SWAP: &str = "UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2 WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 AND metadata_location = $2";

enum Backend {
    Sqlite(PathBuf),
    Postgres {
        config: Box<tokio_postgres::Config>,
        /// The URI without its password, for messages.
        shown: String,
    },
}

pub struct SqlCatalog {
    backend: Backend,
}

impl SqlCatalog {
    /// `sqlite:///FILE` (SQLAlchemy's form: a fourth slash makes the path absolute), or
    /// `postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (PGUSER and PGPASSWORD fill in what
    /// the URI leaves out; the password is never shown).
    pub fn open(uri: &str) -> Result<Self, CatalogError> {
        if let Some(rest) = uri.strip_prefix("sqlite:///") {
            if rest.is_empty() {
                return Err(CatalogError::Scheme(uri.to_string()));
            }
            return Ok(Self {
                backend: Backend::Sqlite(PathBuf::from(rest)),
            });
        }
        let pg = ["postgresql://", "postgres://", "postgresql+psycopg2://"]
            .iter()
            .find_map(|p| uri.strip_prefix(p));
        let Some(rest) = pg else {
            return Err(CatalogError::Scheme(redact_url(uri)));
        };
        register_address(uri);
        let shown = redact_url(uri);
        // SQLAlchemy's driver suffix (pyiceberg's form) names the same server.
        let plain = format!("postgresql://{rest}");
        let mut config: tokio_postgres::Config =
            plain.parse().map_err(|source| CatalogError::Postgres {
                uri: shown.clone(),
                source,
            })?;
        if config.get_user().is_none()
            && let Ok(u) = std::env::var("PGUSER")
        {
            config.user(u);
        }
        if config.get_password().is_none()
            && let Ok(p) = std::env::var("PGPASSWORD")
        {
            config.password(p);
        }
        config.connect_timeout(Duration::from_secs(30));
        Ok(Self {
            backend: Backend::Postgres {
                config: Box::new(config),
                shown,
            },
        })
    }

    /// The catalog for messages (a file, or a URI without its password).
    fn name(&self) -> String {
        match &self.backend {
            Backend::Sqlite(p) => p.display().to_string(),
            Backend::Postgres { shown, .. } => shown.clone(),
        }
    }

    fn sql(&self, source: rusqlite::Error) -> CatalogError {
        CatalogError::Sql {
            path: self.name(),
            source,
        }
    }

    fn pg_error(&self, source: tokio_postgres::Error) -> CatalogError {
        CatalogError::Postgres {
            uri: self.name(),
            source,
        }
    }

    fn connect(&self, path: &PathBuf) -> Result<Connection, CatalogError> {
        // Never create a catalog: a wrong path is an error, not an empty catalog.
        let c = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.sql(e))?;
        // pyiceberg writers hold the database briefly while they commit.
        c.busy_timeout(Duration::from_secs(30))
            .map_err(|e| self.sql(e))?;
        Ok(c)
    }

    async fn pg(
        &self,
        config: &tokio_postgres::Config,
    ) -> Result<tokio_postgres::Client, CatalogError> {
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| self.pg_error(e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("iceberg catalog connection: {e}");
            }
        });
        Ok(client)
    }

    /// Every table with a current metadata location.
    async fn tables(&self) -> Result<Vec<(TableId, String)>, CatalogError> {
        match &self.backend {
            Backend::Sqlite(path) => {
                let c = self.connect(path)?;
                let mut stmt = c.prepare(ROWS).map_err(|e| self.sql(e))?;
                stmt.query_map([], |r| {
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
                .map_err(|e| self.sql(e))
            }
            Backend::Postgres { config, .. } => {
                let c = self.pg(config).await?;
                let rows = c.query(ROWS, &[]).await.map_err(|e| self.pg_error(e))?;
                rows.iter()
                    .map(|r| {
                        Ok((
                            TableId {
                                catalog_name: r.try_get(0)?,
                                namespace: r.try_get(1)?,
                                name: r.try_get(2)?,
                            },
                            r.try_get(3)?,
                        ))
                    })
                    .collect::<Result<_, tokio_postgres::Error>>()
                    .map_err(|e| self.pg_error(e))
            }
        }
    }

    /// The table named `ns.name`, or else the one whose metadata lives under `folder`, and its
    /// current metadata location.
    pub async fn find(
        &self,
        folder: &str,
        named: Option<&str>,
    ) -> Result<(TableId, String), CatalogError> {
        let rows = self.tables().await?;
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
        one_hit(hits, &self.name(), folder, named)
    }

    /// The table's current metadata location.
    pub async fn current(&self, t: &TableId) -> Result<String, CatalogError> {
        let found = match &self.backend {
            Backend::Sqlite(path) => self
                .connect(path)?
                .query_row(CURRENT, params![t.catalog_name, t.namespace, t.name], |r| {
                    r.get::<_, Option<String>>(0)
                })
                .optional()
                .map_err(|e| self.sql(e))?
                .flatten(),
            Backend::Postgres { config, .. } => {
                let c = self.pg(config).await?;
                let row = c
                    .query_opt(CURRENT, &[&t.catalog_name, &t.namespace, &t.name])
                    .await
                    .map_err(|e| self.pg_error(e))?;
                match row {
                    Some(r) => r
                        .try_get::<_, Option<String>>(0)
                        .map_err(|e| self.pg_error(e))?,
                    None => None,
                }
            }
        };
        found.ok_or_else(|| CatalogError::NotFound {
            path: self.name(),
            wanted: t.to_string(),
        })
    }

    /// Points the table at `new` if it still points at `expected`; whether it did.
    pub async fn swap(&self, t: &TableId, expected: &str, new: &str) -> Result<bool, CatalogError> {
        let n = match &self.backend {
            Backend::Sqlite(path) => self
                .connect(path)?
                .execute(
                    SWAP,
                    params![new, expected, t.catalog_name, t.namespace, t.name],
                )
                .map_err(|e| self.sql(e))? as u64,
            Backend::Postgres { config, .. } => {
                let c = self.pg(config).await?;
                c.execute(
                    SWAP,
                    &[&new, &expected, &t.catalog_name, &t.namespace, &t.name],
                )
                .await
                .map_err(|e| self.pg_error(e))?
            }
        };
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

    #[tokio::test]
    async fn a_table_is_found_by_folder_or_name_and_swapped_only_from_what_it_was_built_on() {
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
        let (t, loc) = cat.find("/w/events/", None).await.unwrap();
        assert_eq!(
            (t.to_string(), loc.as_str()),
            (
                "db.events".into(),
                "file:///w/events/metadata/00001-a.metadata.json"
            )
        );
        assert_eq!(
            cat.find("file:///w/events2", None).await.unwrap().0.name,
            "events2"
        );
        assert_eq!(
            cat.find("/elsewhere", Some("db.events2"))
                .await
                .unwrap()
                .0
                .name,
            "events2"
        );
        assert!(matches!(
            cat.find("/w/none", None).await,
            Err(CatalogError::NotFound { .. })
        ));
        // A stale expectation does not swap; the current one does, once.
        assert!(
            !cat.swap(&t, "file:///w/events/metadata/00000-old.metadata.json", "x")
                .await
                .unwrap()
        );
        assert!(
            cat.swap(&t, &loc, "file:///w/events/metadata/00002-c.metadata.json")
                .await
                .unwrap()
        );
        assert!(
            !cat.swap(&t, &loc, "file:///w/events/metadata/00002-d.metadata.json")
                .await
                .unwrap()
        );
        assert_eq!(
            cat.current(&t).await.unwrap(),
            "file:///w/events/metadata/00002-c.metadata.json"
        );
    }

    #[tokio::test]
    async fn only_sql_catalogs_are_opened_and_a_missing_file_is_not_created() {
        assert!(matches!(
            SqlCatalog::open("mysql://h/db"),
            Err(CatalogError::Scheme(_))
        ));
        // A password in the URI never shows in what the catalog says.
        let pg = SqlCatalog::open("postgresql://lh:s3cret-pw@127.0.0.1:1/db").unwrap();
        let e = pg.find("/w", None).await.unwrap_err().to_string();
        assert!(!e.contains("s3cret-pw") && e.contains("127.0.0.1"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.db");
        let cat = SqlCatalog::open(&format!("sqlite:///{}", missing.display())).unwrap();
        assert!(cat.find("/w", None).await.is_err());
        assert!(!missing.exists());
    }
}
