//! Bounds on what a CEL rule may cost. The `cel` crate has no cost tracking and no way to
//! interrupt an evaluation, so the server bounds a rule twice:
//!
//! - at CRD create/update ([`estimate`]): a rule whose worst case, with the sizes the
//!   schema allows (`maxItems`, `maxProperties`; unbounded lists and maps are as long as a
//!   3 MiB request can make them, as kube-apiserver assumes), is over
//!   [`PER_CALL_LIMIT`] is refused with kube-apiserver's `estimated rule cost exceeds
//!   budget` message. Only comprehensions (`all`, `exists`, `map`, `filter`...) multiply
//!   the estimate here; kube-apiserver also prices string operations by length.
//! - before each evaluation ([`runtime_bound`]): the rule's size times
//!   `(units + 1)^amplifiers`, where `units` measures the values it reads (nodes, and string
//!   bytes / 10) and `amplifiers` counts its comprehensions and the calls that can grow a
//!   value by more than a constant (`replace`, `join`, `split`), bounds the steps of the
//!   interpreter, whose every step is bounded by its inputs. A bound over
//!   [`PER_CALL_LIMIT`] is not evaluated (kube-apiserver's "call cost exceeds limit"
//!   error), and the bounds of one object's rules together may not pass
//!   [`RUNTIME_BUDGET`]. So no object and no rule makes the server compute for long.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use serde_json::Value;

/// The most a single rule evaluation may cost (kube-apiserver's `PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// The most all rule evaluations of one object may cost (kube-apiserver's
/// `RuntimeCELCostBudget`).
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;

/// The largest request body kube-apiserver accepts, which bounds unbounded lists.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// What bounds the evaluation of one expression: its size and how many of its parts can
/// multiply the work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CostShape {
    /// Expression nodes.
    pub nodes: u64,
    /// Comprehensions and size-multiplying calls.
    pub amplifiers: u32,
}

/// Calls whose result can be larger than their inputs by more than a constant.
const AMPLIFYING_CALLS: [&str; 3] = ["replace", "join", "split"];

/// The [`CostShape`] of an expression.
pub(crate) fn shape(expr: &IdedExpr) -> CostShape {
    let mut out = CostShape::default();
    visit(expr, &mut |node| {
        out.nodes += 1;
        match &node.expr {
            Expr::Comprehension(_) => out.amplifiers += 1,
            Expr::Call(call) if AMPLIFYING_CALLS.contains(&call.func_name.as_str()) => {
                out.amplifiers += 1;
            }
            _ => {}
        }
    });
    out
}

/// The bound on the interpreter's steps for an expression of `shape` reading values of
/// `units` (see [`units`]); saturates at `u64::MAX`.
pub(crate) fn runtime_bound(shape: CostShape, units: u64) -> u64 {
    let mut bound = shape.nodes.max(1);
    for _ in 0..shape.amplifiers {
        bound = bound.saturating_mul(units.saturating_add(1));
    }
    bound
}

/// The size of a value for [`runtime_bound`]: one per node, and a tenth of each string's
/// bytes.
pub(crate) fn units(value: &Value) -> u64 {
    match value {
        Value::String(s) => 1 + (s.len() as u64) / 10,
        Value::Array(items) => 1 + items.iter().map(units).sum::<u64>(),
        Value::Object(map) => {
            1 + map
                .iter()
                .map(|(k, v)| (k.len() as u64) / 10 + units(v))
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// How kube-apiserver states by how much an estimate is over the limit.
pub(crate) fn factor(estimate: u64) -> String {
    let ratio = estimate as f64 / PER_CALL_LIMIT as f64;
    if ratio > 100.0 {
        "more than 100x".to_owned()
    } else {
        format!("{ratio:.1}x")
    }
}

/// The worst-case cost of `expr` declared on `schema`: each node costs one, and a
/// comprehension's body is paid once per element of the largest range the schema allows.
pub(crate) fn estimate(expr: &IdedExpr, schema: &Value) -> u64 {
    let mut scope: Vec<(&str, Option<&Value>)> =
        vec![("self", Some(schema)), ("oldSelf", Some(schema))];
    cost(expr, &mut scope)
}

fn cost<'a>(expr: &'a IdedExpr, scope: &mut Vec<(&'a str, Option<&'a Value>)>) -> u64 {
    match &expr.expr {
        Expr::Comprehension(c) => {
            let range_schema = schema_of(&c.iter_range, scope);
            let elements = match (&c.iter_range.expr, range_schema) {
                (Expr::List(list), _) => list.elements.len() as u64,
                (_, Some(schema)) => max_elements(schema),
                // A range the schema does not bound (a function's result) is priced at
                // one element here; the runtime bound covers it.
                (_, None) => 1,
            };
            let element_schema =
                range_schema.and_then(|s| s.get("items").or_else(|| s.get("additionalProperties")));
            let depth = scope.len();
            let mut total = cost(&c.iter_range, scope).saturating_add(cost(&c.accu_init, scope));
            scope.push((&c.accu_var, None));
            scope.push((&c.iter_var, element_schema.filter(|s| s.is_object())));
            if let Some(second) = &c.iter_var2 {
                scope.push((second, None));
            }
            let body = cost(&c.loop_cond, scope).saturating_add(cost(&c.loop_step, scope));
            total = total
                .saturating_add(elements.saturating_mul(body))
                .saturating_add(cost(&c.result, scope));
            scope.truncate(depth);
            total
        }
        _ => {
            let mut total = 1u64;
            for child in children(expr) {
                total = total.saturating_add(cost(child, scope));
            }
            total
        }
    }
}

/// The schema of the value `expr` names, when it is a path from a variable of known schema
/// (`self.spec.items`, `x.ports`).
fn schema_of<'a>(expr: &IdedExpr, scope: &[(&'a str, Option<&'a Value>)]) -> Option<&'a Value> {
    match &expr.expr {
        Expr::Ident(name) => scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, s)| *s),
        Expr::Select(select) if !select.test => {
            let parent = schema_of(&select.operand, scope)?;
            parent
                .get("properties")
                .and_then(|p| p.get(&select.field))
                .or_else(|| parent.get("additionalProperties").filter(|a| a.is_object()))
        }
        _ => None,
    }
}

