//! Whether a webhook or a validating admission policy is called for a write
//! (kube-apiserver's `ShouldCallHook` and the policies' `matching.Matcher`: the rules with
//! their operations, groups, versions, resources, resource names and scope, the excluded
//! rules, and `matchPolicy`; then the `namespaceSelector` and the `objectSelector`).

use std::sync::Arc;

use kubeclient_machinery::{GroupResource, Status};

use super::attributes::{Attributes, Operation};
use super::match_resources::{MatchResources, Rule};
use super::webhook::{GROUP, Webhook};
use crate::registry::{Registry, ResourceDef};
use crate::storage::Store;

/// One entry of a rule's list: `*` or the value itself.
fn listed(items: &[String], value: &str) -> bool {
    items.iter().any(|item| item == "*" || item == value)
}

/// `pods/status` -> (`pods`, `status`); `pods` -> (`pods`, ``).
fn split_resource(resource: &str) -> (&str, &str) {
    resource.split_once('/').unwrap_or((resource, ""))
}

/// Whether `rule` names the write (kube-apiserver's `rules.Matcher`).
fn rule_matches(rule: &Rule, attributes: &Attributes<'_>) -> bool {
    let resource = attributes.resource;
    let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
    let scope = match rule.scope.as_str() {
        "Cluster" => attributes.namespace.is_empty() || is_namespace,
        "Namespaced" => !is_namespace && !attributes.namespace.is_empty(),
        _ => true,
    };
    let operation = listed(&rule.operations, attributes.operation.as_str());
    let resources = rule.resources.iter().any(|entry| {
        let (name, sub) = split_resource(entry);
        (name == "*" || name == resource.plural) && (sub == "*" || sub == attributes.subresource)
    });
    let named = rule.resource_names.is_empty() || rule.resource_names.contains(&attributes.name);
    scope
        && operation
        && named
        && listed(&rule.api_groups, &resource.group)
        && listed(&rule.api_versions, &resource.version)
        && resources
}

/// The labels of the namespace the write is in, for the `namespaceSelector`: a Namespace
/// written (create, update) is its own; else the stored namespace's.
fn namespace_labels(
    store: &Store,
    attributes: &Attributes<'_>,
) -> Result<std::collections::BTreeMap<String, String>, Box<Status>> {
    let resource = attributes.resource;
    let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
    if is_namespace
        && attributes.subresource.is_empty()
        && attributes.operation != Operation::Delete
    {
        return Ok(Attributes::labels(attributes.object.as_ref()).unwrap_or_default());
    }
    let name = if is_namespace {
        attributes.name.as_str()
    } else {
        attributes.namespace
    };
    let namespaces = GroupResource::new("", "namespaces");
    match store.get(&namespaces, name) {
        Some(namespace) => Ok(Attributes::labels(Some(&namespace.value)).unwrap_or_default()),
        None => Err(Box::new(Status::not_found(&namespaces, name))),
    }
}

/// How a webhook is called for a write.
#[derive(Debug)]
pub(crate) enum Invocation {
    /// Its rules name the resource written, in the version written.
    Exact,
    /// `matchPolicy: Equivalent`: its rules name another version of the same custom
    /// resource, which it is sent in.
    Equivalent(Arc<ResourceDef>),
}

/// How `rules` name the write, if they do: the version written, or with
/// `matchPolicy: Equivalent` (`exact_match` false) another served version of the same
/// custom resource.
fn invocation(
    registry: &Registry,
    rules: &[Rule],
    exact_match: bool,
    attributes: &Attributes<'_>,
) -> Option<Invocation> {
    let matches =
        |attributes: &Attributes<'_>| rules.iter().any(|rule| rule_matches(rule, attributes));
    if matches(attributes) {
        return Some(Invocation::Exact);
    }
    let resource = attributes.resource;
    if exact_match || resource.builtin {
        return None;
    }
    registry
        .all()
        .into_iter()
        .filter(|other| {
            !other.builtin
                && other.group == resource.group
                && other.plural == resource.plural
                && other.version != resource.version
        })
        .find(|other| {
            matches(&Attributes {
                resource: other,
                ..attributes.clone()
            })
        })
        .map(Invocation::Equivalent)
}

/// Whether (and how) `webhook` is called for the write.
///
/// # Errors
///
/// A selector that does not parse (500), or a namespace that is not there (404), for a
/// webhook whose rules match.
pub(crate) fn should_call(
    store: &Store,
    registry: &Registry,
    webhook: &Webhook,
    attributes: &Attributes<'_>,
) -> Result<Option<Invocation>, Box<Status>> {
    let resource = attributes.resource;
    // kube-apiserver never sends the webhook configurations themselves to webhooks: a
    // broken webhook could otherwise never be removed.
    if resource.group == GROUP
        && matches!(
            resource.plural.as_str(),
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations"
        )
    {
        return Ok(None);
    }
    matches(store, registry, &webhook.matching, attributes)
}

/// Whether (and how) what `matching` names includes the write: one of its rules names it
/// and none of its excluded rules does, and its selectors select it.
///
/// # Errors
///
/// A selector that does not parse (500), or a namespace that is not there (404), when
/// the rules match.
pub(crate) fn matches(
    store: &Store,
    registry: &Registry,
    matching: &MatchResources,
    attributes: &Attributes<'_>,
) -> Result<Option<Invocation>, Box<Status>> {
    let resource = attributes.resource;
    let Some(found) = invocation(registry, &matching.rules, matching.exact_match, attributes)
    else {
        return Ok(None);
    };
    if !matching.exclude_rules.is_empty()
        && invocation(
            registry,
            &matching.exclude_rules,
            matching.exact_match,
            attributes,
        )
        .is_some()
    {
        return Ok(None);
    }
    let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
    // Cluster-scoped objects (but Namespaces) are never exempted by a namespaceSelector.
    if !attributes.namespace.is_empty() || is_namespace {
        let selector = matching
            .namespace_selector
            .as_ref()
            .map_err(|reason| Box::new(Status::internal_error(reason)))?;
        if !selector.is_empty() && !selector.matches(&namespace_labels(store, attributes)?) {
            return Ok(None);
        }
    }
    let selector = matching
        .object_selector
        .as_ref()
        .map_err(|reason| Box::new(Status::internal_error(reason)))?;
    if selector.is_empty() {
        return Ok(Some(found));
    }
    let matches = |object: Option<&serde_json::Value>| {
        Attributes::labels(object).is_some_and(|labels| selector.matches(&labels))
    };
    Ok(
        (matches(attributes.object.as_ref()) || matches(attributes.old_object.as_ref()))
            .then_some(found),
    )
}
