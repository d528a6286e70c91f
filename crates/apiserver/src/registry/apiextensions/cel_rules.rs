//! The `x-kubernetes-validations` rules of a CRD version's schema, compiled once when the
//! CRD is accepted (kube-apiserver's `schema/cel/compilation.go` and the rule checks of
//! `ValidateCustomResourceDefinition`) and kept in
//! [`ResourceDef::rules`](crate::registry::ResourceDef), so validating an object never
//! parses a rule.
//!
//! A rule is compiled with the environment of `cel_library.rs`. What the `cel` crate has
//! no checker for is checked here: an identifier other than `self`, `oldSelf` or a
//! comprehension's variables is an `undeclared reference`, a field the schema does not
//! declare an `undefined field` (`cel_fields.rs`), a rule that obviously yields no bool (a
//! literal, arithmetic) `must evaluate to a bool`, and a rule whose estimated cost
//! is over the per-call limit is refused (`cel_cost.rs`). A rule's `fieldPath` must name a
//! field of the schema, its `reason` one of the four kube-apiserver knows.

use std::collections::BTreeMap;

use cel::Program;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kubeclient_machinery::StatusCause;
use serde_json::Value;

use super::cel_cost::{self, CostShape};
use super::cel_fields;
use super::cel_library::{self, OLD_SELF, SELF};
use super::cel_stack;

/// What a failed rule reports (`reason`), as kube-apiserver's `FieldValueErrorReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// `FieldValueInvalid` (the default): `Invalid value: "<type>": <message>`.
    Invalid,
    /// `FieldValueForbidden`: `Forbidden: <message>`.
    Forbidden,
    /// `FieldValueRequired`: `Required value: <message>`.
    Required,
    /// `FieldValueDuplicate`: `Duplicate value: "<type>"`.
    Duplicate,
}

/// The reasons a rule may name, in kube-apiserver's order.
const REASONS: [&str; 4] = [
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    /// The rule's source text.
    pub source: String,
    /// Its program; `None` for a blank rule, which is skipped as upstream.
    pub program: Option<Program>,
    /// `message`, trimmed (empty when not given).
    pub message: String,
    /// `messageExpression`, with its source text.
    pub message_expression: Option<(String, Program)>,
    /// `fieldPath` normalized to a field path (`spec.replicas`), relative to the node.
    pub field_path: Option<String>,
    /// `reason`.
    pub reason: Reason,
    /// Whether it reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// `optionalOldSelf`: evaluated on create too, with `oldSelf` an optional.
    pub optional_old_self: bool,
    /// What bounds its evaluation's cost.
    pub cost: CostShape,
}

/// The rules of one schema node and of the nodes below it that have any.
#[derive(Debug, Default)]
pub(crate) struct RuleNode {
    /// The node's `type` (`object`, `array`, `string`...), shown in `Invalid value`.
    pub schema_type: String,
    /// The node's own rules.
    pub rules: Vec<CompiledRule>,
    /// Properties whose subtree has rules.
    pub properties: BTreeMap<String, RuleNode>,
    /// `additionalProperties`, when its subtree has rules.
    pub additional: Option<Box<RuleNode>>,
    /// `items`, when its subtree has rules.
    pub items: Option<Box<RuleNode>>,
    /// `x-kubernetes-list-map-keys` of a `x-kubernetes-list-type: map` list: the keys
    /// that pair an item with its old version (other lists have no `oldSelf` per item).
    pub list_map_keys: Option<Vec<String>>,
    /// `x-kubernetes-map-type: atomic`: its values have no `oldSelf`.
    pub atomic_map: bool,
}

/// The compiled rules of one CRD version (empty when its schema has none).
#[derive(Debug, Default)]
pub(crate) struct CompiledRules {
    /// The root node, when any rule is declared.
    pub root: Option<RuleNode>,
}

/// Compiles every rule of `schema`; `path` prefixes the causes' fields
/// (`spec.validation.openAPIV3Schema`).
///
/// # Errors
///
/// Every rule that does not compile, with kube-apiserver's messages.
pub(crate) fn compile(schema: &Value, path: &str) -> Result<CompiledRules, Vec<StatusCause>> {
    let mut causes = Vec::new();
    let root = compile_node(schema, path, None, true, &mut causes);
    if causes.is_empty() {
        Ok(CompiledRules { root })
    } else {
        Err(causes)
    }
}

