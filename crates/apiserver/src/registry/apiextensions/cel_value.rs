//! JSON values as CEL sees them in a rule (kube-apiserver's `UnstructuredToVal`): objects
//! with `properties` are CEL objects whose field names are escaped (`foo-bar` is
//! `foo__dash__bar`, a CEL keyword such as `namespace` is `__namespace__`), other objects
//! are maps by their keys; a `number` field holding an integer is a double.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value as CelValue;
use cel::objects::{Key, Map};
use serde_json::Value;

/// Words CEL reserves, which a property name is escaped from (`__in__`).
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as a rule names it, or `None` when it cannot be (characters other than
/// letters, digits, `_`, `.`, `-` and `/`).
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// `value` (described by `schema`) as a CEL value.
pub(crate) fn to_cel(value: &Value, schema: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            let number_type = schema.get("type").and_then(Value::as_str) == Some("number");
            match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if !number_type => CelValue::Int(i),
                (None, Some(u)) if !number_type => CelValue::UInt(u),
                _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            CelValue::List(Arc::new(
                items.iter().map(|item| to_cel(item, item_schema)).collect(),
            ))
        }
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").unwrap_or(&Value::Null);
            let mut out = HashMap::with_capacity(map.len());
            for (key, sub) in map {
                let (name, sub_schema) = match properties {
                    Some(properties) => match escape(key) {
                        Some(name) => (name, properties.get(key).unwrap_or(&Value::Null)),
                        None => continue,
                    },
                    None => (key.clone(), additional),
                };
                out.insert(Key::String(Arc::new(name)), to_cel(sub, sub_schema));
            }
            CelValue::Map(Map { map: Arc::new(out) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn property_names_are_escaped_as_upstream() {
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn numbers_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "number"}, "i": {"type": "integer"}}});
        let CelValue::Map(map) = to_cel(&json!({"n": 1, "i": 2}), &schema) else {
            panic!("not a map");
        };
        assert_eq!(
            map.map.get(&Key::String(Arc::new("n".into()))),
            Some(&CelValue::Float(1.0))
        );
        assert_eq!(
            map.map.get(&Key::String(Arc::new("i".into()))),
            Some(&CelValue::Int(2))
        );
    }
}
