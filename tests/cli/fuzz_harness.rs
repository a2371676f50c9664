//! The harness of `fuzz.rs`: bounded runs with a fixed seed, each case on its own thread with a
//! deadline (a hang aborts the run naming its input instead of stalling the suite), and
//! structured mutations of valid inputs (bit flips, interesting integers, dictionary tokens,
//! truncation, copies), so most cases get past a parser's first check.
//!
//! `LAKEHEALTH_FUZZ_SCALE` multiplies every property's case count (10 for a longer run),
//! `LAKEHEALTH_FUZZ_SEED` picks another fixed seed; each property prints its case count and time
//! (`-- --nocapture` shows them).

use std::any::Any;
use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{
    Config, RngSeed, TestCaseError, TestCaseResult, TestError, TestRunner,
};

/// How long one case may take (generous: the machine is shared and runs in parallel).
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The seed when `LAKEHEALTH_FUZZ_SEED` is unset: runs are reproducible.
const DEFAULT_SEED: u64 = 0x1a4e_4ea1_7426_0026;

fn scale() -> f64 {
    std::env::var("LAKEHEALTH_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(1.0)
}

fn seed() -> u64 {
    std::env::var("LAKEHEALTH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

/// FNV-1a of the property's name: each property draws its own sequence from the one seed.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs `test` on `cases` (times the scale) inputs of `strategy`; a failure panics with the
/// shrunk input. Nothing is written to the source tree (no failure persistence). `test` says
/// whether the parser accepted the input (how deep the mutations got is in the summary).
pub fn fuzz<S>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<bool, TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let cases = ((f64::from(cases) * scale()).round() as u32).max(1);
    let config = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed() ^ name_hash(name)),
        max_shrink_iters: 4096,
        max_shrink_time: 120_000,
        max_global_rejects: cases.saturating_mul(4).max(1024),
        ..Config::default()
    };
    let started = Instant::now();
    let (ran, accepted) = (AtomicU64::new(0), AtomicU64::new(0));
    let result = TestRunner::new(config).run(&strategy, |v| -> TestCaseResult {
        ran.fetch_add(1, Ordering::Relaxed);
        if test(v)? {
            accepted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    });
    // Executions include shrinking and rejected inputs (a policy that would register a secret).
    eprintln!(
        "fuzz {name}: {cases} cases, {} executions ({} accepted) in {:.1} s",
        ran.load(Ordering::Relaxed),
        accepted.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, input)) => {
            panic!("fuzz {name}: {reason}\nminimal input: {input:?}")
        }
        Err(TestError::Abort(reason)) => panic!("fuzz {name} aborted: {reason}"),
    }
}

fn panic_text(p: Box<dyn Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs `f(input)` on a thread of its own: a panic fails the case with its message, a case over
/// `DEADLINE` aborts the process after printing the input (a hung thread cannot be stopped, and
/// shrinking it would hang again).
pub fn within<I, T>(input: &I, f: impl FnOnce(I) -> T + Send + 'static) -> Result<T, TestCaseError>
where
    I: Debug + Clone + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let owned = input.clone();
    std::thread::Builder::new()
        .name("fuzz-case".into())
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(|| f(owned))));
        })
        .map_err(|e| TestCaseError::fail(format!("spawning the case's thread: {e}")))?;
    match rx.recv_timeout(DEADLINE) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(p)) => Err(TestCaseError::fail(format!("panicked: {}", panic_text(p)))),
        Err(_) => {
            let text = format!("{input:?}");
            eprintln!(
                "fuzz case still running after {DEADLINE:?} (a hang): {}",
                &text[..text.len().min(4096)]
            );
            std::process::abort();
        }
    }
}

/// Drives a future to completion on a runtime of the case's own thread.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
        .block_on(fut)
}

/// Integers that sit on the edges parsers get wrong (sign, width, overflow).
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    3,
    4,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0x8000,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 40,
    i64::MAX as u64,
    1 << 63,
    u64::MAX,
];

/// Tokens inserted into text inputs: numbers at the edges, JSON/TOML/SQL structure, separators
/// the partition key uses, multi-byte characters.
pub const TEXT_TOKENS: &[&str] = &[
    "-1",
    "0",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e400",
    "-0",
    "0.5",
    "NaN",
    "null",
    "true",
    "\"\"",
    "{}",
    "[]",
    "[",
    "{",
    "}",
    "]",
    "\"",
    ",",
    ":",
    "\\",
    "\\u0000",
    "\\ud800",
    "\n",
    "\u{0}",
    "\u{1e}",
    "\u{1f}",
    "é",
    "𝄞",
    "%",
    "%2F",
    "=",
    "'",
    "''",
    "(",
    ")",
    "--",
    "#",
];

/// One edit of a valid input. Positions are `Index`es, scaled to the input's length when applied
/// (so they shrink toward the start).
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip(Index, u8),
    /// A flip within the last 4 KiB (where Parquet keeps its footer).
    FlipNearEnd(Index, u8),
    Set(Index, u8),
    Insert(Index, Vec<u8>),
    Remove(Index, u16),
    Truncate(Index),
    /// Copies a span elsewhere (repeats structure: a second action, a nested object).
    Copy(Index, Index, u16),
    /// Writes an interesting integer over 1, 2, 4 or 8 bytes, little or big endian.
    Number(Index, u8, bool, usize),
    /// Inserts a token of the property's dictionary or `TEXT_TOKENS`.
    Token(Index, Index),
    /// Replaces up to 16 bytes by a token.
    Replace(Index, u8, Index),
}

