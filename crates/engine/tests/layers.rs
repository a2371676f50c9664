//! The engine's imports run one way: each top-level module may use only modules of its own
//! layer or below, and no set of modules uses each other in a loop. The order is stated here
//! (and in docs/architecture.md); a new module must be given its place.
//!
//! Read from the sources (`crate::a`, `crate::{a, b}`, `super::` chains that reach the crate
//! root), test code excluded: tests may look anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top.
const LAYERS: &[&[&str]] = &[
    // Vocabulary: plain types, sizes, the clock.
    &["model", "size", "clock"],
    &["secrets"],
    &[
        "options",
        "panic_guard",
        "progress",
        "failpoint",
        "parquet_reader",
        "forward_store",
    ],
    &["properties"],
    &["error"],
    &["location"],
    &["root_links", "detect"],
    // Statistics of a table's files and history, format-neutral.
    &["stats"],
    // Formats' reading and format-neutral compaction.
    &["delta"],
    &["compact"],
    &["exec"],
    &["iceberg", "parquet_folder"],
    // Opening what the user pointed at.
    &["formats"],
    // A table opened once, for every reader.
    &["table"],
    &["discover"],
    &["open"],
    &["maintenance", "stream"],
    &["janitor", "demo"],
];

/// Imports that still run up, each with what it needs; the list may only shrink (an entry
/// whose import is gone fails the test, so it is removed with the fix).
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[
    (
        "stats",
        "delta",
        "the history statistics read the replayed log's state (delta::log::state)",
    ),
    ("stats", "iceberg", "TableReport carries IcebergDetails"),
    (
        "stats",
        "parquet_folder",
        "TableReport carries FolderDetails",
    ),
    (
        "stats",
        "maintenance",
        "TableReport carries the orphan scan",
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("read the engine's sources");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's module path below the crate root (`delta/log/mod.rs` -> `[delta, log]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code without comments and without the test module (by convention at the file's end).
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Top-level modules this code names.
fn imports(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            for item in inner.split(',') {
                out.insert(ident_at(item.trim()).to_string());
            }
        } else {
            out.insert(ident_at(rest).to_string());
        }
    }
    // `super::super::x` from `a/b.rs` (module [a, b]) names the crate root's `x`.
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("super::") {
            continue;
        }
        let mut rest = &code[i..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups == module.len() {
            out.insert(ident_at(rest).to_string());
        }
    }
    // An exported macro lives at the crate root but belongs to the module that defines it.
    let out: BTreeSet<String> = out
        .into_iter()
        .map(|m| match m.as_str() {
            "forward_to_inner" => "forward_store".to_string(),
            _ => m,
        })
        .collect();
    out.into_iter()
        .filter(|m| !m.is_empty() && m != &module[0])
        .collect()
}

/// Module -> the modules it imports, over the whole engine.
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src").to_path_buf();
        let module = module_path(&rel);
        let name = rel.to_string_lossy().to_string();
        if module == ["lib"] || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let entry = g.entry(module[0].clone()).or_default();
        for target in imports(&code_of(&text), &module) {
            entry.entry(target).or_default().insert(name.clone());
        }
    }
    g
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn is_known(from: &str, to: &str) -> bool {
    KNOWN_UPWARD.iter().any(|(f, t, _)| *f == from && *t == to)
}

#[test]
fn every_engine_module_has_a_layer() {
    let missing: Vec<String> = graph()
        .into_keys()
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "give these modules a place in LAYERS (tests/layers.rs, docs/architecture.md): {missing:?}"
    );
}

#[test]
fn no_import_runs_up_a_layer() {
    let mut upward = Vec::new();
    for (from, targets) in graph() {
        let (Some(lf), files) = (layer_of(&from), &targets) else {
            continue;
        };
        for (to, where_) in files {
            let lt = layer_of(to).unwrap_or(usize::MAX);
            if lt > lf && !is_known(&from, to) {
                upward.push(format!("{from} -> {to} (in {where_:?})"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a lower layer to a higher one: {upward:#?}"
    );
}

#[test]
fn every_known_upward_import_still_exists() {
    let g = graph();
    let stale: Vec<_> = KNOWN_UPWARD
        .iter()
        .filter(|(f, t, _)| !g.get(*f).is_some_and(|ts| ts.contains_key(*t)))
        .collect();
    assert!(
        stale.is_empty(),
        "fixed: remove these from KNOWN_UPWARD: {stale:?}"
    );
}

#[test]
fn no_modules_import_each_other_in_a_loop() {
    let g = graph();
    // Depth-first search for a back edge, ignoring the known upward imports (listed above).
    fn visit(
        node: &str,
        g: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for to in g.get(node).map(|t| t.keys()).into_iter().flatten() {
            if is_known(node, to) {
                continue;
            }
            if let Some(c) = visit(to, g, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in g.keys() {
        let mut stack = Vec::new();
        if let Some(cycle) = visit(node, &g, &mut stack, &mut done) {
            panic!(
                "modules import each other in a loop: {}",
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_checker_sees_grouped_and_relative_imports() {
    let module = vec!["janitor".to_string(), "jobs".to_string()];
    let code =
        "use crate::{compact::plan, stats};\nuse super::super::delta::log;\nuse super::policy;";
    let found = imports(code, &module);
    assert_eq!(
        found,
        ["compact", "delta", "stats"].map(String::from).into(),
        "grouped crate imports and super chains to the root count; siblings do not"
    );
}
