//! The engine's imports run one way: each folder (and each file at the top) may use only those
//! of its own layer or below, and no folders use each other in a loop. The order is stated
//! here (and in docs/architecture.md); a new top-level module must be given its place. A
//! subfolder takes its parent's layer unless it has its own (`delta/log` reads the log, below
//! the statistics; `delta` reports and follows a table, above them).
//!
//! Read from the sources (`crate::a::b`, `crate::{a, b::c}`, `super::` chains), test code
//! excluded: tests may look anywhere.

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
        "local_fs",
        "rotating_file",
        "sealed",
    ],
    &["properties"],
    &["error"],
    &["location"],
    &["root_links", "detect", "nested_tables"],
    // Reading a Delta log.
    &["delta/log"],
    // Statistics of a table's files and history, and the report that carries them.
    &["stats"],
    // A Delta table's report and its live log.
    &["delta"],
    // Format-neutral compaction (and Delta's commit).
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

/// The folder a file is in (`delta/log/tail.rs` -> `delta/log`); a file at the top is its own.
fn node_of_file(rel: &Path) -> String {
    match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_string_lossy().replace('\\', "/"),
        None => rel.to_string_lossy().trim_end_matches(".rs").to_string(),
    }
}

/// The code without comments and without the test module (by convention at the file's end).
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `a::b::{c::d, e}` -> `[a, b, c, d]`, `[a, b, e]` (one level of braces).
fn expand(path: &str) -> Vec<Vec<String>> {
    let segs = |p: &str| -> Vec<String> {
        p.split("::")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    match path.split_once('{') {
        Some((head, group)) => {
            let head = segs(head);
            let group = group.split('}').next().unwrap_or_default();
            group
                .split(',')
                .map(|item| {
                    let mut p = head.clone();
                    p.extend(segs(item));
                    p
                })
                .collect()
        }
        None => vec![segs(path)],
    }
}

/// The path written after `at` (identifiers, `::`, one `{...}` group).
fn path_at(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let mut end = 0;
    let mut in_group = false;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => in_group = true,
            '}' if in_group => {
                end = i + 1;
                break;
            }
            c if is_ident(c) || c == ':' || (in_group && (c == ',' || c.is_whitespace())) => {}
            _ => break,
        }
        end = i + c.len_utf8();
    }
    &rest[..end]
}

/// Absolute module paths this code names (`crate::…` and `super::…`).
fn imports(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 && code[..i].ends_with(|c: char| is_ident(c) || c == '$') {
            continue;
        }
        out.extend(expand(path_at(code, i + "crate::".len())));
    }
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("super::") || code[..i].ends_with(is_ident) {
            continue;
        }
        let mut rest = &code[i..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        let base = &module[..module.len().saturating_sub(ups)];
        let at = code.len() - rest.len();
        for p in expand(path_at(code, at)) {
            let mut full = base.to_vec();
            full.extend(p);
            out.push(full);
        }
    }
    // An exported macro lives at the crate root but belongs to the module that defines it.
    for p in &mut out {
        if p.first().is_some_and(|m| m == "forward_to_inner") {
            p[0] = "forward_store".into();
        }
    }
    out
}

/// The node a path is in: its longest prefix that is a folder or a file at the top.
fn resolve(path: &[String], nodes: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("/"))
        .find(|p| nodes.contains(p))
}

type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Folder (or file at the top) -> what it imports, over the whole engine.
fn graph() -> Graph {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let rels: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&root).expect("under src").to_path_buf())
        .collect();
    let nodes: BTreeSet<String> = rels.iter().map(|r| node_of_file(r)).collect();
    let mut g = Graph::new();
    for (file, rel) in files.iter().zip(&rels) {
        let name = rel.to_string_lossy().replace('\\', "/");
        if name == "lib.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let me = node_of_file(rel);
        let module = module_path(rel);
        let text = std::fs::read_to_string(file).expect("read a source file");
        let entry = g.entry(me.clone()).or_default();
        for path in imports(&code_of(&text), &module) {
            if let Some(target) = resolve(&path, &nodes).filter(|t| *t != me) {
                entry.entry(target).or_default().insert(name.clone());
            }
        }
    }
    g
}

/// A node's layer: its own, else its nearest listed parent folder's.
fn layer_of(node: &str) -> Option<usize> {
    let mut at = node;
    loop {
        if let Some(l) = LAYERS.iter().position(|l| l.contains(&at)) {
            return Some(l);
        }
        at = &at[..at.rfind('/')?];
    }
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
            if lt > lf {
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
fn no_modules_import_each_other_in_a_loop() {
    let g = graph();
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        g: &Graph,
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
fn the_checker_sees_grouped_nested_and_relative_imports() {
    let module: Vec<String> = ["janitor", "jobs"].map(String::from).into();
    let code = "use crate::{compact::plan, stats};\nuse super::super::delta::log::state::X;\nuse super::policy;\nlet f = crate::delta::log::actions::physical_names(s);";
    let nodes: BTreeSet<String> = ["compact", "stats", "delta", "delta/log", "janitor"]
        .map(String::from)
        .into();
    let found: BTreeSet<String> = imports(code, &module)
        .iter()
        .filter_map(|p| resolve(p, &nodes))
        .collect();
    assert_eq!(
        found,
        ["compact", "delta/log", "janitor", "stats"]
            .map(String::from)
            .into(),
        "grouped and nested paths resolve to their folder; a sibling is the same folder"
    );
    assert_eq!(
        layer_of("iceberg/compact"),
        layer_of("iceberg"),
        "a subfolder takes its parent's layer"
    );
    assert!(layer_of("delta/log") < layer_of("stats") && layer_of("stats") < layer_of("delta"));
}

#[test]
fn the_graph_holds_the_imports_the_engine_is_known_to_make() {
    let g = graph();
    for (from, to) in [
        ("janitor", "compact"),
        ("stats", "delta/log"),
        ("iceberg/compact", "iceberg"),
        ("compact", "delta/log"),
        ("exec", "compact"),
    ] {
        assert!(
            g.get(from).is_some_and(|t| t.contains_key(to)),
            "{from} -> {to} not seen: the checker reads nothing"
        );
    }
}
