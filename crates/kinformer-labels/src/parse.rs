//! The selector grammar, lexed and parsed the way `k8s.io/apimachinery/pkg/labels` does, so
//! that what parses and what fails, and the failure messages, are Kubernetes'.
//!
//! ```text
//! selector    ::= requirement ( "," requirement )*
//! requirement ::= [ "!" ] KEY [ ( "in" | "notin" ) "(" VALUES ")" | ( "=" | "==" | "!=" ) VALUE ]
//! ```
//!
//! Whitespace separates tokens; `in` and `notin` are keywords only where an operator can
//! stand, and are plain words as keys and values. Kubernetes' `>`/`<` (`gt`/`lt`) are
//! recognised and rejected: [`Operator`] has no integer comparisons.

use std::collections::BTreeSet;

use crate::requirement::{Operator, Requirement, SelectorParseError};
use crate::validate::{key_errors, quote, value_errors};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    OpenPar,
    ClosePar,
    Comma,
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    In,
    NotIn,
    Ident,
}

/// Where a token is read: `in`/`notin` are operators only where an operator can stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Operator,
    Values,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits `s` into tokens, ending with [`Tok::End`]. NUL bytes behave as in Go, whose lexer
/// reads NUL as its end-of-input marker: one where a token would start ends the input, one
/// inside a word ends the word (and is dropped).
fn lex(s: &str) -> Vec<(Tok, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        while pos < b.len() && is_space(b[pos]) {
            pos += 1;
        }
        if pos >= b.len() || b[pos] == 0 {
            out.push((Tok::End, ""));
            return out;
        }
        let start = pos;
        if is_special(b[pos]) {
            let two = b.get(pos + 1) == Some(&b'=');
            let (tok, len) = match b[pos] {
                b'=' if two => (Tok::DoubleEq, 2),
                b'!' if two => (Tok::NotEq, 2),
                b'=' => (Tok::Eq, 1),
                b'!' => (Tok::Not, 1),
                b'(' => (Tok::OpenPar, 1),
                b')' => (Tok::ClosePar, 1),
                b',' => (Tok::Comma, 1),
                b'>' => (Tok::Gt, 1),
                _ => (Tok::Lt, 1),
            };
            pos += len;
            out.push((tok, &s[start..pos]));
            continue;
        }
        while pos < b.len() && b[pos] != 0 && !is_special(b[pos]) && !is_space(b[pos]) {
            pos += 1;
        }
        let word = &s[start..pos];
        if pos < b.len() && b[pos] == 0 {
            // Go's lexer consumes the NUL that ends a word.
            pos += 1;
        }
        let tok = match word {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Ident,
        };
        out.push((tok, word));
    }
}

/// A failure before it is wrapped: the variant to report and the message.
type Fail = (fn(String) -> SelectorParseError, String);

