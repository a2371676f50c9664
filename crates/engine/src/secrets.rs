//! Credentials never appear in output: not on screen, in errors, JSON lines, logs or metrics.
//! Two defences: locations print without user info, query or fragment (`redact_url`: an
//! `s3://key:secret@bucket` or an Azure SAS `?sig=...`; an Azure `abfss://container@account`
//! keeps its container, which is no credential), and every known secret value (a secret
//! storage option given with `-o`, in the config or in the environment; a URL's password) is
//! replaced by `***` in whatever text leaves the process (`scrub`), since a library's error
//! message may quote one. Secrets are registered before anything that could quote them is
//! parsed: the command line (`register_args`), config and policy files
//! (`register_toml_text`), addresses (`register_address`: user info and `password=` values
//! also where the address is no well-formed URL, and such an address whole), the headers of
//! `$RAY_JOB_HEADERS`; their parse errors never quote a line (`toml_error`). A secret is
//! scrubbed in every form it takes in output (`forms`): as is, JSON-escaped, percent-encoded;
//! a URL's `user:password`, which HTTP clients send as Basic credentials, also in base64 (an
//! error page echoing the request's headers shows `Authorization: Basic <base64>`).

mod address;
mod forms;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLock;

pub use address::{address_secrets, basic_auth_pairs, is_well_formed, mask_address};

/// A registered secret and the texts that stand for it in output.
struct Secret {
    raw: String,
    forms: Vec<String>,
}

static SECRETS: RwLock<Vec<Secret>> = RwLock::new(Vec::new());

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
        register_address(&ray);
    }
    if let Ok(headers) = std::env::var(RAY_HEADERS_ENV) {
        register_headers(&headers);
    }
}

/// The environment variable Ray's CLI (and lakehealth) reads extra HTTP headers from.
pub const RAY_HEADERS_ENV: &str = "RAY_JOB_HEADERS";

pub fn register(values: impl IntoIterator<Item = String>) {
    if let Ok(mut s) = SECRETS.write() {
        for v in values {
            if !is_plain_value(&v) && !s.iter().any(|k| k.raw == v) {
                let forms = forms::forms(&v);
                s.push(Secret { raw: v, forms });
            }
        }
        // Longest first: a secret containing another is replaced whole.
        s.sort_by_key(|v| std::cmp::Reverse(v.raw.len()));
    }
}

/// Registers the credentials of an address, well-formed URL or not
/// (`address::address_secrets`): a password and its user name
/// (`http://user:pw@head:8265`, `u:pw@head:8265`, `postgres:/u:pw@h/db`), a `password=`
/// value (`host=h password=pw`). A user name alone (Azure's `abfss://container@account`) is
/// no credential.
pub fn register_url_user_info(text: &str) {
    register(credentials_of(text));
}

/// What an address holds that may be secret (`address_secrets`), and the base64 forms of
/// its `user:password` as HTTP Basic sends it (`forms::base64_forms`).
fn credentials_of(text: &str) -> Vec<String> {
    let mut out = address_secrets(text);
    for pair in basic_auth_pairs(text) {
        out.extend(forms::base64_forms(&pair));
    }
    out
}

/// Registers what an address given as one (a Ray address, a catalog URI) holds that may be
/// secret and, when it is no well-formed URL, the address itself: what could not be parsed
/// cannot be shown safely in part.
pub fn register_address(text: &str) {
    register_url_user_info(text);
    let t = text.trim();
    if !is_well_formed(t) && t.contains(['@', '=']) {
        register([t.to_string()]);
    }
}

/// Schemes of an `Authorization` value whose second word is the credential.
const AUTH_SCHEMES: [&str; 4] = ["bearer", "basic", "token", "digest"];

