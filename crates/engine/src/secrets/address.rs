//! The secrets an address holds, whether or not it is a well-formed URL: a URL's user info
//! (`http://u:pw@head:8265`), user info without a scheme or with a malformed one
//! (`u:pw@head:8265`, `postgres:/u:pw@h/db`), and keyword values (libpq's
//! `host=h password=pw`, a query's `?password=pw`, ODBC's `Pwd=pw;`). Pure functions: the
//! registry is the caller's (`super::register_address`).

use crate::model::percent::decode;

/// User names shorter than this are not registered: a one-letter user is no credential, and
/// scrubbing it as a word would garble output.
const MIN_USER_LEN: usize = 2;

/// Everything in `text` that may be a credential, as written and percent-decoded.
pub fn address_secrets(text: &str) -> Vec<String> {
    let text = text.trim();
    let mut out = Vec::new();
    match url::Url::parse(text) {
        Ok(u) if u.has_authority() => {
            if let Some(pw) = u.password() {
                out.push(pw.to_string());
                if u.username().chars().count() >= MIN_USER_LEN {
                    out.push(u.username().to_string());
                }
            }
        }
        // Not a URL with an authority: `u:pw@h` parses as the scheme "u".
        _ => out.extend(user_info_secrets(text)),
    }
    out.extend(keyword_secrets(text));
    let decoded: Vec<String> = out.iter().map(|s| decode(s)).collect();
    out.extend(decoded);
    out.retain(|s| !s.is_empty());
    out.dedup();
    out
}

/// The `user:password` pairs of `text`'s user info as an HTTP client sends them as Basic
/// credentials: percent-decoded (reqwest decodes a URL's user info) and as written. None
/// without a password: a user name alone is no credential.
pub fn basic_auth_pairs(text: &str) -> Vec<String> {
    let text = text.trim();
    let written = match url::Url::parse(text) {
        Ok(u) if u.has_authority() => u.password().map(|pw| format!("{}:{pw}", u.username())),
        // Not a URL with an authority (`u:pw@h` parses as the scheme "u").
        _ => {
            let (_, rest) = split_scheme(text);
            user_info_end(rest).map(|at| rest[..at].to_string())
        }
    };
    let Some(written) = written else {
        return Vec::new();
    };
    let decoded = match written.split_once(':') {
        Some((user, pw)) => format!("{}:{}", decode(user), decode(pw)),
        None => written.clone(),
    };
    let mut out = vec![decoded];
    if !out.contains(&written) {
        out.push(written);
    }
    out
}

/// Whether `text` is a well-formed URL with an authority (or a local file URL): anything
/// else that is meant as an address is shown masked and registered whole.
pub fn is_well_formed(text: &str) -> bool {
    url::Url::parse(text.trim()).is_ok_and(|u| u.has_authority() || u.scheme() == "file")
}

/// `text` for messages when it is not a well-formed URL: user info dropped (`u:pw@h:1` as
/// `h:1`) and keyword credentials replaced by `***`.
pub fn mask_address(text: &str) -> String {
    let (scheme, rest) = split_scheme(text);
    let rest = match user_info_end(rest) {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    mask_keywords(&format!("{scheme}{rest}"))
}

/// `scheme:/`, `scheme://` (with its slashes) and the rest; no scheme when no slash follows
/// the colon (`u:pw@h` is user info).
fn split_scheme(text: &str) -> (&str, &str) {
    let Some(colon) = text.find(':') else {
        return ("", text);
    };
    let name = &text[..colon];
    let is_scheme = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let after = &text[colon + 1..];
    let slashes = after.len() - after.trim_start_matches('/').len();
    if is_scheme && slashes > 0 {
        text.split_at(colon + 1 + slashes)
    } else {
        ("", text)
    }
}

/// The `@` ending user info in `rest` (an address without its scheme): the last `@` of its
/// first word, when what comes before it holds a `:` (a password; a user name alone, as
/// Azure's `container@account`, is none).
fn user_info_end(rest: &str) -> Option<usize> {
    let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let at = rest[..word_end].rfind('@')?;
    rest[..at].contains(':').then_some(at)
}

/// The password (and user name) of user info that is not part of a well-formed URL.
fn user_info_secrets(text: &str) -> Vec<String> {
    let (scheme, rest) = split_scheme(text);
    let Some(at) = user_info_end(rest) else {
        return Vec::new();
    };
    let Some((user, pw)) = rest[..at].split_once(':') else {
        return Vec::new();
    };
    let mut out = vec![pw.to_string()];
    match pw.rsplit_once(':') {
        // `postgres:u:pw@h`: "postgres" may be a scheme (not a secret), "pw" the password.
        Some((_, last)) if scheme.is_empty() => out.push(last.to_string()),
        _ if user.chars().count() >= MIN_USER_LEN => out.push(user.to_string()),
        _ => {}
    }
    out
}

/// Whether a `key=value` key names a credential in a connection string.
fn is_credential_keyword(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.ends_with("password")
        || k == "passwd"
        || k == "pwd"
        || k.contains("secret")
        || k.contains("token")
}

/// A keyword value at the start of `s`: quoted (`'a b\'c'`, libpq's form, or `"..."`) or up
/// to whitespace, `&` or `;`. Returns (as written, unescaped, bytes taken).
fn keyword_value(s: &str) -> (String, String, usize) {
    let Some(quote) = s.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        let end = s
            .find(|c: char| c.is_whitespace() || c == '&' || c == ';')
            .unwrap_or(s.len());
        return (s[..end].to_string(), s[..end].to_string(), end);
    };
    let mut unescaped = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    unescaped.push(n);
                }
            }
            c if c == quote => return (s[1..i].to_string(), unescaped, i + 1),
            c => unescaped.push(c),
        }
    }
    // No closing quote: the rest is the value.
    (s[1..].to_string(), unescaped, s.len())
}

