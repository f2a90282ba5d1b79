//! Query-string parameters of list, watch and write requests.
//!
//! Empty parameters (kube sends `?&limit=1`) are ignored; unknown ones too, as kube-apiserver
//! ignores parameters it does not know.

use std::time::Duration;

use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// The longest `timeoutSeconds` honoured: larger values (up to `u64::MAX`) are clamped to it,
/// so that no deadline computed from a client's number can overflow. A watch this long still
/// ends at a restart or shutdown of the server. One year.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Parsed request parameters.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// `watch=true|1`.
    pub watch: bool,
    /// `resourceVersion` (`None` when unset or empty; `Some(0)` for "0").
    pub resource_version: Option<u64>,
    /// `resourceVersionMatch`.
    pub rv_match: Option<RvMatch>,
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `limit` (0 = none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds` (or `timeout`), at most [`MAX_TIMEOUT`].
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents` (`None` when unset).
    pub send_initial_events: Option<bool>,
    /// `dryRun` present.
    pub dry_run: bool,
}

/// Decodes `%XX` escapes and `+` (as a space); a `%` not followed by two hex digits is a
/// 400, as is a result that is not UTF-8.
pub fn percent_decode(s: &str) -> Result<String, ApiError> {
    let malformed = s.split('%').skip(1).any(|rest| {
        !rest
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return Err(ApiError::bad_request(format!(
            "invalid percent-encoding in query: {s}"
        )));
    }
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| ApiError::bad_request("query is not UTF-8"))
}

fn parse_bool(k: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" | "" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "invalid value for {k}: {v:?}"
        ))),
    }
}

impl Query {
    /// Parses a raw query string.
    ///
    /// # Errors
    /// 400 BadRequest for invalid selectors, numbers or booleans.
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let mut q = Query::default();
        for pair in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = percent_decode(k)?;
            let v = percent_decode(v)?;
            match k.as_str() {
                "watch" => q.watch = parse_bool(&k, &v)?,
                "resourceVersion" => {
                    q.resource_version = if v.is_empty() {
                        None
                    } else {
                        Some(v.parse().map_err(|_| {
                            ApiError::bad_request(format!("invalid resourceVersion: {v:?}")).with_details(serde_json::json!({
                                "causes": [{"reason": "FieldValueInvalid", "message": "must be a non-negative integer", "field": "resourceVersion"}]
                            }))
                        })?)
                    }
                }
                "resourceVersionMatch" => {
                    q.rv_match = match v.as_str() {
                        "" => None,
                        "NotOlderThan" => Some(RvMatch::NotOlderThan),
                        "Exact" => Some(RvMatch::Exact),
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "invalid resourceVersionMatch: {v:?}"
                            )));
                        }
                    }
                }
                "labelSelector" => {
                    q.label_selector = LabelSelector::parse(&v)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?
                }
                "fieldSelector" => {
                    q.field_selector = FieldSelector::parse(&v)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?
                }
                "limit" => {
                    q.limit = v
                        .parse()
                        .map_err(|_| ApiError::bad_request(format!("invalid limit: {v:?}")))?
                }
                "continue" => q.continue_token = Some(v).filter(|s| !s.is_empty()),
                "timeoutSeconds" => {
                    let s: u64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid timeoutSeconds: {v:?}"))
                    })?;
                    q.timeout = Some(Duration::from_secs(s).min(MAX_TIMEOUT));
                }
                "timeout" => {
                    // Go duration, e.g. "30s" or "1m": accept the common seconds/minutes forms.
                    let secs = v
                        .strip_suffix('s')
                        .and_then(|n| n.parse::<u64>().ok())
                        .or_else(|| {
                            v.strip_suffix('m')
                                .and_then(|n| n.parse::<u64>().ok())
                                .map(|m| m.saturating_mul(60))
                        });
                    if let (Some(s), None) = (secs, q.timeout) {
                        q.timeout = Some(Duration::from_secs(s).min(MAX_TIMEOUT));
                    }
                }
                "allowWatchBookmarks" => q.allow_bookmarks = parse_bool(&k, &v)?,
                "sendInitialEvents" => q.send_initial_events = Some(parse_bool(&k, &v)?),
                "dryRun" => q.dry_run = true,
                _ => {}
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_timeouts_are_clamped_not_overflowed() {
        for raw in [
            "watch=true&timeoutSeconds=9223372036854775807",
            "watch=true&timeoutSeconds=18446744073709551615",
            "watch=true&timeout=18446744073709551615m",
        ] {
            let q = Query::parse(Some(raw)).unwrap();
            assert_eq!(q.timeout, Some(MAX_TIMEOUT), "{raw}");
            assert!(
                tokio::time::Instant::now()
                    .checked_add(MAX_TIMEOUT)
                    .is_some()
            );
        }
        assert!(Query::parse(Some("timeoutSeconds=-1")).is_err());
    }

    #[test]
    fn kube_style_leading_ampersand_is_ignored() {
        let q = Query::parse(Some(
            "&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=12",
        ))
        .unwrap();
        assert!(q.watch && q.allow_bookmarks);
        assert_eq!(q.resource_version, Some(12));
        assert_eq!(q.timeout, Some(Duration::from_secs(290)));
    }

    #[test]
    fn encoded_selectors_decode() {
        let q = Query::parse(Some(
            "labelSelector=app%20in%20(a%2Cb)&fieldSelector=metadata.name%3Dx",
        ))
        .unwrap();
        assert_eq!(q.label_selector.requirements().len(), 1);
        assert_eq!(q.field_selector.0.len(), 1);
    }

    #[test]
    fn bad_values_are_rejected() {
        assert!(Query::parse(Some("resourceVersion=abc")).is_err());
        assert!(Query::parse(Some("limit=-1")).is_err());
        assert!(Query::parse(Some("labelSelector=a%20in%20b")).is_err());
        assert!(Query::parse(Some("x=%zz")).is_err());
    }

    #[test]
    fn bad_label_selectors_answer_as_kubernetes() {
        for (query, message) in [
            (
                "labelSelector=a%20in%20b",
                "unable to parse requirement: found 'b' expected: '('",
            ),
            (
                "labelSelector=a%3D1%2C",
                "found '', expected: identifier after ','",
            ),
            (
                "labelSelector=app%3Dx%24",
                "unable to parse requirement: values[0][app]: Invalid value: \"x$\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
        ] {
            let e = Query::parse(Some(query)).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{query}");
            assert_eq!(e.message, message, "{query}");
        }
    }
}
