//! Label and field selectors, parsed as kube-apiserver parses them.
//!
//! Label selectors (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined
//! by commas, all must hold) are the `kinformer-labels` crate's [`LabelSelector`], the parser
//! the library's cache uses too. Field selectors: `f=v`, `f==v`, `f!=v`, joined by commas; `f`
//! is `metadata.name`, `metadata.namespace` or any dotted path into the object.

use serde_json::Value;

pub use kinformer_labels::{Selector as LabelSelector, SelectorParseError};

/// A field selector that failed to parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

/// One field requirement: `(path, value, equal)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted path, e.g. `metadata.name`.
    pub field: String,
    /// Value compared with.
    pub value: String,
    /// `true` for `=`/`==`, `false` for `!=`.
    pub equal: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

impl FieldSelector {
    /// Parses a field selector.
    ///
    /// # Errors
    /// [`SelectorError`] naming the requirement that is malformed.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::default());
        }
        let mut out = Vec::new();
        for part in s.split(',') {
            let p = part.trim();
            let (f, v, equal) = if let Some((f, v)) = p.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                (f, v, true)
            } else {
                return Err(SelectorError(p.into()));
            };
            let f = f.trim();
            if f.is_empty() || !f.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                return Err(SelectorError(p.into()));
            }
            out.push(FieldRequirement {
                field: f.into(),
                value: v.trim().into(),
                equal,
            });
        }
        Ok(Self(out))
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether only `metadata.name` / `metadata.namespace` are used (no object parse needed).
    pub fn metadata_only(&self) -> bool {
        self.0
            .iter()
            .all(|r| r.field == "metadata.name" || r.field == "metadata.namespace")
    }

    /// Evaluates the selector; `lookup` resolves a dotted path to its string value.
    pub fn matches_with(&self, mut lookup: impl FnMut(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| {
            let actual = lookup(&r.field).unwrap_or_default();
            (actual == r.value) == r.equal
        })
    }
}

/// Resolves a dotted path inside a JSON object to a string (numbers and bools rendered).
pub fn lookup_path(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for seg in path.split('.') {
        cur = cur.get(seg)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_selector_matches_paths() {
        let s = FieldSelector::parse("metadata.name=x,status.phase!=Failed").unwrap();
        let obj = serde_json::json!({"metadata": {"name": "x"}, "status": {"phase": "Running"}});
        assert!(s.matches_with(|p| lookup_path(&obj, p)));
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
