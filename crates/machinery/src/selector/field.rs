//! [`FieldSelector`]: the `fieldSelector` grammar of Go's `k8s.io/apimachinery/pkg/fields`,
//! and the fields each built-in resource can be selected by.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::SelectorError;

/// `=` (also written `==`) or `!=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// The field has this value (a missing field has the value `""`).
    Equals,
    /// The field does not have this value.
    NotEquals,
}

/// One `field=value` or `field!=value` term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldTerm {
    /// The field path, e.g. `spec.nodeName`.
    pub field: String,
    /// `=` or `!=`.
    pub operator: FieldOperator,
    /// The value, unescaped.
    pub value: String,
}

/// Where a field selector reads field values from.
///
/// Implemented for a map of field values (Go's `fields.Set`) and for [`JsonFields`], which
/// reads a JSON object through a table of [`FieldSpec`]s; implement it for your own types
/// to select them by computed fields.
pub trait FieldLookup {
    /// The value of `field`, or `None` when the object has no such field (which selectors
    /// treat as `""`).
    fn field_value(&self, field: &str) -> Option<Cow<'_, str>>;
}

impl FieldLookup for BTreeMap<String, String> {
    fn field_value(&self, field: &str) -> Option<Cow<'_, str>> {
        self.get(field).map(|value| Cow::Borrowed(value.as_str()))
    }
}

/// A selectable field of a built-in resource: its selector name, where it lives in the
/// object's JSON, and the value it has when absent (Go computes some from zero values,
/// e.g. `spec.hostNetwork` is `"false"` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The name used in selectors, e.g. `spec.nodeName`.
    pub name: &'static str,
    /// The dotted JSON path it reads, e.g. `source.component` for Event's `source`.
    pub path: &'static str,
    /// The value when the path is absent.
    pub default: &'static str,
}

const fn field(name: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        path: name,
        default: "",
    }
}

const fn field_at(name: &'static str, path: &'static str, default: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        path,
        default,
    }
}

const METADATA_FIELDS: &[FieldSpec] = &[field("metadata.name"), field("metadata.namespace")];

const POD_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field("metadata.namespace"),
    field("spec.nodeName"),
    field("spec.restartPolicy"),
    field("spec.schedulerName"),
    field("spec.serviceAccountName"),
    field_at("spec.hostNetwork", "spec.hostNetwork", "false"),
    field("status.phase"),
    field("status.podIP"),
    field_at("status.podIPs", "status.podIP", ""),
    field("status.nominatedNodeName"),
];

const EVENT_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field("metadata.namespace"),
    field("involvedObject.kind"),
    field("involvedObject.namespace"),
    field("involvedObject.name"),
    field("involvedObject.uid"),
    field("involvedObject.apiVersion"),
    field("involvedObject.resourceVersion"),
    field("involvedObject.fieldPath"),
    field("reason"),
    field_at("reportingComponent", "reportingComponent", ""),
    field_at("source", "source.component", ""),
    field("type"),
];

const SECRET_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field("metadata.namespace"),
    field("type"),
];

const NAMESPACE_FIELDS: &[FieldSpec] = &[field("metadata.name"), field("status.phase")];

const NODE_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field_at("spec.unschedulable", "spec.unschedulable", "false"),
];

const SERVICE_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field("metadata.namespace"),
    field("spec.clusterIP"),
    field("spec.type"),
];

const REPLICATION_CONTROLLER_FIELDS: &[FieldSpec] = &[
    field("metadata.name"),
    field("metadata.namespace"),
    field_at("status.replicas", "status.replicas", "0"),
];

/// The fields a built-in resource supports in field selectors (apiserver-semantics §4.4):
/// `metadata.name` and `metadata.namespace` everywhere, plus the extra fields of Pods,
/// Events, Secrets, Namespaces, Nodes, Services and ReplicationControllers (core group).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::selector::builtin_field_selectors;
/// let pod_fields = builtin_field_selectors("", "Pod");
/// assert!(pod_fields.iter().any(|f| f.name == "spec.nodeName"));
/// assert_eq!(builtin_field_selectors("apps", "Deployment").len(), 2);
/// ```
#[must_use]
pub fn builtin_field_selectors(group: &str, kind: &str) -> &'static [FieldSpec] {
    match (group, kind) {
        ("", "Pod") => POD_FIELDS,
        ("", "Event") => EVENT_FIELDS,
        ("", "Secret") => SECRET_FIELDS,
        ("", "Namespace") => NAMESPACE_FIELDS,
        ("", "Node") => NODE_FIELDS,
        ("", "Service") => SERVICE_FIELDS,
        ("", "ReplicationController") => REPLICATION_CONTROLLER_FIELDS,
        _ => METADATA_FIELDS,
    }
}