/// Registers the values of HTTP headers given as `$RAY_JOB_HEADERS` (a JSON object of names
/// to values): each value, and the credential of `Bearer TOKEN`. Text that is no such object
/// is registered whole, with each word following an authorization scheme.
pub fn register_headers(raw: &str) {
    let mut found = vec![raw.trim().to_string()];
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(raw) {
        for v in map.values().filter_map(|v| v.as_str()) {
            found.push(v.trim().to_string());
            found.extend(value_credential(v));
        }
    } else {
        found.extend(auth_credentials(raw));
    }
    register(found);
}

/// The credential of a header value (`Bearer abc` gives `abc`), whatever it holds.
fn value_credential(v: &str) -> Option<String> {
    let (scheme, rest) = v.trim().split_once(char::is_whitespace)?;
    AUTH_SCHEMES
        .contains(&scheme.to_ascii_lowercase().as_str())
        .then(|| rest.trim().to_string())
}

/// The words following an authorization scheme in free text (`Bearer abc` gives `abc`).
fn auth_credentials(text: &str) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "\"',{}:".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| AUTH_SCHEMES.contains(&w[0].to_ascii_lowercase().as_str()))
        .map(|w| w[1].to_string())
        .collect()
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
/// line so that even a file that does not parse has them registered (`toml_text_secrets`).
pub fn register_toml_text(text: &str) {
    register(toml_text_secrets(text));
}

/// What `register_toml_text` registers: the value of every `key = value` whose key is secret,
/// and the user info of every URL; plain values (`true`, `0`) are never secrets.
pub fn toml_text_secrets(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
        // A trailing comment is not part of the value (a `#` inside a quoted value is rare
        // in a credential; registering the longer text would not hide the shorter anyway).
        let value = value.trim();
        let unquoted = value.trim_matches(|c| c == '"' || c == '\'');
        found.extend(credentials_of(unquoted));
        if is_secret_key(key) {
            found.push(unquoted.trim().to_string());
            if let Some((before_comment, _)) = unquoted.split_once(" #") {
                found.push(before_comment.trim().trim_matches('"').to_string());
            }
        }
        for word in value.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            found.extend(credentials_of(word));
        }
    }
    found.retain(|v| !is_plain_value(v));
    found
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

