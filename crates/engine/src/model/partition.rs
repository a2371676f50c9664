//! A partition's identity: its values in partition-column order.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Partition values in partition-column order (NULL as None; the log reader reads `""` as NULL);
/// serialises as a JSON object. This, not `label()`, is a partition's identity: key maps by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionValues(pub Vec<(String, Option<String>)>);

impl Serialize for PartitionValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl PartitionValues {
    /// `date=2026-11-30/k=null`, or `(unpartitioned)`. For display only: NULL and the string
    /// `'null'` (and values holding `/` or `=`) read the same.
    pub fn label(&self) -> String {
        if self.0.is_empty() {
            return "(unpartitioned)".into();
        }
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("null")))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `2026-11-30/null`, or `(unpartitioned)`: the values without their columns, where a
    /// narrow panel has no room for `label` (the column names are the table's, shown elsewhere).
    pub fn values_label(&self) -> String {
        if self.0.is_empty() {
            return "(unpartitioned)".into();
        }
        self.0
            .iter()
            .map(|(_, v)| v.as_deref().unwrap_or("null"))
            .collect::<Vec<_>>()
            .join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_serialises_in_column_order() {
        let v = PartitionValues(vec![
            ("date".into(), Some("2026-11-30".into())),
            ("k".into(), None),
        ]);
        assert_eq!(v.label(), "date=2026-11-30/k=null");
        assert_eq!(PartitionValues(vec![]).label(), "(unpartitioned)");
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"date":"2026-11-30","k":null}"#
        );
    }
}
