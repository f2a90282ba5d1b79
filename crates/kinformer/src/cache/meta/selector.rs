//! Label selectors in the standard string syntax: `a=b`, `a==b`, `a!=b`, `a in (b, c)`,
//! `a notin (b)`, `a`, `!a`, joined by commas (all must match).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Why a selector string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorParseError {
    /// A requirement between commas is empty.
    #[error("empty requirement in selector {0:?}")]
    EmptyRequirement(String),
    /// A label key is empty or has characters a label key cannot have.
    #[error("invalid label key {0:?}")]
    InvalidKey(String),
    /// A label value has characters a label value cannot have, or is too long.
    #[error("invalid label value {0:?}")]
    InvalidValue(String),
    /// A set requirement is malformed (`in`/`notin` without a parenthesised list, unbalanced
    /// parentheses, unknown operator).
    #[error("malformed set requirement {0:?}")]
    BadSet(String),
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
    /// The values (one for `=`/`!=`, none for exists/does-not-exist).
    pub values: Vec<String>,
}

impl Requirement {
    /// True if `labels` satisfy this requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let v = labels.and_then(|l| l.get(&self.key));
        match self.operator {
            Operator::Equals | Operator::In => v.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => !v.is_some_and(|v| self.values.contains(v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
///
/// ```
/// use std::collections::BTreeMap;
/// use kinformer::cache::Selector;
///
/// let sel: Selector = "app in (web, api), tier!=db, !canary".parse().unwrap();
/// let labels: BTreeMap<String, String> =
///     [("app".to_string(), "web".to_string())].into();
/// assert!(sel.matches(Some(&labels)));
/// assert!(!Selector::parse("app in web").is_ok());
/// assert!(Selector::everything().matches(None));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

fn valid_key(k: &str) -> bool {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    });
    name_ok && prefix_ok
}

fn valid_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn key(k: &str) -> Result<String, SelectorParseError> {
    if valid_key(k) {
        Ok(k.to_owned())
    } else {
        Err(SelectorParseError::InvalidKey(k.to_owned()))
    }
}

fn value(v: &str) -> Result<String, SelectorParseError> {
    if valid_value(v) {
        Ok(v.to_owned())
    } else {
        Err(SelectorParseError::InvalidValue(v.to_owned()))
    }
}

fn parse_requirement(term: &str) -> Result<Requirement, SelectorParseError> {
    if let Some(open) = term.find('(') {
        let head = &term[..open];
        let rest = &term[open + 1..];
        let close = rest
            .find(')')
            .ok_or_else(|| SelectorParseError::BadSet(term.to_owned()))?;
        if !rest[close + 1..].trim().is_empty() {
            return Err(SelectorParseError::BadSet(term.to_owned()));
        }
        let mut words = head.split_whitespace();
        let (Some(k), Some(op), None) = (words.next(), words.next(), words.next()) else {
            return Err(SelectorParseError::BadSet(term.to_owned()));
        };
        let operator = match op {
            "in" => Operator::In,
            "notin" => Operator::NotIn,
            _ => return Err(SelectorParseError::BadSet(term.to_owned())),
        };
        let mut values = rest[..close]
            .split(',')
            .map(|v| value(v.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        values.sort();
        values.dedup();
        return Ok(Requirement {
            key: key(k)?,
            operator,
            values,
        });
    }
    if term.contains(')') {
        return Err(SelectorParseError::BadSet(term.to_owned()));
    }
    for (op, operator) in [
        ("!=", Operator::NotEquals),
        ("==", Operator::Equals),
        ("=", Operator::Equals),
    ] {
        if let Some((k, v)) = term.split_once(op) {
            return Ok(Requirement {
                key: key(k.trim())?,
                operator,
                values: vec![value(v.trim())?],
            });
        }
    }
    let words: Vec<&str> = term.split_whitespace().collect();
    if words.len() > 1 {
        // `a in b` without parentheses, or stray words.
        return Err(SelectorParseError::BadSet(term.to_owned()));
    }
    match term.strip_prefix('!') {
        Some(k) => Ok(Requirement {
            key: key(k.trim())?,
            operator: Operator::DoesNotExist,
            values: Vec::new(),
        }),
        None => Ok(Requirement {
            key: key(term)?,
            operator: Operator::Exists,
            values: Vec::new(),
        }),
    }
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the standard syntax; an empty or blank string is [`everything`](Self::everything).
    ///
    /// # Errors
    /// A [`SelectorParseError`] naming the bad part.
    pub fn parse(s: &str) -> Result<Self, SelectorParseError> {
        if s.trim().is_empty() {
            return Ok(Self::everything());
        }
        let mut requirements = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        let mut terms = Vec::new();
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| SelectorParseError::BadSet(s.to_owned()))?;
                }
                ',' if depth == 0 => {
                    terms.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(SelectorParseError::BadSet(s.to_owned()));
        }
        terms.push(&s[start..]);
        for term in terms {
            let term = term.trim();
            if term.is_empty() {
                return Err(SelectorParseError::EmptyRequirement(s.to_owned()));
            }
            requirements.push(parse_requirement(term)?);
        }
        Ok(Selector { requirements })
    }

    /// The requirements, all of which must hold.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True for the selector that matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True if `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl FromStr for Selector {
    type Err = SelectorParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r.operator {
                Operator::Equals => write!(f, "{}={}", r.key, r.values.join(""))?,
                Operator::NotEquals => write!(f, "{}!={}", r.key, r.values.join(""))?,
                Operator::In => write!(f, "{} in ({})", r.key, r.values.join(","))?,
                Operator::NotIn => write!(f, "{} notin ({})", r.key, r.values.join(","))?,
                Operator::Exists => f.write_str(&r.key)?,
                Operator::DoesNotExist => write!(f, "!{}", r.key)?,
            }
        }
        Ok(())
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
    fn parses_every_operator() {
        let s = Selector::parse("a=1, b==2,c!=3, d in (x, y), e notin (z), f, !g").unwrap();
        let ops: Vec<Operator> = s.requirements().iter().map(|r| r.operator).collect();
        assert_eq!(
            ops,
            [
                Operator::Equals,
                Operator::Equals,
                Operator::NotEquals,
                Operator::In,
                Operator::NotIn,
                Operator::Exists,
                Operator::DoesNotExist
            ]
        );
        assert_eq!(s.requirements()[3].values, ["x", "y"]);
    }

    #[test]
    fn matching_follows_kubernetes_semantics() {
        let l = labels(&[("app", "web"), ("tier", "fe")]);
        let m = |s: &str| Selector::parse(s).unwrap().matches(Some(&l));
        assert!(m("app=web"));
        assert!(!m("app=db"));
        assert!(m("app!=db"));
        assert!(m("missing!=x"), "!= matches when the label is absent");
        assert!(m("app in (db, web)"));
        assert!(!m("app notin (web)"));
        assert!(m("missing notin (web)"));
        assert!(m("tier"));
        assert!(!m("!tier"));
        assert!(m("!missing"));
        assert!(m("app=web,tier=fe"));
        assert!(!m("app=web,tier=be"));
        assert!(m(""));
        assert!(!Selector::parse("app").unwrap().matches(None));
    }

    #[test]
    fn bad_syntax_is_a_typed_error() {
        assert!(matches!(
            Selector::parse("a=1,,b=2"),
            Err(SelectorParseError::EmptyRequirement(_))
        ));
        assert!(matches!(
            Selector::parse("a in (x"),
            Err(SelectorParseError::BadSet(_))
        ));
        assert!(matches!(
            Selector::parse("a in x"),
            Err(SelectorParseError::BadSet(_))
        ));
        assert!(matches!(
            Selector::parse("a within (x)"),
            Err(SelectorParseError::BadSet(_))
        ));
        assert!(matches!(
            Selector::parse("=x"),
            Err(SelectorParseError::InvalidKey(_))
        ));
        assert!(matches!(
            Selector::parse("a=b c"),
            Err(SelectorParseError::InvalidValue(_))
        ));
        assert!(Selector::parse("example.com/app=web").is_ok());
    }

    #[test]
    fn display_round_trips() {
        let s = Selector::parse("a=1,b!=2,c in (y,x),!d,e").unwrap();
        assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
    }
}
