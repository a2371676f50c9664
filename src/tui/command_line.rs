//! The headless command a preview stands for, shown in it: what a user runs from cron or turns
//! into a janitor policy to repeat what they did in the TUI. Never a storage option (secrets
//! stay in the config file or the environment, where the TUI found them).

use crate::engine::size::{GIB, KIB, MIB};
use crate::tui::preview::CompactionRequest;

/// `lakehealth compact|purge URI --partition LABEL... --target SIZE --min-file-size SIZE`.
/// `target` and `min_file_size` are the plan's (what the TUI's thresholds made them).
pub fn compaction(
    uri: &str,
    target: u64,
    min_file_size: u64,
    request: &CompactionRequest,
) -> String {
    let mut words = vec![
        "lakehealth".to_string(),
        if request.purge { "purge" } else { "compact" }.to_string(),
        quoted(uri),
    ];
    for p in &request.partitions {
        // An unpartitioned table has one partition: the whole table, no flag.
        if !p.0.is_empty() {
            words.extend(["--partition".to_string(), quoted(&p.label())]);
        }
    }
    words.extend(["--target".to_string(), exact_size(target)]);
    words.extend(["--min-file-size".to_string(), exact_size(min_file_size)]);
    words.extend(request.layout.flags().iter().map(|w| quoted(w)));
    if request.full_speed {
        // `compact` throttles by the writers unless told how many bins to run at once.
        let cores = crate::engine::janitor::throttle::cores();
        words.extend(["--parallelism".to_string(), cores.to_string()]);
    }
    words.join(" ")
}

/// A size that reads back as exactly these bytes (`128MiB`, else `1000000B`).
fn exact_size(bytes: u64) -> String {
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

/// A word as a POSIX shell reads it: bare when it is plain, else in single quotes.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::partition::PartitionValues;
    use crate::engine::size::ByteSize;

    #[test]
    fn the_command_names_each_partition_and_the_exact_sizes() {
        let request = CompactionRequest {
            partitions: vec![
                PartitionValues(vec![("d".into(), Some("2026-11-30".into()))]),
                PartitionValues(vec![("city".into(), Some("São Paulo's".into()))]),
                PartitionValues(vec![("d".into(), None)]),
            ],
            executor: String::new(),
            purge: false,
            full_speed: false,
            layout: Default::default(),
            order_text: None,
        };
        assert_eq!(
            compaction("s3://b/my table/", 128 * MIB, 1_000_000, &request),
            "lakehealth compact 's3://b/my table/' --partition d=2026-11-30 \
             --partition 'city=São Paulo'\\''s' --partition d=null \
             --target 128MiB --min-file-size 1000000B"
        );
    }

    #[test]
    fn a_purge_of_an_unpartitioned_table_has_no_partition_flag() {
        let request = CompactionRequest {
            partitions: vec![PartitionValues(vec![])],
            executor: String::new(),
            purge: true,
            full_speed: false,
            layout: Default::default(),
            order_text: None,
        };
        assert_eq!(
            compaction("/t", GIB, 3 * KIB, &request),
            "lakehealth purge /t --target 1GiB --min-file-size 3KiB"
        );
    }

    #[test]
    fn full_speed_chosen_in_the_preview_runs_headless_with_every_core() {
        let request = CompactionRequest {
            partitions: vec![PartitionValues(vec![])],
            executor: String::new(),
            purge: false,
            full_speed: true,
            layout: Default::default(),
            order_text: None,
        };
        let cores = crate::engine::janitor::throttle::cores();
        assert_eq!(
            compaction("/t", GIB, 3 * KIB, &request),
            format!(
                "lakehealth compact /t --target 1GiB --min-file-size 3KiB --parallelism {cores}"
            )
        );
    }

    #[test]
    fn an_order_typed_in_the_preview_runs_headless_with_its_flag() {
        let request = CompactionRequest {
            partitions: vec![PartitionValues(vec![])],
            executor: String::new(),
            purge: false,
            full_speed: false,
            layout: crate::engine::compact::ordering::LayoutRequest::parse_text("zorder a,b")
                .unwrap(),
            order_text: None,
        };
        assert_eq!(
            compaction("/t", GIB, 3 * KIB, &request),
            "lakehealth compact /t --target 1GiB --min-file-size 3KiB --zorder a,b"
        );
    }

    #[test]
    fn every_size_written_reads_back_as_the_same_bytes() {
        for b in [
            1,
            1023,
            KIB,
            1536,
            128 * MIB,
            128 * MIB + 1,
            5 * GIB,
            1_000_000,
        ] {
            let again: ByteSize = exact_size(b).parse().unwrap();
            assert_eq!(again.0, b, "{}", exact_size(b));
        }
    }
}