/// The causes of every CRD version's rules that fail (for the CRD's validation). When all
/// versions share one schema, kube-apiserver's internal form holds it once, at
/// `spec.validation.openAPIV3Schema`, and the causes name that path.
pub(crate) fn causes(spec: &Value) -> Vec<StatusCause> {
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let schemas: Vec<Option<&Value>> = versions
        .iter()
        .map(|version| version.pointer("/schema/openAPIV3Schema"))
        .collect();
    if let Some(Some(first)) = schemas.first()
        && schemas.iter().all(|schema| *schema == Some(*first))
    {
        return compile(first, "spec.validation.openAPIV3Schema")
            .err()
            .unwrap_or_default();
    }
    let mut causes = Vec::new();
    for (index, schema) in schemas.iter().enumerate() {
        if let Some(schema) = schema {
            let path = format!("spec.versions[{index}].schema.openAPIV3Schema");
            causes.extend(compile(schema, &path).err().unwrap_or_default());
        }
    }
    causes
}

/// Compiles the rules of `schema` and below; `uncorrelatable` is the path of the nearest
/// ancestor whose elements have no old value (a list that is not a map list, an atomic
/// map), where transition rules are refused.
fn compile_node(
    schema: &Value,
    path: &str,
    uncorrelatable: Option<&str>,
    resource_root: bool,
    causes: &mut Vec<StatusCause>,
) -> Option<RuleNode> {
    let embedded = |s: &Value| {
        s.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true)
    };
    let map_list = schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
    let atomic_map = schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    let mut node = RuleNode {
        schema_type: schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        ..RuleNode::default()
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let child = format!("{path}.properties[{name}]");
            if let Some(sub) =
                compile_node(property, &child, uncorrelatable, embedded(property), causes)
            {
                node.properties.insert(name.clone(), sub);
            }
        }
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let child = format!("{path}.additionalProperties");
        let below = if atomic_map {
            Some(path)
        } else {
            uncorrelatable
        };
        node.additional =
            compile_node(additional, &child, below, embedded(additional), causes).map(Box::new);
    }
    if let Some(items) = schema.get("items").filter(|a| a.is_object()) {
        let child = format!("{path}.items");
        let below = if map_list { uncorrelatable } else { Some(path) };
        node.items = compile_node(items, &child, below, embedded(items), causes).map(Box::new);
    }
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for (index, rule) in rules.iter().enumerate() {
            let rule_path = format!("{path}.x-kubernetes-validations[{index}]");
            if let Some(compiled) = compile_rule(
                schema,
                rule,
                &rule_path,
                uncorrelatable,
                resource_root,
                causes,
            ) {
                node.rules.push(compiled);
            }
        }
    }
    if node.rules.is_empty()
        && node.properties.is_empty()
        && node.additional.is_none()
        && node.items.is_none()
    {
        return None;
    }
    if map_list {
        node.list_map_keys = Some(
            schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        );
    }
    node.atomic_map = atomic_map;
    Some(node)
}

/// Why a rule's or a policy validation's `message` is refused, if it is.
pub(crate) fn message_problem(message: &str) -> Option<&'static str> {
    if message.trim().is_empty() {
        Some("message must be non-empty if specified")
    } else if message.contains('\n') {
        Some("message must not contain line breaks")
    } else {
        None
    }
}

