//! The catalog an Iceberg commit goes through: a SQL catalog on sqlite or PostgreSQL
//! (`sql_catalog`) or a REST
//! catalog (`rest_catalog`), named by its URI; a table in it is found by name or by location.

use super::rest_catalog::RestCatalog;
use super::sql_catalog::SqlCatalog;

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(
        "catalog URI {0:?} is not supported: lakehealth commits Iceberg tables through a SQL catalog on sqlite (sqlite:///relative/file.db or sqlite:////absolute/file.db) or PostgreSQL (postgresql://user@host:port/database; the password from the URI or PGPASSWORD), or a REST catalog (http(s)://host:port)"
    )]
    Scheme(String),
    #[error("catalog {path}: {source}")]
    Sql {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("catalog {uri}: {source}")]
    Postgres {
        /// Without its password.
        uri: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("REST catalog {uri}: {detail}")]
    Rest { uri: String, detail: String },
    #[error("catalog {path} has no Iceberg table {wanted}")]
    NotFound { path: String, wanted: String },
    #[error(
        "catalog {path} has several tables at {location} ({names}): name one with --table NAMESPACE.NAME"
    )]
    Ambiguous {
        path: String,
        location: String,
        names: String,
    },
}

/// A table of a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableId {
    /// The SQL catalog's `catalog_name` (empty for REST).
    pub catalog_name: String,
    /// Levels joined by `.`.
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.namespace, self.name)
    }
}

/// `file:///x/y` and `/x/y` name the same folder; trailing slashes do not count.
fn normalized(uri: &str) -> String {
    let s = uri.trim_end_matches('/');
    match s.strip_prefix("file://") {
        Some(rest) => rest.to_string(),
        None => s.to_string(),
    }
}

/// Whether `metadata_location` is in the `metadata/` folder of the table folder `folder`. A
/// location with a `.` or `..` segment is in none: a catalog row anyone who writes one table
/// can set must not claim another table's folder (`t/../victim/metadata/…`).
pub fn is_under_folder(folder: &str, metadata_location: &str) -> bool {
    let location = normalized(metadata_location);
    let dotted = location.split('/').any(|s| {
        s == "." || s == ".." || s.eq_ignore_ascii_case("%2e%2e") || s.eq_ignore_ascii_case("%2e")
    });
    !dotted && location.starts_with(&format!("{}/metadata/", normalized(folder)))
}

/// The one table found, else why not.
pub fn one_hit(
    hits: Vec<(TableId, String)>,
    catalog: &str,
    folder: &str,
    named: Option<&str>,
) -> Result<(TableId, String), CatalogError> {
    let names = hits
        .iter()
        .map(|(t, _)| {
            if t.catalog_name.is_empty() {
                t.to_string()
            } else {
                format!("{} in catalog {}", t, t.catalog_name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let catalog = crate::secrets::redact_url(catalog);
    let mut it = hits.into_iter();
    match (it.next(), it.next()) {
        (Some(hit), None) => Ok(hit),
        (None, _) => Err(CatalogError::NotFound {
            path: catalog,
            wanted: named.map_or_else(|| format!("at {folder}"), str::to_string),
        }),
        (Some(_), Some(_)) => Err(CatalogError::Ambiguous {
            path: catalog,
            location: folder.to_string(),
            names,
        }),
    }
}

pub enum Catalog {
    Sql(SqlCatalog),
    Rest(RestCatalog),
}

impl Catalog {
    /// `sqlite:///FILE`, `postgresql://…` or `http(s)://…`.
    pub fn open(uri: &str) -> Result<Self, CatalogError> {
        // Its errors and a driver's quote it; it may hold a password in any form.
        crate::secrets::register_address(uri);
        if uri.starts_with("http://") || uri.starts_with("https://") {
            return Ok(Catalog::Rest(RestCatalog::open(uri)?));
        }
        Ok(Catalog::Sql(SqlCatalog::open(uri)?))
    }

    /// The table named `ns.name`, or else the one whose metadata is under `folder`, and its
    /// current metadata location.
    pub async fn find(
        &self,
        folder: &str,
        named: Option<&str>,
    ) -> Result<(TableId, String), CatalogError> {
        match self {
            Catalog::Sql(c) => c.find(folder, named).await,
            Catalog::Rest(c) => c.find(folder, named).await,
        }
    }

    pub async fn current(&self, t: &TableId) -> Result<String, CatalogError> {
        match self {
            Catalog::Sql(c) => c.current(t).await,
            Catalog::Rest(c) => c.current(t).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_matches_its_own_metadata_only() {
        assert!(is_under_folder(
            "/w/events/",
            "file:///w/events/metadata/00001-a.metadata.json"
        ));
        assert!(is_under_folder(
            "file:///w/events",
            "/w/events/metadata/v1.metadata.json"
        ));
        assert!(!is_under_folder(
            "/w/events",
            "file:///w/events2/metadata/00001-a.metadata.json"
        ));
        assert!(!is_under_folder(
            "s3://b/w/events",
            "s3://b/w/events/data/x.parquet"
        ));
        // Another table's row, made to look as if it lived in this folder.
        assert!(!is_under_folder(
            "/w/victim",
            "file:///w/victim/metadata/../../mine/metadata/00001-a.metadata.json"
        ));
        assert!(!is_under_folder(
            "/w/victim",
            "file:///w/victim/metadata/%2E%2E/x.metadata.json"
        ));
    }
}