struct Parser<'a> {
    toks: Vec<(Tok, &'a str)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self, ctx: Ctx) -> (Tok, &'a str) {
        let (t, lit) = self.toks.get(self.pos).copied().unwrap_or((Tok::End, ""));
        match (ctx, t) {
            (Ctx::Values, Tok::In | Tok::NotIn) => (Tok::Ident, lit),
            _ => (t, lit),
        }
    }

    fn next(&mut self, ctx: Ctx) -> (Tok, &'a str) {
        let t = self.peek(ctx);
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn selector(&mut self) -> Result<Vec<Requirement>, SelectorParseError> {
        let mut out = Vec::new();
        loop {
            let (t, lit) = self.peek(Ctx::Values);
            match t {
                Tok::Ident | Tok::Not => {
                    let r = self.requirement().map_err(|(variant, msg)| {
                        variant(format!("unable to parse requirement: {msg}"))
                    })?;
                    out.push(r);
                    let (t, lit) = self.next(Ctx::Values);
                    match t {
                        Tok::End => return Ok(out),
                        Tok::Comma => {
                            let (t, lit) = self.peek(Ctx::Values);
                            if t != Tok::Ident && t != Tok::Not {
                                let msg = format!("found '{lit}', expected: identifier after ','");
                                return Err(if matches!(t, Tok::Comma | Tok::End) {
                                    SelectorParseError::EmptyRequirement(msg)
                                } else {
                                    SelectorParseError::InvalidKey(msg)
                                });
                            }
                        }
                        _ => {
                            return Err(SelectorParseError::Trailing(format!(
                                "found '{lit}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Tok::End => return Ok(out),
                _ => {
                    let msg = format!("found '{lit}', expected: !, identifier, or 'end of string'");
                    return Err(if t == Tok::Comma {
                        SelectorParseError::EmptyRequirement(msg)
                    } else {
                        SelectorParseError::InvalidKey(msg)
                    });
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, Fail> {
        let (mut t, mut key) = self.next(Ctx::Values);
        let negated = t == Tok::Not;
        if negated {
            (t, key) = self.next(Ctx::Values);
        }
        if t != Tok::Ident {
            return Err((
                SelectorParseError::InvalidKey,
                format!("found '{key}', expected: identifier"),
            ));
        }
        let errs = key_errors(key);
        if !errs.is_empty() {
            return Err((
                SelectorParseError::InvalidKey,
                format!("<nil>: Invalid value: {}: {}", quote(key), errs.join("; ")),
            ));
        }
        let (after, _) = self.peek(Ctx::Values);
        if negated || matches!(after, Tok::End | Tok::Comma) {
            let operator = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Ok(Requirement {
                key: key.to_owned(),
                operator,
                values: Vec::new(),
            });
        }
        let (t, lit) = self.next(Ctx::Operator);
        let (operator, values) = match t {
            Tok::In => (Operator::In, self.set()?),
            Tok::NotIn => (Operator::NotIn, self.set()?),
            Tok::Eq | Tok::DoubleEq => (Operator::Equals, self.exact()?),
            Tok::NotEq => (Operator::NotEquals, self.exact()?),
            Tok::Gt | Tok::Lt => {
                return Err((
                    SelectorParseError::BadSet,
                    format!("found '{lit}': the gt and lt operators are not supported"),
                ));
            }
            _ => {
                return Err((
                    SelectorParseError::BadSet,
                    format!("found '{lit}', expected: in, notin, =, ==, !=, gt, lt"),
                ));
            }
        };
        let errs: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let e = value_errors(v);
                (!e.is_empty()).then(|| {
                    format!(
                        "values[{i}][{key}]: Invalid value: {}: {}",
                        quote(v),
                        e.join("; ")
                    )
                })
            })
            .collect();
        match errs.len() {
            0 => Ok(Requirement {
                key: key.to_owned(),
                operator,
                values,
            }),
            1 => Err((SelectorParseError::InvalidValue, errs.join(""))),
            _ => Err((
                SelectorParseError::InvalidValue,
                format!("[{}]", errs.join(", ")),
            )),
        }
    }

    /// `( v1, v2, … )`: a sorted set; empty entries (`(,a)`, `()`) are the empty value.
    fn set(&mut self) -> Result<Vec<String>, Fail> {
        let bad = |msg: String| (SelectorParseError::BadSet as fn(String) -> _, msg);
        let (t, lit) = self.next(Ctx::Values);
        if t != Tok::OpenPar {
            return Err(bad(format!("found '{lit}' expected: '('")));
        }
        let (t, lit) = self.peek(Ctx::Values);
        let mut set = BTreeSet::new();
        match t {
            Tok::ClosePar => {
                set.insert("");
            }
            Tok::Ident | Tok::Comma => loop {
                let (t, lit) = self.next(Ctx::Values);
                match t {
                    Tok::Ident => {
                        set.insert(lit);
                        let (t, lit) = self.peek(Ctx::Values);
                        match t {
                            Tok::Comma => {}
                            Tok::ClosePar => break,
                            _ => return Err(bad(format!("found '{lit}', expected: ',' or ')'"))),
                        }
                    }
                    Tok::Comma => {
                        if set.is_empty() {
                            set.insert("");
                        }
                        match self.peek(Ctx::Values).0 {
                            Tok::ClosePar => {
                                set.insert("");
                                break;
                            }
                            Tok::Comma => {
                                self.next(Ctx::Values);
                                set.insert("");
                            }
                            _ => {}
                        }
                    }
                    _ => return Err(bad(format!("found '{lit}', expected: ',', or identifier"))),
                }
            },
            _ => {
                return Err(bad(format!(
                    "found '{lit}', expected: ',', ')' or identifier"
                )));
            }
        }
        // Both ways out stand in front of the `)`.
        self.next(Ctx::Values);
        Ok(set.into_iter().map(str::to_owned).collect())
    }

    /// The value after `=`, `==` or `!=`; nothing before a comma or the end is the empty
    /// value.
    fn exact(&mut self) -> Result<Vec<String>, Fail> {
        if matches!(self.peek(Ctx::Values).0, Tok::End | Tok::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.next(Ctx::Values) {
            (Tok::Ident, lit) => Ok(vec![lit.to_owned()]),
            (_, lit) => Err((
                SelectorParseError::InvalidValue,
                format!("found '{lit}', expected: identifier"),
            )),
        }
    }
}

/// Parses a selector into its requirements, in the order written.
pub(crate) fn parse(s: &str) -> Result<Vec<Requirement>, SelectorParseError> {
    Parser {
        toks: lex(s),
        pos: 0,
    }
    .selector()
}
