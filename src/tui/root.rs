//! What the tables list shows of a root: its tables, and the tables that could not be read as
//! rows of their own (selectable, their error in full below the list), ranked worst first.

use std::borrow::Cow;

use super::list::ListRow;
use crate::engine::open::RootReport;
use crate::engine::options::OpenOptions;
use crate::engine::stats::file_sizes::SizeStats;
use crate::engine::stats::table_report::TableReport;

/// A table found under the root that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenTable {
    pub uri: String,
    pub name: String,
    /// Why, with secrets scrubbed.
    pub error: String,
    /// No files; health 0, so the health sort puts it first (nothing about it is healthy).
    stats: SizeStats,
}

impl BrokenTable {
    fn new(uri: String, error: &str) -> Self {
        let name = uri
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(&uri)
            .to_string();
        let t = OpenOptions::default().thresholds;
        let mut stats = SizeStats::from_sizes(&mut [], &t, &t.edges());
        stats.health_score = 0;
        Self {
            name,
            error: crate::engine::secrets::scrub(error).into_owned(),
            uri,
            stats,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum RootRow {
    /// Boxed: a report is large, a broken table small.
    Table(Box<TableReport>),
    Broken(BrokenTable),
}

impl RootRow {
    pub fn table(&self) -> Option<&TableReport> {
        match self {
            RootRow::Table(t) => Some(t.as_ref()),
            RootRow::Broken(_) => None,
        }
    }

    pub fn broken(&self) -> Option<&BrokenTable> {
        match self {
            RootRow::Broken(b) => Some(b),
            RootRow::Table(_) => None,
        }
    }
}

impl ListRow for RootRow {
    type Id = String;
    fn id(&self) -> &String {
        match self {
            RootRow::Table(t) => &t.uri,
            RootRow::Broken(b) => &b.uri,
        }
    }
    fn name(&self) -> Cow<'_, str> {
        match self {
            RootRow::Table(t) => Cow::Borrowed(&t.name),
            RootRow::Broken(b) => Cow::Borrowed(&b.name),
        }
    }
    fn stats(&self) -> &SizeStats {
        match self {
            RootRow::Table(t) => &t.stats,
            RootRow::Broken(b) => &b.stats,
        }
    }
}

/// A root as the tables list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RootView {
    pub root: String,
    /// The readable tables, then the broken ones (the list orders them).
    pub rows: Vec<RootRow>,
}

impl RootView {
    pub fn tables(&self) -> impl Iterator<Item = &TableReport> {
        self.rows.iter().filter_map(RootRow::table)
    }

    pub fn broken(&self) -> impl Iterator<Item = &BrokenTable> {
        self.rows.iter().filter_map(RootRow::broken)
    }
}

impl From<RootReport> for RootView {
    fn from(r: RootReport) -> Self {
        let broken = r
            .errors
            .into_iter()
            .map(|e| RootRow::Broken(BrokenTable::new(e.uri, &e.error)));
        RootView {
            root: r.root,
            rows: r
                .tables
                .into_iter()
                .map(|t| RootRow::Table(Box::new(t)))
                .chain(broken)
                .collect(),
        }
    }
}
