//! Scenarios for the label selector: every operator, the grammar's edge cases, client-go's
//! error messages, and print-then-parse round trips (proptest).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse(text: &str) -> LabelSelector {
    text.parse()
        .unwrap_or_else(|err| panic!("{text:?} should parse: {err}"))
}

fn parse_err(text: &str) -> String {
    match text.parse::<LabelSelector>() {
        Ok(selector) => panic!("{text:?} should not parse, got {selector}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn every_operator_matches_as_client_go_does() {
    let web = labels(&[("app", "web"), ("tier", "frontend"), ("replicas", "3")]);
    let none = labels(&[]);
    // (selector, matches `web`, matches no labels)
    let cases = [
        ("app=web", true, false),
        ("app==web", true, false),
        ("app=api", false, false),
        ("app!=api", true, true),
        ("app!=web", false, true),
        ("app in (api,web)", true, false),
        ("app in (api)", false, false),
        ("app notin (api)", true, true),
        ("app notin (web,api)", false, true),
        ("app", true, false),
        ("!app", false, true),
        ("!missing", true, true),
        ("replicas>2", true, false),
        ("replicas>3", false, false),
        ("replicas<4", true, false),
        ("app>1", false, false),
        ("app=web,tier=frontend", true, false),
        ("app=web,tier=backend", false, false),
        ("", true, true),
    ];
    for (text, want_web, want_none) in cases {
        let selector = parse(text);
        assert_eq!(selector.matches(&web), want_web, "{text:?} against app=web");
        assert_eq!(
            selector.matches(&none),
            want_none,
            "{text:?} against no labels"
        );
    }
}

#[test]
fn canonical_form_sorts_keys_and_values_and_drops_spaces() {
    let cases = [
        ("  b = 1 , a in ( z , y ) ", "a in (y,z),b=1"),
        ("x notin (b,a,b)", "x notin (a,b)"),
        ("k==v", "k==v"),
        ("!k,j", "j,!k"),
        ("a=", "a="),
        ("a in ()", "a in ()"),
        ("a in (b,)", "a in (,b)"),
        ("a in (,b)", "a in (,b)"),
        ("a in (b,,c)", "a in (,b,c)"),
        ("a in (,)", "a in ()"),
        ("x in (in),in=notin", "in=notin,x in (in)"),
        ("n>5,n<10", "n>5,n<10"),
        ("example.com/role=db", "example.com/role=db"),
    ];
    for (input, canonical) in cases {
        let selector = parse(input);
        assert_eq!(selector.to_string(), canonical, "{input:?}");
        assert_eq!(
            parse(canonical),
            selector,
            "{canonical:?} must parse back to the same selector"
        );
    }
}

#[test]
fn malformed_selectors_name_the_offending_token() {
    let cases = [
        ("a=b,", "found '', expected: identifier after ','"),
        (
            ",a=b",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        ("a=b,,c", "found ',', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "a !b",
            "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "a in b",
            "unable to parse requirement: found 'b' expected: '('",
        ),
        (
            "a in",
            "unable to parse requirement: found '' expected: '('",
        ),
        (
            "a in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        (
            "a in (b c)",
            "unable to parse requirement: found 'c', expected: ',' or ')'",
        ),
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a in (b,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
        ),
        (
            "a=(b)",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "a==!b",
            "unable to parse requirement: found '!', expected: identifier",
        ),
        (
            "(a)",
            "found '(', expected: !, identifier, or 'end of string'",
        ),
        (
            "x>qa",
            "unable to parse requirement: values[0]: Invalid value: \"qa\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x<",
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(parse_err(input), message, "{input:?}");
    }
}

#[test]
fn invalid_keys_and_values_are_rejected_with_their_field_paths() {
    let err = parse_err("*bar=x");
    assert!(
        err.starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"*bar\": name part must consist of"
        ),
        "{err}"
    );
    let err = parse_err("app=demo-{x}");
    assert!(
        err.starts_with("unable to parse requirement: values[0][app]: Invalid value: \"demo-{x}\": a valid label must be"),
        "{err}"
    );
    let err = parse_err(&format!("k={}", "v".repeat(64)));
    assert!(err.ends_with("must be no more than 63 bytes"), "{err}");
}

#[test]
fn requirement_new_checks_the_number_of_values() {
    let none: [&str; 0] = [];
    let cases: [(Operator, &[&str], &str); 5] = [
        (
            Operator::In,
            &none,
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            Operator::Equals,
            &["a", "b"],
            r#"values: Invalid value: ["a","b"]: exact-match compatibility requires one single value"#,
        ),
        (
            Operator::Exists,
            &["a"],
            r#"values: Invalid value: ["a"]: values set must be empty for exists and does not exist"#,
        ),
        (
            Operator::GreaterThan,
            &["1", "2"],
            r#"values: Invalid value: ["1","2"]: for 'Gt', 'Lt' operators, exactly one value is required"#,
        ),
        (
            Operator::LessThan,
            &["x"],
            r#"values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer"#,
        ),
    ];
    for (operator, values, message) in cases {
        let err = Requirement::new("k", operator, values.iter().copied()).unwrap_err();
        assert_eq!(err.to_string(), message, "{operator:?} {values:?}");
    }
    let err = Requirement::new("*", Operator::In, Vec::<String>::new()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("[key: Invalid value: \"*\": name part"),
        "{err}"
    );
}

#[test]
fn metav1_selector_conversion_follows_label_selector_as_selector() {
    assert!(!LabelSelector::from_api(None).unwrap().matches(&labels(&[])));
    let empty = metav1::LabelSelector::default();
    assert!(
        LabelSelector::from_api(Some(&empty))
            .unwrap()
            .matches(&labels(&[("a", "b")]))
    );

    let api: metav1::LabelSelector = serde_json::from_str(
        r#"{"matchLabels":{"app":"web"},"matchExpressions":[
            {"key":"tier","operator":"In","values":["fe","be"]},
            {"key":"canary","operator":"DoesNotExist"},
            {"key":"zone","operator":"Exists"}]}"#,
    )
    .unwrap();
    let selector = LabelSelector::from_api(Some(&api)).unwrap();
    assert_eq!(selector.to_string(), "app=web,!canary,tier in (be,fe),zone");
    assert!(selector.matches(&labels(&[("app", "web"), ("tier", "fe"), ("zone", "a")])));
    assert!(!selector.matches(&labels(&[
        ("app", "web"),
        ("tier", "fe"),
        ("zone", "a"),
        ("canary", "1")
    ])));

    let bad_operator: metav1::LabelSelector =
        serde_json::from_str(r#"{"matchExpressions":[{"key":"a","operator":"Foo"}]}"#).unwrap();
    assert_eq!(
        LabelSelector::from_api(Some(&bad_operator))
            .unwrap_err()
            .to_string(),
        r#""Foo" is not a valid label selector operator"#
    );
    let no_values: metav1::LabelSelector =
        serde_json::from_str(r#"{"matchExpressions":[{"key":"a","operator":"In"}]}"#).unwrap();
    assert_eq!(
        LabelSelector::from_api(Some(&no_values))
            .unwrap_err()
            .to_string(),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
}

#[test]
fn from_set_and_exact_match_support_indexed_lookups() {
    let selector = LabelSelector::from_set(&labels(&[("b", "2"), ("a", "1")]));
    assert_eq!(selector.to_string(), "a=1,b=2");
    assert_eq!(selector.requires_exact_match("a"), Some("1"));
    assert_eq!(parse("a in (x)").requires_exact_match("a"), Some("x"));
    assert_eq!(parse("a in (x,y)").requires_exact_match("a"), None);
    assert_eq!(parse("a!=x").requires_exact_match("a"), None);
    assert_eq!(parse("").requires_exact_match("a"), None);
}

#[test]
fn nothing_and_everything_differ() {
    assert!(LabelSelector::everything().is_empty());
    assert!(!LabelSelector::nothing().is_empty());
    assert_eq!(LabelSelector::nothing().to_string(), "");
}

/// A valid label key: optional DNS prefix, then a qualified name (including `in`-like words).
fn key_strategy() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?",
        Just("in".to_owned()),
        Just("notin".to_owned()),
    ];
    let prefix = proptest::option::of("[a-z0-9]{1,6}(\\.[a-z0-9]{1,6}){0,2}");
    (prefix, name).prop_map(|(prefix, name)| match prefix {
        Some(prefix) => format!("{prefix}/{name}"),
        None => name,
    })
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,8}[a-zA-Z0-9])?",
        Just("in".to_owned()),
    ]
}

