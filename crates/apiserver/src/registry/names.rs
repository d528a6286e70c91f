//! The shapes of Kubernetes names and label parts, with upstream's messages
//! (`k8s.io/apimachinery/pkg/util/validation`): qualified names (label and annotation
//! keys), label values, DNS-1035 labels. Shared by object validation (`validate.rs`), CRD
//! validation and the CEL format library; imports nothing of the crate.

/// The DNS-1035 label rule, in kube-apiserver's words.
pub(crate) const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Why `name` is not a DNS-1035 label (apimachinery's `IsDNS1035Label`: CRD version
/// names, review versions), if it is not.
pub(crate) fn dns1035_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".to_owned());
    }
    let bytes = name.as_bytes();
    let starts = bytes.first().is_some_and(u8::is_ascii_lowercase);
    let ends = bytes
        .last()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let inner = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    (!(starts && ends && inner)).then(|| DNS1035_MESSAGE.to_owned())
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the name part of a qualified name and a
/// non-empty label value.
fn is_qualified_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Why a label or annotation key is not a qualified name (upstream's `IsQualifiedName`
/// messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QualifiedNameError {
    /// `/name`.
    #[error("prefix part must be non-empty")]
    EmptyPrefix,
    /// A prefix that is not a DNS-1123 subdomain.
    #[error(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )]
    PrefixNotSubdomain,
    /// More than one `/`.
    #[error(
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )]
    Shape,
    /// `prefix/`.
    #[error("name part must be non-empty")]
    EmptyName,
    /// A name part over 63 characters.
    #[error("name part must be no more than 63 characters")]
    NameTooLong,
    /// A name part with characters outside the alphabet, or not starting and ending
    /// with an alphanumeric one.
    #[error(
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )]
    MalformedName,
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain, the name at
/// most 63 characters (upstream's `IsQualifiedName`, with its messages).
pub(crate) fn qualified_name(key: &str) -> Result<(), QualifiedNameError> {
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Err(QualifiedNameError::EmptyPrefix);
            }
            let subdomain = prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    let bytes = label.as_bytes();
                    matches!((bytes.first(), bytes.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
                        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                });
            if !subdomain {
                return Err(QualifiedNameError::PrefixNotSubdomain);
            }
            *name
        }
        _ => return Err(QualifiedNameError::Shape),
    };
    if name.is_empty() {
        return Err(QualifiedNameError::EmptyName);
    }
    if name.len() > 63 {
        return Err(QualifiedNameError::NameTooLong);
    }
    if !is_qualified_name_part(name) {
        return Err(QualifiedNameError::MalformedName);
    }
    Ok(())
}

/// Why a label value is invalid (upstream's `IsValidLabelValue` messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LabelValueError {
    /// Over 63 characters.
    #[error("must be no more than 63 characters")]
    TooLong,
    /// Characters outside the alphabet, or not starting and ending with an alphanumeric
    /// one.
    #[error(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )]
    Malformed,
}

/// A label value: empty, or at most 63 characters of the qualified-name alphabet.
pub(crate) fn label_value(value: &str) -> Result<(), LabelValueError> {
    if value.len() > 63 {
        return Err(LabelValueError::TooLong);
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(LabelValueError::Malformed);
    }
    Ok(())
}
