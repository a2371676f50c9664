//! What the tables list shows of a root: its tables, and the tables that could not be read as
//! rows of their own (selectable, their error in full below the list), ranked worst first.

use std::borrow::Cow;

use super::list::ListRow;
use crate::engine::janitor::fleet::{FleetRow, FleetSnapshot};
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

/// What a row of the root is: a table read, or one that could not be.
#[derive(Debug, Clone, PartialEq)]
pub enum RootEntry {
    /// Boxed: a report is large, a broken table small.
    Table(Box<TableReport>),
    Broken(BrokenTable),
}

/// A row of the tables list: the table, and what the lakehouse janitor does with it while it
/// runs over the root (`fleet`).
#[derive(Debug, Clone, PartialEq)]
pub struct RootRow {
    pub entry: RootEntry,
    pub fleet: Option<FleetRow>,
}

impl RootRow {
    pub fn table(&self) -> Option<&TableReport> {
        match &self.entry {
            RootEntry::Table(t) => Some(t.as_ref()),
            RootEntry::Broken(_) => None,
        }
    }

    pub fn broken(&self) -> Option<&BrokenTable> {
        match &self.entry {
            RootEntry::Broken(b) => Some(b),
            RootEntry::Table(_) => None,
        }
    }

    pub fn uri(&self) -> &str {
        match &self.entry {
            RootEntry::Table(t) => &t.uri,
            RootEntry::Broken(b) => &b.uri,
        }
    }
}

impl ListRow for RootRow {
    type Id = String;
    fn id(&self) -> &String {
        match &self.entry {
            RootEntry::Table(t) => &t.uri,
            RootEntry::Broken(b) => &b.uri,
        }
    }
    fn name(&self) -> Cow<'_, str> {
        match &self.entry {
            RootEntry::Table(t) => Cow::Borrowed(&t.name),
            RootEntry::Broken(b) => Cow::Borrowed(&b.name),
        }
    }
    fn stats(&self) -> &SizeStats {
        match &self.entry {
            RootEntry::Table(t) => &t.stats,
            RootEntry::Broken(b) => &b.stats,
        }
    }
    fn fleet(&self) -> Option<&FleetRow> {
        self.fleet.as_ref()
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

    /// Each row's janitor state from `fleet` (None: the janitor is off). Returns how many
    /// tables the janitor watches that this list does not have (found since it was read).
    pub fn apply_fleet(&mut self, fleet: Option<&FleetSnapshot>) -> usize {
        let Some(f) = fleet else {
            for r in &mut self.rows {
                r.fleet = None;
            }
            return 0;
        };
        // By id: thousands of rows, a snapshot every second while jobs run.
        let by_id: std::collections::HashMap<&str, &FleetRow> =
            f.rows.iter().map(|r| (r.table.as_str(), r)).collect();
        let mut matched = 0;
        for r in &mut self.rows {
            r.fleet = by_id
                .get(crate::engine::janitor::fleet::table_key(r.uri()))
                .map(|row| (*row).clone());
            matched += usize::from(r.fleet.is_some());
        }
        f.rows.len().saturating_sub(matched)
    }
}

impl From<RootReport> for RootView {
    fn from(r: RootReport) -> Self {
        let broken = r
            .errors
            .into_iter()
            .map(|e| RootEntry::Broken(BrokenTable::new(e.uri, &e.error)));
        RootView {
            root: r.root,
            rows: r
                .tables
                .into_iter()
                .map(|t| RootEntry::Table(Box::new(t)))
                .chain(broken)
                .map(|entry| RootRow { entry, fleet: None })
                .collect(),
        }
    }
}
