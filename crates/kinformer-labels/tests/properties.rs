//! Generated selectors: rendering and parsing agree, and matching agrees with a plain
//! reference of Kubernetes' rules.

use std::collections::BTreeMap;

use kinformer_labels::{Operator, Requirement, Selector};
use proptest::prelude::*;

/// Keys from a small pool, so that generated labels and requirements meet.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("app".to_owned()),
        Just("tier".to_owned()),
        Just("in".to_owned()),
        Just("example.com/team".to_owned()),
        "[a-z]([a-z0-9._-]{0,6}[a-z0-9])?",
        "[a-z0-9]{1,5}(\\.[a-z0-9]{1,5}){0,2}/[A-Za-z0-9]([A-Za-z0-9_.-]{0,5}[A-Za-z0-9])?",
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("web".to_owned()),
        Just("db".to_owned()),
        Just("notin".to_owned()),
        "[A-Za-z0-9]([A-Za-z0-9_.-]{0,6}[A-Za-z0-9])?",
    ]
}

fn requirement() -> impl Strategy<Value = Requirement> {
    let op = prop_oneof![
        Just(Operator::Equals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
    ];
    (key(), op, proptest::collection::btree_set(value(), 1..4)).prop_map(|(key, operator, set)| {
        let values = match operator {
            Operator::Equals | Operator::NotEquals => set.into_iter().take(1).collect(),
            Operator::In | Operator::NotIn => set.into_iter().collect(),
            Operator::Exists | Operator::DoesNotExist => Vec::new(),
        };
        Requirement {
            key,
            operator,
            values,
        }
    })
}

fn selector() -> impl Strategy<Value = Selector> {
    proptest::collection::vec(requirement(), 0..5).prop_map(Selector::from_requirements)
}

fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(key(), value(), 0..5)
}

/// Kubernetes' rules, written out case by case.
fn reference(sel: &Selector, labels: &BTreeMap<String, String>) -> bool {
    for r in sel.requirements() {
        let has = labels.contains_key(&r.key);
        let listed = labels.get(&r.key).is_some_and(|v| r.values.contains(v));
        let ok = match r.operator {
            Operator::Exists => has,
            Operator::DoesNotExist => !has,
            Operator::Equals | Operator::In => has && listed,
            Operator::NotEquals | Operator::NotIn => !has || !listed,
        };
        if !ok {
            return false;
        }
    }
    true
}

proptest! {
    #[test]
    fn parse_of_display_is_the_selector(sel in selector()) {
        let text = sel.to_string();
        let back = Selector::parse(&text);
        prop_assert_eq!(back.as_ref(), Ok(&sel), "{}", text);
    }

    #[test]
    fn matching_agrees_with_the_reference(sel in selector(), labels in label_map()) {
        prop_assert_eq!(sel.matches(Some(&labels)), reference(&sel, &labels));
        let get = |k: &str| labels.get(k).map(String::as_str);
        prop_assert_eq!(sel.matches_with(get), reference(&sel, &labels));
        prop_assert_eq!(sel.matches(None), reference(&sel, &BTreeMap::new()));
    }

    #[test]
    fn whatever_parses_renders_to_itself(text in "[a-z!=(), ]{0,24}") {
        if let Ok(sel) = Selector::parse(&text) {
            let again = Selector::parse(&sel.to_string());
            prop_assert_eq!(again.as_ref(), Ok(&sel), "{:?} -> {}", text, sel);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = Selector::parse(&text);
    }
}
