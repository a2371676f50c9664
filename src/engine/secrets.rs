//! Credentials never appear in output: not on screen, in errors, JSON lines, logs or metrics.
//! Two defences: locations print without user info, query or fragment (`redact_url`: an
//! `s3://key:secret@bucket` or an Azure SAS `?sig=...`; an Azure `abfss://container@account`
//! keeps its container, which is no credential), and every known secret value (a secret
//! storage option given with `-o`, in the config or in the environment; a URL's password) is
//! replaced by `***` in whatever text leaves the process (`scrub`), since a library's error
//! message may quote one. Secrets are registered before anything that could quote them is
//! parsed: the command line (`register_args`), config and policy files
//! (`register_toml_text`); their parse errors never quote a line (`toml_error`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLock;

use crate::engine::model::percent::decode;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Secrets at least this long are replaced wherever they occur; shorter ones only as whole
/// tokens (not inside a word), so a short password does not garble every word containing it.
const MIN_SUBSTRING_LEN: usize = 6;

/// Whether an option of this name holds a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    // Switches whose names contain a secret-looking word.
    if k.contains("SKIP_SIGNATURE") {
        return false;
    }
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

/// Values that are never credentials (switches), however their key is named: scrubbing
/// "true" everywhere would garble every JSON line.
fn is_plain_value(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "0" | "1" | "yes" | "no" | "on" | "off" | "none" | "null"
    )
}

/// Registers the secret values among `options` (and the credential variables of the
/// environment, which object stores read too, and the user info of `$RAY_ADDRESS`).
pub fn register_options(options: &HashMap<String, String>) {
    let env = std::env::vars().filter(|(k, _)| {
        (k.starts_with("AWS_") || k.starts_with("AZURE_") || k.starts_with("GOOGLE_"))
            && is_secret_key(k)
    });
    let found: Vec<String> = options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(env)
        .filter(|(k, _)| is_secret_key(k))
        .map(|(_, v)| v.trim().to_string())
        .collect();
    register(found);
    if let Ok(ray) = std::env::var("RAY_ADDRESS") {
        register_url_user_info(&ray);
    }
}

