//! Credentials in every form they take, in every sink: addresses that are not well-formed URLs
//! (user info without a scheme, `postgres:/u:pw@h`, a libpq `password=`), `$RAY_JOB_HEADERS`,
//! and secrets holding `"` or `\` (JSON-escaped in `--json` and the history). The real binary
//! runs; none of stdout, stderr, the log file or the history holds a secret as is,
//! JSON-escaped (once or twice) or percent-encoded.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Output, Stdio};

use crate::support::common::*;

/// The texts that would give `secret` away.
fn forms(secret: &str) -> Vec<String> {
    let json = |s: &str| {
        let q = serde_json::to_string(s).unwrap();
        q[1..q.len() - 1].to_string()
    };
    let percent: String = secret
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![
        secret.to_string(),
        json(secret),
        json(&json(secret)),
        percent,
    ]
}

/// Asserts that no form of any of `secrets` is in `texts` (name, text).
fn assert_nowhere(case: &str, texts: &[(&str, String)], secrets: &[&str]) {
    for s in secrets {
        for f in forms(s) {
            for (name, text) in texts {
                assert!(
                    !text.contains(&f),
                    "{case}: {f:?} (a form of {s:?}) in {name}:\n{text}"
                );
            }
        }
    }
}

/// stdout, stderr and the log of a finished run (the log read now: every run appends).
fn sinks(o: &Output, log: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("stdout", text(&o.stdout)),
        ("stderr", stderr(o)),
        ("log", std::fs::read_to_string(log).unwrap_or_default()),
    ]
}

fn run(args: &[&str], env: &[(&str, &str)], log: &Path) -> Output {
    lakehealth_cmd()
        .stdin(Stdio::null())
        .args(args)
        .arg("--log-file")
        .arg(log)
        .env("LAKEHEALTH_LOG", "debug")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

/// A table with `files` small files in one partition: due for compaction.
fn small_table(dir: &Path, files: u32) -> String {
    std::fs::create_dir_all(dir).unwrap();
    sensor_table_with(dir, &[("2026-01-01", files)]);
    dir.to_str().unwrap().to_string()
}

#[test]
fn passwords_of_addresses_that_are_not_urls_show_nowhere() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 3);
    let log = d.path().join("lakehealth.log");
    // A Ray address without a scheme: the plan names the executor.
    let o = run(
        &[
            "compact",
            &t,
            "--dry-run",
            "--json",
            "--executor",
            "ray",
            "--ray-address",
            "rayusr9:RayPw9x@127.0.0.1:9",
        ],
        &[],
        &log,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Ray cluster at"), "{}", stderr(&o));
    assert_nowhere("ray address", &sinks(&o, &log), &["RayPw9x", "rayusr9"]);
    // Catalogs: a URI with one slash, and a libpq connection string.
    for (catalog, secret) in [
        ("postgres:/pgusr9:PgPw9x@127.0.0.1:9/db", "PgPw9x"),
        ("host=127.0.0.1 port=9 password=LibPw9x dbname=d", "LibPw9x"),
        ("host=127.0.0.1 password='Lib Pw9y' dbname=d", "Lib Pw9y"),
    ] {
        let o = run(&["watch", &t, "--once", "--catalog", catalog], &[], &log);
        assert!(!o.status.success(), "{catalog}: {}", stderr(&o));
        assert!(stderr(&o).contains("catalog"), "{}", stderr(&o));
        assert_nowhere(catalog, &sinks(&o, &log), &[secret]);
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("catalog"),
        "the log holds the errors: {logged}"
    );
}

#[test]
fn a_secret_with_quotes_and_backslashes_shows_nowhere_even_json_escaped() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 4);
    let log = d.path().join("lakehealth.log");
    let history = d.path().join("h.jsonl");
    let policy = d.path().join("p.toml");
    // A Ray address the janitor's job quotes in its error (in the history and --json lines):
    // no scheme, and a password holding `"` and `\` (a TOML literal string keeps them).
    let secret = r#"Ray"Pw\9q"#;
    std::fs::write(
        &policy,
        format!(
            "min_small_files = 2\nexecutor = \"ray\"\nray_address = 'rayusr8:{secret}@127.0.0.1:9'\n"
        ),
    )
    .unwrap();
    let o = run(
        &[
            "watch",
            &t,
            "--once",
            "--json",
            "--policy",
            policy.to_str().unwrap(),
            "--history",
            history.to_str().unwrap(),
        ],
        &[],
        &log,
    );
    let hist = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(
        hist.contains("\"type\":\"result\"") && hist.contains("Ray cluster"),
        "a job ran on the (unreachable) cluster and failed: {hist}\n{}",
        stderr(&o)
    );
    let mut texts = sinks(&o, &log);
    texts.push(("history", hist));
    assert_nowhere("ray address in the janitor", &texts, &[secret, "rayusr8"]);
}

