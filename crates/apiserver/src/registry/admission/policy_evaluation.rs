//! Evaluating one `ValidatingAdmissionPolicy` for one write (kube-apiserver's
//! `validating/validator.go`): its `matchConditions` (all must be true; a false one
//! skips the policy, an error is a failure), its `variables` (in order, each seeing the
//! ones before it as `variables.NAME`), its `validations` and its `auditAnnotations`.
//! The expressions see `object`, `oldObject`, `request`, `params`, `namespaceObject` and
//! `variables` (`authorizer` is not available: expressions naming it are refused when the
//! policy is written).
//!
//! Nothing an expression does takes the server down: the expressions are compiled (once
//! per text, `policy_programs`) and run on a large stack (`cel_stack`), each run bounded first by `cel_cost` (an
//! expression whose bound is over the per-call limit is an error, as are the
//! expressions after the policy's budget is spent) and under `catch_unwind`.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Value as CelValue};
use serde_json::Value;

use super::policy::{Policy, Reason};
use super::policy_programs;
use crate::registry::apiextensions::{cel_cost, cel_library, cel_stack, cel_value};

/// The variables a policy's expressions may read.
pub(crate) const VARIABLES: [&str; 6] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

/// The longest `messageExpression` result kept (kube-apiserver's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// What the expressions of a policy see of one write.
#[derive(Debug)]
pub(crate) struct Inputs {
    /// `object` (null for a delete).
    pub(crate) object: Value,
    /// `oldObject` (null for a create).
    pub(crate) old_object: Value,
    /// `request`: the admission request, without its objects.
    pub(crate) request: Value,
    /// `params` (null without `paramKind`).
    pub(crate) params: Value,
    /// `namespaceObject` (null for a cluster-scoped write).
    pub(crate) namespace_object: Value,
}

/// A validation that failed (or an error under `failurePolicy: Fail`): the decision
/// the binding's `validationActions` act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What failed, as upstream words it.
    pub(crate) message: String,
    /// The validation's reason (Invalid for errors).
    pub(crate) reason: Reason,
}

/// The failures of `policy` for `inputs` (none when a match condition is false).
pub(crate) fn evaluate(policy: &Policy, inputs: &Inputs) -> Vec<Failure> {
    cel_stack::on_large_stack(|| Run::new(policy, inputs).all()).unwrap_or_else(|| {
        Run::failure_or_nothing(
            policy,
            "internal error: the CEL library failed evaluating the policy".to_owned(),
        )
    })
}

/// One evaluation of a policy.
struct Run<'p> {
    policy: &'p Policy,
    context: Context<'static, 'static>,
    units: u64,
    remaining: u64,
}

/// cel-go's wording of an evaluation error.
fn error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnsupportedBinaryOperator(..) => {
            format!("no such overload: {error}")
        }
        other => other.to_string(),
    }
}

fn resulted_in_error(expression: &str, error: &str) -> String {
    format!("expression '{expression}' resulted in error: {error}")
}

impl<'p> Run<'p> {
    fn new(policy: &'p Policy, inputs: &Inputs) -> Self {
        let mut context = cel_library::context();
        let values = [
            ("object", &inputs.object),
            ("oldObject", &inputs.old_object),
            ("request", &inputs.request),
            ("params", &inputs.params),
            ("namespaceObject", &inputs.namespace_object),
        ];
        let mut units = 0u64;
        for (name, value) in values {
            units = units.saturating_add(cel_cost::units(value));
            context.add_variable_from_value(name, cel_value::to_cel(value, &Value::Null));
        }
        context.add_variable_from_value("variables", empty_map());
        Run {
            policy,
            context,
            units,
            remaining: cel_cost::RUNTIME_BUDGET,
        }
    }

    /// `message` as a failure under `failurePolicy: Fail`, nothing under Ignore.
    fn failure_or_nothing(policy: &Policy, message: String) -> Vec<Failure> {
        if policy.ignore_failures {
            tracing::warn!(policy = %policy.name, "Failed evaluating policy, failing open: {message}");
            return Vec::new();
        }
        vec![Failure {
            message,
            reason: Reason::Invalid,
        }]
    }

