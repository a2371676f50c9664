//! Integration tests of the command line: commands, errors and their wording, secrets kept out
//! of output, no panic on any input, and the fuzzing of the parsers of untrusted input.
//! One binary per subject (each links all of delta-rs, so a few, not one per file).

// Tests report measurements on stderr; the no-print rule is for the program's own output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

// Shared by several test binaries, each of which uses only part of it (helpers, re-exports).
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod bounds;
mod clear_errors;
mod cli;
mod errors;
mod fuzz;
mod fuzz_harness;
mod inert;
mod no_panic;
mod readme_formats;
mod secrets;

// In one binary only: cargo builds every test binary of a run from the same checkout.
#[test]
fn test_binary_was_built_from_the_checkout_it_runs_in() {
    // A target dir shared by several checkouts can hold a test binary built from another one;
    // CARGO_MANIFEST_DIR (fixtures, scripts) is fixed at compile time, while cargo runs
    // integration tests from the package root of the checkout under test.
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let here = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_eq!(
        built, here,
        "this test binary was built from another checkout than the one it runs in"
    );
}
