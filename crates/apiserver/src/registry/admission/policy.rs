//! [`Policy`] and [`Binding`]: the stored `ValidatingAdmissionPolicy`s and
//! `ValidatingAdmissionPolicyBinding`s, read leniently (their validation ran when they were
//! written) with v1's defaults, and [`bound_policies`]: every binding with its policy, in
//! kube-apiserver's order (by binding name). They are read from the store on each write,
//! so a change takes effect on the next write.

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use super::match_resources::MatchResources;
use super::webhook::GROUP;
use crate::object::{label_selector, meta_str, string_list};
use crate::storage::Store;

/// The policies' resource.
pub(crate) const POLICIES: &str = "validatingadmissionpolicies";
/// The bindings' resource.
pub(crate) const BINDINGS: &str = "validatingadmissionpolicybindings";

/// The `reason` of a validation, and the HTTP code a refusal with it has (kube-apiserver's
/// `reasonToCode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// `Invalid` (the default): 422.
    Invalid,
    /// `Forbidden`: 403.
    Forbidden,
    /// `Unauthorized`: 401.
    Unauthorized,
    /// `RequestEntityTooLarge`: 413.
    RequestEntityTooLarge,
}

impl Reason {
    fn read(text: Option<&str>) -> Self {
        match text {
            Some("Forbidden") => Reason::Forbidden,
            Some("Unauthorized") => Reason::Unauthorized,
            Some("RequestEntityTooLarge") => Reason::RequestEntityTooLarge,
            _ => Reason::Invalid,
        }
    }

    /// Its name in a Status.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Invalid => "Invalid",
            Reason::Forbidden => "Forbidden",
            Reason::Unauthorized => "Unauthorized",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
        }
    }

    /// The HTTP code of a refusal with it.
    pub(crate) fn code(self) -> u16 {
        match self {
            Reason::Invalid => 422,
            Reason::Forbidden => 403,
            Reason::Unauthorized => 401,
            Reason::RequestEntityTooLarge => 413,
        }
    }
}

/// One entry of `validations`.
#[derive(Clone, Debug)]
pub(crate) struct Validation {
    /// `expression`.
    pub(crate) expression: String,
    /// `message` (empty: none).
    pub(crate) message: String,
    /// `messageExpression` (empty: none).
    pub(crate) message_expression: String,
    /// `reason`.
    pub(crate) reason: Reason,
}

/// A stored `ValidatingAdmissionPolicy`.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    /// Its name.
    pub(crate) name: String,
    /// `failurePolicy: Ignore` (the default is Fail).
    pub(crate) ignore_failures: bool,
    /// `paramKind` as (`apiVersion`, `kind`).
    pub(crate) param_kind: Option<(String, String)>,
    /// `matchConstraints`.
    pub(crate) constraints: MatchResources,
    /// `matchConditions` as (name, expression).
    pub(crate) match_conditions: Vec<(String, String)>,
    /// `variables` as (name, expression), in order.
    pub(crate) variables: Vec<(String, String)>,
    /// `validations`.
    pub(crate) validations: Vec<Validation>,
    /// `auditAnnotations` as (key, valueExpression).
    pub(crate) audit_annotations: Vec<(String, String)>,
}

/// A binding's `paramRef`.
#[derive(Clone, Debug)]
pub(crate) struct ParamRef {
    /// `name` (empty: by selector).
    pub(crate) name: String,
    /// `namespace` (empty: the request's, for a namespaced kind).
    pub(crate) namespace: String,
    /// `selector`; `Err` with the reason when it does not parse.
    pub(crate) selector: Option<Result<kubeclient_machinery::selector::LabelSelector, String>>,
    /// `parameterNotFoundAction: Allow` (the default is Deny).
    pub(crate) allow_missing: bool,
}

/// A stored `ValidatingAdmissionPolicyBinding`.
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    /// Its name.
    pub(crate) name: String,
    /// `policyName`.
    pub(crate) policy_name: String,
    /// `paramRef`.
    pub(crate) param_ref: Option<ParamRef>,
    /// `matchResources` (`None`: every write the policy matches).
    pub(crate) matching: Option<MatchResources>,
    /// `Deny` in `validationActions`.
    pub(crate) deny: bool,
    /// `Warn` in `validationActions`.
    pub(crate) warn: bool,
}

fn text(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn pairs(spec: &Value, field: &str, key: &str, value: &str) -> Vec<(String, String)> {
    spec.get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| (text(item, key), text(item, value)))
                .collect()
        })
        .unwrap_or_default()
}

impl Policy {
    /// Reads a stored policy.
    pub(crate) fn read(object: &Value) -> Self {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let param_kind = spec
            .get("paramKind")
            .filter(|kind| kind.is_object())
            .map(|kind| (text(kind, "apiVersion"), text(kind, "kind")));
        Policy {
            name: meta_str(object, "name").to_owned(),
            ignore_failures: text(spec, "failurePolicy") == "Ignore",
            param_kind,
            constraints: MatchResources::of_constraints(
                spec.get("matchConstraints").unwrap_or(&Value::Null),
            ),
            match_conditions: pairs(spec, "matchConditions", "name", "expression"),
            variables: pairs(spec, "variables", "name", "expression"),
            validations: spec
                .get("validations")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| Validation {
                            expression: text(item, "expression"),
                            message: text(item, "message"),
                            message_expression: text(item, "messageExpression"),
                            reason: Reason::read(item.get("reason").and_then(Value::as_str)),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            audit_annotations: pairs(spec, "auditAnnotations", "key", "valueExpression"),
        }
    }
}

impl Binding {
    /// Reads a stored binding.
    pub(crate) fn read(object: &Value) -> Self {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let actions = string_list(spec.get("validationActions"));
        let param_ref = spec
            .get("paramRef")
            .filter(|r| r.is_object())
            .map(|r| ParamRef {
                name: text(r, "name"),
                namespace: text(r, "namespace"),
                selector: r
                    .get("selector")
                    .filter(|s| !s.is_null())
                    .map(|s| label_selector(Some(s)).map_err(|err| err.to_string())),
                allow_missing: text(r, "parameterNotFoundAction") == "Allow",
            });
        Binding {
            name: meta_str(object, "name").to_owned(),
            policy_name: text(spec, "policyName"),
            param_ref,
            matching: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(MatchResources::of_binding),
            deny: actions.iter().any(|a| a == "Deny"),
            warn: actions.iter().any(|a| a == "Warn"),
        }
    }
}

/// Every stored binding whose policy exists, with it, by binding name (a binding naming
/// a missing policy does nothing, as upstream).
pub(crate) fn bound_policies(store: &Store) -> Vec<(Binding, Policy)> {
    let bindings = store
        .snapshot(&GroupResource::new(GROUP, BINDINGS), "")
        .objects;
    if bindings.is_empty() {
        return Vec::new();
    }
    let policies = store
        .snapshot(&GroupResource::new(GROUP, POLICIES), "")
        .objects;
    let mut bound: Vec<(Binding, Policy)> = bindings
        .iter()
        .map(|b| Binding::read(&b.value))
        .filter_map(|binding| {
            let policy = policies.iter().find(|p| p.name() == binding.policy_name)?;
            Some((binding, Policy::read(&policy.value)))
        })
        .collect();
    bound.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    bound
}
