//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding`
//! (admissionregistration.k8s.io/v1; kube-apiserver's `pkg/registry/admissionregistration`
//! and `pkg/apis/admissionregistration/validation`): v1's defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, a rule's `scope: "*"`, a `paramRef`'s
//! `parameterNotFoundAction: Deny`), the validation of their fields with upstream's texts
//! (every CEL expression compiled, a refused one with `compilation failed: ...`), and
//! kubectl's columns. The admission that runs them is `registry/admission/policy_*.rs`.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use super::webhook_configuration::{one_of, validate_rule, validate_selectors};
use crate::registry::admission::policy_evaluation::VARIABLES;
use crate::registry::apiextensions::cel_rules::{
    compile_program, go_quote, may_be_bool, message_problem,
};
use crate::registry::defaults::{child, set};
use crate::registry::names::qualified_name;
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};
use crate::registry::webhook_client_config::{
    go_slice, invalid, not_supported, required_because, text,
};
use crate::registry::workloads::required;

/// The strategy of `ValidatingAdmissionPolicy`.
pub(crate) struct PolicyStrategy;

/// The strategy of `ValidatingAdmissionPolicyBinding`.
pub(crate) struct BindingStrategy;

/// The reasons a validation may give.
const REASONS: [&str; 4] = [
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];

/// The most `matchConditions` a policy may have.
const MAX_MATCH_CONDITIONS: usize = 64;

/// v1's defaults of a `matchConstraints` or `matchResources`.
fn default_match_resources(object: &mut Map<String, Value>) {
    set(object, "matchPolicy", json!("Equivalent"));
    set(object, "namespaceSelector", json!({}));
    set(object, "objectSelector", json!({}));
    for field in ["resourceRules", "excludeResourceRules"] {
        if let Some(Value::Array(rules)) = object.get_mut(field) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set(rule, "scope", json!("*"));
            }
        }
    }
}

impl Strategy for PolicyStrategy {
    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        let Some(spec) = child(object, "spec") else {
            return;
        };
        set(spec, "failurePolicy", json!("Fail"));
        if let Some(constraints) = child(spec, "matchConstraints") {
            default_match_resources(constraints);
        }
    }

    fn validate(&self, object: &Value, _old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        one_of(spec, "failurePolicy", "spec", &["Fail", "Ignore"], causes);
        if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
            for field in ["apiVersion", "kind"] {
                if text(kind, field).is_empty() {
                    causes.push(required(&format!("spec.paramKind.{field}")));
                }
            }
        }
        match spec.get("matchConstraints").filter(|c| !c.is_null()) {
            None => causes.push(required("spec.matchConstraints")),
            Some(constraints) => {
                validate_match_resources(constraints, "spec.matchConstraints", true, causes);
            }
        }
        validate_match_conditions(spec, causes);
        validate_variables(spec, causes);
        let validations = items(spec, "validations");
        let annotations = items(spec, "auditAnnotations");
        if validations.is_empty() && annotations.is_empty() {
            causes.push(required_because(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        for (index, validation) in validations.iter().enumerate() {
            validate_validation(validation, &format!("spec.validations[{index}]"), causes);
        }
        for (index, annotation) in annotations.iter().enumerate() {
            let path = format!("spec.auditAnnotations[{index}]");
            if text(annotation, "key").is_empty() {
                causes.push(required(&format!("{path}.key")));
            }
            expression(
                annotation,
                "valueExpression",
                &format!("{path}.valueExpression"),
                false,
                causes,
            );
        }
    }

    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::VALIDATING_ADMISSION_POLICY)
    }
}

impl Strategy for BindingStrategy {
    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        let Some(spec) = child(object, "spec") else {
            return;
        };
        if let Some(matching) = child(spec, "matchResources") {
            default_match_resources(matching);
        }
        if let Some(param_ref) = child(spec, "paramRef") {
            set(param_ref, "parameterNotFoundAction", json!("Deny"));
        }
    }

    fn validate(&self, object: &Value, _old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        if text(spec, "policyName").is_empty() {
            causes.push(required("spec.policyName"));
        }
        if let Some(param_ref) = spec.get("paramRef").filter(|r| !r.is_null()) {
            validate_param_ref(param_ref, causes);
        }
        if let Some(matching) = spec.get("matchResources").filter(|m| !m.is_null()) {
            validate_match_resources(matching, "spec.matchResources", false, causes);
        }
        validate_actions(spec, causes);
    }

    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::VALIDATING_ADMISSION_POLICY_BINDING)
    }
}

/// The `PolicyStrategy` served.
pub(crate) static POLICY: PolicyStrategy = PolicyStrategy;
/// The `BindingStrategy` served.
pub(crate) static BINDING: BindingStrategy = BindingStrategy;

fn items<'a>(object: &'a Value, field: &str) -> &'a [Value] {
    object
        .get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Checks that `object[field]` is given and compiles (and may be a bool when `boolean`).
fn expression(
    object: &Value,
    field: &str,
    path: &str,
    boolean: bool,
    causes: &mut Vec<StatusCause>,
) {
    let source = text(object, field);
    if source.trim().is_empty() {
        causes.push(required_because(path, &format!("{field} is not specified")));
        return;
    }
    let problem = match compile_program(source, &VARIABLES) {
        Err(message) => Some(message),
        Ok(program) if boolean && !may_be_bool(program.expression()) => {
            Some("cel expression must evaluate to a bool".to_owned())
        }
        Ok(_) => None,
    };
    if let Some(problem) = problem {
        causes.push(invalid(path, &go_quote(source), &problem));
    }
}