fn compile_rule(
    schema: &Value,
    rule: &Value,
    path: &str,
    uncorrelatable: Option<&str>,
    resource_root: bool,
    causes: &mut Vec<StatusCause>,
) -> Option<CompiledRule> {
    let source = rule.get("rule").and_then(Value::as_str).unwrap_or("");
    let mut failed = false;
    if let Some(message) = rule.get("message").and_then(Value::as_str)
        && let Some(problem) = message_problem(message)
    {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {}: {problem}", go_quote(message)),
            &format!("{path}.message"),
        ));
        failed = true;
    }
    let program = if source.trim().is_empty() {
        causes.push(StatusCause::new(
            "FieldValueRequired",
            "Required value: rule is not specified",
            &format!("{path}.rule"),
        ));
        failed = true;
        None
    } else {
        match compile_expression(source, true, schema, resource_root) {
            Ok(program) => Some(program),
            Err(message) => {
                causes.push(StatusCause::new(
                    "FieldValueInvalid",
                    &format!("Invalid value: {}: {message}", go_quote(source)),
                    &format!("{path}.rule"),
                ));
                failed = true;
                None
            }
        }
    };
    let message_expression = match rule.get("messageExpression").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => {
            match compile_expression(text, false, schema, resource_root) {
                Ok(program) => Some((text.to_owned(), program)),
                Err(message) => {
                    let message = message.replacen(
                        "compilation failed",
                        "messageExpression compilation failed",
                        1,
                    );
                    causes.push(StatusCause::new(
                        "FieldValueInvalid",
                        &format!("Invalid value: {}: {message}", go_quote(text)),
                        &format!("{path}.messageExpression"),
                    ));
                    failed = true;
                    None
                }
            }
        }
        _ => None,
    };
    let reason = match rule.get("reason").and_then(Value::as_str) {
        None | Some("FieldValueInvalid") => Reason::Invalid,
        Some("FieldValueForbidden") => Reason::Forbidden,
        Some("FieldValueRequired") => Reason::Required,
        Some("FieldValueDuplicate") => Reason::Duplicate,
        Some(other) => {
            let supported: Vec<String> = REASONS.iter().map(|r| format!("{r:?}")).collect();
            causes.push(StatusCause::new(
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {other:?}: supported values: {}",
                    supported.join(", ")
                ),
                &format!("{path}.reason"),
            ));
            failed = true;
            Reason::Invalid
        }
    };
    let field_path = match rule.get("fieldPath").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => match normalize_field_path(text, schema) {
            Ok(normalized) => Some(normalized),
            Err(problem) => {
                causes.push(StatusCause::new(
                    "FieldValueInvalid",
                    &format!("Invalid value: {text:?}: fieldPath must be a valid path: {problem}"),
                    &format!("{path}.fieldPath"),
                ));
                failed = true;
                None
            }
        },
        _ => None,
    };
    let uses_old_self = program
        .as_ref()
        .is_some_and(|p| reads(p.expression(), OLD_SELF));
    let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    if uses_old_self && let Some(within) = uncorrelatable {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: {}: oldSelf cannot be used on the uncorrelatable portion of the schema within {within}",
                go_quote(source)
            ),
            &format!("{path}.rule"),
        ));
        failed = true;
    }
    if optional_old_self && !uses_old_self && program.is_some() {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            "Invalid value: true: may not be set if rule does not use oldSelf",
            &format!("{path}.optionalOldSelf"),
        ));
        failed = true;
    }
    let cost = program
        .as_ref()
        .map(|p| cel_cost::shape(p.expression()))
        .unwrap_or_default();
    if let Some(program) = &program {
        let estimate = cel_cost::estimate(program.expression(), schema);
        if estimate > cel_cost::PER_CALL_LIMIT {
            causes.push(StatusCause::new(
                "FieldValueForbidden",
                &format!(
                    "Forbidden: estimated rule cost exceeds budget by factor of {} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                    cel_cost::factor(estimate)
                ),
                &format!("{path}.rule"),
            ));
            failed = true;
        }
    }
    if failed {
        return None;
    }
    Some(CompiledRule {
        source: source.to_owned(),
        program,
        message: rule
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned(),
        message_expression,
        field_path,
        reason,
        uses_old_self,
        optional_old_self,
        cost,
    })
}

/// Compiles one expression; `boolean` asks that it plausibly yields a bool (a rule, not a
/// `messageExpression`).
///
/// # Errors
///
/// The text kube-apiserver gives after the field (`compilation failed: ERROR: ...`).
fn compile_expression(
    source: &str,
    boolean: bool,
    schema: &Value,
    resource_root: bool,
) -> Result<Program, String> {
    let program = compile_program(source, &[SELF, OLD_SELF])?;
    if let Some((name, id)) =
        cel_fields::undefined_field(program.expression(), schema, resource_root)
    {
        return Err(issue(
            source,
            &program,
            id,
            &format!("undefined field '{name}'"),
        ));
    }
    if boolean && !may_be_bool(program.expression()) {
        return Err("cel expression must evaluate to a bool".to_owned());
    }
    Ok(program)
}

