//! The JSON form of a built-in kind's Go zero value, from the schema's Go field flags:
//! what `json.Marshal` (and apimachinery's unstructured converter) writes for an empty
//! object of the type. kube-apiserver diffs a created object against it to record
//! managedFields, so a field present in the zero value (a value struct such as a
//! Deployment's `strategy`) is never "created" by a write and gets no `"."` node.

use serde_json::{Map, Number, Value};

use super::schema::{Label, Message, Scalar, Type, schema};
use super::special::Special;

/// The zero value of `kind` in `api_version` as JSON (without `apiVersion` and `kind`), or
/// `None` for kinds without a schema (custom resources).
///
/// # Examples
///
/// ```
/// let zero = kubeclient_machinery::protobuf::go_zero_value("apps/v1", "Deployment").unwrap();
/// assert_eq!(zero["spec"]["strategy"], serde_json::json!({})); // a value struct
/// assert!(zero["spec"]["selector"].is_null()); // a pointer without omitempty
/// assert!(zero["spec"].get("replicas").is_none()); // a pointer with omitempty
/// ```
#[must_use]
pub fn go_zero_value(api_version: &str, kind: &str) -> Option<Value> {
    let schema = schema().ok()?;
    let message = schema.kind(api_version, kind)?;
    let mut fields = Map::new();
    zero_fields(message, &mut fields, 0);
    fields.remove("apiVersion");
    fields.remove("kind");
    Some(Value::Object(fields))
}

/// Go value structs cannot nest themselves, but a bound keeps a bad schema from looping.
const MAX_DEPTH: usize = 32;

/// Adds the fields of `message`'s zero value to `out`.
fn zero_fields(message: &Message, out: &mut Map<String, Value>, depth: usize) {
    let Ok(schema) = schema() else {
        return;
    };
    for field in &message.fields {
        if field.inline {
            if let Label::Optional(Type::Message(inner)) = field.label
                && let Ok(inner) = schema.message(inner)
                && depth < MAX_DEPTH
            {
                zero_fields(inner, out, depth + 1);
            }
            continue;
        }
        let value = match field.label {
            // nil slices and maps: left out with omitempty, else `null`.
            Label::Repeated(_) | Label::Map(..) => None,
            Label::Optional(_) if field.pointer => None,
            Label::Optional(Type::Scalar(scalar)) => {
                if field.omitempty {
                    continue;
                }
                Some(zero_scalar(scalar))
            }
            Label::Optional(Type::Message(inner)) => {
                let Ok(inner) = schema.message(inner) else {
                    continue;
                };
                if inner.array {
                    None // a named slice: nil
                } else {
                    // encoding/json never leaves out a struct, omitempty or not.
                    Some(zero_struct(inner, depth))
                }
            }
        };
        match value {
            Some(value) => {
                out.insert(field.json.to_owned(), value);
            }
            None if !field.omitempty => {
                out.insert(field.json.to_owned(), Value::Null);
            }
            None => {}
        }
    }
}

fn zero_struct(message: &Message, depth: usize) -> Value {
    match message.special {
        // Time's zero is `null`; the others marshal their zero as a scalar.
        Some(Special::Time | Special::MicroTime | Special::RawJson) => Value::Null,
        Some(Special::Quantity) => Value::String("0".to_owned()),
        Some(Special::IntOrString) => Value::Number(Number::from(0)),
        Some(Special::Duration) => Value::String("0s".to_owned()),
        Some(Special::PropsOrArray | Special::PropsOrBool | Special::PropsOrStringArray) => {
            Value::Null
        }
        None => {
            let mut fields = Map::new();
            if depth < MAX_DEPTH {
                zero_fields(message, &mut fields, depth + 1);
            }
            Value::Object(fields)
        }
    }
}

