//! A client of Ray's Jobs REST API (the dashboard's HTTP port, 8265 by default): package
//! upload (`GET`/`PUT /api/packages/gcs/<name>`), `POST /api/jobs/`, `GET /api/jobs/<id>`,
//! `GET /api/jobs/<id>/logs`, `POST /api/jobs/<id>/stop`.
//!
//! Extra headers (e.g. `Authorization` for a cluster behind a proxy) come from
//! `RAY_JOB_HEADERS`, a JSON object, as Ray's own CLI reads them; they are never printed.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

/// The environment variable holding extra HTTP headers (JSON object), as Ray's CLI reads it.
pub const HEADERS_ENV: &str = crate::secrets::RAY_HEADERS_ENV;

#[derive(Debug, thiserror::Error)]
pub enum RayError {
    #[error(
        "cannot reach the Ray cluster at {address} ({what}): {detail}. Check --ray-address (the dashboard's HTTP address, e.g. http://head:8265) and that the cluster is running."
    )]
    Unreachable {
        address: String,
        what: String,
        detail: String,
    },
    #[error("the Ray cluster at {address} refused {what}: HTTP {status}: {body}")]
    Refused {
        address: String,
        what: String,
        status: u16,
        body: String,
    },
    #[error("the Ray cluster at {address} answered {what} with something unexpected: {detail}")]
    Unexpected {
        address: String,
        what: String,
        detail: String,
    },
    #[error("{HEADERS_ENV} is not a JSON object of header names to values: {0}")]
    Headers(String),
}

/// A Ray job's state, as `GET /api/jobs/<id>` reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct JobInfo {
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
}

impl JobInfo {
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "SUCCEEDED" | "FAILED" | "STOPPED")
    }
}

#[derive(Debug, Clone)]
pub struct RayClient {
    http: reqwest::Client,
    address: String,
}

/// Headers from `RAY_JOB_HEADERS` (values never appear in errors).
fn env_headers() -> Result<HeaderMap, RayError> {
    let mut map = HeaderMap::new();
    let Ok(raw) = std::env::var(HEADERS_ENV) else {
        return Ok(map);
    };
    // Before anything could quote them (a proxy's error page echoing a header).
    crate::secrets::register_headers(&raw);
    // serde's message would quote the value ("invalid type: string \"Bearer ...\"").
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw)
        .map_err(|e| RayError::Headers(format!("line {}, column {}", e.line(), e.column())))?;
    for (k, v) in obj {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| RayError::Headers(format!("{k:?} is not a header name")))?;
        let text = v
            .as_str()
            .ok_or_else(|| RayError::Headers(format!("the value of {k} is not a string")))?;
        let mut value = HeaderValue::from_str(text)
            .map_err(|_| RayError::Headers(format!("the value of {k} is not a header value")))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

impl RayClient {
    pub fn new(address: &str) -> Result<Self, RayError> {
        let http = reqwest::Client::builder()
            .default_headers(env_headers()?)
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(600))
            .build()
            .map_err(|e| RayError::Unexpected {
                address: address.into(),
                what: "creating the HTTP client".into(),
                detail: e.to_string(),
            })?;
        Ok(Self {
            http,
            address: address.trim_end_matches('/').to_string(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// Sends a request; the body of a non-2xx answer is an error (None: 404 when `allow_404`).
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
        allow_404: bool,
    ) -> Result<Option<bytes::Bytes>, RayError> {
        let resp = req.send().await.map_err(|e| RayError::Unreachable {
            address: self.address.clone(),
            what: what.into(),
            // Without the URL: reqwest's text repeats it.
            detail: e.without_url().to_string(),
        })?;
        let status = resp.status();
        if allow_404 && status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = resp.bytes().await.map_err(|e| RayError::Unreachable {
            address: self.address.clone(),
            what: what.into(),
            detail: e.without_url().to_string(),
        })?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let last = text.lines().rev().find(|l| !l.trim().is_empty());
            return Err(RayError::Refused {
                address: self.address.clone(),
                what: what.into(),
                status: status.as_u16(),
                body: last.unwrap_or("").trim().chars().take(500).collect(),
            });
        }
        Ok(Some(body))
    }

    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        body: &[u8],
    ) -> Result<T, RayError> {
        serde_json::from_slice(body).map_err(|e| RayError::Unexpected {
            address: self.address.clone(),
            what: what.into(),
            detail: e.to_string(),
        })
    }

    pub async fn package_exists(&self, name: &str) -> Result<bool, RayError> {
        let r = self
            .send(
                self.http
                    .get(self.url(&format!("/api/packages/gcs/{name}"))),
                "checking for a package",
                true,
            )
            .await?;
        Ok(r.is_some())
    }

    pub async fn upload_package(&self, name: &str, zip: Vec<u8>) -> Result<(), RayError> {
        self.send(
            self.http
                .put(self.url(&format!("/api/packages/gcs/{name}")))
                .body(zip),
            "uploading the job package",
            false,
        )
        .await?;
        Ok(())
    }

    /// Submits a job; returns its submission id.
    pub async fn submit(&self, body: &serde_json::Value) -> Result<String, RayError> {
        #[derive(Deserialize)]
        struct Submitted {
            submission_id: String,
        }
        let what = "submitting the job";
        let bytes = serde_json::to_vec(body).map_err(|e| RayError::Unexpected {
            address: self.address.clone(),
            what: what.into(),
            detail: e.to_string(),
        })?;
        let r = self
            .send(
                self.http
                    .post(self.url("/api/jobs/"))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(bytes),
                what,
                false,
            )
            .await?
            .unwrap_or_default();
        Ok(self.decode::<Submitted>(what, &r)?.submission_id)
    }

    pub async fn status(&self, id: &str) -> Result<JobInfo, RayError> {
        let what = "reading the job's status";
        let r = self
            .send(
                self.http.get(self.url(&format!("/api/jobs/{id}"))),
                what,
                false,
            )
            .await?
            .unwrap_or_default();
        self.decode(what, &r)
    }

    /// The job's whole driver log so far.
    pub async fn logs(&self, id: &str) -> Result<String, RayError> {
        #[derive(Deserialize)]
        struct Logs {
            logs: String,
        }
        let what = "reading the job's logs";
        let r = self
            .send(
                self.http.get(self.url(&format!("/api/jobs/{id}/logs"))),
                what,
                false,
            )
            .await?
            .unwrap_or_default();
        Ok(self.decode::<Logs>(what, &r)?.logs)
    }

    pub async fn stop(&self, id: &str) -> Result<(), RayError> {
        self.send(
            self.http.post(self.url(&format!("/api/jobs/{id}/stop"))),
            "stopping the job",
            false,
        )
        .await?;
        Ok(())
    }
}