/// Reads selectable fields from an object's JSON through a table of [`FieldSpec`]s.
/// Strings are taken as they are, numbers and booleans printed, anything else (and an
/// absent path) gives the spec's default.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::selector::{builtin_field_selectors, JsonFields};
/// use kubeclient_machinery::FieldSelector;
///
/// let pod = serde_json::json!({"metadata": {"name": "web-0"}, "spec": {"nodeName": "n1"}});
/// let fields = JsonFields::new(&pod, builtin_field_selectors("", "Pod"));
/// let selector: FieldSelector = "spec.nodeName=n1,spec.hostNetwork=false".parse().unwrap();
/// assert!(selector.matches(&fields));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct JsonFields<'a> {
    object: &'a serde_json::Value,
    specs: &'static [FieldSpec],
}

impl<'a> JsonFields<'a> {
    /// Field values of `object` as described by `specs`.
    #[must_use]
    pub fn new(object: &'a serde_json::Value, specs: &'static [FieldSpec]) -> Self {
        JsonFields { object, specs }
    }
}

impl FieldLookup for JsonFields<'_> {
    fn field_value(&self, field: &str) -> Option<Cow<'_, str>> {
        let spec = self.specs.iter().find(|spec| spec.name == field)?;
        let mut value = self.object;
        for segment in spec.path.split('.') {
            match value.get(segment) {
                Some(inner) => value = inner,
                None => return Some(Cow::Borrowed(spec.default)),
            }
        }
        Some(match value {
            serde_json::Value::String(text) => Cow::Borrowed(text.as_str()),
            serde_json::Value::Bool(flag) => Cow::Owned(flag.to_string()),
            serde_json::Value::Number(number) => Cow::Owned(number.to_string()),
            _ => Cow::Borrowed(spec.default),
        })
    }
}

/// A field selector: `field=value` / `field!=value` terms that must all hold (Go's
/// `fields.Selector`).
///
/// Values may escape `,`, `=` and `\` with a backslash. Terms are kept sorted by their
/// text, and the selector prints in that canonical form (`==` prints as `=`). A missing
/// field has the value `""`.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use kubeclient_machinery::FieldSelector;
///
/// let selector: FieldSelector = r"status.phase!=Failed,metadata.name==a\,b".parse().unwrap();
/// assert_eq!(selector.to_string(), r"metadata.name=a\,b,status.phase!=Failed");
///
/// let fields = BTreeMap::from([("metadata.name".to_string(), "a,b".to_string())]);
/// assert!(selector.matches(&fields));
///
/// let err = "metadata.name".parse::<FieldSelector>().unwrap_err();
/// assert_eq!(err.to_string(), "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// The selector that matches everything.
    #[must_use]
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// A selector of one `field=value` term.
    #[must_use]
    pub fn equals(field: &str, value: &str) -> Self {
        FieldSelector {
            terms: vec![FieldTerm {
                field: field.to_owned(),
                operator: FieldOperator::Equals,
                value: value.to_owned(),
            }],
        }
    }

    /// A selector of these terms, all of which must hold.
    #[must_use]
    pub fn from_terms(terms: Vec<FieldTerm>) -> Self {
        FieldSelector { terms }
    }

    /// The terms.
    #[must_use]
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// Whether there are no terms (matches everything).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the object's fields satisfy every term.
    #[must_use]
    pub fn matches(&self, fields: &dyn FieldLookup) -> bool {
        self.terms.iter().all(|term| {
            let actual = fields.field_value(&term.field);
            let actual = actual.as_deref().unwrap_or("");
            match term.operator {
                FieldOperator::Equals => actual == term.value,
                FieldOperator::NotEquals => actual != term.value,
            }
        })
    }

    /// The value `field` must equal, if a term pins it (`field=value`).
    #[must_use]
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|term| term.field == field && term.operator == FieldOperator::Equals)
            .map(|term| term.value.as_str())
    }

    /// Checks every term's field against the resource's supported fields.
    ///
    /// # Errors
    ///
    /// [`SelectorError::UnsupportedField`] for the first unsupported field
    /// (`field label not supported: spec.foo`).
    pub fn check_supported(&self, supported: &[FieldSpec]) -> Result<(), SelectorError> {
        match self
            .terms
            .iter()
            .find(|term| !supported.iter().any(|spec| spec.name == term.field))
        {
            Some(term) => Err(SelectorError::UnsupportedField(term.field.clone())),
            None => Ok(()),
        }
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    /// Parses like Go's `fields.ParseSelector`: split on unescaped commas, sort the raw
    /// terms, skip empty ones, then split each at its first `!=`, `==` or `=`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut raw_terms = split_terms(text);
        raw_terms.sort_unstable();
        let mut terms = Vec::with_capacity(raw_terms.len());
        for raw in raw_terms {
            if raw.is_empty() {
                continue;
            }
            let Some((field, operator, value)) = split_term(raw) else {
                return Err(SelectorError::Syntax(format!(
                    "invalid selector: '{text}'; can't understand '{raw}'"
                )));
            };
            let value = unescape_value(value)?;
            // Go turns a term with an empty field and value (the selector "=") into "everything".
            if field.is_empty() && value.is_empty() {
                continue;
            }
            terms.push(FieldTerm {
                field: field.to_owned(),
                operator,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let operator = match term.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{operator}{}", term.field, escape_value(&term.value))?;
        }
        Ok(())
    }
}

/// Splits on commas not preceded by a backslash; backslashes are kept.
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, ch) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == ',' {
            terms.push(&text[start..i]);
            start = i + 1;
        }
    }
    terms.push(&text[start..]);
    terms
}