/// Each `key=value` pair of `text` whose key is a credential: (value start, value as
/// written, unescaped, value end).
fn keyword_pairs(text: &str) -> Vec<(usize, String, String, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(eq) = text[from..].find('=').map(|i| from + i) {
        let key_end = text[..eq].trim_end().len();
        let key_start = text[..key_end]
            .char_indices()
            .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let value_start = eq + 1 + (text[eq + 1..].len() - text[eq + 1..].trim_start().len());
        from = eq + 1;
        if !is_credential_keyword(&text[key_start..key_end]) {
            continue;
        }
        let (raw, unescaped, taken) = keyword_value(&text[value_start..]);
        out.push((value_start, raw, unescaped, value_start + taken));
        from = value_start + taken;
    }
    out
}

/// Credential values of `key=value` pairs.
fn keyword_secrets(text: &str) -> Vec<String> {
    keyword_pairs(text)
        .into_iter()
        .flat_map(|(_, raw, unescaped, _)| [raw, unescaped])
        .collect()
}

/// `text` with every credential value of a `key=value` pair replaced by `***`.
fn mask_keywords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, raw, _, end) in keyword_pairs(text) {
        if raw.is_empty() {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str("***");
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(text: &str, secret: &str) -> bool {
        address_secrets(text).iter().any(|s| s == secret)
    }

    #[test]
    fn user_info_without_a_well_formed_scheme_yields_its_password() {
        assert!(has("rayu:RayPw1@head:8265", "RayPw1"));
        assert!(has("rayu:RayPw1@head:8265", "rayu"));
        assert!(has("postgres:/pgu:PgPw2@h/db", "PgPw2"));
        assert!(has("postgres:pgu:PgPw3@h/db", "PgPw3"));
        assert!(
            has("http://u:pa/ss4@host/x", "pa/ss4"),
            "a / in the password"
        );
        assert!(has("http://user:p%40ss5@h:1", "p@ss5"), "decoded too");
        assert!(
            address_secrets("abfss://container@acct.dfs.core.windows.net/t").is_empty(),
            "a user name alone is no credential"
        );
        assert!(address_secrets("s3://bucket/path/t").is_empty());
    }

    #[test]
    fn basic_auth_pairs_are_the_user_info_decoded_and_as_written() {
        assert_eq!(
            basic_auth_pairs("http://alice:s3cr3t-pa55@host"),
            ["alice:s3cr3t-pa55"]
        );
        assert_eq!(
            basic_auth_pairs("http://al%40ce:p%2Fw@h:1/x"),
            ["al@ce:p/w", "al%40ce:p%2Fw"],
            "reqwest sends it decoded"
        );
        assert_eq!(basic_auth_pairs("rayu:RayPw1@head:8265"), ["rayu:RayPw1"]);
        assert!(basic_auth_pairs("http://useronly@host").is_empty());
        assert!(basic_auth_pairs("abfss://container@acct.dfs.core.windows.net/t").is_empty());
        assert!(basic_auth_pairs("http://host:8265").is_empty());
    }

    #[test]
    fn keyword_credentials_are_found_quoted_or_not() {
        assert!(has("host=h port=5432 password=LibPw6 dbname=d", "LibPw6"));
        assert!(has("host=h password = 'a b\\'c7' user=x", "a b'c7"));
        assert!(has("host=h password = 'a b\\'c7' user=x", "a b\\'c7"));
        assert!(has("postgresql://h/db?user=u&password=QPw8&x=1", "QPw8"));
        assert!(has("Server=s;Uid=u;Pwd=OdbcPw9;", "OdbcPw9"));
        assert!(!has("host=h port=5432", "h"));
    }

    #[test]
    fn addresses_that_are_not_well_formed_are_masked() {
        assert_eq!(mask_address("rayu:RayPw1@head:8265"), "head:8265");
        assert_eq!(mask_address("postgres:/pgu:PgPw2@h/db"), "postgres:/h/db");
        assert_eq!(
            mask_address("host=h password='x y' dbname=d"),
            "host=h password=*** dbname=d"
        );
        assert_eq!(mask_address("http://u:pa/ss4@host/x"), "http://host/x");
        assert!(!is_well_formed("rayu:RayPw1@head:8265"));
        assert!(!is_well_formed("host=h password=p"));
        assert!(is_well_formed("http://head:8265"));
        assert!(is_well_formed("sqlite:///tmp/c.db"));
    }
}