fn requirement_strategy() -> impl Strategy<Value = Requirement> {
    let operator = prop_oneof![
        Just(Operator::Equals),
        Just(Operator::DoubleEquals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
        Just(Operator::GreaterThan),
        Just(Operator::LessThan),
    ];
    (
        key_strategy(),
        operator,
        proptest::collection::vec(value_strategy(), 1..4),
        0i64..1000,
    )
        .prop_map(|(key, operator, values, number)| {
            let values = match operator {
                Operator::In | Operator::NotIn => values,
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::GreaterThan | Operator::LessThan => vec![number.to_string()],
                _ => vec![values[0].clone()],
            };
            Requirement::new(&key, operator, values).expect("strategy builds valid requirements")
        })
}

proptest! {
    #[test]
    fn printing_then_parsing_gives_the_same_selector(
        requirements in proptest::collection::vec(requirement_strategy(), 0..5)
    ) {
        let selector = LabelSelector::from_requirements(requirements);
        let printed = selector.to_string();
        let reparsed: LabelSelector = printed.parse().map_err(|err| {
            TestCaseError::fail(format!("{printed:?} did not parse: {err}"))
        })?;
        prop_assert_eq!(&reparsed, &selector);
        prop_assert_eq!(reparsed.to_string(), printed);
    }

    #[test]
    fn parsing_arbitrary_text_never_panics(text in "[a-z!=(), <>\\t.-/]{0,24}") {
        let _ = text.parse::<LabelSelector>();
    }

    #[test]
    fn parsed_selectors_agree_with_their_reprint_on_matching(
        requirements in proptest::collection::vec(requirement_strategy(), 1..4),
        label_values in proptest::collection::vec(value_strategy(), 0..4),
    ) {
        let selector = LabelSelector::from_requirements(requirements);
        let reparsed: LabelSelector = selector.to_string().parse().unwrap();
        let labels: BTreeMap<String, String> = selector
            .requirements()
            .iter()
            .zip(label_values)
            .map(|(req, value)| (req.key().to_owned(), value))
            .collect();
        prop_assert_eq!(selector.matches(&labels), reparsed.matches(&labels));
    }
}