fn zero_scalar(scalar: Scalar) -> Value {
    match scalar {
        Scalar::String => Value::String(String::new()),
        Scalar::Bytes => Value::Null,
        Scalar::Bool => Value::Bool(false),
        Scalar::Int32 | Scalar::Int64 | Scalar::Uint32 | Scalar::Uint64 => {
            Value::Number(Number::from(0))
        }
        Scalar::Double | Scalar::Float => Number::from_f64(0.0).map_or(Value::Null, Value::Number),
    }
}

/// The message (Go type) of the value at a path of field names in an object of `kind`
/// (list positions left out; a map's key counts as a name), e.g.
/// `["spec", "selector"]` of a Deployment is `k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector`;
/// `None` for scalars, unknown fields and kinds without a schema.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::protobuf::go_type_at;
/// assert_eq!(
///     go_type_at("apps/v1", "Deployment", &["spec", "selector"]),
///     Some("k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector")
/// );
/// assert_eq!(go_type_at("apps/v1", "Deployment", &["spec", "replicas"]), None);
/// ```
#[must_use]
pub fn go_type_at(api_version: &str, kind: &str, names: &[&str]) -> Option<&'static str> {
    let schema = schema().ok()?;
    let mut message = schema.kind(api_version, kind)?;
    let mut names = names.iter();
    while let Some(name) = names.next() {
        let field = find_field(message, name)?;
        let next = match field.label {
            Label::Optional(Type::Message(inner)) | Label::Repeated(Type::Message(inner)) => inner,
            Label::Map(_, Type::Message(inner)) => {
                names.next()?; // the key
                inner
            }
            _ => return None,
        };
        message = schema.message(next).ok()?;
        if message.array {
            // A named slice: its items are the message's one repeated field.
            message = match message.fields.first().map(|f| f.label) {
                Some(Label::Repeated(Type::Message(item))) => schema.message(item).ok()?,
                _ => return None,
            };
        }
    }
    Some(message.name)
}

/// The field of `message` named `name` in JSON, looking into inlined messages.
fn find_field<'m>(message: &'m Message, name: &str) -> Option<&'m super::schema::Field> {
    let schema = schema().ok()?;
    message.fields.iter().find_map(|field| {
        if field.inline {
            match field.label {
                Label::Optional(Type::Message(inner)) => {
                    find_field(schema.message(inner).ok()?, name)
                }
                _ => None,
            }
        } else {
            (field.json == name).then_some(field)
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::go_zero_value;

    /// What `kubectl create deployment x --image=i --dry-run=client -o json` shows before
    /// its own fields are set: value structs as `{}`, pointers without omitempty as `null`.
    #[test]
    fn a_deployments_zero_value_is_what_go_marshals() {
        let zero = go_zero_value("apps/v1", "Deployment").expect("a schema for Deployments");
        assert_eq!(
            zero,
            json!({
                "metadata": {"creationTimestamp": null},
                "spec": {
                    "selector": null,
                    "template": {"metadata": {"creationTimestamp": null},
                        "spec": {"containers": null}},
                    "strategy": {},
                },
                "status": {},
            })
        );
        assert_eq!(go_zero_value("example.com/v1", "Widget"), None);
    }

    #[test]
    fn field_types_are_found_through_lists_maps_and_inlined_fields() {
        use super::go_type_at;
        let pod_spec = ["spec", "template", "spec"];
        let at = |tail: &[&str]| {
            let path: Vec<&str> = pod_spec.iter().chain(tail).copied().collect();
            go_type_at("apps/v1", "Deployment", &path)
        };
        assert_eq!(at(&["containers"]), Some("k8s.io.api.core.v1.Container"));
        assert_eq!(
            at(&["containers", "env", "valueFrom", "secretKeyRef"]),
            Some("k8s.io.api.core.v1.SecretKeySelector")
        );
        assert_eq!(
            at(&["containers", "resources", "limits", "cpu"]),
            Some("k8s.io.apimachinery.pkg.api.resource.Quantity")
        );
        assert_eq!(at(&["nope"]), None);
        assert_eq!(
            go_type_at("v1", "Pod", &["metadata", "ownerReferences"]),
            Some("k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference")
        );
    }
}
