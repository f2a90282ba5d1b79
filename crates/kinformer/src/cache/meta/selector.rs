//! Label selectors in the standard string syntax: `a=b`, `a==b`, `a!=b`, `a in (b, c)`,
//! `a notin (b)`, `a`, `!a`, joined by commas (all must match). The parser and matcher are
//! the `kinformer-labels` crate's, shared with the embedded API server: what parses and what
//! fails, and the error messages, are Kubernetes'.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kinformer::cache::{Selector, SelectorParseError};
//!
//! let sel: Selector = "app in (web, api), tier!=db, !canary".parse().unwrap();
//! let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
//! assert!(sel.matches(Some(&labels)));
//! assert!(matches!(Selector::parse("app in web"), Err(SelectorParseError::BadSet(_))));
//! assert!(Selector::everything().matches(None));
//! ```

pub use kinformer_labels::{Operator, Requirement, Selector, SelectorParseError};
