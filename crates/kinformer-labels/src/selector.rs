//! The selector: requirements that must all hold.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::parse::parse;
use crate::requirement::{Operator, Requirement, SelectorParseError};

/// A parsed label selector; the empty selector matches everything.
///
/// ```
/// use std::collections::BTreeMap;
/// use kinformer_labels::Selector;
///
/// let sel: Selector = "app in (web, api), tier!=db, !canary".parse().unwrap();
/// let labels: BTreeMap<String, String> =
///     [("app".to_string(), "web".to_string())].into();
/// assert!(sel.matches(Some(&labels)));
/// assert!(Selector::parse("app in web").is_err());
/// assert!(Selector::everything().matches(None));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector of these requirements (not validated; [`parse`](Self::parse) validates).
    pub fn from_requirements(requirements: Vec<Requirement>) -> Self {
        Self { requirements }
    }

    /// Parses the standard syntax as Kubernetes does; an empty or blank string is
    /// [`everything`](Self::everything).
    ///
    /// # Errors
    /// A [`SelectorParseError`] with the message Kubernetes gives.
    pub fn parse(s: &str) -> Result<Self, SelectorParseError> {
        Ok(Self {
            requirements: parse(s)?,
        })
    }

    /// The requirements, all of which must hold, in the order written.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True for the selector that matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True if `labels` (`None`: no labels at all) satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// True if the labels that `get` looks up (key to value, `None` if absent) satisfy
    /// every requirement: for label maps of other shapes.
    pub fn matches_with<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(get(&r.key)))
    }
}

impl FromStr for Selector {
    type Err = SelectorParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

impl fmt::Display for Requirement {
    /// Kubernetes' rendering: `a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, values) = (&self.key, self.values.join(","));
        match self.operator {
            Operator::Equals => write!(f, "{key}={values}"),
            Operator::NotEquals => write!(f, "{key}!={values}"),
            Operator::In => write!(f, "{key} in ({values})"),
            Operator::NotIn => write!(f, "{key} notin ({values})"),
            Operator::Exists => f.write_str(key),
            Operator::DoesNotExist => write!(f, "!{key}"),
        }
    }
}

impl fmt::Display for Selector {
    /// The requirements joined by commas; parsing the result gives the selector back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}
