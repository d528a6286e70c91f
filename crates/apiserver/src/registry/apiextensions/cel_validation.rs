//! Evaluation of a custom resource's `x-kubernetes-validations` rules (kube-apiserver's
//! `schema/cel/validation.go`), on the final object of every create, update, patch, apply
//! and `/status` write, after its schema checks.
//!
//! Each rule runs with `self` bound to the value at its node (never for a null or absent
//! value); a transition rule (one reading `oldSelf`) only on an update where the node has
//! an old value (map entries by key unless the map is atomic, list items only in
//! `x-kubernetes-list-type: map` lists, by their keys), or always with `optionalOldSelf`,
//! where `oldSelf` is an optional. Errors are kube-apiserver's: a false rule gives
//! `<path>: Invalid value: "<type>": <message>` (`failed rule: <rule>` without a message,
//! the `messageExpression`'s string when it yields a usable one, the `reason`'s form,
//! `fieldPath` appended to the path); a failing evaluation `<error> evaluating rule:
//! <rule>`. As with CRD validation ratcheting, on an update a rule that does not read
//! `oldSelf` and fails on a value equal to its old value is not an error.
//!
//! Nothing a rule or an object does can take the server down: every evaluation runs under
//! `catch_unwind` (a panic of the CEL library is a 422 naming the rule), and is first
//! bounded by `cel_cost.rs`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::{Context, ExecutionError, Program, Value as CelValue};
use kubeclient_machinery::StatusCause;
use serde_json::Value;

use super::cel_cost;
use super::cel_library;
use super::cel_library::{OLD_SELF, SELF};
use super::cel_rules::{CompiledRule, Reason, RuleNode};
use super::cel_value::to_cel;

/// The longest `messageExpression` result kept (kube-apiserver's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The causes of every rule `object` breaks (`old`: the object before an update).
pub(crate) fn causes(
    root: &RuleNode,
    schema: &Value,
    object: &Value,
    old: Option<&Value>,
) -> Vec<StatusCause> {
    let mut run = Run {
        context: cel_library::context(),
        remaining: cel_cost::RUNTIME_BUDGET,
        causes: Vec::new(),
        stopped: false,
    };
    let correlation = match old {
        Some(old) => Correlation::Old(Some(old)),
        None => Correlation::Old(None),
    };
    run.node(root, schema, "", object, correlation);
    run.causes
}

/// The old value of a node: its own (`Old`, absent when it has none), or none because
/// the node cannot be paired with an old one, with whether its nearest pairable ancestor
/// is unchanged (`Uncorrelated`).
#[derive(Clone, Copy)]
enum Correlation<'a> {
    Old(Option<&'a Value>),
    Uncorrelated(bool),
}

struct Run {
    context: Context<'static, 'static>,
    remaining: u64,
    causes: Vec<StatusCause>,
    stopped: bool,
}

/// `parent.name` (`name` at the root).
fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The path as kube-apiserver prints it (`<nil>` for the root).
fn shown(path: &str) -> &str {
    if path.is_empty() { "<nil>" } else { path }
}

impl Run {
    fn node(
        &mut self,
        node: &RuleNode,
        schema: &Value,
        path: &str,
        value: &Value,
        correlation: Correlation<'_>,
    ) {
        if value.is_null() || self.stopped {
            return;
        }
        let (old, unchanged) = match correlation {
            Correlation::Old(old) => (old.filter(|o| !o.is_null()), old == Some(value)),
            Correlation::Uncorrelated(unchanged) => (None, unchanged),
        };
        if !node.rules.is_empty() {
            self.rules(node, schema, path, value, old, unchanged);
        }
        match value {
            Value::Object(map) => {
                for (key, sub_value) in map {
                    if self.stopped {
                        return;
                    }
                    let sub_correlation = if node.atomic_map {
                        Correlation::Uncorrelated(unchanged)
                    } else {
                        Correlation::Old(old.and_then(|o| o.get(key)))
                    };
                    if let Some(sub) = node.properties.get(key) {
                        let sub_schema = schema
                            .get("properties")
                            .and_then(|p| p.get(key))
                            .unwrap_or(&Value::Null);
                        self.node(
                            sub,
                            sub_schema,
                            &child(path, key),
                            sub_value,
                            sub_correlation,
                        );
                    } else if let Some(sub) = &node.additional {
                        let sub_schema = schema.get("additionalProperties").unwrap_or(&Value::Null);
                        let sub_path = format!("{path}[{key}]");
                        self.node(sub, sub_schema, &sub_path, sub_value, sub_correlation);
                    }
                }
            }
            Value::Array(items) => {
                let Some(sub) = &node.items else {
                    return;
                };
                let sub_schema = schema.get("items").unwrap_or(&Value::Null);
                for (index, item) in items.iter().enumerate() {
                    if self.stopped {
                        return;
                    }
                    let sub_correlation = match (&node.list_map_keys, old) {
                        (Some(keys), Some(Value::Array(old_items))) => {
                            Correlation::Old(old_items.iter().find(|o| same_keys(keys, o, item)))
                        }
                        (Some(_), _) => Correlation::Old(None),
                        (None, _) => Correlation::Uncorrelated(unchanged),
                    };
                    let sub_path = format!("{path}[{index}]");
                    self.node(sub, sub_schema, &sub_path, item, sub_correlation);
                }
            }
            _ => {}
        }
    }

