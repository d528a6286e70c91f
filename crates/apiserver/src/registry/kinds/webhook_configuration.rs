//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration`
//! (kube-apiserver's `pkg/registry/admissionregistration` and
//! `pkg/apis/admissionregistration/validation`): v1's defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds: 10`, a rule's `scope:
//! "*"`, a service's port 443, a mutating webhook's `reinvocationPolicy: Never`), the
//! validation of the fields that matter (names, rules, `sideEffects` and
//! `admissionReviewVersions` required, `clientConfig` with exactly one of `url` and
//! `service`), and the `Webhooks` column. The admission chain that calls them is
//! `registry/admission/`.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use crate::registry::defaults::{child, child_or_insert, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};
use crate::registry::webhook_client_config::{
    go_slice, go_strings, invalid, not_supported, required_because, review_version_causes, text,
    validate_client_config,
};
use crate::registry::workloads::required;

/// The strategy of both configuration kinds.
pub(crate) struct WebhookConfigurationStrategy {
    /// Whether its webhooks mutate (`reinvocationPolicy` belongs to them).
    mutating: bool,
}

/// `MutatingWebhookConfiguration`.
pub(crate) static MUTATING: WebhookConfigurationStrategy =
    WebhookConfigurationStrategy { mutating: true };
/// `ValidatingWebhookConfiguration`.
pub(crate) static VALIDATING: WebhookConfigurationStrategy =
    WebhookConfigurationStrategy { mutating: false };

impl Strategy for WebhookConfigurationStrategy {
    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        let Some(Value::Array(webhooks)) = object.get_mut("webhooks") else {
            return;
        };
        for webhook in webhooks.iter_mut().filter_map(Value::as_object_mut) {
            set(webhook, "failurePolicy", json!("Fail"));
            set(webhook, "matchPolicy", json!("Equivalent"));
            set(webhook, "namespaceSelector", json!({}));
            set(webhook, "objectSelector", json!({}));
            set(webhook, "timeoutSeconds", json!(10));
            if self.mutating {
                set(webhook, "reinvocationPolicy", json!("Never"));
            }
            if let Some(Value::Array(rules)) = webhook.get_mut("rules") {
                for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                    set(rule, "scope", json!("*"));
                }
            }
            if let Some(client) = child(webhook, "clientConfig")
                && client.get("service").is_some_and(Value::is_object)
            {
                set(child_or_insert(client, "service"), "port", json!(443));
            }
        }
    }

    fn validate(&self, object: &Value, _old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let Some(webhooks) = object.get("webhooks").and_then(Value::as_array) else {
            return;
        };
        let mut names = std::collections::HashSet::new();
        for (index, webhook) in webhooks.iter().enumerate() {
            let path = format!("webhooks[{index}]");
            validate_webhook(webhook, &path, self.mutating, causes);
            let name = text(webhook, "name");
            if !name.is_empty() && !names.insert(name) {
                causes.push(StatusCause::new(
                    "FieldValueDuplicate",
                    &format!("Duplicate value: {name:?}"),
                    &format!("{path}.name"),
                ));
            }
        }
    }

    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::WEBHOOK_CONFIGURATION)
    }
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Checks an optional string field against its supported values.
pub(crate) fn one_of(
    webhook: &Value,
    field: &str,
    path: &str,
    supported: &[&str],
    causes: &mut Vec<StatusCause>,
) {
    if let Some(value) = webhook.get(field).and_then(Value::as_str)
        && !supported.contains(&value)
    {
        causes.push(not_supported(&format!("{path}.{field}"), value, supported));
    }
}