/// The most elements a list or map of `schema` can hold.
fn max_elements(schema: &Value) -> u64 {
    let declared = schema
        .get("maxItems")
        .or_else(|| schema.get("maxProperties"))
        .and_then(Value::as_u64);
    if let Some(max) = declared {
        return max;
    }
    // The smallest serialized element: `"",` for strings, `{},` for objects, `0,` for
    // numbers and booleans (a map entry also needs its key, `"":`).
    let element = schema
        .get("items")
        .or_else(|| schema.get("additionalProperties"))
        .filter(|s| s.is_object());
    let mut smallest = match element.and_then(|e| e.get("type")).and_then(Value::as_str) {
        Some("string" | "object" | "array") => 3,
        _ => 2,
    };
    if schema.get("additionalProperties").is_some() {
        smallest += 3;
    }
    MAX_REQUEST_BYTES / smallest
}

/// The direct sub-expressions of `expr`.
fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    let mut out = Vec::new();
    match &expr.expr {
        Expr::Call(call) => {
            out.extend(call.target.as_deref());
            out.extend(call.args.iter());
        }
        Expr::Select(select) => out.push(&*select.operand),
        Expr::List(list) => out.extend(list.elements.iter()),
        Expr::Map(map) => {
            for entry in &map.entries {
                push_entry(&entry.expr, &mut out);
            }
        }
        Expr::Struct(structure) => {
            for entry in &structure.entries {
                push_entry(&entry.expr, &mut out);
            }
        }
        Expr::Comprehension(c) => {
            out.extend([
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]);
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    out
}

fn push_entry<'a>(entry: &'a EntryExpr, out: &mut Vec<&'a IdedExpr>) {
    match entry {
        EntryExpr::MapEntry(e) => {
            out.push(&e.key);
            out.push(&e.value);
        }
        EntryExpr::StructField(f) => out.push(&f.value),
    }
}

/// Calls `f` on every node of `expr`.
fn visit(expr: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
    f(expr);
    for child in children(expr) {
        visit(child, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(source: &str) -> IdedExpr {
        super::super::cel_library::environment()
            .compile(source)
            .unwrap()
            .expression()
            .clone()
    }

    #[test]
    fn bounded_lists_are_cheap_and_nested_unbounded_ones_are_not() {
        let schema = json!({"type": "object", "properties": {
            "small": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "big": {"type": "array", "items": {"type": "string"}}}});
        assert!(
            estimate(
                &parse("self.small.all(x, self.small.all(y, x != y))"),
                &schema
            ) < PER_CALL_LIMIT
        );
        let hostile = parse("self.big.all(x, self.big.all(y, x != y))");
        assert!(estimate(&hostile, &schema) > PER_CALL_LIMIT);
        assert_eq!(factor(estimate(&hostile, &schema)), "more than 100x");
    }

    #[test]
    fn the_runtime_bound_grows_with_comprehensions_and_input() {
        let once = shape(&parse("self.all(x, x > 0)"));
        let twice = shape(&parse("self.all(x, self.all(y, x != y))"));
        assert_eq!(once.amplifiers, 1);
        assert_eq!(twice.amplifiers, 2);
        let list = Value::Array((0..2000).map(|i| json!(i)).collect());
        let n = units(&list);
        assert!(runtime_bound(once, n) < PER_CALL_LIMIT);
        assert!(runtime_bound(twice, n) > PER_CALL_LIMIT);
    }
}