    fn rules(
        &mut self,
        node: &RuleNode,
        schema: &Value,
        path: &str,
        value: &Value,
        old: Option<&Value>,
        unchanged: bool,
    ) {
        let units = cel_cost::units(value).saturating_add(old.map_or(0, cel_cost::units));
        let self_value = to_cel(value, schema);
        let old_value = old.map(|o| to_cel(o, schema));
        for rule in &node.rules {
            let Some(program) = &rule.program else {
                continue;
            };
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            if !self.afford(rule.cost, units, node, path, rule) {
                return;
            }
            let mut scope = self.context.new_inner_scope();
            scope.add_variable_from_value(SELF, self_value.clone());
            if rule.optional_old_self {
                let optional = match &old_value {
                    Some(v) => OptionalValue::of(v.clone()),
                    None => OptionalValue::none(),
                };
                scope.add_variable_from_value(OLD_SELF, CelValue::Opaque(Arc::new(optional)));
            } else if let Some(old_value) = &old_value {
                scope.add_variable_from_value(OLD_SELF, old_value.clone());
            }
            let outcome = execute(program, &scope);
            let rule_text = rule_error_string(rule);
            let detail = match outcome {
                Outcome::Value(CelValue::Bool(true)) => continue,
                Outcome::Value(CelValue::Bool(false)) => None,
                Outcome::Value(_) => Some(format!(
                    "cel expression must evaluate to a bool evaluating rule: {rule_text}"
                )),
                Outcome::Error(error) => Some(evaluation_error(&error, &rule_text)),
                Outcome::Panicked => Some(format!(
                    "internal error: the CEL library failed evaluating rule: {rule_text}"
                )),
            };
            if let Some(detail) = detail {
                self.causes.push(invalid(path, &node.schema_type, &detail));
                continue;
            }
            if unchanged && !rule.uses_old_self {
                // Ratcheting: an unchanged value that already broke the rule is let through.
                continue;
            }
            let field = match &rule.field_path {
                Some(relative) => child(path, relative),
                None => path.to_owned(),
            };
            let message = rule
                .message_expression
                .as_ref()
                .and_then(|(_, program)| {
                    let shape = cel_cost::shape(program.expression());
                    if cel_cost::runtime_bound(shape, units) > self.remaining {
                        return None;
                    }
                    self.remaining -= cel_cost::runtime_bound(shape, units);
                    message_of(execute(program, &scope))
                })
                .unwrap_or_else(|| rule_message_or_default(rule));
            self.causes
                .push(for_reason(rule.reason, &field, &node.schema_type, &message));
        }
    }

    /// Charges a rule's bound to the budget, or records why it cannot run and stops.
    fn afford(
        &mut self,
        shape: cel_cost::CostShape,
        units: u64,
        node: &RuleNode,
        path: &str,
        rule: &CompiledRule,
    ) -> bool {
        let bound = cel_cost::runtime_bound(shape, units);
        let detail = if bound > cel_cost::PER_CALL_LIMIT {
            format!(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                rule_error_string(rule)
            )
        } else if bound > self.remaining {
            "validation failed due to running out of cost budget, no further validation rules will be run".to_owned()
        } else {
            self.remaining -= bound;
            return true;
        };
        self.causes.push(invalid(path, &node.schema_type, &detail));
        self.stopped = true;
        false
    }
}

/// Whether two items of a map list have the same values at `keys`.
fn same_keys(keys: &[String], a: &Value, b: &Value) -> bool {
    keys.iter().all(|key| a.get(key) == b.get(key))
}

