use std::collections::BTreeMap;

use crate::{Operator, Requirement, Selector, SelectorParseError};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn err(s: &str) -> SelectorParseError {
    match Selector::parse(s) {
        Ok(sel) => panic!("{s:?} parsed as {sel:?}"),
        Err(e) => e,
    }
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
    let l = labels(&[("a", "1"), ("b", "2"), ("d", "y"), ("f", "")]);
    assert!(s.matches(Some(&l)));
    let l2 = labels(&[("a", "1"), ("b", "2"), ("d", "y"), ("f", ""), ("g", "1")]);
    assert!(!s.matches(Some(&l2)));
}

#[test]
fn accepts_what_kubernetes_accepts() {
    for (input, rendered) in [
        ("", ""),
        ("   ", ""),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        (
            "x in (foo,,baz),y,z notin ()",
            "x in (,baz,foo),y,z notin ()",
        ),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,)", "x in (,a)"),
        ("x in (b,a,b)", "x in (a,b)"),
        ("in in (in, notin)", "in in (in,notin)"),
        ("notin=in", "notin=in"),
        ("x\t==\ty", "x=y"),
        ("example.com/app=web", "example.com/app=web"),
        ("a/b", "a/b"),
    ] {
        let s = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(s.to_string(), rendered, "{input:?}");
    }
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
    assert!(!m("missing in (web)"));
    assert!(m("tier"));
    assert!(!m("!tier"));
    assert!(m("!missing"));
    assert!(m("app=web,tier=fe"));
    assert!(!m("app=web,tier=be"));
    assert!(m(""));
    assert!(
        !m("app="),
        "= with an empty value wants the label with an empty value"
    );
    assert!(
        Selector::parse("app=")
            .unwrap()
            .matches(Some(&labels(&[("app", "")])))
    );
    assert!(!Selector::parse("app").unwrap().matches(None));
    assert!(Selector::parse("!app").unwrap().matches(None));
    let sel = Selector::parse("app=web,!canary").unwrap();
    assert!(sel.matches_with(|k| l.get(k).map(String::as_str)));
    assert!(!sel.matches_with(|_| Some("web")));
}

#[test]
fn bad_syntax_is_a_typed_error() {
    use SelectorParseError as E;
    assert!(matches!(err("a=1,,b=2"), E::EmptyRequirement(_)));
    assert!(matches!(err(",a"), E::EmptyRequirement(_)));
    assert!(matches!(err("a,"), E::EmptyRequirement(_)));
    assert!(matches!(err("a in (x"), E::BadSet(_)));
    assert!(matches!(err("a in x"), E::BadSet(_)));
    assert!(matches!(err("a in (x y)"), E::BadSet(_)));
    assert!(matches!(err("a within (x)"), E::BadSet(_)));
    assert!(matches!(err("a b"), E::BadSet(_)));
    assert!(matches!(err("a>1"), E::BadSet(_)));
    assert!(matches!(err("=x"), E::InvalidKey(_)));
    assert!(matches!(err("!"), E::InvalidKey(_)));
    assert!(matches!(err("-a=b"), E::InvalidKey(_)));
    assert!(matches!(err("a,=b"), E::InvalidKey(_)));
    assert!(matches!(err("a=-b"), E::InvalidValue(_)));
    assert!(matches!(err("a=("), E::InvalidValue(_)));
    assert!(matches!(err("a in (x, -y)"), E::InvalidValue(_)));
    assert!(matches!(err("a=b c"), E::Trailing(_)));
    assert!(matches!(err("a=b=c"), E::Trailing(_)));
    assert!(matches!(err("!a=b"), E::Trailing(_)));
    for bad in [
        "a=(",
        "a in (b",
        "!",
        "a b",
        "a=b=c",
        "x=a||y=b",
        "x==a==b",
        "x (",
        "x in (",
        "x= ,z= a(",
        "a in ((b))",
        "a in (b))",
        "a)",
        "(a)",
        "a in b,c)",
    ] {
        assert!(Selector::parse(bad).is_err(), "{bad:?} should fail");
    }
}

#[test]
fn errors_carry_kubernetes_messages() {
    for (input, message) in [
        (
            "a in b",
            "unable to parse requirement: found 'b' expected: '('",
        ),
        (
            "a in (x",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a in (x=)",
            "unable to parse requirement: found '=', expected: ',' or ')'",
        ),
        (
            "a in (,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
        ),
        (
            "a in =",
            "unable to parse requirement: found '=' expected: '('",
        ),
        (
            "a in (=",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "a=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        ("a=1,,b=2", "found ',', expected: identifier after ','"),
        ("a=1,", "found '', expected: identifier after ','"),
        (
            "=x",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        (
            ",",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (
            "-a",
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            "app=x$",
            "unable to parse requirement: values[0][app]: Invalid value: \"x$\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
    ] {
        assert_eq!(err(input).to_string(), message, "{input:?}");
        assert_eq!(err(input).message(), message, "{input:?}");
    }
    // Two bad values: Kubernetes lists both, by their sorted position.
    let two = err("a in (z-, b-, ok)").to_string();
    assert!(
        two.starts_with("unable to parse requirement: [values[0][a]: Invalid value: \"b-\": "),
        "{two}"
    );
    assert!(
        two.contains(", values[2][a]: Invalid value: \"z-\": "),
        "{two}"
    );
}

#[test]
fn display_round_trips() {
    let s = Selector::parse("a=1,b!=2,c in (y,x),!d,e,f notin (),g=").unwrap();
    assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
    let built = Selector::from_requirements(vec![Requirement {
        key: "k".into(),
        operator: Operator::NotIn,
        values: vec!["a".into(), "b".into()],
    }]);
    assert_eq!(built.to_string(), "k notin (a,b)");
    assert_eq!(Selector::parse(&built.to_string()).unwrap(), built);
}

#[test]
fn nul_ends_the_input_as_in_go() {
    assert_eq!(Selector::parse("a=b \0junk(").unwrap().to_string(), "a=b");
    assert_eq!(
        Selector::parse("a\0b").unwrap_err().to_string(),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
}
