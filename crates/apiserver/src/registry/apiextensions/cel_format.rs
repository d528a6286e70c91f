//! The Kubernetes CEL format library (`k8s.io/apiserver/pkg/cel/library/format.go`):
//! `format.dns1123Label().validate(self)` (and the other named formats, or
//! `format.named('dns1123Label')`, an optional) gives `optional.none()` for a valid string,
//! else an optional list of kube-apiserver's validation messages.

use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Opaque, OptionalValue};
use cel::{Context, ResolveResult, Value};

use super::cel_args::{no_overload, string_arg};
use super::cel_net::parse_url;
use super::schema_formats;
use crate::registry::names::{DNS1035_MESSAGE, label_value, qualified_name};

/// The named formats, as the library names them.
const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

const DNS1123_LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// A named format (the value of `format.dns1123Label()`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// Registers the functions on a rule context.
pub(crate) fn register(context: &mut Context<'static, 'static>) {
    for name in NAMES {
        let _ = context.add_function(&format!("format.{name}"), move || -> ResolveResult {
            Ok(Value::Opaque(Arc::new(Format(name))))
        });
    }
    let _ = context.add_function("format.named", |v: Value| -> ResolveResult {
        let wanted = string_arg("format.named", &v)?;
        let found = NAMES.iter().find(|n| **n == wanted);
        let optional = match found {
            Some(name) => OptionalValue::of(Value::Opaque(Arc::new(Format(name)))),
            None => OptionalValue::none(),
        };
        Ok(Value::Opaque(Arc::new(optional)))
    });
    let _ = context.add_function("validate", validate);
}

fn validate(This(this): This<Value>, text: Value) -> ResolveResult {
    let format = match &this {
        Value::Opaque(o) => o.downcast_ref::<Format>(),
        _ => None,
    }
    .ok_or_else(|| no_overload("validate", &[&this, &text]))?;
    let errors = problems(format.0, string_arg("validate", &text)?);
    let optional = if errors.is_empty() {
        OptionalValue::none()
    } else {
        OptionalValue::of(Value::List(Arc::new(
            errors.into_iter().map(Value::from).collect(),
        )))
    };
    Ok(Value::Opaque(Arc::new(optional)))
}

fn is_label(text: &str, first: fn(u8) -> bool) -> bool {
    let bytes = text.as_bytes();
    matches!((bytes.first(), bytes.last()), (Some(f), Some(l)) if first(*f) && (l.is_ascii_lowercase() || l.is_ascii_digit()))
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

fn alphanumeric(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn alphabetic(b: u8) -> bool {
    b.is_ascii_lowercase()
}

/// A prefix for a generated name: its trailing dash stands for what will follow
/// (upstream's `maskTrailingDash`).
fn masked(text: &str, prefix: bool) -> String {
    match text.strip_suffix('-') {
        Some(head) if prefix && text.len() > 1 => format!("{head}a"),
        _ => text.to_owned(),
    }
}

/// The messages of the checks `format` makes on `text`, empty when it is valid.
fn problems(format: &str, text: &str) -> Vec<String> {
    let prefix = format.ends_with("Prefix");
    let mut out = Vec::new();
    match format.trim_end_matches("Prefix") {
        "dns1123Label" | "dns1035Label" => {
            let text = masked(text, prefix);
            if text.len() > 63 {
                out.push("must be no more than 63 characters".to_owned());
            }
            let (first, message): (fn(u8) -> bool, &str) = if format.starts_with("dns1123") {
                (alphanumeric, DNS1123_LABEL_MESSAGE)
            } else {
                (alphabetic, DNS1035_MESSAGE)
            };
            if !is_label(&text, first) {
                out.push(message.to_owned());
            }
        }
        "dns1123Subdomain" => {
            let text = masked(text, prefix);
            if text.len() > 253 {
                out.push("must be no more than 253 characters".to_owned());
            }
            if !text.split('.').all(|l| is_label(l, alphanumeric)) {
                out.push(DNS1123_SUBDOMAIN_MESSAGE.to_owned());
            }
        }
        "qualifiedName" => out.extend(qualified_name(text).err().map(|e| e.to_string())),
        "labelValue" => out.extend(label_value(text).err().map(|e| e.to_string())),
        "uri" if parse_url(text).is_none() => {
            out.push(format!("parse {text:?}: invalid URI for request"));
        }
        "uuid" if schema_formats::conforms("uuid", text) != Some(true) => {
            out.push("does not match the UUID format".to_owned());
        }
        "byte" if schema_formats::conforms("byte", text) != Some(true) => {
            out.push("invalid base64".to_owned());
        }
        "date" if schema_formats::conforms("date", text) != Some(true) => {
            out.push("invalid date".to_owned());
        }
        "datetime" if schema_formats::conforms("date-time", text) != Some(true) => {
            out.push("invalid datetime".to_owned());
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::cel_library::{context, environment};
    use cel::Value;

    fn eval(source: &str) -> Result<Value, cel::ExecutionError> {
        environment().compile(source).unwrap().execute(&context())
    }

    #[test]
    fn named_formats_validate_with_kubernetes_messages() {
        for rule in [
            "!format.dns1123Label().validate('my-name').hasValue()",
            "format.dns1123Label().validate('My_Name').value()[0].startsWith('a lowercase RFC 1123 label')",
            "!format.dns1123LabelPrefix().validate('my-prefix-').hasValue()",
            "!format.dns1123Subdomain().validate('a.example.com').hasValue()",
            "format.dns1035Label().validate('1abc').hasValue()",
            "!format.qualifiedName().validate('example.com/Name').hasValue()",
            "format.labelValue().validate('-x').hasValue() && !format.labelValue().validate('').hasValue()",
            "!format.uri().validate('https://example.com').hasValue() && format.uri().validate('nope').hasValue()",
            "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
            "format.byte().validate('!!').value() == ['invalid base64']",
            "!format.date().validate('2021-01-01').hasValue() && format.datetime().validate('x').hasValue()",
            "format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()",
            "format.named('dns1123Label').value().validate('ok').hasValue() == false",
            "format.dns1123Label().validate('x'.lowerAscii()) == optional.none()",
        ] {
            assert_eq!(eval(rule), Ok(Value::Bool(true)), "{rule}");
        }
        assert_eq!(
            eval("format.dns1123Label().validate('a'.lowerAscii() + '-' )"),
            eval("format.dns1123Label().validate('a-')")
        );
    }
}