/// Splits a term at the first position where `!=`, `==` or `=` starts (tried in that
/// order at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(value) = rest.strip_prefix("!=") {
            return Some((&term[..i], FieldOperator::NotEquals, value));
        }
        if let Some(value) = rest.strip_prefix("==") {
            return Some((&term[..i], FieldOperator::Equals, value));
        }
        if let Some(value) = rest.strip_prefix('=') {
            return Some((&term[..i], FieldOperator::Equals, value));
        }
    }
    None
}

fn escape_value(value: &str) -> Cow<'_, str> {
    if !value.contains(['\\', ',', '=']) {
        return Cow::Borrowed(value);
    }
    let mut escaped = String::with_capacity(value.len() + 4);
    for ch in value.chars() {
        if matches!(ch, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(ch);
    }
    Cow::Owned(escaped)
}

fn unescape_value(value: &str) -> Result<String, SelectorError> {
    if !value.contains(['\\', ',', '=']) {
        return Ok(value.to_owned());
    }
    let mut unescaped = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some(next @ ('\\' | ',' | '=')) => unescaped.push(next),
                Some(other) => {
                    return Err(SelectorError::Syntax(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
                None => {
                    return Err(SelectorError::Syntax(
                        "invalid field selector: invalid escape sequence: \\".to_owned(),
                    ));
                }
            },
            ',' | '=' => {
                // Go prints the rune as its number here (`61` for `=`).
                return Err(SelectorError::Syntax(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(ch)
                )));
            }
            other => unescaped.push(other),
        }
    }
    Ok(unescaped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_operator_matches_with_missing_fields_as_empty() {
        let pod = fields(&[("metadata.name", "web-0"), ("spec.nodeName", "n1")]);
        let cases = [
            ("metadata.name=web-0", true),
            ("metadata.name==web-0", true),
            ("metadata.name!=web-0", false),
            ("metadata.name!=web-1", true),
            ("spec.nodeName=n1,metadata.name=web-0", true),
            ("spec.nodeName=n1,metadata.name=web-1", false),
            ("status.phase=", true),
            ("status.phase!=", false),
            ("status.phase!=Running", true),
            ("", true),
            ("=", true),
        ];
        for (text, want) in cases {
            let selector: FieldSelector = text.parse().unwrap();
            assert_eq!(selector.matches(&pod), want, "{text:?}");
        }
    }

    #[test]
    fn canonical_form_sorts_raw_terms_and_normalises_double_equals() {
        let cases = [
            ("b=2,a==1", "a=1,b=2"),
            (",,a=1,", "a=1"),
            (r"a=x\=y\\z", r"a=x\=y\\z"),
            ("a!=", "a!="),
        ];
        for (input, canonical) in cases {
            let selector: FieldSelector = input.parse().unwrap();
            assert_eq!(selector.to_string(), canonical, "{input:?}");
            assert_eq!(canonical.parse::<FieldSelector>().unwrap(), selector);
        }
    }

    #[test]
    fn terms_split_at_the_first_operator() {
        let selector: FieldSelector = "a!b=c".parse().unwrap();
        assert_eq!(selector.terms()[0].field, "a!b");
        let selector: FieldSelector = "a = b".parse().unwrap();
        assert_eq!(
            (
                selector.terms()[0].field.as_str(),
                selector.terms()[0].value.as_str()
            ),
            ("a ", " b")
        );
    }

    #[test]
    fn malformed_selectors_name_the_offending_term() {
        let cases = [
            ("a=1,b", "invalid selector: 'a=1,b'; can't understand 'b'"),
            (
                "a===b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "a=!=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                r"a=x\n",
                r"invalid field selector: invalid escape sequence: \n",
            ),
            (
                r"a=x\",
                r"invalid field selector: invalid escape sequence: \",
            ),
        ];
        for (input, message) in cases {
            assert_eq!(
                input.parse::<FieldSelector>().unwrap_err().to_string(),
                message,
                "{input:?}"
            );
        }
    }

    #[test]
    fn json_fields_read_paths_with_defaults() {
        let pod = serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "hostNetwork": true},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        });
        let lookup = JsonFields::new(&pod, builtin_field_selectors("", "Pod"));
        let selector: FieldSelector =
            "spec.hostNetwork=true,status.podIPs=10.0.0.1,spec.restartPolicy="
                .parse()
                .unwrap();
        assert!(selector.matches(&lookup));
        let event =
            serde_json::json!({"metadata": {"name": "e"}, "source": {"component": "kubelet"}});
        let lookup = JsonFields::new(&event, builtin_field_selectors("", "Event"));
        assert!(
            "source=kubelet"
                .parse::<FieldSelector>()
                .unwrap()
                .matches(&lookup)
        );
        let node = serde_json::json!({"metadata": {"name": "n"}});
        let lookup = JsonFields::new(&node, builtin_field_selectors("", "Node"));
        assert!(
            "spec.unschedulable=false"
                .parse::<FieldSelector>()
                .unwrap()
                .matches(&lookup)
        );
    }

    #[test]
    fn unsupported_fields_are_reported() {
        let selector: FieldSelector = "metadata.name=a,spec.foo=b".parse().unwrap();
        let err = selector
            .check_supported(builtin_field_selectors("apps", "Deployment"))
            .unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.foo");
        let pods: FieldSelector = "spec.nodeName=n1".parse().unwrap();
        assert!(
            pods.check_supported(builtin_field_selectors("", "Pod"))
                .is_ok()
        );
    }

    proptest! {
        #[test]
        fn printing_then_parsing_gives_the_same_selector(
            terms in proptest::collection::vec(("[a-z]{1,4}(\\.[a-zA-Z]{1,6})?", any::<bool>(), "[a-z0-9,=\\\\ ]{0,6}"), 0..4)
        ) {
            let mut selector = FieldSelector {
                terms: terms.into_iter().map(|(field, not, value)| FieldTerm {
                    field,
                    operator: if not { FieldOperator::NotEquals } else { FieldOperator::Equals },
                    value,
                }).collect(),
            };
            // Canonical order is the order of the printed terms.
            selector.terms.sort_by_key(|term| FieldSelector { terms: vec![term.clone()] }.to_string());
            let printed = selector.to_string();
            let reparsed: FieldSelector = printed.parse().map_err(|err| TestCaseError::fail(format!("{printed:?}: {err}")))?;
            prop_assert_eq!(reparsed, selector);
        }

        #[test]
        fn parsing_arbitrary_text_never_panics(text in "[a-z!=,\\\\é.]{0,16}") {
            let _ = text.parse::<FieldSelector>();
        }
    }
}