/// Compiles one CEL expression that may read `variables` (besides CEL's type names and the
/// libraries' namespaces): refused before parsing when too deep or long
/// (`cel_stack::check_nesting`), parsed on a large stack, its identifiers checked.
/// Shared by CRD validation rules and admission policies.
///
/// # Errors
///
/// The text kube-apiserver gives after the field (`compilation failed: ERROR: ...`).
pub(crate) fn compile_program(source: &str, variables: &[&str]) -> Result<Program, String> {
    if let Some(problem) = cel_stack::check_nesting(source) {
        return Err(format!("compilation failed: {problem}"));
    }
    cel_stack::on_large_stack(|| compile_on_large_stack(source, variables)).unwrap_or_else(|| {
        Err(
            "compilation failed: the CEL parser failed on this expression (internal error)"
                .to_owned(),
        )
    })
}

/// [`compile_program`] for a caller already on a thread of `cel_stack::on_large_stack`
/// (no second thread); the expression's size is still checked first.
///
/// # Errors
///
/// As [`compile_program`].
pub(crate) fn compile_on_large_stack(source: &str, variables: &[&str]) -> Result<Program, String> {
    if let Some(problem) = cel_stack::check_nesting(source) {
        return Err(format!("compilation failed: {problem}"));
    }
    let program = cel_library::environment()
        .compile(source)
        .map_err(|errors| format!("compilation failed: {}", go_issues(&errors.to_string())))?;
    let mut undeclared = Vec::new();
    let mut scope = variables.to_vec();
    undeclared_references(program.expression(), &mut scope, &mut undeclared);
    if let Some(&(name, id)) = undeclared.first() {
        return Err(issue(
            source,
            &program,
            id,
            &format!("undeclared reference to '{name}' (in container '')"),
        ));
    }
    Ok(program)
}

/// A compile error at expression `id`, as cel-go prints an issue: position, message, the
/// line and a caret under the column.
fn issue(source: &str, program: &Program, id: u64, message: &str) -> String {
    let (line, column) = program
        .source_info()
        .offset_for(id)
        .map(|(start, _)| position_of(source, start as usize))
        .unwrap_or((1, 1));
    let mut text = format!("compilation failed: ERROR: <input>:{line}:{column}: {message}");
    if let Some(shown) = source.lines().nth(line - 1) {
        text.push_str(&format!("\n | {shown}\n | {:.>column$}", "^"));
    }
    text
}

/// cel-go's issue text: its snippet lines start with ` | `.
fn go_issues(text: &str) -> String {
    text.replace("\n| ", "\n | ")
}

