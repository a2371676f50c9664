//! Percent-decoding of paths and URL parts, in one place so that every comparison of a log path
//! with a file name decodes the same way.

use std::borrow::Cow;

/// `s` with each `%XX` escape decoded once (`a%20b` -> `a b`, `a%2520b` -> `a%20b`). A `%`
/// not followed by two hex digits is kept as written; bytes that are not UTF-8 become U+FFFD,
/// so a name never fails to decode. Borrows `s` when it has no escape.
pub fn decode_cow(s: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

/// `decode_cow`, owned.
pub fn decode(s: &str) -> String {
    decode_cow(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_each_escape_once_and_keeps_what_is_not_an_escape() {
        assert_eq!(decode("a%20b"), "a b");
        assert_eq!(decode("caf%C3%A9%2Fx"), "café/x");
        assert_eq!(decode("d=a%2520b/x.parquet"), "d=a%20b/x.parquet");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("%2E%2E"), "..");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_an_error() {
        assert_eq!(decode("a%FFb"), "a\u{FFFD}b");
    }

    #[test]
    fn borrows_when_there_is_nothing_to_decode() {
        assert!(matches!(decode_cow("plain/name.parquet"), Cow::Borrowed(_)));
    }
}
