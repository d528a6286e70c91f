//! The JSON form to protobuf bytes, driven by the schema. Fields absent from the JSON (or
//! null) are left off the wire; JSON keys the schema does not know are dropped, as Go's
//! typed structs drop them.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::schema::{Label, Message, MessageRef, Scalar, Schema, Type};
use super::special::{self, Special, mismatch};
use super::wire::{WireType, put_key, put_len, put_varint};
use super::{MAX_DEPTH, ProtobufError};

/// Encodes a JSON value as one message (an object, or an array for named slices).
pub(crate) fn message(
    schema: &Schema,
    message: &Message,
    value: &Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    if message.array {
        let mut wrapped = Map::new();
        let items = message.fields.first().map(|f| f.json).unwrap_or("items");
        wrapped.insert(items.to_owned(), value.clone());
        return fields(schema, message, &wrapped, depth, out);
    }
    match value {
        Value::Object(object) => fields(schema, message, object, depth, out),
        other => Err(mismatch("an object", other)),
    }
}

fn fields(
    schema: &Schema,
    message: &Message,
    object: &Map<String, Value>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    for field in &message.fields {
        let in_field = |e: ProtobufError| e.in_field(message.name, field.json);
        if field.inline {
            let Label::Optional(Type::Message(name)) = field.label else {
                continue;
            };
            let mut inner = Vec::new();
            fields(schema, schema.message(name)?, object, depth + 1, &mut inner)
                .map_err(in_field)?;
            put_len(out, field.number, &inner);
            continue;
        }
        let Some(value) = object.get(field.json).filter(|v| !v.is_null()) else {
            continue;
        };
        match field.label {
            Label::Optional(ty) => single(schema, field.number, ty, value, depth, out),
            Label::Repeated(ty) => match value {
                Value::Array(items) => items.iter().try_for_each(|item| {
                    if item.is_null() && matches!(ty, Type::Message(_)) {
                        // Go encodes a nil element of a slice of pointers as an empty message.
                        put_len(out, field.number, &[]);
                        return Ok(());
                    }
                    single(schema, field.number, ty, item, depth, out)
                }),
                other => Err(mismatch("an array", other)),
            },
            Label::Map(key, ty) => match value {
                Value::Object(map) => map.iter().try_for_each(|(k, v)| {
                    let mut entry = Vec::new();
                    map_key(key, k, &mut entry)?;
                    if !v.is_null() {
                        single(schema, 2, ty, v, depth, &mut entry)?;
                    }
                    put_len(out, field.number, &entry);
                    Ok(())
                }),
                other => Err(mismatch("an object", other)),
            },
        }
        .map_err(in_field)?;
    }
    Ok(())
}

fn map_key(key: Scalar, text: &str, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    match key {
        Scalar::String => put_len(out, 1, text.as_bytes()),
        _ => {
            let number: i64 = text
                .parse()
                .map_err(|_| ProtobufError::InvalidValue(format!("map key {text:?}")))?;
            put_key(out, 1, WireType::Varint);
            put_varint(out, number as u64);
        }
    }
    Ok(())
}

fn single(
    schema: &Schema,
    number: u32,
    ty: Type,
    value: &Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let name = match ty {
        Type::Scalar(s) => return scalar(number, s, value, out),
        Type::Message(name) => name,
    };
    let mut inner = Vec::new();
    match special::special(name.name) {
        None => message(schema, schema.message(name)?, value, depth + 1, &mut inner)?,
        Some(kind) => special_value(schema, kind, name, value, depth, &mut inner)?,
    }
    put_len(out, number, &inner);
    Ok(())
}