pub fn mutation_strategy() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        2 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipNearEnd(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<Index>(), vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<Index>(), 1u16..64).prop_map(|(i, n)| Mutation::Remove(i, n)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), any::<Index>(), 1u16..256)
            .prop_map(|(a, b, n)| Mutation::Copy(a, b, n)),
        2 => (any::<Index>(), 0u8..4, any::<bool>(), 0..INTERESTING.len())
            .prop_map(|(i, w, be, n)| Mutation::Number(i, w, be, n)),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Mutation::Token(i, t)),
        2 => (any::<Index>(), 1u8..16, any::<Index>()).prop_map(|(i, n, t)| Mutation::Replace(i, n, t)),
    ]
}

fn token<'a>(dict: &'a [&'a str], t: &Index) -> &'a [u8] {
    let n = dict.len() + TEXT_TOKENS.len();
    let i = t.index(n);
    match dict.get(i) {
        Some(s) => s.as_bytes(),
        None => TEXT_TOKENS[i - dict.len()].as_bytes(),
    }
}

/// Applies one mutation to `b` (`dict`: the property's tokens).
pub fn apply(b: &mut Vec<u8>, m: &Mutation, dict: &[&str]) {
    let len = b.len();
    let at = |i: &Index| if len == 0 { 0 } else { i.index(len) };
    match m {
        Mutation::Flip(i, bit) if len > 0 => b[at(i)] ^= 1 << bit,
        Mutation::FlipNearEnd(i, bit) if len > 0 => {
            let back = i.index(len.min(4096));
            b[len - 1 - back] ^= 1 << bit;
        }
        Mutation::Set(i, v) if len > 0 => b[at(i)] = *v,
        Mutation::Insert(i, v) => {
            let p = i.index(len + 1);
            b.splice(p..p, v.iter().copied());
        }
        Mutation::Remove(i, n) if len > 0 => {
            let p = at(i);
            b.drain(p..(p + usize::from(*n)).min(len));
        }
        Mutation::Truncate(i) => b.truncate(i.index(len + 1)),
        Mutation::Copy(from, to, n) if len > 0 => {
            let p = at(from);
            let span: Vec<u8> = b[p..(p + usize::from(*n)).min(len)].to_vec();
            let q = to.index(len + 1);
            b.splice(q..q, span);
        }
        Mutation::Number(i, w, be, n) if len > 0 => {
            let v = INTERESTING[*n];
            let width = 1usize << w;
            let bytes = if *be {
                v.to_be_bytes()[8 - width..].to_vec()
            } else {
                v.to_le_bytes()[..width].to_vec()
            };
            let p = at(i);
            for (k, byte) in bytes.into_iter().enumerate() {
                if let Some(slot) = b.get_mut(p + k) {
                    *slot = byte;
                }
            }
        }
        Mutation::Token(i, t) => {
            let p = i.index(len + 1);
            b.splice(p..p, token(dict, t).iter().copied());
        }
        Mutation::Replace(i, n, t) if len > 0 => {
            let p = at(i);
            let end = (p + usize::from(*n)).min(len);
            b.splice(p..end, token(dict, t).iter().copied());
        }
        _ => {}
    }
}

/// 1 to 7 mutations, mostly few: one edit reaches deeper than seven that break the first check.
pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop_oneof![
        3 => vec(mutation_strategy(), 1..2),
        2 => vec(mutation_strategy(), 2..4),
        1 => vec(mutation_strategy(), 4..8),
    ]
}

/// A valid input of `seeds` with `mutations` applied.
pub fn mutated(seeds: Arc<Vec<Vec<u8>>>, dict: &'static [&'static str]) -> BoxedStrategy<Vec<u8>> {
    assert!(!seeds.is_empty(), "mutations need at least one valid input");
    (any::<Index>(), mutations())
        .prop_map(move |(i, ms)| {
            let mut b = seeds[i.index(seeds.len())].clone();
            for m in &ms {
                apply(&mut b, m, dict);
            }
            b
        })
        .boxed()
}

/// Text: a mutated valid input read as UTF-8 (invalid sequences replaced).
pub fn mutated_text(seeds: &[&str], dict: &'static [&'static str]) -> BoxedStrategy<String> {
    let seeds = Arc::new(seeds.iter().map(|s| s.as_bytes().to_vec()).collect());
    mutated(seeds, dict)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        .boxed()
}

/// Any bytes up to `max` long.
pub fn bytes(max: usize) -> BoxedStrategy<Vec<u8>> {
    vec(any::<u8>(), 0..max).boxed()
}

/// Any text up to `max` characters: mostly printable ASCII (what parsers of user input see),
/// sometimes any Unicode.
pub fn text(max: usize) -> BoxedStrategy<String> {
    prop_oneof![
        3 => proptest::string::string_regex(&format!("[ -~]{{0,{max}}}")).expect("a valid regex"),
        1 => proptest::string::string_regex(&format!("\\PC{{0,{max}}}")).expect("a valid regex"),
        1 => vec(any::<char>(), 0..max).prop_map(|c| c.into_iter().collect::<String>()),
    ]
    .boxed()
}
