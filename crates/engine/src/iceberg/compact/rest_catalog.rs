//! An Iceberg REST catalog (the Iceberg REST Catalog API): tables are loaded with
//! `GET /v1/namespaces/{ns}/tables/{t}` and committed with `POST` on the same path, with the
//! requirements `assert-table-uuid` and `assert-ref-snapshot-id` (main) and the updates
//! `add-snapshot` and `set-snapshot-ref`: the catalog writes the metadata file. 409 means the
//! table moved (lost race: reload and retry); 500, 502 and 504 mean the outcome is unknown.
//!
//! A bearer token comes from `LAKEHEALTH_ICEBERG_TOKEN` (registered as a secret: never shown).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::catalog::{CatalogError, TableId};

pub const TOKEN_ENV: &str = "LAKEHEALTH_ICEBERG_TOKEN";

pub struct RestCatalog {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

/// What a commit request got.
pub enum RestCommit {
    /// Committed; the catalog's new metadata location.
    Committed(String),
    /// 409: the requirements no longer hold.
    Conflict,
    /// Refused (4xx other than 409): not committed.
    Refused(String),
    /// 5xx or no answer: it may or may not have committed.
    Unknown(String),
}

/// Namespace levels are joined by the unit separator in a path segment (REST spec).
fn namespace_segment(ns: &str) -> String {
    let joined = ns.split('.').collect::<Vec<_>>().join("\u{1f}");
    percent_encoding::utf8_percent_encode(&joined, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn table_path(t: &TableId) -> String {
    format!(
        "v1/namespaces/{}/tables/{}",
        namespace_segment(&t.namespace),
        percent_encoding::utf8_percent_encode(&t.name, percent_encoding::NON_ALPHANUMERIC)
    )
}

impl RestCatalog {
    pub fn open(uri: &str) -> Result<Self, CatalogError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| CatalogError::Rest {
                uri: uri.to_string(),
                detail: e.to_string(),
            })?;
        let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
        if let Some(t) = &token {
            crate::secrets::register([t.clone()]);
        }
        Ok(Self {
            base: format!("{}/", uri.trim_end_matches('/')),
            http,
            token,
        })
    }

    fn err(&self, detail: impl std::fmt::Display) -> CatalogError {
        CatalogError::Rest {
            uri: crate::secrets::redact_url(&self.base),
            detail: detail.to_string(),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    async fn get(&self, path: &str) -> Result<(StatusCode, Value), CatalogError> {
        let resp = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .map_err(|e| self.err(e.without_url()))?;
        let status = resp.status();
        let body = resp.text().await.map_err(|e| self.err(e.without_url()))?;
        let v = serde_json::from_str(&body).unwrap_or(Value::String(body));
        Ok((status, v))
    }

    async fn get_ok(&self, path: &str) -> Result<Value, CatalogError> {
        let (status, v) = self.get(path).await?;
        if !status.is_success() {
            return Err(self.err(format!("GET {path}: HTTP {status}: {v}")));
        }
        Ok(v)
    }

    /// The table's current metadata location.
    pub async fn current(&self, t: &TableId) -> Result<String, CatalogError> {
        let (status, v) = self.get(&table_path(t)).await?;
        if status == StatusCode::NOT_FOUND {
            return Err(CatalogError::NotFound {
                path: crate::secrets::redact_url(&self.base),
                wanted: t.to_string(),
            });
        }
        if !status.is_success() {
            return Err(self.err(format!("loading {t}: HTTP {status}: {v}")));
        }
        v.get("metadata-location")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.err(format!("loading {t}: no metadata-location")))
    }

    /// Every table of every top-level namespace.
    async fn tables(&self) -> Result<Vec<TableId>, CatalogError> {
        let mut out = Vec::new();
        let ns = self.get_ok("v1/namespaces").await?;
        for n in ns["namespaces"].as_array().cloned().unwrap_or_default() {
            let levels: Vec<String> = n
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let namespace = levels.join(".");
            let listed = self
                .get_ok(&format!(
                    "v1/namespaces/{}/tables",
                    namespace_segment(&namespace)
                ))
                .await?;
            for id in listed["identifiers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                if let Some(name) = id["name"].as_str() {
                    out.push(TableId {
                        catalog_name: String::new(),
                        namespace: namespace.clone(),
                        name: name.to_string(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The table named `ns.name`, or else the one whose metadata is under `folder`.
    pub async fn find(
        &self,
        folder: &str,
        named: Option<&str>,
    ) -> Result<(TableId, String), CatalogError> {
        if let Some(n) = named {
            let (ns, name) = n.rsplit_once('.').unwrap_or(("", n));
            let t = TableId {
                catalog_name: String::new(),
                namespace: ns.to_string(),
                name: name.to_string(),
            };
            let loc = self.current(&t).await?;
            return Ok((t, loc));
        }
        let mut hits = Vec::new();
        for t in self.tables().await? {
            let loc = self.current(&t).await?;
            if super::catalog::is_under_folder(folder, &loc) {
                hits.push((t, loc));
            }
        }
        super::catalog::one_hit(hits, &self.base, folder, None)
    }

    /// Adds `snapshot` and points main at it, if the table is still `uuid` with main at
    /// `parent`.
    pub async fn commit(
        &self,
        t: &TableId,
        uuid: Option<&str>,
        parent: Option<i64>,
        snapshot: &Value,
        snapshot_id: i64,
    ) -> RestCommit {
        let updates = vec![
            json!({"action": "add-snapshot", "snapshot": snapshot}),
            json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}),
        ];
        self.update(t, uuid, parent, updates).await
    }

    /// Applies `updates` to the table, if it is still `uuid` with main at `parent`.
    pub async fn update(
        &self,
        t: &TableId,
        uuid: Option<&str>,
        parent: Option<i64>,
        updates: Vec<Value>,
    ) -> RestCommit {
        let mut requirements = vec![json!({
            "type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent
        })];
        if let Some(u) = uuid {
            requirements.insert(0, json!({"type": "assert-table-uuid", "uuid": u}));
        }
        let body = json!({
            "identifier": {"namespace": t.namespace.split('.').collect::<Vec<_>>(), "name": t.name},
            "requirements": requirements,
            "updates": updates,
        });
        let sent = self
            .request(reqwest::Method::POST, &table_path(t))
            // reqwest's `json` feature is not enabled (nothing else needs it).
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            // The request may have reached the catalog.
            Err(e) => return RestCommit::Unknown(e.without_url().to_string()),
        };
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if status.is_success() {
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            return match v.get("metadata-location").and_then(Value::as_str) {
                Some(l) => RestCommit::Committed(l.to_string()),
                None => RestCommit::Unknown(format!("HTTP {status} without a metadata-location")),
            };
        }
        match status.as_u16() {
            409 => RestCommit::Conflict,
            s if s >= 500 => RestCommit::Unknown(format!("HTTP {status}: {text}")),
            _ => RestCommit::Refused(format!("HTTP {status}: {text}")),
        }
    }
}
