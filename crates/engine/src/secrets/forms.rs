//! The forms a secret takes in output, and finding them: as is, JSON-escaped (a `"` or `\` in
//! a history line or `--json`; twice when a JSON text is quoted in JSON), Rust-debug-escaped,
//! and each of these percent-encoded in whole or in part (a URL encodes some characters and
//! not others, so every character may be written either way). A `user:password` pair sent as
//! HTTP Basic credentials also takes its base64 forms (`base64_forms`).

/// The texts that stand for `secret` in output (before percent-encoding), distinct.
pub fn forms(secret: &str) -> Vec<String> {
    let once = json_escaped(secret);
    let twice = json_escaped(&once);
    let debug = format!("{secret:?}");
    let debug = debug[1..debug.len() - 1].to_string();
    let mut out = vec![secret.to_string()];
    for f in [once, twice, debug] {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// `pair` (a `user:password` exactly as an HTTP client sends it) in base64, as an
/// `Authorization: Basic` header carries it and an error page echoing that header shows it:
/// the standard and URL-safe alphabets, padded and not. Only the whole pair: the base64 of a
/// part depends on where it starts (its offset mod 3), so a secret alone has no fixed form
/// inside the header's.
pub fn base64_forms(pair: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut out: Vec<String> = Vec::new();
    for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
        let f = engine.encode(pair);
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// `s` as a JSON string's content (without the quotes).
fn json_escaped(s: &str) -> String {
    match serde_json::to_string(s) {
        Ok(q) if q.len() >= 2 => q[1..q.len() - 1].to_string(),
        _ => s.to_string(),
    }
}

/// Where `form` ends when it occurs at byte `start` of `text`, each character as is or
/// percent-encoded (`%2F` or `%2f`; a space also as `+`).
fn match_at(text: &[u8], start: usize, form: &str) -> Option<usize> {
    let mut pos = start;
    for c in form.chars() {
        let mut utf8 = [0u8; 4];
        let raw = c.encode_utf8(&mut utf8).as_bytes();
        if text.get(pos..pos + raw.len()) == Some(raw) {
            pos += raw.len();
            continue;
        }
        if c == ' ' && text.get(pos) == Some(&b'+') {
            pos += 1;
            continue;
        }
        for &byte in raw {
            pos = percent_byte(text, pos, byte)?;
        }
    }
    Some(pos)
}

/// The position after `%XX` at `pos` when XX (either case) is `byte`.
fn percent_byte(text: &[u8], pos: usize, byte: u8) -> Option<usize> {
    let esc = text.get(pos..pos + 3)?;
    if esc[0] != b'%' || !esc[1..].iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let hex = std::str::from_utf8(&esc[1..]).ok()?;
    (u8::from_str_radix(hex, 16).ok()? == byte).then_some(pos + 3)
}

/// Every occurrence of `form` in `text` (see `match_at`), left to right, not overlapping:
/// (start, end) byte ranges on character boundaries.
pub fn occurrences(text: &str, form: &str) -> Vec<(usize, usize)> {
    let Some(first) = form.chars().next() else {
        return Vec::new();
    };
    // The common case: nothing encoded, a plain search.
    if !text.contains(['%', '+']) && !text.contains(form) {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut next = 0;
    for (i, c) in text.char_indices() {
        if i < next || !(c == first || c == '%' || (c == '+' && first == ' ')) {
            continue;
        }
        if let Some(end) = match_at(bytes, i, form).filter(|end| *end > i) {
            out.push((i, end));
            next = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, secret: &str) -> bool {
        forms(secret)
            .iter()
            .any(|f| !occurrences(text, f).is_empty())
    }

    #[test]
    fn json_escaped_debug_and_percent_encoded_forms_are_found() {
        let s = "qu\"ote\\back/sl+sh p";
        let json = serde_json::to_string(&serde_json::json!({ "e": s })).unwrap();
        assert!(!json.contains(s), "the test's premise: JSON escapes it");
        assert!(found(&json, s), "{json}");
        let nested = serde_json::to_string(&serde_json::json!({ "e": json })).unwrap();
        assert!(found(&nested, s), "{nested}");
        assert!(found(&format!("{s:?}"), s));
        let all = percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        assert!(found(&format!("x {all} y"), s), "{all}");
        let some = "qu%22ote%5cback%2Fsl%2Bsh+p";
        assert!(found(some, s), "partly encoded, lowercase hex");
        assert!(!found("qu%22ote%5cback%2Fsl%2Bsh+q", s));
        assert_eq!(occurrences("a%2Fb then a/b", "a/b"), vec![(0, 5), (11, 14)]);
    }

    #[test]
    fn base64_forms_of_a_pair_are_both_alphabets_padded_and_not() {
        // Chosen so that its base64 holds a `+` (`-` URL-safe) and padding.
        let mut forms = base64_forms("ab:~~~>");
        forms.sort();
        assert_eq!(
            forms,
            ["YWI6fn5+Pg", "YWI6fn5+Pg==", "YWI6fn5-Pg", "YWI6fn5-Pg=="]
        );
        assert_eq!(
            base64_forms("alice:s3cr3t-pa55")[0],
            "YWxpY2U6czNjcjN0LXBhNTU="
        );
    }
}