/// `text` with every registered secret in each of its forms (as is, JSON-escaped, percent-
/// encoded: `forms`) replaced by `***` (a short one only as a whole token), and every URL's
/// user info and query removed.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Ok(s) = SECRETS.read() {
        for secret in s.iter() {
            let whole_words = secret.raw.chars().count() < MIN_SUBSTRING_LEN;
            for form in &secret.forms {
                if let Some(r) = replace_secret(&out, form, whole_words) {
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

/// `text` with each occurrence of `form` (`forms::occurrences`) replaced by `***`, None when
/// there is none. With `whole_words` (a short secret), only where it is not part of a longer
/// word.
fn replace_secret(text: &str, form: &str, whole_words: bool) -> Option<String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in forms::occurrences(text, form) {
        if whole_words
            && (word(text[..start].chars().next_back()) || word(text[end..].chars().next()))
        {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str("***");
        last = end;
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Schemes whose user name is no credential but part of the location: Azure's
/// `abfss://container@account.dfs.core.windows.net/path`.
fn user_is_location(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "abfs" | "abfss" | "wasb" | "wasbs"
    )
}

/// A URL without user info (but an Azure container), query or fragment; an address that is
/// no well-formed URL without what looks like user info or a `password=` value
/// (`mask_address`); other text unchanged.
pub fn redact_url(s: &str) -> String {
    if !is_well_formed(s) {
        return mask_address(s);
    }
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
        let open = crate::options::OpenOptions {
            storage_options: o.clone(),
            ..Default::default()
        };
        let req = crate::compact::job::CompactRequest::for_partitions(vec![], o);
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
    fn basic_auth_of_url_user_info_is_scrubbed_in_base64_either_alphabet_padded_or_not() {
        register_url_user_info("http://alice:s3cr3t-pa55@host");
        // base64("alice:s3cr3t-pa55"), as reqwest sends it for that URL.
        for header in [
            "Authorization: Basic YWxpY2U6czNjcjN0LXBhNTU=",
            "Authorization: Basic YWxpY2U6czNjcjN0LXBhNTU",
            "{\"authorization\": \"Basic YWxpY2U6czNjcjN0LXBhNTU%3D\"}",
        ] {
            let out = scrub(header);
            assert!(!out.contains("YWxpY2U6czNjcjN0LXBhNTU"), "{out}");
            assert!(out.contains("Basic ***"), "{out}");
        }
        // A pair whose base64 differs between the alphabets: `+` standard, `-` URL-safe.
        register_url_user_info("http://b64usr:Pw~~~%3E@host");
        for form in [
            "YjY0dXNyOlB3fn5+Pg==",
            "YjY0dXNyOlB3fn5+Pg",
            "YjY0dXNyOlB3fn5-Pg==",
            "YjY0dXNyOlB3fn5-Pg",
        ] {
            assert_eq!(scrub(&format!("Basic {form}")), "Basic ***", "{form}");
        }
        register_toml_text("ray_address = \"http://tomlu:TomlPw5x@head:8265\"\n");
        // base64("tomlu:TomlPw5x")
        assert_eq!(scrub("Basic dG9tbHU6VG9tbFB3NXg="), "Basic ***");
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

    #[test]
    fn passwords_of_addresses_that_are_not_urls_are_registered_from_the_command_line() {
        register_args([
            "lakehealth",
            "--ray-address",
            "rayu7:NoSchemePw7@head:8265",
            "--catalog=postgres:/pgu7:OneSlashPw7@h/db",
            "--catalog",
            "host=h port=5432 password=LibpqPw7 dbname=d",
        ]);
        assert_eq!(
            scrub("NoSchemePw7 OneSlashPw7 LibpqPw7"),
            "*** *** ***",
            "every password"
        );
    }

    #[test]
    fn a_secret_is_scrubbed_json_escaped_and_percent_encoded() {
        let secret = "Js\"on\\Pw/7+x";
        register([secret.to_string()]);
        let json = serde_json::json!({ "error": format!("denied {secret}") }).to_string();
        assert!(!json.contains(secret), "the premise: JSON escapes it");
        assert_eq!(scrub(&json), "{\"error\":\"denied ***\"}");
        let twice = serde_json::json!({ "line": json }).to_string();
        assert!(!scrub(&twice).contains("Pw/7"), "{}", scrub(&twice));
        assert_eq!(
            scrub("u=Js%22on%5CPw%2F7%2Bx&"),
            "u=***&",
            "percent-encoded"
        );
        assert_eq!(scrub(&format!("{:?}", secret)), "\"***\"", "debug-escaped");
    }

    #[test]
    fn addresses_that_are_not_well_formed_urls_show_without_their_credentials() {
        assert_eq!(redact_url("u:Pw8q@host:8265"), "host:8265");
        assert_eq!(redact_url("postgres:/u:Pw8q@h/db"), "postgres:/h/db");
        assert_eq!(
            redact_url("host=h password=Pw8q dbname=d"),
            "host=h password=*** dbname=d"
        );
        assert_eq!(redact_url("http://head:8265"), "http://head:8265/");
    }

    #[test]
    fn an_unparseable_address_is_registered_whole() {
        register_address("weird@addr=9");
        assert_eq!(scrub("at weird@addr=9 now"), "at *** now");
        register_address("plainhost9");
        assert_eq!(scrub("plainhost9"), "plainhost9", "no credential in it");
    }

    #[test]
    fn ray_job_headers_values_and_bearer_tokens_are_registered() {
        register_headers(r#"{"Authorization": "Bearer HdrTok7q", "X-Org": "org-7"}"#);
        assert_eq!(
            scrub("sent Bearer HdrTok7q and org-7"),
            "sent *** and ***",
            "each value whole"
        );
        assert_eq!(scrub("token HdrTok7q"), "token ***", "the token alone");
        register_headers("Authorization: Bearer NotJsonTok7");
        assert_eq!(scrub("token NotJsonTok7"), "token ***");
    }
}