    /// Compiles and runs one expression within the cost bounds.
    fn eval(&mut self, expression: &str) -> Result<CelValue, String> {
        let program = policy_programs::program(expression, &VARIABLES)?;
        let bound =
            cel_cost::runtime_bound(cel_cost::shape(program.expression()), self.units.max(1));
        if bound > cel_cost::PER_CALL_LIMIT {
            return Err(resulted_in_error(
                expression,
                "operation cancelled: actual cost limit exceeded",
            ));
        }
        if bound > self.remaining {
            return Err(resulted_in_error(
                expression,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
        }
        self.remaining -= bound;
        match catch_unwind(AssertUnwindSafe(|| program.execute(&self.context))) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(resulted_in_error(expression, &error_text(&error))),
            Err(_) => Err(resulted_in_error(
                expression,
                "internal error: the CEL library failed",
            )),
        }
    }

    fn all(mut self) -> Vec<Failure> {
        let policy = self.policy;
        let mut errors = Vec::new();
        for (_, expression) in &policy.match_conditions {
            match self.eval(expression) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => return Vec::new(),
                Ok(_) => errors.push(resulted_in_error(expression, "no such overload")),
                Err(error) => errors.push(error),
            }
        }
        if !errors.is_empty() {
            let message = if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            };
            return Self::failure_or_nothing(policy, message);
        }
        self.variables();
        let mut failures = Vec::new();
        for validation in &policy.validations {
            let outcome = self.eval(&validation.expression);
            match outcome {
                Ok(CelValue::Bool(true)) => {}
                Ok(_) => {
                    let message = self
                        .message(&validation.message_expression)
                        .or_else(|| {
                            (!validation.message.is_empty()).then(|| validation.message.clone())
                        })
                        .unwrap_or_else(|| {
                            format!("failed expression: {}", validation.expression.trim())
                        });
                    failures.push(Failure {
                        message,
                        reason: validation.reason,
                    });
                }
                Err(error) => failures.extend(Self::failure_or_nothing(policy, error)),
            }
        }
        for (_, expression) in &policy.audit_annotations {
            match self.eval(expression) {
                Ok(CelValue::String(_) | CelValue::Null) => {}
                Ok(_) => failures.extend(Self::failure_or_nothing(
                    policy,
                    format!(
                        "valueExpression '{expression}' resulted in unsupported return type: expected string or null"
                    ),
                )),
                Err(error) => failures.extend(Self::failure_or_nothing(policy, error)),
            }
        }
        failures
    }

    /// Evaluates the variables in order; one that fails is left out (reading it then fails
    /// with `no such key`).
    fn variables(&mut self) {
        let mut values: HashMap<Key, CelValue> = HashMap::new();
        for (name, expression) in &self.policy.variables {
            if let Ok(value) = self.eval(expression) {
                values.insert(Key::String(Arc::new(name.clone())), value);
                self.context.add_variable_from_value(
                    "variables",
                    CelValue::Map(Map {
                        map: Arc::new(values.clone()),
                    }),
                );
            }
        }
    }

    /// A `messageExpression`'s result when usable: a non-empty string of one line within
    /// [`MAX_MESSAGE_BYTES`], trimmed.
    fn message(&mut self, expression: &str) -> Option<String> {
        if expression.trim().is_empty() {
            return None;
        }
        let Ok(CelValue::String(text)) = self.eval(expression) else {
            return None;
        };
        let trimmed = text.trim();
        (!trimmed.is_empty() && !trimmed.contains('\n') && trimmed.len() <= MAX_MESSAGE_BYTES)
            .then(|| trimmed.to_owned())
    }
}

fn empty_map() -> CelValue {
    CelValue::Map(Map {
        map: Arc::new(HashMap::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> Policy {
        Policy::read(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn inputs(object: Value) -> Inputs {
        Inputs {
            object,
            old_object: Value::Null,
            request: json!({"operation": "CREATE"}),
            params: Value::Null,
            namespace_object: Value::Null,
        }
    }

    fn messages(spec: Value, object: Value) -> Vec<String> {
        evaluate(&policy(spec), &inputs(object))
            .into_iter()
            .map(|f| f.message)
            .collect()
    }

    #[test]
    fn failed_validations_give_message_expression_then_message_then_the_expression() {
        let spec = json!({"validations": [
            {"expression": "object.n < 1", "messageExpression": "'n is ' + string(object.n)", "message": "m"},
            {"expression": "object.n < 2", "messageExpression": "1", "message": "too big"},
            {"expression": " object.n < 3 "},
            {"expression": "object.n < 100"}]});
        assert_eq!(
            messages(spec, json!({"n": 5})),
            ["n is 5", "too big", "failed expression: object.n < 3"]
        );
    }

    #[test]
    fn match_conditions_and_variables() {
        let spec = json!({
            "matchConditions": [{"name": "a", "expression": "object.kind == 'A'"}],
            "variables": [{"name": "x", "expression": "object.n + 1"},
                          {"name": "y", "expression": "variables.x * 2"}],
            "validations": [{"expression": "variables.y < 5", "messageExpression": "string(variables.y)"}]});
        assert_eq!(messages(spec.clone(), json!({"kind": "A", "n": 2})), ["6"]);
        assert!(messages(spec, json!({"kind": "B", "n": 2})).is_empty());
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let failing = |failure: &str| {
            json!({"failurePolicy": failure,
                "matchConditions": [{"name": "a", "expression": "object.missing"}],
                "validations": [{"expression": "true"}]})
        };
        assert_eq!(
            messages(failing("Fail"), json!({})),
            ["expression 'object.missing' resulted in error: no such key: missing"]
        );
        assert!(messages(failing("Ignore"), json!({})).is_empty());
        let reason = evaluate(
            &policy(json!({"validations": [{"expression": "false", "reason": "Forbidden"}]})),
            &inputs(json!({})),
        );
        assert_eq!(reason[0].reason, Reason::Forbidden);
    }

    #[test]
    fn expensive_evaluations_are_errors_not_crashes() {
        let spec = json!({"validations": [{"expression":
            "object.l.all(a, object.l.all(b, object.l.all(c, a + b + c >= 0)))"}]});
        let big: Vec<i64> = (0..500).collect();
        let found = messages(spec, json!({"l": big}));
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with("operation cancelled: actual cost limit exceeded"));
    }
}
