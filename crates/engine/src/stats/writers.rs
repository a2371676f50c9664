//! Streaming writers seen in the log: each `txn` action's application id (Spark's query id) with
//! its latest batch, and its commit rate over the history window.

use serde::Serialize;

use super::log_health::rate_per_minute;
use crate::delta::log::state::LogState;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamingWriter {
    pub app_id: String,
    /// Latest committed batch id (`txn.version`).
    pub last_batch: i64,
    pub last_updated_ms: Option<i64>,
    /// STREAMING UPDATE commits of this query in the history window.
    pub window_commits: usize,
    pub batches_per_minute: Option<f64>,
}

pub fn streaming_writers(s: &LogState) -> Vec<StreamingWriter> {
    let mut out: Vec<StreamingWriter> = s
        .txns
        .iter()
        .map(|(app, t)| {
            let ts: Vec<i64> = s
                .commits
                .iter()
                .filter(|c| c.query_id.as_deref() == Some(app.as_str()))
                .filter_map(|c| c.timestamp_ms)
                .collect();
            StreamingWriter {
                app_id: app.clone(),
                last_batch: t.version,
                last_updated_ms: t.last_updated.or_else(|| ts.iter().copied().max()),
                window_commits: ts.len(),
                batches_per_minute: rate_per_minute(&ts),
            }
        })
        .collect();
    // Most recently active first.
    out.sort_by(|a, b| {
        b.last_updated_ms
            .cmp(&a.last_updated_ms)
            .then_with(|| a.app_id.cmp(&b.app_id))
    });
    out
}
