//! What apiextensions-apiserver's validation refuses in a CustomResourceDefinition
//! before it is served, with its messages (`ValidateCustomResourceDefinition`):
//!
//! - the group must be a domain with at least one dot, so that no CRD can claim a
//!   built-in group such as `batch` or the core group;
//! - a group under `k8s.io` or `kubernetes.io` is protected: it needs the
//!   `api-approved.kubernetes.io` annotation (a URL, or a reason starting with
//!   `unapproved`), see <https://github.com/kubernetes/enhancements/pull/1111>;
//! - versions: unique names, each a DNS-1035 label, and exactly one storage version;
//! - `spec.conversion`: the strategy `None` or `Webhook`, a webhook's `clientConfig`
//!   and `conversionReviewVersions` with `Webhook` only;
//! - every schema `pattern` compiles (RE2 syntax), within a per-version budget
//!   (`schema_patterns.rs`);
//! - every `x-kubernetes-validations` rule compiles, within the cost limit
//!   (`cel_rules.rs`).
//!
//! Even an approved CRD never shadows a built-in resource: the registry serves built-ins
//! first ([`Registry::register`](crate::registry::Registry::register)).

use kubeclient_machinery::StatusCause;
use serde_json::Value;

use crate::registry::names::dns1035_problem;
use crate::registry::webhook_client_config;

/// The annotation a CRD of a protected group must carry.
pub(crate) const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Where the approval policy is explained, as kube-apiserver cites it.
const APPROVAL_POLICY: &str = "https://github.com/kubernetes/enhancements/pull/1111";

/// Every rule `crd` breaks; `old` is the stored CRD on an update (an approval state that
/// did not change is never an error then, as upstream).
pub(crate) fn validate(crd: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let spec = crd.get("spec").unwrap_or(&Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    if !group.is_empty() && !group.contains('.') {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {group:?}: should be a domain with at least one dot"),
            "spec.group",
        ));
    }
    if is_protected_group(group) {
        let state = approval_state(crd);
        let unchanged = old.is_some_and(|old| approval_state(old) == state);
        if !unchanged {
            approval_causes(&state, &mut causes);
        }
    }
    version_causes(spec, &mut causes);
    conversion_causes(spec, &mut causes);
    causes.extend(super::schema_patterns::causes(spec));
    causes.extend(super::cel_rules::causes(spec));
    causes
}

/// Whether a group belongs to the Kubernetes community (`*.k8s.io`, `*.kubernetes.io`).
fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")))
}

/// A CRD's `api-approved.kubernetes.io` annotation, judged.
#[derive(Debug, PartialEq, Eq)]
enum Approval {
    /// No annotation.
    Missing,
    /// Neither a URL nor an `unapproved...` reason; holds the value.
    Invalid(String),
    /// A URL (approved) or a reason starting with `unapproved` (deliberately bypassed).
    Given,
}

fn approval_state(crd: &Value) -> Approval {
    match crd
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
    {
        None => Approval::Missing,
        Some(value) if value.starts_with("unapproved") || is_request_uri(value) => Approval::Given,
        Some(value) => Approval::Invalid(value.to_owned()),
    }
}

fn approval_causes(state: &Approval, causes: &mut Vec<StatusCause>) {
    let field = format!("metadata.annotations[{API_APPROVED_ANNOTATION}]");
    match state {
        Approval::Given => {}
        Approval::Missing => causes.push(StatusCause::new(
            "FieldValueRequired",
            &format!(
                "Required value: protected groups must have approval annotation {API_APPROVED_ANNOTATION:?}, see {APPROVAL_POLICY}"
            ),
            &field,
        )),
        Approval::Invalid(value) => causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: {value:?}: protected groups must have approval annotation {API_APPROVED_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see {APPROVAL_POLICY}"
            ),
            &field,
        )),
    }
}

/// Whether Go's `url.ParseRequestURI` accepts `text`: an absolute path, or a scheme
/// followed by something, without spaces or control characters.
fn is_request_uri(text: &str) -> bool {
    if text.is_empty() || text.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if text.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
}

/// The version rules: DNS-1035 names, unique, exactly one storage version.
fn version_causes(spec: &Value, causes: &mut Vec<StatusCause>) {
    let Some(versions) = spec.get("versions").and_then(Value::as_array) else {
        return;
    };
    let mut names = Vec::with_capacity(versions.len());
    let mut storage = 0usize;
    for (index, version) in versions.iter().enumerate() {
        let name = version.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty()
            && let Some(problem) = dns1035_problem(name)
        {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!("Invalid value: {name:?}: {problem}"),
                &format!("spec.versions[{index}].name"),
            ));
        }
        if version.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        names.push(name);
    }
    // kube-apiserver prints its internal version structs here (Go's `%#v`), which
    // have no wire form; the names are what tells the versions apart.
    let listed = serde_json::to_string(&names).unwrap_or_default();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != names.len() {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {listed}: must contain unique version names"),
            "spec.versions",
        ));
    }
    if storage != 1 {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: {listed}: must have exactly one version marked as storage version"
            ),
            "spec.versions",
        ));
    }
}

