//! Hive-style partition folders: `key=value/` at any depth, values escaped as Hive escapes them
//! (percent-encoded), `__HIVE_DEFAULT_PARTITION__` for NULL.

use std::borrow::Cow;

use crate::delta::log::partition_key::encode_into;

/// The folder name Hive and Spark write for a NULL partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// A partition value as written in a folder name: NULL for Hive's marker, else percent-decoded.
pub fn decode_value(raw: &str) -> Option<Cow<'_, str>> {
    if raw == HIVE_NULL {
        return None;
    }
    Some(crate::model::percent::decode_cow(raw))
}

/// Folds file paths into partitions: the raw partition key (as the log reader builds it) of each
/// file, and the partition columns in the order they were first seen (outer folders first).
#[derive(Debug, Default)]
pub struct PartitionParser {
    pub columns: Vec<String>,
    /// Data files under a folder that is not `key=value` (their other folders still count).
    pub files_in_plain_folders: u64,
    buf: String,
}

impl PartitionParser {
    /// The canonical raw key of `rel` (a path relative to the table, `/`-separated), valid until
    /// the next call.
    pub fn key_of(&mut self, rel: &str) -> &str {
        let mut pairs: Vec<(&str, Option<Cow<'_, str>>)> = Vec::new();
        let mut plain = false;
        let mut segments = rel.split('/');
        let _file = segments.next_back();
        for seg in segments {
            match seg.split_once('=') {
                Some((k, v)) if !k.is_empty() => pairs.push((k, decode_value(v))),
                _ => plain = true,
            }
        }
        if plain {
            self.files_in_plain_folders += 1;
        }
        for (k, _) in &pairs {
            if !self.columns.iter().any(|c| c == k) {
                self.columns.push(k.to_string());
            }
        }
        encode_into(&mut self.buf, pairs.iter().map(|(k, v)| (*k, v.as_deref())));
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::log::partition_key::decode;

    #[test]
    fn parses_nested_escaped_and_null_partitions() {
        let mut p = PartitionParser::default();
        let k = p
            .key_of("day=2026-11-30/city=New%20York%2FNJ/part-0.parquet")
            .to_string();
        assert_eq!(
            decode(&k),
            vec![
                ("city".into(), Some("New York/NJ".into())),
                ("day".into(), Some("2026-11-30".into()))
            ]
        );
        let k = p
            .key_of("day=__HIVE_DEFAULT_PARTITION__/city=x/p.parquet")
            .to_string();
        assert_eq!(decode(&k)[1], ("day".into(), None));
        let k = p.key_of("day=null/city=x/p.parquet").to_string();
        assert_eq!(decode(&k)[1], ("day".into(), Some("null".into())));
        assert_eq!(p.columns, vec!["day".to_string(), "city".to_string()]);
        assert_eq!(p.files_in_plain_folders, 0);
        assert!(decode(p.key_of("part-0.parquet")).is_empty());
        p.key_of("2026/day=1/p.parquet");
        assert_eq!(p.files_in_plain_folders, 1);
    }
}
