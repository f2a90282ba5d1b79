//! Kubernetes label selectors: the string syntax (`a=b`, `a==b`, `a!=b`, `a in (b, c)`,
//! `a notin (b)`, `a`, `!a`, joined by commas, all of which must hold), parsed and validated
//! as Kubernetes' API server does — the same strings parse, the same fail, with the same
//! messages — and matched against label maps.
//!
//! Label keys must be qualified names (an optional DNS subdomain prefix and `/`, then at most
//! 63 characters `[A-Za-z0-9-_.]` with an alphanumeric character at both ends); values are
//! empty or follow the name rule. [`key_errors`] and [`value_errors`] give Kubernetes'
//! explanation of a bad key or value.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kinformer_labels::{Operator, Selector};
//!
//! let sel = Selector::parse("app in (web, api), tier != db, !canary").unwrap();
//! assert_eq!(sel.requirements()[0].operator, Operator::In);
//! assert_eq!(sel.to_string(), "app in (api,web),tier!=db,!canary");
//!
//! let labels: BTreeMap<String, String> = [("app".into(), "api".into())].into();
//! assert!(sel.matches(Some(&labels)));
//! assert!(sel.matches_with(|k| (k == "app").then_some("web")));
//!
//! let err = Selector::parse("app in web").unwrap_err();
//! assert_eq!(err.to_string(), "unable to parse requirement: found 'web' expected: '('");
//! ```

mod parse;
mod requirement;
mod selector;
mod validate;

pub use requirement::{Operator, Requirement, SelectorParseError};
pub use selector::Selector;
pub use validate::{is_valid_key, is_valid_value, key_errors, value_errors};

#[cfg(test)]
mod tests;