/// The rules of `spec.conversion` (upstream's `validateCustomResourceConversion`, its
/// fields named as in the internal version upstream validates): the strategy `None` or
/// `Webhook`; `Webhook` needs a valid `clientConfig` and `conversionReviewVersions` of
/// which this server speaks one, `None` may set neither.
fn conversion_causes(spec: &Value, causes: &mut Vec<StatusCause>) {
    let Some(conversion) = spec.get("conversion").filter(|c| !c.is_null()) else {
        return;
    };
    const CLIENT_CONFIG: &str = "spec.conversion.webhookClientConfig";
    const REVIEW_VERSIONS: &str = "spec.conversion.conversionReviewVersions";
    let strategy = conversion
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("");
    match strategy {
        "" => causes.push(StatusCause::new(
            "FieldValueRequired",
            "Required value",
            "spec.conversion.strategy",
        )),
        "None" | "Webhook" => {}
        other => causes.push(webhook_client_config::not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions: Vec<&str> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if strategy == "Webhook" {
        match client {
            None => causes.push(StatusCause::new(
                "FieldValueRequired",
                "Required value: required when strategy is set to Webhook",
                CLIENT_CONFIG,
            )),
            Some(client) => {
                webhook_client_config::validate_client_config(Some(client), CLIENT_CONFIG, causes);
            }
        }
        if versions.is_empty() {
            causes.push(StatusCause::new(
                "FieldValueRequired",
                "Required value",
                REVIEW_VERSIONS,
            ));
        } else {
            webhook_client_config::review_version_causes(&versions, REVIEW_VERSIONS, causes);
        }
        return;
    }
    let forbidden = |field: &str| {
        StatusCause::new(
            "FieldValueForbidden",
            "Forbidden: should not be set when strategy is not set to Webhook",
            field,
        )
    };
    if client.is_some() {
        causes.push(forbidden(CLIENT_CONFIG));
    }
    if !versions.is_empty() {
        causes.push(forbidden(REVIEW_VERSIONS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(group: &str, annotations: Value, versions: Value) -> Value {
        json!({
            "metadata": {"name": format!("things.{group}"), "annotations": annotations},
            "spec": {"group": group, "names": {"plural": "things", "kind": "Thing"}, "versions": versions},
        })
    }

    fn one_version() -> Value {
        json!([{"name": "v1", "served": true, "storage": true}])
    }

    fn fields(causes: &[StatusCause]) -> Vec<&str> {
        causes.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn a_group_without_a_dot_is_refused() {
        let causes = validate(&crd("batch", json!({}), one_version()), None);
        assert_eq!(fields(&causes), ["spec.group"]);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"batch\": should be a domain with at least one dot"
        );
    }

    #[test]
    fn protected_groups_need_a_url_or_an_unapproved_reason() {
        let missing = validate(&crd("coordination.k8s.io", json!({}), one_version()), None);
        assert_eq!(missing[0].reason, "FieldValueRequired");
        let bad = validate(
            &crd(
                "x.kubernetes.io",
                json!({API_APPROVED_ANNOTATION: "not a url"}),
                one_version(),
            ),
            None,
        );
        assert_eq!(bad[0].reason, "FieldValueInvalid");
        for fine in [
            "https://github.com/kubernetes/kubernetes/pull/1",
            "unapproved, testing",
        ] {
            let object = crd(
                "x.k8s.io",
                json!({API_APPROVED_ANNOTATION: fine}),
                one_version(),
            );
            assert!(validate(&object, None).is_empty(), "{fine}");
        }
        let old = crd("x.k8s.io", json!({}), one_version());
        assert!(
            validate(&old, Some(&old)).is_empty(),
            "an unchanged state is not an error on update"
        );
        assert!(validate(&crd("k8s.io.example.com", json!({}), one_version()), None).is_empty());
    }

    #[test]
    fn versions_must_be_unique_dns_labels_with_one_storage_version() {
        let duplicate = json!([{"name": "v1", "storage": true}, {"name": "v1", "storage": false}]);
        let causes = validate(&crd("example.com", json!({}), duplicate), None);
        assert!(
            causes[0]
                .message
                .ends_with("must contain unique version names")
        );
        let two = json!([{"name": "v1", "storage": true}, {"name": "v2", "storage": true}]);
        let causes = validate(&crd("example.com", json!({}), two), None);
        assert!(
            causes[0]
                .message
                .ends_with("must have exactly one version marked as storage version")
        );
        let none = json!([{"name": "v1", "storage": false}]);
        assert_eq!(
            fields(&validate(&crd("example.com", json!({}), none), None)),
            ["spec.versions"]
        );
        let bad_name = json!([{"name": "V_1", "storage": true}]);
        let causes = validate(&crd("example.com", json!({}), bad_name), None);
        assert_eq!(fields(&causes), ["spec.versions[0].name"]);
        assert!(
            causes[0]
                .message
                .starts_with("Invalid value: \"V_1\": a DNS-1035 label")
        );
    }
}
