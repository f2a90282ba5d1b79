//! One requirement of a selector, its operator, and the parse error.

use std::collections::BTreeMap;

/// Why a selector string could not be parsed. Every variant holds the message Kubernetes'
/// API server gives for the same selector (`Display` shows it as is), e.g.
/// `unable to parse requirement: found 'b' expected: '('` for `a in b`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorParseError {
    /// A requirement between commas is empty (`a=1,,b=2`, a leading or trailing comma).
    #[error("{0}")]
    EmptyRequirement(String),
    /// A label key is missing or is not a valid qualified name.
    #[error("{0}")]
    InvalidKey(String),
    /// A label value is missing where one must be, or is not a valid label value.
    #[error("{0}")]
    InvalidValue(String),
    /// The operator is unknown, or a set requirement is malformed (`in`/`notin` without a
    /// parenthesised list, an unclosed list, a stray token in the list).
    #[error("{0}")]
    BadSet(String),
    /// Something other than a comma follows a complete requirement (`a=b c`, `!a=b`).
    #[error("{0}")]
    Trailing(String),
}

impl SelectorParseError {
    /// The message, as Kubernetes words it.
    pub fn message(&self) -> &str {
        match self {
            Self::EmptyRequirement(m)
            | Self::InvalidKey(m)
            | Self::InvalidValue(m)
            | Self::BadSet(m)
            | Self::Trailing(m) => m,
        }
    }
}

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `=` or `==`: the label exists with this value.
    Equals,
    /// `!=`: the label is absent or has another value.
    NotEquals,
    /// `in (…)`: the label exists with one of the values.
    In,
    /// `notin (…)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
}

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values (one for `=`/`!=`, none for exists/does-not-exist); a parsed set is sorted
    /// and has no duplicates.
    pub values: Vec<String>,
}

impl Requirement {
    /// True if a label with this requirement's key and the value `value` (`None`: no such
    /// label) satisfies it.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let listed = || value.is_some_and(|v| self.values.iter().any(|x| x == v));
        match self.operator {
            Operator::Equals | Operator::In => listed(),
            Operator::NotEquals | Operator::NotIn => !listed(),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }

    /// True if `labels` (`None`: no labels at all) satisfy this requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.matches_value(labels.and_then(|l| l.get(&self.key)).map(String::as_str))
    }
}
