//! The one part of cel-go's type checker that CRD rules most need and the `cel` crate
//! lacks: a field selected from a value whose schema declares its `properties` (and keeps
//! no unknown fields) must be one of them, else the rule fails to compile with
//! `undefined field 'name'`, as kube-apiserver's. Paths are followed from `self`/`oldSelf`
//! through fields, `[index]` and comprehension variables over lists; property names are
//! compared in their escaped form (`cel_value.rs`). Values under `metadata` are not
//! checked (kube-apiserver only declares `name` and `generateName` there).

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use serde_json::Value;

use super::cel_library::{OLD_SELF, SELF};
use super::cel_value::escape;

/// What a variable or sub-expression is known to hold.
#[derive(Clone, Copy)]
struct Known<'a> {
    schema: &'a Value,
    /// The root of a resource: `apiVersion`, `kind` and `metadata` are declared.
    resource_root: bool,
}

/// The first field `expr` selects that the schema does not declare, with the id of the
/// selecting expression.
pub(crate) fn undefined_field<'e>(
    expr: &'e IdedExpr,
    schema: &Value,
    resource_root: bool,
) -> Option<(&'e str, u64)> {
    let root = Known {
        schema,
        resource_root,
    };
    let mut scope: Vec<(&str, Option<Known<'_>>)> =
        vec![(SELF, Some(root)), (OLD_SELF, Some(root))];
    find(expr, &mut scope)
}

fn find<'e, 's>(
    expr: &'e IdedExpr,
    scope: &mut Vec<(&'e str, Option<Known<'s>>)>,
) -> Option<(&'e str, u64)> {
    match &expr.expr {
        Expr::Select(select) => {
            if let Some(known) = known_of(&select.operand, scope)
                && declares_fields(known)
                && !declares(known, &select.field)
            {
                return Some((&select.field, expr.id));
            }
            find(&select.operand, scope)
        }
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(call.args.iter())
            .find_map(|e| find(e, scope)),
        Expr::List(list) => list.elements.iter().find_map(|e| find(e, scope)),
        Expr::Map(map) => map.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => find(&e.key, scope).or_else(|| find(&e.value, scope)),
            EntryExpr::StructField(f) => find(&f.value, scope),
        }),
        Expr::Struct(structure) => structure
            .entries
            .iter()
            .find_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => find(&e.key, scope).or_else(|| find(&e.value, scope)),
                EntryExpr::StructField(f) => find(&f.value, scope),
            }),
        Expr::Comprehension(c) => {
            if let Some(found) = find(&c.iter_range, scope).or_else(|| find(&c.accu_init, scope)) {
                return Some(found);
            }
            // Over a list, the variable is an item; over a map, a key (a string).
            let element = known_of(&c.iter_range, scope).and_then(|k| {
                k.schema
                    .get("items")
                    .filter(|i| i.is_object())
                    .map(|schema| Known {
                        schema,
                        resource_root: false,
                    })
            });
            let depth = scope.len();
            scope.push((&c.accu_var, None));
            scope.push((&c.iter_var, element));
            if let Some(second) = &c.iter_var2 {
                scope.push((second, None));
            }
            let found = find(&c.loop_cond, scope)
                .or_else(|| find(&c.loop_step, scope))
                .or_else(|| find(&c.result, scope));
            scope.truncate(depth);
            found
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => None,
    }
}

/// The schema of what `expr` evaluates to, when it is a path from a variable of known
/// schema.
fn known_of<'s>(expr: &IdedExpr, scope: &[(&str, Option<Known<'s>>)]) -> Option<Known<'s>> {
    match &expr.expr {
        Expr::Ident(name) => scope.iter().rev().find(|(n, _)| n == name)?.1,
        Expr::Select(select) if !select.test => {
            let parent = known_of(&select.operand, scope)?;
            if parent.resource_root && select.field == "metadata" {
                return None;
            }
            let properties = parent.schema.get("properties").and_then(Value::as_object)?;
            let schema = properties
                .iter()
                .find(|(name, _)| escape(name).as_deref() == Some(select.field.as_str()))?
                .1;
            Some(Known {
                schema,
                resource_root: is_embedded(schema),
            })
        }
        Expr::Call(call) if call.func_name == "_[_]" && call.args.len() == 2 => {
            let parent = known_of(&call.args[0], scope)?;
            let schema = parent
                .schema
                .get("items")
                .or_else(|| parent.schema.get("additionalProperties"))
                .filter(|s| s.is_object())?;
            Some(Known {
                schema,
                resource_root: is_embedded(schema),
            })
        }
        _ => None,
    }
}

fn is_embedded(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
}

/// Whether the schema fixes its fields: `properties`, without unknown fields kept.
fn declares_fields(known: Known<'_>) -> bool {
    let schema = known.schema;
    schema.get("properties").is_some_and(Value::is_object)
        && schema.get("additionalProperties").is_none()
        && schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            != Some(true)
        && schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            != Some(true)
}

fn declares(known: Known<'_>, field: &str) -> bool {
    if known.resource_root && matches!(field, "apiVersion" | "kind" | "metadata") {
        return true;
    }
    known
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| {
            properties
                .keys()
                .any(|name| escape(name).as_deref() == Some(field))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(source: &str, schema: &Value, root: bool) -> Option<String> {
        let program = super::super::cel_library::environment()
            .compile(source)
            .unwrap();
        undefined_field(program.expression(), schema, root).map(|(name, _)| name.to_owned())
    }

    #[test]
    fn fields_the_schema_lacks_are_found_along_paths() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "foo-bar": {"type": "string"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
        assert_eq!(
            check(
                "self.spec.replicas > 0 && self.spec.foo__dash__bar != ''",
                &schema,
                true
            ),
            None
        );
        assert_eq!(
            check("self.spec.replica > 0", &schema, true).as_deref(),
            Some("replica")
        );
        assert_eq!(
            check("has(self.spec.nope)", &schema, true).as_deref(),
            Some("nope")
        );
        assert_eq!(
            check("self.spec.ports.all(p, p.prt > 0)", &schema, true).as_deref(),
            Some("prt")
        );
        assert_eq!(check("self.spec.ports[0].port > 0", &schema, true), None);
        assert_eq!(
            check(
                "self.spec.labels.anything == 'x' && self.spec.free.x.y == 1",
                &schema,
                true
            ),
            None
        );
        assert_eq!(
            check(
                "self.metadata.name == 'x' && self.kind == 'W'",
                &schema,
                true
            ),
            None
        );
        assert_eq!(
            check("self.kind == 'W'", &schema, false).as_deref(),
            Some("kind")
        );
    }
}