pub fn register(values: impl IntoIterator<Item = String>) {
    if let Ok(mut s) = SECRETS.write() {
        for v in values {
            if !is_plain_value(&v) && !s.contains(&v) {
                s.push(v);
            }
        }
        // Longest first: a secret containing another is replaced whole.
        s.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// Registers the password of a URL (`http://user:pw@head:8265`, `s3://key:secret@bucket`)
/// and, when there is one, its user name. A user name alone (Azure's
/// `abfss://container@account`) is no credential.
pub fn register_url_user_info(text: &str) {
    let Ok(u) = url::Url::parse(text.trim()) else {
        return;
    };
    let Some(pw) = u.password() else {
        return;
    };
    register([pw.to_string(), decode(pw)]);
    if !u.username().is_empty() {
        register([u.username().to_string(), decode(u.username())]);
    }
}

/// Registers what the command line holds that may be secret, before it is parsed (a parse
/// error quotes the argument): the value of every `-o`/`--storage-option` argument whose key
/// is secret (also when mistyped as `KEY:VALUE`; all of it when no separator is found), and
/// the user info of any URL.
pub fn register_args<I, S>(args: I)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut storage_next = false;
    // `-o KEY VALUE` (a space for the `=`): VALUE is the next argument.
    let mut value_next = false;
    for arg in args {
        let arg = arg.as_ref();
        if std::mem::take(&mut value_next) {
            register([arg.trim().to_string()]);
        }
        register_url_user_info(arg);
        if let Some((flag, v)) = arg.split_once('=')
            && flag.starts_with("--")
        {
            register_url_user_info(v);
        }
        let option = if storage_next {
            Some(arg)
        } else if let Some(v) = arg.strip_prefix("--storage-option=") {
            Some(v)
        } else if let Some(v) = arg.strip_prefix("-o").filter(|v| !v.is_empty()) {
            Some(v.strip_prefix('=').unwrap_or(v))
        } else {
            None
        };
        storage_next = arg == "-o" || arg == "--storage-option";
        if let Some(option) = option {
            register_storage_arg(option);
            value_next = is_key_name(option);
        }
    }
}

/// A secret option's name alone (`AWS_SESSION_TOKEN`): letters, digits and `_`, with one.
fn is_key_name(s: &str) -> bool {
    let s = s.trim();
    is_secret_key(s) && s.contains('_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One `-o` argument: `KEY=VALUE`, or a typo of it.
fn register_storage_arg(option: &str) {
    let split = option
        .split_once('=')
        .or_else(|| option.split_once(':'))
        .or_else(|| option.split_once(char::is_whitespace));
    match split {
        Some((k, v)) if is_secret_key(k.trim()) => register([v.trim().to_string()]),
        Some(_) => {}
        // A key alone names no secret (its value, if any, is the next argument).
        None if is_key_name(option) => {}
        None => register([option.trim().to_string()]),
    }
}

/// Registers the secrets of a TOML file's text (config, policy) before it is parsed, line by
/// line so that even a file that does not parse has them registered: the value of every
/// `key = value` whose key is secret, and the user info of every URL.
pub fn register_toml_text(text: &str) {
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
        // A trailing comment is not part of the value (a `#` inside a quoted value is rare
        // in a credential; registering the longer text would not hide the shorter anyway).
        let value = value.trim();
        let unquoted = value.trim_matches(|c| c == '"' || c == '\'');
        if is_secret_key(key) {
            register([unquoted.trim().to_string()]);
            if let Some((before_comment, _)) = unquoted.split_once(" #") {
                register([before_comment.trim().trim_matches('"').to_string()]);
            }
        }
        for word in value.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            register_url_user_info(word);
        }
    }
}

/// A TOML parse error of `text` as `line L, column C: message`, without the quoted source
/// line toml adds (it may hold a secret) and with known secrets scrubbed from the message.
pub fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let msg = scrub(e.message().trim()).into_owned();
    match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {msg}")
        }
        None => msg,
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
/// `***` (a short one only as a whole token), and every URL's user info and query removed.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Ok(s) = SECRETS.read() {
        for v in s.iter() {
            let enc = percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
            for needle in [v.as_str(), enc.as_str()] {
                if let Some(r) = replace_secret(&out, needle) {
                    out = Cow::Owned(r);
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

/// `text` with `secret` replaced by `***`, None when it does not occur. A secret shorter
/// than `MIN_SUBSTRING_LEN` is replaced only where it is not part of a longer word.
fn replace_secret(text: &str, secret: &str) -> Option<String> {
    if secret.is_empty() || !text.contains(secret) {
        return None;
    }
    if secret.chars().count() >= MIN_SUBSTRING_LEN {
        return Some(text.replace(secret, "***"));
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut replaced = false;
    for (i, _) in text.match_indices(secret) {
        if i < last {
            continue;
        }
        let before = text[..i].chars().next_back();
        let after = text[i + secret.len()..].chars().next();
        if word(before) || word(after) {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str("***");
        last = i + secret.len();
        replaced = true;
    }
    out.push_str(&text[last..]);
    replaced.then_some(out)
}

/// Schemes whose user name is no credential but part of the location: Azure's
/// `abfss://container@account.dfs.core.windows.net/path`.
fn user_is_location(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "abfs" | "abfss" | "wasb" | "wasbs"
    )
}

/// A URL without user info (but an Azure container), query or fragment; other text unchanged.
pub fn redact_url(s: &str) -> String {
    match url::Url::parse(s) {
        Ok(mut u) if u.has_host() || u.scheme() != "file" => {
            let _ = u.set_password(None);
            if !user_is_location(u.scheme()) {
                let _ = u.set_username("");
            }
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
        // The container, without a password if one was (wrongly) given.
        Some(at) if user_is_location(&url[..i]) => {
            let user = body[..at].split(':').next().unwrap_or("");
            format!("{user}@{}", &body[at + 1..auth_end])
        }
        Some(at) => body[at + 1..auth_end].to_string(),
        None => body[..auth_end].to_string(),
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

    #[test]
    fn short_secrets_are_scrubbed_as_whole_tokens_only() {
        register(["q7z".to_string()]);
        assert_eq!(scrub("password q7z rejected"), "password *** rejected");
        assert_eq!(scrub("(q7z)"), "(***)");
        assert_eq!(
            scrub("aq7z q7za q7z_1"),
            "aq7z q7za q7z_1",
            "inside words: kept"
        );
        assert_eq!(scrub("q7z"), "***");
    }

    #[test]
    fn switches_are_never_secrets() {
        let mut o = HashMap::new();
        o.insert("AWS_SKIP_SIGNATURE".to_string(), "true".to_string());
        o.insert("AZURE_USE_SAS_TOKEN".to_string(), "false".to_string());
        register_options(&o);
        assert!(!is_secret_key("AWS_SKIP_SIGNATURE"));
        assert_eq!(
            scrub("\"ok\": true, \"x\": false"),
            "\"ok\": true, \"x\": false"
        );
    }

    #[test]
    fn azure_containers_are_kept_and_passwords_removed() {
        assert_eq!(
            redact_url("abfss://cont@acct.dfs.core.windows.net/lake/t"),
            "abfss://cont@acct.dfs.core.windows.net/lake/t"
        );
        assert_eq!(
            scrub("cannot open abfss://cont@acct.dfs.core.windows.net/t?sig=zz: x"),
            "cannot open abfss://cont@acct.dfs.core.windows.net/t: x"
        );
        assert_eq!(
            redact_urls("abfss://cont:pw9@acct.dfs.core.windows.net/t"),
            "abfss://cont@acct.dfs.core.windows.net/t"
        );
    }

    #[test]
    fn url_user_info_is_registered_but_a_lone_user_name_is_not() {
        register_url_user_info("http://rayuser:rp4@head:8265");
        assert_eq!(
            scrub("user rayuser, password rp4"),
            "user ***, password ***"
        );
        register_url_user_info("abfss://mycontainer@acct.dfs.core.windows.net/t");
        assert_eq!(scrub("mycontainer"), "mycontainer");
    }

    #[test]
    fn mistyped_storage_options_on_the_command_line_are_registered() {
        register_args([
            "lakehealth",
            "report",
            "-o",
            "AWS_SECRET_ACCESS_KEY:sk1",
            "--storage-option=AWS_SESSION_TOKEN tk2",
            "-oAZURE_STORAGE_ACCOUNT_KEY=ak3",
            "-o",
            "nokeyatall",
            "-o",
            "AWS_REGION:eu-west-9",
            "--ray-address=http://u5:pw5@head:8265",
            "-o",
            "AWS_SESSION_TOKEN",
            "spacedtk",
        ]);
        assert_eq!(scrub("spacedtk"), "***", "-o KEY VALUE: the value");
        assert_eq!(
            scrub("AWS_SESSION_TOKEN"),
            "AWS_SESSION_TOKEN",
            "a key is no secret"
        );
        assert_eq!(
            scrub("got AWS_SECRET_ACCESS_KEY:sk1 tk2 ak3 nokeyatall pw5 u5"),
            "got AWS_SECRET_ACCESS_KEY:*** *** *** *** *** ***"
        );
        assert_eq!(scrub("eu-west-9"), "eu-west-9", "not a secret key");
    }

    #[test]
    fn toml_secrets_are_registered_before_parsing_and_errors_quote_no_line() {
        let text = "[storage]\nAWS_SECRET_ACCESS_KEY = \"ts8\nAWS_REGION = \"x\"\n";
        register_toml_text(text);
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        assert!(
            e.to_string().contains("ts8"),
            "toml quotes the line: the test's premise"
        );
        let msg = toml_error(&e, text);
        assert!(!msg.contains("ts8"), "{msg}");
        assert!(msg.starts_with("line 2, column "), "{msg}");
        assert_eq!(scrub("value ts8"), "value ***");
        register_toml_text("ray_address = \"http://tu:tp6@head:8265\"\n");
        assert_eq!(scrub("tp6 tu"), "*** ***");
    }
}