/// An HTTP server that answers every request 401 with a JSON body quoting the request's
/// `Authorization` header, as some proxies do. Returns its port.
fn echoing_proxy() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        // Bounded: the compaction below sends a few requests.
        for stream in listener.incoming().take(64) {
            let Ok(mut s) = stream else { continue };
            let mut head = Vec::new();
            let mut b = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let auth = head
                .lines()
                .find_map(|l| {
                    l.split_once(':')
                        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                        .map(|(_, v)| v.trim().to_string())
                })
                .unwrap_or_default();
            let body = serde_json::json!({ "detail": format!("rejected {auth}") }).to_string();
            let _ = write!(
                s,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn ray_job_headers_show_nowhere() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 4);
    let log = d.path().join("lakehealth.log");
    let port = echoing_proxy();
    let address = format!("http://127.0.0.1:{port}");
    let token = r#"Hdr"Tok\9z"#;
    let headers = serde_json::json!({ "Authorization": format!("Bearer {token}") }).to_string();
    let o = run(
        &[
            "compact",
            &t,
            "--json",
            "--executor",
            "ray",
            "--ray-address",
            &address,
        ],
        &[("RAY_JOB_HEADERS", &headers)],
        &log,
    );
    let all = format!("{}\n{}", text(&o.stdout), stderr(&o));
    assert!(
        all.contains("refused") && all.contains("401"),
        "the proxy's answer is reported: {all}"
    );
    assert_nowhere("headers echoed", &sinks(&o, &log), &[token]);

    // Not an object: serde's message would quote the value.
    let o = run(
        &[
            "compact",
            &t,
            "--json",
            "--executor",
            "ray",
            "--ray-address",
            &address,
        ],
        &[("RAY_JOB_HEADERS", "\"Bearer PlainTok9w\"")],
        &log,
    );
    let all = format!("{}\n{}", text(&o.stdout), stderr(&o));
    assert!(all.contains("RAY_JOB_HEADERS"), "{all}");
    assert_nowhere("headers not an object", &sinks(&o, &log), &["PlainTok9w"]);
}

/// An HTTP server that answers every request 500 with a one-line body quoting every request
/// header, as a misconfigured proxy or a debug error page does. Returns its port.
fn header_echo_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut s) = stream else { continue };
            let mut head = Vec::new();
            let mut b = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let headers: Vec<&str> = head.lines().skip(1).filter(|l| !l.is_empty()).collect();
            let body = format!("internal error; request headers: {}", headers.join("; "));
            let _ = write!(
                s,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// The base64 forms an `Authorization: Basic` header carries `pair` in.
fn basic_forms(pair: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .map(|e| e.encode(pair))
        .collect()
}

#[test]
fn basic_auth_from_url_user_info_shows_in_no_form_when_an_error_page_echoes_the_headers() {
    let d = tempfile::tempdir().unwrap();
    let t = small_table(&d.path().join("t"), 4);
    let log = d.path().join("lakehealth.log");
    let port = header_echo_server();
    let (user, password) = ("basicusr7", "Basic-Pw7q~x");
    let address = format!("http://{user}:{password}@127.0.0.1:{port}");
    let o = run(
        &[
            "compact",
            &t,
            "--json",
            "--executor",
            "ray",
            "--ray-address",
            &address,
        ],
        &[],
        &log,
    );
    let all = format!("{}\n{}", text(&o.stdout), stderr(&o));
    assert!(
        all.contains("500") && all.contains("request headers"),
        "the echoing page is reported: {all}"
    );
    assert!(
        all.contains("Basic ***"),
        "the header is shown scrubbed: {all}"
    );
    let texts = sinks(&o, &log);
    assert_nowhere("basic auth echoed", &texts, &[password, user]);
    let pair = format!("{user}:{password}");
    for form in basic_forms(&pair) {
        for (name, text) in &texts {
            assert!(
                !text.contains(&form),
                "{form} (base64 of the pair) in {name}:\n{text}"
            );
        }
    }
}
