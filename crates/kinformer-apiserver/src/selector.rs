//! Label and field selectors, parsed as kube-apiserver parses them.
//!
//! Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by
//! commas (all must hold). Field selectors: `f=v`, `f==v`, `f!=v`, joined by commas; `f` is
//! `metadata.name`, `metadata.namespace` or any dotted path into the object.

use std::collections::BTreeMap;

use serde_json::Value;

/// A selector that failed to parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRequirement {
    /// `k=v` / `k==v`.
    Equals(String, String),
    /// `k!=v` (also true when the label is absent).
    NotEquals(String, String),
    /// `k in (a,b)`.
    In(String, Vec<String>),
    /// `k notin (a,b)` (also true when the label is absent).
    NotIn(String, Vec<String>),
    /// `k`.
    Exists(String),
    /// `!k`.
    DoesNotExist(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<LabelRequirement>);

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && k.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Result<Vec<&str>, SelectorError> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(SelectorError(s.into()));
                }
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(SelectorError(s.into()));
    }
    out.push(&s[start..]);
    Ok(out)
}

fn parse_set(key: &str, rest: &str, whole: &str) -> Result<(String, Vec<String>), SelectorError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| SelectorError(whole.into()))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(|v| !valid_value(v)) || (values.len() == 1 && values[0].is_empty()) {
        return Err(SelectorError(whole.into()));
    }
    Ok((key.to_string(), values))
}

impl LabelSelector {
    /// Parses a label selector.
    ///
    /// # Errors
    /// [`SelectorError`] naming the requirement that is malformed.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::default());
        }
        let mut reqs = Vec::new();
        for part in split_top(s)? {
            let p = part.trim();
            let err = || SelectorError(p.to_string());
            let req = if let Some(k) = p.strip_prefix('!') {
                let k = k.trim();
                if !valid_key(k) {
                    return Err(err());
                }
                LabelRequirement::DoesNotExist(k.into())
            } else if let Some((k, v)) = p.split_once("!=") {
                let (k, v) = (k.trim(), v.trim());
                if !valid_key(k) || !valid_value(v) {
                    return Err(err());
                }
                LabelRequirement::NotEquals(k.into(), v.into())
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                let (k, v) = (k.trim(), v.trim());
                if !valid_key(k) || !valid_value(v) {
                    return Err(err());
                }
                LabelRequirement::Equals(k.into(), v.into())
            } else if let Some((k, rest)) = p.split_once(" notin ") {
                let (k, vs) = parse_set(k.trim(), rest, p)?;
                if !valid_key(&k) {
                    return Err(err());
                }
                LabelRequirement::NotIn(k, vs)
            } else if let Some((k, rest)) = p.split_once(" in ") {
                let (k, vs) = parse_set(k.trim(), rest, p)?;
                if !valid_key(&k) {
                    return Err(err());
                }
                LabelRequirement::In(k, vs)
            } else {
                if !valid_key(p) {
                    return Err(err());
                }
                LabelRequirement::Exists(p.into())
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether the selector is empty (matches everything).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            LabelRequirement::Equals(k, v) => labels.get(k) == Some(v),
            LabelRequirement::NotEquals(k, v) => labels.get(k) != Some(v),
            LabelRequirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
            LabelRequirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
            LabelRequirement::Exists(k) => labels.contains_key(k),
            LabelRequirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }
}

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

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selector_parses_every_operator() {
        let s = LabelSelector::parse("a=1,b==2,c!=3,d in (x, y),e notin (z),f,!g").unwrap();
        assert_eq!(s.0.len(), 7);
        let l = labels(&[("a", "1"), ("b", "2"), ("d", "y"), ("f", "")]);
        assert!(s.matches(&l));
        let l2 = labels(&[("a", "1"), ("b", "2"), ("d", "y"), ("f", ""), ("g", "1")]);
        assert!(!s.matches(&l2));
    }

    #[test]
    fn label_selector_rejects_garbage() {
        for bad in ["a in x", "=v", "a=(", "a in (b", "!", "a b", "a=b=c"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn field_selector_matches_paths() {
        let s = FieldSelector::parse("metadata.name=x,status.phase!=Failed").unwrap();
        let obj = serde_json::json!({"metadata": {"name": "x"}, "status": {"phase": "Running"}});
        assert!(s.matches_with(|p| lookup_path(&obj, p)));
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
