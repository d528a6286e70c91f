//! Running the validating admission policies on a write (kube-apiserver's
//! `policy/validating/dispatcher.go` and `plugin.go`): for each binding (by name) with its
//! policy, when the policy's `matchConstraints` and the binding's `matchResources` both
//! match, its params are found (`paramKind` + `paramRef`: by name or selector, in the
//! `paramRef`'s namespace or the request's), the policy is evaluated once per param, and
//! each failure is acted on by the binding's `validationActions`: `Deny` refuses the write
//! with upstream's Status (`ValidatingAdmissionPolicy 'P' with binding 'B' denied request:
//! ...`, the validation's reason and code), `Warn` adds a warning (`Validation failed for
//! ValidatingAdmissionPolicy 'P' with binding 'B': ...`), `Audit` records nothing (this
//! server keeps no audit log). A binding that cannot be configured (missing params with
//! `parameterNotFoundAction: Deny`, a `paramKind` no resource serves) refuses the write
//! under `failurePolicy: Fail` and is skipped under Ignore. Policies and bindings
//! themselves are never subject to policies.

use kubeclient_machinery::{GroupResource, Status, StatusCause};
use serde_json::Value;

use super::attributes::{Attributes, Operation};
use super::dispatcher::sent;
use super::matcher::matches;
use super::policy::{BINDINGS, Binding, POLICIES, Policy, bound_policies};
use super::policy_evaluation::{Failure, Inputs, evaluate};
use super::review;
use super::webhook::GROUP;
use crate::object::store_key;
use crate::registry::apiextensions::version_conversion;
use crate::registry::{Registry, event_versions};
use crate::storage::Store;
use crate::webhook_client::WebhookPolicy;

/// A refusal found so far: the policy, the binding and what failed.
struct Denial {
    policy: String,
    binding: String,
    failure: Failure,
}

/// Runs the policies on the write; returns their warnings.
///
/// # Errors
///
/// The first denial (in binding order), a selector that does not parse or a namespace
/// that is not there (as for webhooks).
pub(crate) fn validate_policies(
    store: &Store,
    registry: &Registry,
    webhook_policy: WebhookPolicy,
    attributes: &Attributes<'_>,
) -> Result<Vec<String>, Box<Status>> {
    let resource = attributes.resource;
    if resource.group == GROUP && (resource.plural == POLICIES || resource.plural == BINDINGS) {
        return Ok(Vec::new());
    }
    let mut warnings = Vec::new();
    let mut denial: Option<Denial> = None;
    for (binding, policy) in bound_policies(store) {
        let Some(invocation) = matches(store, registry, &policy.constraints, attributes)? else {
            continue;
        };
        if let Some(matching) = &binding.matching
            && matches(store, registry, matching, attributes)?.is_none()
        {
            continue;
        }
        let sent = sent(attributes, &invocation, webhook_policy)?;
        let failures = match params(store, registry, webhook_policy, &policy, &binding, &sent) {
            Ok(params) => {
                let mut inputs = inputs(store, &sent);
                let mut failures = Vec::new();
                for param in params {
                    inputs.params = param;
                    failures.extend(evaluate(&policy, &inputs));
                }
                failures
            }
            Err(_) if policy.ignore_failures => Vec::new(),
            Err(message) => {
                // A binding that cannot be configured refuses whatever its actions.
                denial.get_or_insert(Denial {
                    policy: policy.name.clone(),
                    binding: binding.name.clone(),
                    failure: Failure {
                        message,
                        reason: super::policy::Reason::Invalid,
                    },
                });
                continue;
            }
        };
        for failure in failures {
            if binding.warn {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    policy.name, binding.name, failure.message
                ));
            }
            if binding.deny && denial.is_none() {
                denial = Some(Denial {
                    policy: policy.name.clone(),
                    binding: binding.name.clone(),
                    failure,
                });
            }
        }
    }
    match denial {
        Some(denial) => Err(denied(attributes, &denial)),
        None => Ok(warnings),
    }
}

