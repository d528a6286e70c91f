//! The validation a webhook's client shares, for admission webhook configurations and a
//! CRD's conversion webhook (apiserver's `util/webhook` validation and the review-version
//! rules of both): a `clientConfig` with exactly one of an https `url` and a `service`,
//! a list of review versions; and the causes they are told with.

use kubeclient_machinery::StatusCause;
use serde_json::Value;

use crate::registry::names::dns1035_problem;

/// The string at `field`, `""` when absent.
pub(crate) fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Go's `%#v` of a `[]string`.
pub(crate) fn go_strings(items: &[&str]) -> String {
    go_slice("string", items)
}

/// Go's `%#v` of a slice of the string type `type_name`.
pub(crate) fn go_slice(type_name: &str, items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    format!("[]{type_name}{{{}}}", quoted.join(", "))
}

/// An `Invalid value` cause: `value` as Go prints it, and why.
pub(crate) fn invalid(field: &str, value: &str, detail: &str) -> StatusCause {
    StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {value}: {detail}"),
        field,
    )
}

/// A `Required value` cause with its detail.
pub(crate) fn required_because(field: &str, detail: &str) -> StatusCause {
    StatusCause::new(
        "FieldValueRequired",
        &format!("Required value: {detail}"),
        field,
    )
}

/// An `Unsupported value` cause, listing the supported values.
pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> StatusCause {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    StatusCause::new(
        "FieldValueNotSupported",
        &format!(
            "Unsupported value: {value:?}: supported values: {}",
            supported.join(", ")
        ),
        field,
    )
}

/// The rules of a non-empty list of review versions (a webhook's
/// `admissionReviewVersions`, a CRD's `conversionReviewVersions`), as upstream's: no
/// duplicates, each a DNS-1035 label, one of them `v1` or `v1beta1` (the versions
/// both reviews have).
pub(crate) fn review_version_causes(versions: &[&str], field: &str, causes: &mut Vec<StatusCause>) {
    let mut seen = std::collections::HashSet::new();
    for (index, version) in versions.iter().enumerate() {
        let at = format!("{field}[{index}]");
        if !seen.insert(*version) {
            causes.push(invalid(&at, &format!("{version:?}"), "duplicate version"));
            continue;
        }
        if let Some(problem) = dns1035_problem(version) {
            causes.push(invalid(&at, &format!("{version:?}"), &problem));
        }
    }
    if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
        causes.push(invalid(
            field,
            &go_strings(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// The rules of a webhook's `clientConfig` at `path` (admission webhooks, and a CRD's
/// conversion webhook): exactly one of `url` (https, a host, no user, query or
/// fragment) and `service` (name, namespace, a valid port and path).
pub(crate) fn validate_client_config(
    client: Option<&Value>,
    path: &str,
    causes: &mut Vec<StatusCause>,
) {
    let client = client.cloned().unwrap_or(Value::Null);
    let url = client.get("url").and_then(Value::as_str);
    let service = client.get("service").filter(|s| s.is_object());
    match (url, service) {
        (Some(url), None) => validate_url(url, &format!("{path}.url"), causes),
        (None, Some(service)) => validate_service(service, &format!("{path}.service"), causes),
        _ => causes.push(required_because(
            path,
            "exactly one of url or service is required",
        )),
    }
}

fn validate_url(url: &str, path: &str, causes: &mut Vec<StatusCause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        causes.push(invalid(
            path,
            &format!("{scheme:?}"),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if host.is_empty() {
        causes.push(invalid(
            path,
            "\"\"",
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        causes.push(invalid(
            path,
            &format!("{user:?}"),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        causes.push(invalid(
            path,
            &format!("{fragment:?}"),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        causes.push(invalid(
            path,
            &format!("{query:?}"),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_service(service: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    if text(service, "name").is_empty() {
        causes.push(required_because(
            &format!("{path}.name"),
            "service name is required",
        ));
    }
    if text(service, "namespace").is_empty() {
        causes.push(required_because(
            &format!("{path}.namespace"),
            "service namespace is required",
        ));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        causes.push(invalid(
            &format!("{path}.port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let url_path = text(service, "path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    let field = format!("{path}.path");
    if !url_path.starts_with('/') {
        causes.push(invalid(
            &field,
            &format!("{url_path:?}"),
            "must start with a '/'",
        ));
    }
    let trimmed = url_path.strip_prefix('/').unwrap_or(url_path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (index, segment) in trimmed.split('/').enumerate() {
        if segment.is_empty() {
            causes.push(invalid(
                &field,
                &format!("{url_path:?}"),
                &format!("segment[{index}] may not be empty"),
            ));
        }
    }
}
