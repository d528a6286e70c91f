//! Label key and value validation with the API server's messages (Go's
//! `validation.IsQualifiedName` / `IsValidLabelValue`, 1.35+ wording).

const LABEL_NAME_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Go's `RegexError`: the message, examples and the regex (note the double spaces between
/// examples, which upstream prints too).
fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    let mut text = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            text.push_str(" or ");
        }
        text.push('\'');
        text.push_str(example);
        text.push_str("', ");
    }
    text.push_str("regex used for validation is '");
    text.push_str(regex);
    text.push_str("')");
    text
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} bytes")
}

fn is_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn matches_qualified_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_alphanumeric(first)
                && is_alphanumeric(last)
                && bytes
                    .iter()
                    .all(|&b| is_alphanumeric(b) || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` separated by dots, anchored.
fn matches_dns1123_subdomain(name: &str) -> bool {
    name.split('.').all(|label| {
        let bytes = label.as_bytes();
        let edge_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                edge_ok(first) && edge_ok(last) && bytes.iter().all(|b| edge_ok(b) || *b == b'-')
            }
            _ => false,
        }
    })
}

/// The problems with a label key (`[prefix/]name`), empty if it is valid.
pub(super) fn label_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LEN {
                    errors.push(format!(
                        "prefix part {}",
                        max_len_error(DNS1123_SUBDOMAIN_MAX_LEN)
                    ));
                }
                if !matches_dns1123_subdomain(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_ERR,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_NAME_MAX_LEN {
        errors.push(format!("name part {}", max_len_error(LABEL_NAME_MAX_LEN)));
    }
    if !matches_qualified_name(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// The problems with a label value, empty if it is valid (the empty value is valid).
pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_NAME_MAX_LEN {
        errors.push(max_len_error(LABEL_NAME_MAX_LEN));
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errors.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_keys_and_values_have_no_errors() {
        for key in [
            "app",
            "app.kubernetes.io/name",
            "a",
            "A-b_c.d",
            "example.com/x",
            &"k".repeat(63),
        ] {
            assert!(label_key_errors(key).is_empty(), "{key}");
        }
        for value in ["", "web", "v1.2_3-x", &"v".repeat(63)] {
            assert!(label_value_errors(value).is_empty(), "{value}");
        }
    }

    #[test]
    fn invalid_keys_are_explained() {
        assert_eq!(
            label_key_errors("*bar"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(label_key_errors("/x"), ["prefix part must be non-empty"]);
        assert_eq!(label_key_errors("Example.com/x").len(), 1);
        assert!(label_key_errors("a/b/c")[0].starts_with("a valid label key must consist"));
        assert_eq!(
            label_key_errors(&"k".repeat(64)),
            ["name part must be no more than 63 bytes"]
        );
        assert_eq!(
            label_key_errors("x/").len(),
            2,
            "empty name: non-empty and regex messages"
        );
    }

    #[test]
    fn invalid_values_are_explained() {
        assert_eq!(
            label_value_errors(&"v".repeat(64)),
            ["must be no more than 63 bytes"]
        );
        assert!(label_value_errors("-x")[0].starts_with("a valid label must be an empty string"));
        assert!(!label_value_errors("a b").is_empty());
    }
}