/// kube-apiserver's refusal: `admission.NewForbidden` with the decision's reason and code,
/// and the message as a cause.
fn denied(attributes: &Attributes<'_>, denial: &Denial) -> Box<Status> {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        denial.policy, denial.binding, denial.failure.message
    );
    let mut resource = attributes.resource.group_resource();
    if !attributes.subresource.is_empty() {
        resource.resource = format!("{}/{}", resource.resource, attributes.subresource);
    }
    let mut status = Status::forbidden(&resource, &attributes.name, &message);
    status.reason = denial.failure.reason.as_str().to_owned();
    status.code = denial.failure.reason.code();
    if let Some(details) = status.details.as_mut() {
        details.causes.push(StatusCause::new("", &message, ""));
    }
    Box::new(status)
}

/// What the expressions see of the write.
fn inputs(store: &Store, attributes: &Attributes<'_>) -> Inputs {
    let mut request = review::request(attributes, attributes.resource, "", "v1")
        .get_mut("request")
        .map(Value::take)
        .unwrap_or(Value::Null);
    if let Value::Object(map) = &mut request {
        map.remove("object");
        map.remove("oldObject");
        map.remove("uid");
    }
    let namespace_object = if attributes.namespace.is_empty() {
        Value::Null
    } else {
        store
            .get(&GroupResource::new("", "namespaces"), attributes.namespace)
            .map(|namespace| namespace.value.clone())
            .unwrap_or(Value::Null)
    };
    Inputs {
        object: match attributes.operation {
            Operation::Delete => Value::Null,
            _ => attributes.object.clone().unwrap_or(Value::Null),
        },
        old_object: attributes.old_object.clone().unwrap_or(Value::Null),
        request,
        params: Value::Null,
        namespace_object,
    }
}

/// The params the policy is evaluated with: one null without `paramKind` or without
/// `paramRef`; else the objects the binding's `paramRef` names (none: the policy is not
/// evaluated).
///
/// # Errors
///
/// Upstream's configuration error text, when the binding cannot be configured.
fn params(
    store: &Store,
    registry: &Registry,
    webhook_policy: WebhookPolicy,
    policy: &Policy,
    binding: &Binding,
    attributes: &Attributes<'_>,
) -> Result<Vec<Value>, String> {
    let Some((api_version, kind)) = &policy.param_kind else {
        return Ok(vec![Value::Null]);
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let Some(resource) = registry
        .all()
        .into_iter()
        .find(|r| r.group == group && r.version == version && r.kind == *kind)
    else {
        return Err(format!(
            "failed to configure policy: failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        ));
    };
    let Some(param_ref) = &binding.param_ref else {
        // A binding without paramRef runs the policy with null params, as upstream.
        return Ok(vec![Value::Null]);
    };
    let namespace = if !resource.namespaced {
        if !param_ref.namespace.is_empty() {
            return Err("failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`".to_owned());
        }
        ""
    } else if !param_ref.namespace.is_empty() {
        param_ref.namespace.as_str()
    } else if !attributes.namespace.is_empty() {
        attributes.namespace
    } else {
        return Err("failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".to_owned());
    };
    let storage = event_versions::storage_of(&resource);
    let found: Vec<Value> = if !param_ref.name.is_empty() {
        store
            .get(&storage, &store_key(Some(namespace), &param_ref.name))
            .map(|object| object.value.clone())
            .into_iter()
            .collect()
    } else {
        let selector = match &param_ref.selector {
            Some(Ok(selector)) => selector.clone(),
            Some(Err(reason)) => return Err(format!("failed to configure binding: {reason}")),
            None => kubeclient_machinery::selector::LabelSelector::default(),
        };
        let prefix = if namespace.is_empty() {
            String::new()
        } else {
            format!("{namespace}/")
        };
        store
            .snapshot(&storage, &prefix)
            .objects
            .iter()
            .filter(|object| {
                Attributes::labels(Some(&object.value))
                    .is_some_and(|labels| selector.matches(&labels))
            })
            .map(|object| object.value.clone())
            .collect()
    };
    if found.is_empty() && !param_ref.allow_missing {
        return Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".to_owned());
    }
    found
        .into_iter()
        .map(|object| {
            version_conversion::to_version(&resource, object, webhook_policy)
                .map_err(|status| format!("failed to configure binding: {}", status.message))
        })
        .collect()
}
