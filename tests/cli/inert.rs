//! Text from a table is inert (#43 item 5): a partition value, a file name or a folder name
//! holding terminal controls (an ESC colour sequence, an OSC 52 clipboard write, BEL, `\r`, a
//! C1 CSI, a bidi override) reaches stdout escaped, never raw; `--json` stays valid JSON that
//! reads back the value as the table wrote it.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::support::common::{lakehealth, sensor_table_with, stderr, text};

/// Partition values a hostile writer chose.
const COLOUR: &str = "p\x1b[31mred";
const CLIPBOARD: &str = "p\x1b]52;c;aGk=\x07\rFAKE\u{9b}2J\u{202e}";

/// Characters that act on a terminal: none may leave lakehealth raw.
fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
        })
        .collect()
}

/// A file no version references, named by the writer, old enough to be an orphan.
fn hostile_orphan(table: &Path) {
    let name = "part-\x1b]52;c;aGk=\x07.snappy.parquet";
    let path = table.join(name);
    std::fs::write(&path, b"not parquet").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(30 * 86_400))
        .unwrap();
}

#[test]
fn a_reports_text_shows_a_tables_terminal_controls_escaped_never_raw() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    sensor_table_with(&table, &[(COLOUR, 2), (CLIPBOARD, 2)]);
    let o = lakehealth(&["report", table.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    assert_eq!(
        raw_controls(&stderr(&o)),
        Vec::<char>::new(),
        "{:?}",
        stderr(&o)
    );
    assert!(out.contains("p\\x1b[31mred"), "{out}");
    assert!(
        out.contains("p\\x1b]52;c;aGk=\\x07\\x0dFAKE\\u009b2J\\u202e"),
        "{out}"
    );
}

#[test]
fn an_orphan_file_name_with_an_osc_52_write_is_listed_escaped() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    sensor_table_with(&table, &[("2026-01-01", 2)]);
    hostile_orphan(&table);
    let o = lakehealth(&["report", table.to_str().unwrap(), "--orphans"]);
    let (out, err) = (text(&o.stdout), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    assert_eq!(raw_controls(&err), Vec::<char>::new(), "{err:?}");
    assert!(out.contains("part-\\x1b]52;c;aGk=\\x07"), "{out}");
}

#[test]
fn a_reports_json_stays_json_and_reads_back_the_values_the_table_holds() {
    let d = tempfile::tempdir().unwrap();
    let table = d.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    sensor_table_with(&table, &[(CLIPBOARD, 2)]);
    let o = lakehealth(&["report", table.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = text(&o.stdout);
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert!(
        doc.to_string()
            .contains(&serde_json::to_string(CLIPBOARD).unwrap()[1..]),
        "the value reads back as written: {doc}"
    );
}

#[test]
fn a_folder_name_with_terminal_controls_is_listed_escaped() {
    let d = tempfile::tempdir().unwrap();
    // object_store cannot create such a path: the writer renames a table's folder to it.
    let plain = d.path().join("t");
    std::fs::create_dir_all(&plain).unwrap();
    sensor_table_with(&plain, &[("2026-01-01", 1)]);
    std::fs::rename(&plain, d.path().join("t\x1b[2J\x07")).unwrap();
    let o = lakehealth(&["report", d.path().to_str().unwrap()]);
    let (out, err) = (text(&o.stdout), stderr(&o));
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    assert_eq!(raw_controls(&err), Vec::<char>::new(), "{err:?}");
    // Listed, or named in the error that it cannot be read: escaped either way.
    assert!(
        format!("{out}{err}").contains("t\\x1b[2J\\x07"),
        "{out}\n{err}"
    );
}
