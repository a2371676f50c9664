//! Credentials never appear in output: not on screen, in errors, JSON lines, logs or metrics.
//! Two defences: locations print without user info, query or fragment (`redact_url`: an
//! `s3://key:secret@bucket` or an Azure SAS `?sig=...`), and every value of a secret storage
//! option (given with `-o`, in the config, or in the environment) is replaced by `***` in
//! whatever text leaves the process (`scrub`), since a library's error message may quote one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLock;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Values shorter than this are not scrubbed (a boolean or a region is no secret, and
/// replacing "1" everywhere would garble the output).
const MIN_SECRET_LEN: usize = 6;

/// Whether an option of this name holds a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    [
        "SECRET",
        "KEY",
        "TOKEN",
        "PASSWORD",
        "SAS",
        "SIGNATURE",
        "CREDENTIAL",
        "SESSION",
        "CLIENT_ID",
    ]
    .iter()
    .any(|w| k.contains(w))
}

/// Registers the secret values among `options` (and the credential variables of the
/// environment, which object stores read too).
pub fn register_options(options: &HashMap<String, String>) {
    let env = std::env::vars().filter(|(k, _)| {
        (k.starts_with("AWS_") || k.starts_with("AZURE_") || k.starts_with("GOOGLE_"))
            && is_secret_key(k)
    });
    let found: Vec<String> = options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(env)
        .filter(|(k, v)| is_secret_key(k) && v.trim().len() >= MIN_SECRET_LEN)
        .map(|(_, v)| v.trim().to_string())
        .collect();
    register(found);
}

pub fn register(values: impl IntoIterator<Item = String>) {
    if let Ok(mut s) = SECRETS.write() {
        for v in values {
            if v.len() >= MIN_SECRET_LEN && !s.contains(&v) {
                s.push(v);
            }
        }
        // Longest first: a secret containing another is replaced whole.
        s.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// Storage options for `Debug`: every value of a secret key shown as `***`.
pub fn redacted_options(
    options: &HashMap<String, String>,
) -> std::collections::BTreeMap<&str, &str> {
    options
        .iter()
        .map(|(k, v)| {
            let v = if is_secret_key(k) { "***" } else { v.as_str() };
            (k.as_str(), v)
        })
        .collect()
}

/// `text` with every registered secret (also percent-encoded, as URLs carry them) replaced by
/// `***`, and every URL's user info and query removed.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Ok(s) = SECRETS.read() {
        for v in s.iter() {
            let enc = percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
            for needle in [v.as_str(), enc.as_str()] {
                if out.contains(needle) {
                    out = Cow::Owned(out.replace(needle, "***"));
                }
            }
        }
    }
    if out.contains('@') || out.contains('?') {
        let r = redact_urls(&out);
        if r != out {
            return Cow::Owned(r);
        }
    }
    out
}

/// A URL without user info, query or fragment; other text unchanged.
pub fn redact_url(s: &str) -> String {
    match url::Url::parse(s) {
        Ok(mut u) if u.has_host() || u.scheme() != "file" => {
            let _ = u.set_password(None);
            let _ = u.set_username("");
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        _ => s.to_string(),
    }
}

/// Every `scheme://user:pass@host/path?query` in free text, redacted as `redact_url` does.
fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme: letters, digits, + - . before "://".
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |p| p + 1);
        let mut end = rest[i..]
            .find(|c: char| c.is_whitespace() || "\"'<>`)]},;".contains(c))
            .map_or(rest.len(), |p| i + p);
        // Punctuation after a URL ("s3://b/t: denied") is not part of it.
        while end > i + 3 && rest[..end].ends_with([':', '.']) {
            end -= 1;
        }
        out.push_str(&rest[..start]);
        let url = &rest[start..end];
        if start == i {
            out.push_str(url);
        } else {
            out.push_str(&redact_url_text(url));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn redact_url_text(url: &str) -> String {
    let Some(i) = url.find("://") else {
        return url.to_string();
    };
    let (scheme, body) = (&url[..i + 3], &url[i + 3..]);
    let auth_end = body.find('/').unwrap_or(body.len());
    let host = match body[..auth_end].rfind('@') {
        Some(at) => &body[at + 1..auth_end],
        None => &body[..auth_end],
    };
    let path = &body[auth_end..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    format!("{scheme}{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_user_info_and_query() {
        assert_eq!(
            redact_url("s3://AKIA:s3cr3t@bucket/lake/t/"),
            "s3://bucket/lake/t/"
        );
        assert_eq!(redact_url("az://c/t?sv=2022&sig=abc%2Fdef"), "az://c/t");
        assert_eq!(
            redact_urls("cannot open s3://k:v@b/t?x=1: denied, see https://docs/x"),
            "cannot open s3://b/t: denied, see https://docs/x"
        );
    }

    #[test]
    fn registered_secrets_are_scrubbed_even_percent_encoded() {
        let mut o = HashMap::new();
        o.insert(
            "AWS_SECRET_ACCESS_KEY".to_string(),
            "wJal/rXUtn+FEMI".to_string(),
        );
        o.insert("AWS_REGION".to_string(), "us-east-1".to_string());
        register_options(&o);
        assert_eq!(scrub("key wJal/rXUtn+FEMI here"), "key *** here");
        assert_eq!(scrub("key wJal%2FrXUtn%2BFEMI here"), "key *** here");
        assert_eq!(
            scrub("region us-east-1"),
            "region us-east-1",
            "not a secret"
        );
        assert!(matches!(scrub("nothing"), Cow::Borrowed(_)));
    }

    #[test]
    fn debug_prints_of_options_hide_secret_values() {
        let mut o = HashMap::new();
        o.insert(
            "AWS_SECRET_ACCESS_KEY".to_string(),
            "hunter2-secret".to_string(),
        );
        o.insert("AWS_REGION".to_string(), "eu-west-1".to_string());
        let open = crate::engine::open::OpenOptions {
            storage_options: o.clone(),
            ..Default::default()
        };
        let req = crate::engine::compact::job::CompactRequest::for_partitions(vec![], o);
        for text in [format!("{open:?}"), format!("{req:?}")] {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(
                text.contains("\"AWS_SECRET_ACCESS_KEY\": \"***\""),
                "{text}"
            );
            assert!(text.contains("eu-west-1"), "{text}");
        }
    }

    #[test]
    fn secret_keys_by_name() {
        for k in [
            "AWS_SECRET_ACCESS_KEY",
            "aws_session_token",
            "AZURE_STORAGE_SAS_KEY",
            "GOOGLE_SERVICE_ACCOUNT_KEY",
            "AWS_ACCESS_KEY_ID",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["AWS_REGION", "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }
}
