//! Label key and value validation, with the messages Kubernetes gives
//! (`k8s.io/apimachinery/pkg/util/validation`).

/// The longest name part of a key, and the longest value.
const MAX_NAME: usize = 63;
/// The longest key prefix (a DNS subdomain).
const MAX_PREFIX: usize = 253;

const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Kubernetes' explanation of a pattern mismatch, with examples.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: non-empty, alphanumeric at both ends.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// One DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

fn subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > MAX_PREFIX {
        errs.push(max_len_error(MAX_PREFIX));
    }
    if !s.split('.').all(is_dns_label) {
        errs.push(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// Why `key` is not a valid label key (a qualified name: an optional DNS subdomain prefix
/// and `/`, then a name of at most 63 characters), in Kubernetes' words; empty if it is valid.
///
/// ```
/// assert!(kinformer_labels::key_errors("example.com/app").is_empty());
/// assert_eq!(kinformer_labels::key_errors("/app"), ["prefix part must be non-empty"]);
/// ```
pub fn key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = key.split('/');
    let (first, second, third) = (parts.next(), parts.next(), parts.next());
    let name = match (first, second, third) {
        (Some(name), None, _) => name,
        (Some(prefix), Some(name), None) => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > MAX_NAME {
        errs.push(format!("name part {}", max_len_error(MAX_NAME)));
    }
    if !is_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// Why `value` is not a valid label value (empty, or at most 63 characters
/// `[A-Za-z0-9-_.]` with an alphanumeric character at both ends), in Kubernetes' words;
/// empty if it is valid.
///
/// ```
/// assert!(kinformer_labels::value_errors("").is_empty());
/// assert!(kinformer_labels::value_errors("web-1").is_empty());
/// assert_eq!(kinformer_labels::value_errors("-web").len(), 1);
/// ```
pub fn value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > MAX_NAME {
        errs.push(max_len_error(MAX_NAME));
    }
    if !value.is_empty() && !is_name(value) {
        errs.push(regex_error(
            VALUE_MSG,
            &format!("({NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// True if `key` is a valid label key (see [`key_errors`]).
pub fn is_valid_key(key: &str) -> bool {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if prefix.len() > MAX_PREFIX || !prefix.split('.').all(is_dns_label) {
                return false;
            }
            name
        }
        None => key,
    };
    name.len() <= MAX_NAME && is_name(name)
}

/// True if `value` is a valid label value (see [`value_errors`]).
pub fn is_valid_value(value: &str) -> bool {
    value.is_empty() || (value.len() <= MAX_NAME && is_name(value))
}

/// `s` quoted as Go's `%q` quotes it (close enough for error messages: quotes, backslashes
/// and control characters escaped).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for good in ["a", "app", "A-b_c.d", "example.com/app", "a/b", "k8s.io/x9"] {
            assert!(is_valid_key(good), "{good}");
            assert!(key_errors(good).is_empty(), "{good}");
        }
        let long = "a".repeat(64);
        let long_prefix = format!("{}/a", "a".repeat(254));
        for bad in [
            "",
            "-a",
            "a-",
            "a b",
            "/a",
            "a/",
            "a/b/c",
            "Example.com/a",
            "ex_ample.com/a",
            "-ex.com/a",
            long.as_str(),
            long_prefix.as_str(),
            "é",
        ] {
            assert!(!is_valid_key(bad), "{bad}");
            assert!(!key_errors(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            key_errors(""),
            [
                "name part must be non-empty",
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            key_errors("Ex.com/a"),
            [
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }

    #[test]
    fn values() {
        for good in ["", "a", "web-1", "A.b_c", &"a".repeat(63)] {
            assert!(is_valid_value(good), "{good}");
            assert!(value_errors(good).is_empty(), "{good}");
        }
        for bad in ["-a", "a-", "a b", "a/b", "(", "é", &"a".repeat(64)] {
            assert!(!is_valid_value(bad), "{bad}");
            assert!(!value_errors(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            value_errors(&format!("{}-", "a".repeat(63))),
            [
                "must be no more than 63 characters",
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }
}
