//! Interning of partition values while replaying the log.
//!
//! During replay the table's metadata may not be known yet (it can sit in the checkpoint read
//! last), so partitions are keyed by the raw `partitionValues` map as written (physical column
//! names, any order). `resolve` later maps them to logical columns in partition-column order.
//!
//! The protocol reads an empty partition value as NULL, so `""` is encoded as NULL here, the one
//! place every partition value of the log (JSON and checkpoint) passes through: NULL and `""` are
//! one partition, while the string `"null"` is another.

use std::collections::HashMap;

const ENTRY_SEP: char = '\u{1f}';
const KV_SEP: char = '\u{1e}';
const NULL_MARK: char = '\u{0}';

/// Builds the canonical raw key (entries sorted by column, `""` as NULL) from `(column, value)`
/// pairs into `buf` (cleared first), so maps written in any order or spelling give the same key.
pub fn encode_into<'a>(buf: &mut String, pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>) {
    buf.clear();
    // Up to 8 entries sort on the stack: this runs once per file of a checkpoint.
    let mut small: [(&'a str, Option<&'a str>); 8] = [("", None); 8];
    let mut n = 0;
    let mut overflow: Vec<(&'a str, Option<&'a str>)> = Vec::new();
    for p in pairs {
        if n < small.len() {
            small[n] = p;
            n += 1;
        } else {
            overflow.push(p);
        }
    }
    let sorted: &mut [(&str, Option<&str>)] = if overflow.is_empty() {
        &mut small[..n]
    } else {
        overflow.extend_from_slice(&small[..n]);
        &mut overflow
    };
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for &(k, v) in sorted.iter() {
        buf.push_str(k);
        buf.push(KV_SEP);
        match v.filter(|v| !v.is_empty()) {
            Some(v) => {
                buf.push('=');
                buf.push_str(v);
            }
            None => buf.push(NULL_MARK),
        }
        buf.push(ENTRY_SEP);
    }
}

/// Parses a raw key back into pairs.
pub fn decode(raw: &str) -> Vec<(String, Option<String>)> {
    raw.split(ENTRY_SEP)
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let (k, v) = e.split_once(KV_SEP)?;
            let v = v.strip_prefix('=').map(str::to_string);
            Some((k.to_string(), v))
        })
        .collect()
}

/// The logical partition values of a raw key, in partition-column order.
pub fn resolve_key(
    raw: &str,
    partition_columns: &[String],
    physical_to_logical: &HashMap<String, String>,
) -> Vec<Option<String>> {
    let pairs = decode(raw);
    partition_columns
        .iter()
        .map(|col| {
            pairs
                .iter()
                .find(|(k, _)| physical_to_logical.get(k).map(String::as_str).unwrap_or(k) == col)
                .and_then(|(_, v)| v.clone())
        })
        .collect()
}

/// A map keyed by what a log names (paths, partition keys): foldhash, seeded per process, is
/// several times SipHash's speed on the million keys of a large checkpoint.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Sizes of live files grouped by raw partition key.
#[derive(Debug, Default)]
pub struct PartitionSizes {
    index: FastMap<String, u32>,
    pub groups: Vec<(String, Vec<u64>)>,
}

impl PartitionSizes {
    pub fn push(&mut self, raw_key: &str, size: u64) {
        let idx = match self.index.get(raw_key) {
            Some(&i) => i,
            None => {
                let i = self.groups.len() as u32;
                self.index.insert(raw_key.to_string(), i);
                self.groups.push((raw_key.to_string(), Vec::new()));
                i
            }
        };
        self.groups[idx as usize].1.push(size);
    }

    /// Adds every group of `other` (raw keys are canonical, so equal keys merge).
    pub fn extend(&mut self, other: PartitionSizes) {
        for (raw, sizes) in other.groups {
            for s in sizes {
                self.push(&raw, s);
            }
        }
    }

    /// Drops one file of `size` from the group of `raw_key` (a group left empty goes too, as a
    /// replay would never have made it). False when the group holds no file of that size.
    pub fn remove_one(&mut self, raw_key: &str, size: u64) -> bool {
        let Some(&idx) = self.index.get(raw_key) else {
            return false;
        };
        let sizes = &mut self.groups[idx as usize].1;
        let Some(pos) = sizes.iter().position(|s| *s == size) else {
            return false;
        };
        sizes.swap_remove(pos);
        if sizes.is_empty() {
            self.index.remove(raw_key);
            self.groups.swap_remove(idx as usize);
            if let Some((moved, _)) = self.groups.get(idx as usize) {
                self.index.insert(moved.clone(), idx);
            }
        }
        true
    }