fn validate_match_resources(
    matching: &Value,
    path: &str,
    rules_required: bool,
    causes: &mut Vec<StatusCause>,
) {
    one_of(
        matching,
        "matchPolicy",
        path,
        &["Equivalent", "Exact"],
        causes,
    );
    validate_selectors(matching, path, causes);
    let rules = items(matching, "resourceRules");
    if rules_required && rules.is_empty() {
        causes.push(required(&format!("{path}.resourceRules")));
    }
    for field in ["resourceRules", "excludeResourceRules"] {
        for (index, rule) in items(matching, field).iter().enumerate() {
            validate_rule(rule, &format!("{path}.{field}[{index}]"), causes);
        }
    }
}

fn validate_match_conditions(spec: &Value, causes: &mut Vec<StatusCause>) {
    let conditions = items(spec, "matchConditions");
    if conditions.len() > MAX_MATCH_CONDITIONS {
        causes.push(StatusCause::new(
            "FieldValueTooMany",
            &format!(
                "Too many: {}: must have at most {MAX_MATCH_CONDITIONS} items",
                conditions.len()
            ),
            "spec.matchConditions",
        ));
    }
    let mut names = std::collections::HashSet::new();
    for (index, condition) in conditions.iter().enumerate() {
        let path = format!("spec.matchConditions[{index}]");
        let name = text(condition, "name");
        if name.is_empty() {
            causes.push(required(&format!("{path}.name")));
        } else if let Err(err) = qualified_name(name) {
            causes.push(invalid(
                &format!("{path}.name"),
                &format!("{name:?}"),
                &err.to_string(),
            ));
        } else if !names.insert(name) {
            causes.push(StatusCause::new(
                "FieldValueDuplicate",
                &format!("Duplicate value: {name:?}"),
                &format!("{path}.name"),
            ));
        }
        expression(
            condition,
            "expression",
            &format!("{path}.expression"),
            true,
            causes,
        );
    }
}

/// Whether `name` is a CEL identifier (`[a-zA-Z_][a-zA-Z0-9_]*`).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn validate_variables(spec: &Value, causes: &mut Vec<StatusCause>) {
    for (index, variable) in items(spec, "variables").iter().enumerate() {
        let path = format!("spec.variables[{index}]");
        let name = text(variable, "name");
        if name.is_empty() {
            causes.push(required_because(
                &format!("{path}.name"),
                "name is not specified",
            ));
        } else if !is_identifier(name) {
            causes.push(invalid(
                &format!("{path}.name"),
                &format!("{name:?}"),
                "name is not a valid CEL identifier",
            ));
        }
        expression(
            variable,
            "expression",
            &format!("{path}.expression"),
            false,
            causes,
        );
    }
}

fn validate_validation(validation: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    expression(
        validation,
        "expression",
        &format!("{path}.expression"),
        true,
        causes,
    );
    if let Some(message) = validation
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        && let Some(problem) = message_problem(message)
    {
        causes.push(invalid(
            &format!("{path}.message"),
            &go_quote(message),
            problem,
        ));
    }
    if validation
        .get("messageExpression")
        .and_then(Value::as_str)
        .is_some_and(|m| !m.trim().is_empty())
    {
        expression(
            validation,
            "messageExpression",
            &format!("{path}.messageExpression"),
            false,
            causes,
        );
    }
    if let Some(reason) = validation.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        causes.push(not_supported(&format!("{path}.reason"), reason, &REASONS));
    }
}

fn validate_param_ref(param_ref: &Value, causes: &mut Vec<StatusCause>) {
    let has_name = !text(param_ref, "name").is_empty();
    let has_selector = param_ref.get("selector").is_some_and(|s| !s.is_null());
    if has_name && has_selector {
        for field in ["name", "selector"] {
            causes.push(StatusCause::new(
                "FieldValueForbidden",
                "Forbidden: name and selector are mutually exclusive",
                &format!("spec.paramRef.{field}"),
            ));
        }
    }
    if !has_name && !has_selector {
        causes.push(required_because(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
    if let Some(selector) = param_ref.get("selector").filter(|s| !s.is_null())
        && let Err(err) = crate::object::label_selector(Some(selector))
    {
        causes.push(invalid(
            "spec.paramRef.selector",
            &selector.to_string(),
            &err.to_string(),
        ));
    }
    match param_ref
        .get("parameterNotFoundAction")
        .and_then(Value::as_str)
    {
        None => causes.push(required("spec.paramRef.parameterNotFoundAction")),
        Some(_) => one_of(
            param_ref,
            "parameterNotFoundAction",
            "spec.paramRef",
            &["Deny", "Allow"],
            causes,
        ),
    }
}

fn validate_actions(spec: &Value, causes: &mut Vec<StatusCause>) {
    let actions: Vec<&str> = items(spec, "validationActions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if actions.is_empty() {
        causes.push(required_because(
            "spec.validationActions",
            "at least one validation action is required",
        ));
        return;
    }
    let supported = ["Audit", "Deny", "Warn"];
    let mut seen = std::collections::HashSet::new();
    for (index, action) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{index}]");
        if !seen.insert(*action) {
            causes.push(StatusCause::new(
                "FieldValueDuplicate",
                &format!("Duplicate value: {action:?}"),
                &path,
            ));
        } else if !supported.contains(action) {
            causes.push(not_supported(&path, action, &supported));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        causes.push(invalid(
            "spec.validationActions",
            &go_slice("admissionregistration.ValidationAction", &actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
}