/// The 1-based line and column of byte `offset` in `source`.
fn position_of(source: &str, offset: usize) -> (usize, usize) {
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Names an expression may use without declaring them: CEL's type names and the
/// namespaces of the libraries' functions.
const DECLARED: [&str; 17] = [
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional",
    "math",
    "strings",
    "sets",
    "format",
    "ip",
];

/// Collects the identifiers `expr` reads that nothing declares, with their expression ids.
fn undeclared_references<'a>(
    expr: &'a IdedExpr,
    scope: &mut Vec<&'a str>,
    found: &mut Vec<(&'a str, u64)>,
) {
    match &expr.expr {
        Expr::Ident(name) => {
            if !DECLARED.contains(&name.as_str()) && !scope.contains(&name.as_str()) {
                found.push((name, expr.id));
            }
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                undeclared_references(target, scope, found);
            }
            for arg in &call.args {
                undeclared_references(arg, scope, found);
            }
        }
        Expr::Select(select) => undeclared_references(&select.operand, scope, found),
        Expr::List(list) => {
            for element in &list.elements {
                undeclared_references(element, scope, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    undeclared_references(&entry.key, scope, found);
                    undeclared_references(&entry.value, scope, found);
                }
            }
        }
        Expr::Struct(structure) => {
            for entry in &structure.entries {
                match &entry.expr {
                    EntryExpr::StructField(field) => {
                        undeclared_references(&field.value, scope, found);
                    }
                    EntryExpr::MapEntry(entry) => {
                        undeclared_references(&entry.key, scope, found);
                        undeclared_references(&entry.value, scope, found);
                    }
                }
            }
        }
        Expr::Comprehension(comprehension) => {
            undeclared_references(&comprehension.iter_range, scope, found);
            let depth = scope.len();
            scope.push(&comprehension.accu_var);
            undeclared_references(&comprehension.accu_init, scope, found);
            scope.push(&comprehension.iter_var);
            if let Some(second) = &comprehension.iter_var2 {
                scope.push(second);
            }
            undeclared_references(&comprehension.loop_cond, scope, found);
            undeclared_references(&comprehension.loop_step, scope, found);
            undeclared_references(&comprehension.result, scope, found);
            scope.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Whether `expr` reads the variable `name`.
fn reads(expr: &IdedExpr, name: &str) -> bool {
    match &expr.expr {
        Expr::Ident(ident) => ident == name,
        Expr::Call(call) => {
            call.target.as_deref().is_some_and(|t| reads(t, name))
                || call.args.iter().any(|a| reads(a, name))
        }
        Expr::Select(select) => reads(&select.operand, name),
        Expr::List(list) => list.elements.iter().any(|e| reads(e, name)),
        Expr::Map(map) => map.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => reads(&e.key, name) || reads(&e.value, name),
            EntryExpr::StructField(f) => reads(&f.value, name),
        }),
        Expr::Struct(structure) => structure.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => reads(&e.key, name) || reads(&e.value, name),
            EntryExpr::StructField(f) => reads(&f.value, name),
        }),
        Expr::Comprehension(c) => {
            reads(&c.iter_range, name)
                || reads(&c.accu_init, name)
                || reads(&c.loop_cond, name)
                || reads(&c.loop_step, name)
                || reads(&c.result, name)
        }
        Expr::Literal(_) | Expr::Unspecified => false,
    }
}

/// Whether `expr` may yield a bool: false only for the forms that never do (a non-bool
/// literal, a list or map literal, arithmetic).
pub(crate) fn may_be_bool(expr: &IdedExpr) -> bool {
    use cel::common::ast::LiteralValue;
    match &expr.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => true,
        Expr::Literal(_) | Expr::List(_) | Expr::Map(_) | Expr::Struct(_) => false,
        Expr::Call(call) => !matches!(
            call.func_name.as_str(),
            "_+_"
                | "_-_"
                | "_*_"
                | "_/_"
                | "_%_"
                | "-_"
                | "size"
                | "string"
                | "int"
                | "uint"
                | "double"
        ),
        _ => true,
    }
}

/// Turns a rule's `fieldPath` (`.spec.replicas`, `.labels['a.b']`) into a field path
/// relative to the node (`spec.replicas`, `labels[a.b]`), checking that it names a field
/// of `schema`, as kube-apiserver's `ValidFieldPath`.
fn normalize_field_path(text: &str, schema: &Value) -> Result<String, String> {
    let mut node = schema;
    let mut out = String::new();
    let mut rest = text;
    let step = |name: &str, out: &mut String, node: &mut &Value| -> Result<(), String> {
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            let Some(next) = properties.get(name) else {
                return Err("does not refer to a valid field".to_owned());
            };
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            *node = next;
        } else if let Some(additional) = node.get("additionalProperties").filter(|a| a.is_object())
        {
            out.push_str(&format!("[{name}]"));
            *node = additional;
        } else {
            return Err("does not refer to a valid field".to_owned());
        }
        Ok(())
    };
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[', ']']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return Err("unexpected end of JSON path".to_owned());
            }
            step(name, &mut out, &mut node)?;
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let Some(end) = after.find("']") else {
                return Err("unexpected end of JSON path".to_owned());
            };
            let name = after[..end].replace("\\'", "'").replace("\\\\", "\\");
            step(&name, &mut out, &mut node)?;
            rest = &after[end + 2..];
        } else {
            let token: String = rest
                .chars()
                .take_while(|c| !matches!(c, '.' | '['))
                .collect();
            return Err(format!("expected [ or . but got: {token}"));
        }
    }
    Ok(out)
}