/// How one evaluation ended.
enum Outcome {
    Value(CelValue),
    Error(ExecutionError),
    Panicked,
}

fn execute(program: &Program, scope: &Context<'_, '_>) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| program.execute(scope))) {
        Ok(Ok(value)) => Outcome::Value(value),
        Ok(Err(error)) => Outcome::Error(error),
        Err(_) => Outcome::Panicked,
    }
}

/// A `messageExpression`'s result when usable: a non-empty string of one line, trimmed,
/// within [`MAX_MESSAGE_BYTES`] (otherwise the rule's message is used, as upstream).
fn message_of(outcome: Outcome) -> Option<String> {
    let Outcome::Value(CelValue::String(text)) = outcome else {
        return None;
    };
    let trimmed = text.trim();
    (!trimmed.is_empty() && !trimmed.contains('\n') && trimmed.len() <= MAX_MESSAGE_BYTES)
        .then(|| trimmed.to_owned())
}

/// kube-apiserver's `ruleErrorString`: the message when given, else the rule.
fn rule_error_string(rule: &CompiledRule) -> String {
    if rule.message.is_empty() {
        rule.source.trim().to_owned()
    } else {
        rule.message.clone()
    }
}

fn rule_message_or_default(rule: &CompiledRule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule_error_string(rule))
    } else {
        rule.message.clone()
    }
}

/// cel-go's wording of an evaluation error, with kube-apiserver's suffix.
fn evaluation_error(error: &ExecutionError, rule: &str) -> String {
    match error {
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnsupportedBinaryOperator(..) => {
            format!(
                "'no such overload: {error}': call arguments did not match a supported operator, function or macro signature for rule: {rule}"
            )
        }
        ExecutionError::NoSuchKey(key) => format!("no such key: {key} evaluating rule: {rule}"),
        ExecutionError::DivisionByZero(_) => format!("division by zero evaluating rule: {rule}"),
        ExecutionError::RemainderByZero(_) => format!("modulus by zero evaluating rule: {rule}"),
        ExecutionError::Overflow(..) => format!("integer overflow evaluating rule: {rule}"),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}' evaluating rule: {rule}")
        }
        other => format!("{other} evaluating rule: {rule}"),
    }
}

fn invalid(path: &str, schema_type: &str, detail: &str) -> StatusCause {
    StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {schema_type:?}: {detail}"),
        shown(path),
    )
}