/// A DNS-1123 subdomain (lower case alphanumerics, `-` and `.`, at most 253).
fn is_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            matches!((bytes.first(), bytes.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

fn validate_webhook(webhook: &Value, path: &str, mutating: bool, causes: &mut Vec<StatusCause>) {
    let name = text(webhook, "name");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        causes.push(required(&name_path));
    } else if !is_subdomain(name) {
        causes.push(invalid(
            &name_path,
            &format!("{name:?}"),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    } else if name.split('.').count() < 3 {
        causes.push(invalid(
            &name_path,
            &format!("{name:?}"),
            "should be a domain with at least three segments separated by dots",
        ));
    }
    if let Some(rules) = webhook.get("rules").and_then(Value::as_array) {
        for (index, rule) in rules.iter().enumerate() {
            validate_rule(rule, &format!("{path}.rules[{index}]"), causes);
        }
    }
    one_of(webhook, "failurePolicy", path, &["Fail", "Ignore"], causes);
    one_of(
        webhook,
        "matchPolicy",
        path,
        &["Equivalent", "Exact"],
        causes,
    );
    match webhook.get("sideEffects").and_then(Value::as_str) {
        None => causes.push(required_because(
            &format!("{path}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(_) => one_of(
            webhook,
            "sideEffects",
            path,
            &["None", "NoneOnDryRun"],
            causes,
        ),
    }
    if let Some(seconds) = webhook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&seconds)
    {
        causes.push(invalid(
            &format!("{path}.timeoutSeconds"),
            &seconds.to_string(),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    validate_selectors(webhook, path, causes);
    if mutating {
        one_of(
            webhook,
            "reinvocationPolicy",
            path,
            &["IfNeeded", "Never"],
            causes,
        );
    }
    validate_client_config(
        webhook.get("clientConfig"),
        &format!("{path}.clientConfig"),
        causes,
    );
    // kube-apiserver checks the review versions after the rest of the webhook.
    validate_review_versions(webhook, path, causes);
}

/// Checks the `namespaceSelector` and `objectSelector` beside a webhook's or policy's
/// rules.
pub(crate) fn validate_selectors(object: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(value) = object.get(selector).filter(|v| !v.is_null())
            && let Err(err) = crate::object::label_selector(Some(value))
        {
            causes.push(invalid(
                &format!("{path}.{selector}"),
                &value.to_string(),
                &err.to_string(),
            ));
        }
    }
}

fn validate_review_versions(webhook: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let field = format!("{path}.admissionReviewVersions");
    let versions = strings(webhook.get("admissionReviewVersions"));
    if versions.is_empty() {
        causes.push(required_because(&field, "must specify one of v1, v1beta1"));
        return;
    }
    review_version_causes(&versions, &field, causes);
}

/// Whether a list has `*` beside other entries.
fn wildcard_with_others(items: &[&str]) -> bool {
    items.len() > 1 && items.contains(&"*")
}

/// Checks one rule (a webhook's, or a policy's `resourceRules` and
/// `excludeResourceRules`).
pub(crate) fn validate_rule(rule: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        causes.push(required(&format!("{path}.operations")));
    }
    if wildcard_with_others(&operations) {
        causes.push(invalid(
            &format!("{path}.operations"),
            &go_slice("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (index, operation) in operations.iter().enumerate() {
        let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !supported.contains(operation) {
            causes.push(not_supported(
                &format!("{path}.operations[{index}]"),
                operation,
                &supported,
            ));
        }
    }
    let groups = strings(rule.get("apiGroups"));
    if groups.is_empty() {
        causes.push(required(&format!("{path}.apiGroups")));
    }
    if wildcard_with_others(&groups) {
        causes.push(invalid(
            &format!("{path}.apiGroups"),
            &go_strings(&groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule.get("apiVersions"));
    if versions.is_empty() {
        causes.push(required(&format!("{path}.apiVersions")));
    }
    if wildcard_with_others(&versions) {
        causes.push(invalid(
            &format!("{path}.apiVersions"),
            &go_strings(&versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (index, version) in versions.iter().enumerate() {
        if version.is_empty() {
            causes.push(required(&format!("{path}.apiVersions[{index}]")));
        }
    }
    validate_resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
        causes,
    );
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        causes.push(not_supported(
            &format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

fn validate_resources(resources: &[&str], path: &str, causes: &mut Vec<StatusCause>) {
    if resources.is_empty() {
        causes.push(required(path));
    }
    let mut with_wildcard_subresources = std::collections::HashSet::new();
    let mut subresources_with_wildcard = std::collections::HashSet::new();
    let (mut double_wildcard, mut single_wildcard, mut plain) = (false, false, false);
    for (index, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            causes.push(required(&format!("{path}[{index}]")));
            continue;
        }
        double_wildcard |= *entry == "*/*";
        single_wildcard |= *entry == "*";
        let Some((resource, sub)) = entry.split_once('/') else {
            plain = *entry != "*";
            continue;
        };
        if with_wildcard_subresources.contains(resource) {
            causes.push(invalid(
                &format!("{path}[{index}]"),
                &format!("{entry:?}"),
                &format!("if '{resource}/*' is present, must not specify {entry}"),
            ));
        }
        if subresources_with_wildcard.contains(sub) {
            causes.push(invalid(
                &format!("{path}[{index}]"),
                &format!("{entry:?}"),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            with_wildcard_subresources.insert(resource);
        }
        if resource == "*" {
            subresources_with_wildcard.insert(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        causes.push(invalid(
            path,
            &go_strings(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain {
        causes.push(invalid(
            path,
            &go_strings(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}
