//! A partition's identity: its values in partition-column order.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// Read back from the JSON object it writes, in the object's order (the columns' order).
impl<'de> Deserialize<'de> for PartitionValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = PartitionValues;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of partition values")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<PartitionValues, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Option<String>>()? {
                    out.push((k, v));
                }
                Ok(PartitionValues(out))
            }
        }
        d.deserialize_map(Ordered)
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
    fn reads_back_in_its_columns_order_not_sorted() {
        let p = PartitionValues(vec![("z".into(), Some("1".into())), ("a".into(), None)]);
        let text = serde_json::to_string(&p).unwrap();
        let back: PartitionValues = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
    }

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