/// A string quoted as Go's `%q` would, shortened when huge.
pub(crate) fn go_quote(text: &str) -> String {
    const SHOWN: usize = 256;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema_with(rules: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": rules,
            "properties": {"replicas": {"type": "integer"}, "minReplicas": {"type": "integer"},
                           "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}})
    }

    #[test]
    fn a_valid_rule_compiles_with_its_parts() {
        let schema = schema_with(json!([{"rule": "self.minReplicas <= self.replicas",
            "fieldPath": ".replicas", "reason": "FieldValueForbidden", "message": " too few "}]));
        let compiled = compile(&schema, "s").unwrap();
        let spec = &compiled.root.unwrap().properties["spec"];
        let rule = &spec.rules[0];
        assert_eq!(rule.field_path.as_deref(), Some("replicas"));
        assert_eq!(rule.reason, Reason::Forbidden);
        assert_eq!(rule.message, "too few");
        assert!(!rule.uses_old_self);
    }

    #[test]
    fn syntax_errors_and_undeclared_names_fail_with_the_path() {
        let schema = schema_with(json!([{"rule": "self.replicas =="}, {"rule": "foo == 1"},
            {"rule": "self == oldSelf"}, {"rule": "1 + 2"}]));
        let causes = compile(&schema, "spec.validation.openAPIV3Schema").unwrap_err();
        assert_eq!(causes.len(), 3, "{causes:?}");
        assert_eq!(
            causes[0].field,
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
        assert!(
            causes[0].message.starts_with(
                "Invalid value: \"self.replicas ==\": compilation failed: ERROR: <input>:1:"
            ),
            "{}",
            causes[0].message
        );
        assert!(
            causes[1].message.contains(
                "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"
            ),
            "{}",
            causes[1].message
        );
        assert!(
            causes[2]
                .message
                .ends_with("cel expression must evaluate to a bool")
        );
    }

    #[test]
    fn field_paths_and_reasons_are_checked() {
        let schema = schema_with(json!([{"rule": "true", "fieldPath": ".nope"},
            {"rule": "true", "fieldPath": ".labels['a.b']"},
            {"rule": "true", "reason": "Bogus"}]));
        let causes = compile(&schema, "p").unwrap_err();
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(
            causes[0].message,
            "Invalid value: \".nope\": fieldPath must be a valid path: does not refer to a valid field"
        );
        assert!(
            causes[1]
                .message
                .starts_with("Unsupported value: \"Bogus\"")
        );
        let ok = schema_with(json!([{"rule": "true", "fieldPath": ".labels['a.b']"}]));
        let compiled = compile(&ok, "p").unwrap();
        let rule = &compiled.root.unwrap().properties["spec"].rules[0];
        assert_eq!(rule.field_path.as_deref(), Some("labels[a.b]"));
    }

    #[test]
    fn transition_rules_are_refused_where_no_old_value_exists() {
        let schema = json!({"type": "object", "properties": {"list": {"type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}},
            "keyed": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}});
        let causes = compile(&schema, "s").unwrap_err();
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(
            causes[0].message,
            "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within s.properties[list]"
        );
        let empty = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": " "}, {"rule": "true", "message": "a\nb"}, {"rule": "true", "optionalOldSelf": true}]});
        let fields: Vec<String> = compile(&empty, "s")
            .unwrap_err()
            .into_iter()
            .map(|c| format!("{} {}", c.field, c.message))
            .collect();
        assert_eq!(
            fields,
            [
                "s.x-kubernetes-validations[0].rule Required value: rule is not specified",
                "s.x-kubernetes-validations[1].message Invalid value: \"a\\nb\": message must not contain line breaks",
                "s.x-kubernetes-validations[2].optionalOldSelf Invalid value: true: may not be set if rule does not use oldSelf",
            ]
        );
    }

    #[test]
    fn transition_rules_are_recognized_and_comprehension_variables_declared() {
        let schema = json!({"type": "object", "properties": {"items": {"type": "array",
            "maxItems": 10, "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, x != '') && self == oldSelf"}]}}});
        let compiled = compile(&schema, "p").unwrap();
        assert!(compiled.root.unwrap().properties["items"].rules[0].uses_old_self);
        let namespaced = json!({"type": "string", "x-kubernetes-validations": [
            {"rule": "ip.isCanonical(self) && math.abs(-1) == 1"}]});
        assert!(compile(&namespaced, "p").is_ok());
    }
}
