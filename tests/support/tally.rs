//! A store that notes every request reaching it, for tests that prove what a reader reads.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{GetOptions, GetResult, ListResult, ObjectMeta, ObjectStore, Result};

/// Every request that reaches the store: `LIST <prefix>`, `GET <path>` (whole objects only).
#[derive(Debug)]
pub struct Tally {
    pub inner: Arc<dyn ObjectStore>,
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tally({})", self.inner)
    }
}

impl Tally {
    fn note(&self, what: String) {
        self.seen.lock().unwrap().push(what);
    }
}

#[async_trait]
impl ObjectStore for Tally {
    lakehealth::forward_to_inner!(put_opts, put_multipart_opts, delete_stream, copy_opts);

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.head {
            self.note(format!("HEAD {location}"));
        } else if options.range.is_none() {
            self.note(format!("GET {location}"));
        }
        self.inner.get_opts(location, options).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.note(format!(
            "LIST {}",
            prefix.map(|p| p.to_string()).unwrap_or_default()
        ));
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.note(format!(
            "LIST/ {}",
            prefix.map(|p| p.to_string()).unwrap_or_default()
        ));
        self.inner.list_with_delimiter(prefix).await
    }
}

/// How many times each request was made.
pub fn count(seen: &[String]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for s in seen {
        *m.entry(s.clone()).or_insert(0) += 1;
    }
    m
}

/// A store wrapper (for `Table::open_with`, the janitor, a checkpoint) noting every request in
/// `seen`.
pub fn wrapper(
    seen: &Arc<Mutex<Vec<String>>>,
) -> Arc<lakehealth::engine::compact::table::StoreWrapper> {
    let seen = seen.clone();
    Arc::new(move |inner: Arc<dyn ObjectStore>| {
        Arc::new(Tally {
            inner,
            seen: seen.clone(),
        }) as Arc<dyn ObjectStore>
    })
}