fn special_value(
    schema: &Schema,
    kind: Special,
    name: MessageRef,
    value: &Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match kind {
        Special::Time | Special::MicroTime => {
            let Value::String(text) = value else {
                return Err(mismatch("a time string", value));
            };
            special::write_timestamp(text, kind == Special::MicroTime, out)
        }
        Special::Duration => {
            let Value::String(text) = value else {
                return Err(mismatch("a duration string", value));
            };
            let nanos = special::parse_duration(text)?;
            put_key(out, 1, WireType::Varint);
            put_varint(out, nanos as u64);
            Ok(())
        }
        Special::Quantity => match value {
            Value::String(text) => {
                put_len(out, 1, text.as_bytes());
                Ok(())
            }
            // A number is a valid quantity in JSON ("cpu": 2).
            Value::Number(n) => {
                put_len(out, 1, n.to_string().as_bytes());
                Ok(())
            }
            other => Err(mismatch("a quantity string", other)),
        },
        Special::IntOrString => special::write_int_or_string(value, out),
        Special::RawJson => {
            let raw = serde_json::to_vec(value).map_err(ProtobufError::RawJson)?;
            put_len(out, 1, &raw);
            Ok(())
        }
        Special::PropsOrArray | Special::PropsOrBool | Special::PropsOrStringArray => {
            let props = schema.message(name)?;
            let (schema_number, other_number) = super::to_json::props_or_fields(kind);
            let json = |number| props.field(number).map(|f| f.json).unwrap_or_default();
            let mut object = Map::new();
            match (kind, value) {
                (_, Value::Object(_)) => {
                    object.insert(json(schema_number).to_owned(), value.clone());
                    if kind == Special::PropsOrBool {
                        object.insert(json(other_number).to_owned(), Value::Bool(true));
                    }
                }
                (Special::PropsOrBool, Value::Bool(_)) | (_, Value::Array(_)) => {
                    object.insert(json(other_number).to_owned(), value.clone());
                }
                (_, other) => return Err(mismatch("a schema, an array or a bool", other)),
            }
            fields(schema, props, &object, depth + 1, out)
        }
    }
}

fn scalar(number: u32, s: Scalar, value: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    match (s, value) {
        (Scalar::String, Value::String(text)) => put_len(out, number, text.as_bytes()),
        (Scalar::Bytes, Value::String(text)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| ProtobufError::InvalidValue(format!("base64: {e}")))?;
            put_len(out, number, &bytes);
        }
        (Scalar::Bool, Value::Bool(b)) => {
            put_key(out, number, WireType::Varint);
            put_varint(out, u64::from(*b));
        }
        (Scalar::Int32 | Scalar::Int64 | Scalar::Uint32 | Scalar::Uint64, Value::Number(n)) => {
            let bits = integer(s, n)?;
            put_key(out, number, WireType::Varint);
            put_varint(out, bits);
        }
        (Scalar::Double, Value::Number(n)) => {
            put_key(out, number, WireType::Fixed64);
            out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
        }
        (Scalar::Float, Value::Number(n)) => {
            put_key(out, number, WireType::Fixed32);
            out.extend_from_slice(&(n.as_f64().unwrap_or(0.0) as f32).to_le_bytes());
        }
        (Scalar::String | Scalar::Bytes, other) => return Err(mismatch("a string", other)),
        (Scalar::Bool, other) => return Err(mismatch("a bool", other)),
        (_, other) => return Err(mismatch("a number", other)),
    }
    Ok(())
}

/// An integer's varint bits, refusing values out of the field's range.
fn integer(s: Scalar, n: &serde_json::Number) -> Result<u64, ProtobufError> {
    let out_of_range = || ProtobufError::InvalidValue(format!("{n} out of range"));
    // Whole numbers written as floats (1.0) are accepted, as Go's JSON decoder does.
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
            .map(|f| f as i64)
    });
    match s {
        Scalar::Int32 => whole
            .and_then(|i| i32::try_from(i).ok())
            .map(|i| i64::from(i) as u64)
            .ok_or_else(out_of_range),
        Scalar::Int64 => whole.map(|i| i as u64).ok_or_else(out_of_range),
        Scalar::Uint32 => whole
            .and_then(|i| u32::try_from(i).ok())
            .map(u64::from)
            .ok_or_else(out_of_range),
        _ => n.as_u64().ok_or_else(out_of_range),
    }
}
