//! The README's table of capabilities by format names, in each cell, the test that proves it:
//! every `binary::file::test` there must be a test function in `tests/binary/file.rs`, and a
//! cell without one must say why ("not built", "—", or "after `convert`").

use std::path::Path;

fn table() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("<!-- formats:start -->")
        .expect("the table's start marker");
    let end = readme
        .find("<!-- formats:end -->")
        .expect("the table's end marker");
    readme[start..end].to_string()
}

#[test]
fn every_test_the_readme_format_table_names_exists_and_every_other_cell_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut named = 0;
    for row in table().lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "{row}");
        for cell in &cells[1..] {
            let names: Vec<&str> = cell
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|t| t.matches("::").count() == 2)
                .collect();
            if names.is_empty() {
                assert!(
                    cell.starts_with("not built")
                        || cell.starts_with('—')
                        || cell.starts_with("after `convert`"),
                    "a cell with no test says why: {cell:?} in {row}"
                );
            }
            for name in names {
                let parts: Vec<&str> = name.split("::").collect();
                let file = root
                    .join("tests")
                    .join(parts[0])
                    .join(format!("{}.rs", parts[1]));
                let src = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{name}: {}: {e}", file.display()));
                let defined = src.contains(&format!("fn {}()", parts[2]));
                assert!(defined, "{name}: no such test in {}", file.display());
                named += 1;
            }
        }
    }
    assert!(named >= 40, "the table names {named} tests");
}