/// The field error a failed rule gives for its `reason`.
fn for_reason(reason: Reason, path: &str, schema_type: &str, detail: &str) -> StatusCause {
    let field = shown(path);
    match reason {
        Reason::Invalid => invalid(path, schema_type, detail),
        Reason::Forbidden => StatusCause::new(
            "FieldValueForbidden",
            &format!("Forbidden: {detail}"),
            field,
        ),
        Reason::Required => StatusCause::new(
            "FieldValueRequired",
            &format!("Required value: {detail}"),
            field,
        ),
        Reason::Duplicate => StatusCause::new(
            "FieldValueDuplicate",
            &format!("Duplicate value: {schema_type:?}"),
            field,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::apiextensions::cel_rules::compile;
    use serde_json::json;

    fn check(schema: &Value, object: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let rules = compile(schema, "s").unwrap();
        causes(rules.root.as_ref().unwrap(), schema, object, old)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    fn widget(rules: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": rules,
            "properties": {"replicas": {"type": "integer"}, "minReplicas": {"type": "integer"},
                           "name": {"type": "string"}}}}})
    }

    #[test]
    fn a_false_rule_reports_its_message_or_the_rule() {
        let schema = widget(json!([{"rule": "self.minReplicas <= self.replicas"},
            {"rule": "self.replicas < 10", "message": "at most 9"}]));
        let object = json!({"spec": {"replicas": 11, "minReplicas": 12}});
        assert_eq!(
            check(&schema, &object, None),
            vec![
                (
                    "spec".to_owned(),
                    "Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas"
                        .to_owned()
                ),
                (
                    "spec".to_owned(),
                    "Invalid value: \"object\": at most 9".to_owned()
                ),
            ]
        );
        assert!(
            check(
                &schema,
                &json!({"spec": {"replicas": 3, "minReplicas": 1}}),
                None
            )
            .is_empty()
        );
    }

    #[test]
    fn reasons_field_paths_and_message_expressions() {
        let schema = widget(json!([
            {"rule": "self.replicas > 0", "reason": "FieldValueForbidden", "fieldPath": ".replicas",
             "messageExpression": "'replicas ' + string(self.replicas) + ' is not positive'"},
            {"rule": "has(self.name)", "reason": "FieldValueRequired", "message": "name is required"},
            {"rule": "false", "reason": "FieldValueDuplicate"},
            {"rule": "false", "messageExpression": "''", "message": "fallback"}]));
        let got = check(&schema, &json!({"spec": {"replicas": 0}}), None);
        assert_eq!(
            got,
            vec![
                (
                    "spec.replicas".to_owned(),
                    "Forbidden: replicas 0 is not positive".to_owned()
                ),
                (
                    "spec".to_owned(),
                    "Required value: name is required".to_owned()
                ),
                ("spec".to_owned(), "Duplicate value: \"object\"".to_owned()),
                (
                    "spec".to_owned(),
                    "Invalid value: \"object\": fallback".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn transition_rules_run_only_with_an_old_value() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"name": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}}}}});
        let new = json!({"spec": {"name": "b"}});
        assert!(check(&schema, &new, None).is_empty());
        assert!(check(&schema, &new, Some(&json!({"spec": {}}))).is_empty());
        assert_eq!(
            check(&schema, &new, Some(&json!({"spec": {"name": "a"}}))),
            vec![(
                "spec.name".to_owned(),
                "Invalid value: \"string\": name is immutable".to_owned()
            )]
        );
    }

    #[test]
    fn optional_old_self_runs_on_create() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string",
            "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() || self != 'x'", "optionalOldSelf": true}]}}});
        assert_eq!(check(&schema, &json!({"name": "x"}), None).len(), 1);
        assert!(check(&schema, &json!({"name": "x"}), Some(&json!({"name": "y"}))).is_empty());
    }

    #[test]
    fn items_and_map_values_have_their_own_paths() {
        let schema = json!({"type": "object", "properties": {
            "ports": {"type": "array", "items": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self < 65536"}]}},
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}}}});
        let got = check(
            &schema,
            &json!({"ports": [80, 70000], "labels": {"a": "ok", "b": "toolong"}}),
            None,
        );
        assert_eq!(
            got,
            vec![
                (
                    "labels[b]".to_owned(),
                    "Invalid value: \"string\": failed rule: self.size() <= 3".to_owned()
                ),
                (
                    "ports[1]".to_owned(),
                    "Invalid value: \"integer\": failed rule: self < 65536".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn evaluation_errors_and_ratcheting() {
        let schema = widget(json!([{"rule": "self.minReplicas <= self.replicas"}]));
        let got = check(&schema, &json!({"spec": {"replicas": 1}}), None);
        assert_eq!(
            got,
            vec![("spec".to_owned(), "Invalid value: \"object\": no such key: minReplicas evaluating rule: self.minReplicas <= self.replicas".to_owned())]
        );
        // An unchanged invalid value is let through on update; a changed one is not.
        let bad = json!({"spec": {"replicas": 1, "minReplicas": 2}});
        assert!(check(&schema, &bad, Some(&bad)).is_empty());
        assert_eq!(
            check(
                &schema,
                &bad,
                Some(&json!({"spec": {"replicas": 5, "minReplicas": 2}}))
            )
            .len(),
            1
        );
    }

    #[test]
    fn a_panic_in_the_library_is_contained() {
        // No input found makes the `cel` crate panic; a function that does stands in.
        let mut context = cel_library::context();
        context
            .add_function("boom", || -> cel::ResolveResult {
                panic!("the library failed")
            })
            .unwrap();
        let program = cel_library::environment().compile("boom()").unwrap();
        assert!(matches!(execute(&program, &context), Outcome::Panicked));
        assert!(matches!(
            execute(
                &cel_library::environment().compile("1 / 0 == 1").unwrap(),
                &context
            ),
            Outcome::Error(ExecutionError::DivisionByZero(_))
        ));
    }

    #[test]
    fn a_rule_too_costly_for_its_input_is_stopped() {
        let schema = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 300,
            "items": {"type": "integer"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x != y || true))"}]}}});
        let small = json!({"l": [1, 2, 3]});
        assert!(check(&schema, &small, None).is_empty());
        let big = json!({"l": (0..300).collect::<Vec<i32>>()});
        let got = check(&schema, &big, None);
        assert_eq!(got.len(), 1);
        assert!(got[0].1.contains("call cost exceeds limit"), "{got:?}");
    }
}