    /// How many files of `size` the group of `raw_key` holds.
    pub fn count(&self, raw_key: &str, size: u64) -> usize {
        self.index.get(raw_key).map_or(0, |&i| {
            self.groups[i as usize]
                .1
                .iter()
                .filter(|s| **s == size)
                .count()
        })
    }

    pub fn files(&self) -> u64 {
        self.groups.iter().map(|(_, s)| s.len() as u64).sum()
    }

    /// Groups keyed by logical partition values in partition-column order; raw keys that
    /// resolve to the same values (entries written in another order) are merged.
    pub fn resolve(
        &self,
        partition_columns: &[String],
        physical_to_logical: &HashMap<String, String>,
    ) -> Vec<(Vec<Option<String>>, Vec<u64>)> {
        let mut merged: HashMap<Vec<Option<String>>, usize> = HashMap::new();
        let mut out: Vec<(Vec<Option<String>>, Vec<u64>)> = Vec::new();
        for (raw, sizes) in &self.groups {
            let values = resolve_key(raw, partition_columns, physical_to_logical);
            match merged.get(&values) {
                Some(&i) => out[i].1.extend_from_slice(sizes),
                None => {
                    merged.insert(values.clone(), out.len());
                    out.push((values, sizes.clone()));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_values_and_nulls_and_reads_empty_as_null() {
        let mut buf = String::new();
        encode_into(
            &mut buf,
            [
                ("a", Some("x=1")),
                ("b", None),
                ("c", Some("")),
                ("d", Some("null")),
            ]
            .into_iter(),
        );
        assert_eq!(
            decode(&buf),
            vec![
                ("a".into(), Some("x=1".into())),
                ("b".into(), None),
                ("c".into(), None),
                ("d".into(), Some("null".into())),
            ]
        );
    }

    #[test]
    fn empty_and_null_are_one_key_and_the_string_null_another() {
        let key = |v: Option<&'static str>| {
            let mut buf = String::new();
            encode_into(&mut buf, [("k", v)].into_iter());
            buf
        };
        assert_eq!(key(Some("")), key(None));
        assert_ne!(key(Some("null")), key(None));
        let mut p = PartitionSizes::default();
        p.push(&key(Some("")), 1);
        p.push(&key(None), 2);
        p.push(&key(Some("null")), 3);
        let r = p.resolve(&["k".into()], &HashMap::new());
        assert_eq!(
            r,
            vec![
                (vec![None], vec![1, 2]),
                (vec![Some("null".into())], vec![3])
            ]
        );
    }

    #[test]
    fn remove_one_drops_a_size_and_an_emptied_group() {
        let mut p = PartitionSizes::default();
        p.push("a", 1);
        p.push("b", 2);
        p.push("c", 3);
        p.push("a", 4);
        assert!(!p.remove_one("a", 9));
        assert!(!p.remove_one("z", 1));
        assert!(p.remove_one("b", 2));
        // "c" moved into b's slot and is still found by its key.
        assert_eq!(p.count("c", 3), 1);
        assert!(p.remove_one("c", 3));
        assert!(p.remove_one("a", 1));
        assert_eq!(p.files(), 1);
        assert_eq!(p.groups, vec![("a".to_string(), vec![4])]);
        p.push("c", 5);
        assert_eq!(p.count("c", 5), 1);
    }

    #[test]
    fn resolve_merges_orders_and_maps_physical_names() {
        let mut p = PartitionSizes::default();
        let mut buf = String::new();
        encode_into(
            &mut buf,
            [("col-1", Some("A")), ("col-2", Some("B"))].into_iter(),
        );
        p.push(&buf, 10);
        encode_into(
            &mut buf,
            [("col-2", Some("B")), ("col-1", Some("A"))].into_iter(),
        );
        p.push(&buf, 20);
        let map = HashMap::from([
            ("col-1".to_string(), "first".to_string()),
            ("col-2".to_string(), "second".to_string()),
        ]);
        let r = p.resolve(&["first".into(), "second".into()], &map);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, vec![Some("A".into()), Some("B".into())]);
        assert_eq!(r[0].1, vec![10, 20]);
    }
}
