//! Protobuf bytes to the JSON form, driven by the schema.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::schema::{Label, Message, MessageRef, Scalar, Schema, Type};
use super::special::{self, Special, utf8};
use super::wire::{Reader, WireValue};
use super::{MAX_DEPTH, ProtobufError, envelope};

/// Decodes one message into a JSON value (an object, or an array for named slices).
pub(crate) fn message(
    schema: &Schema,
    message: &Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let mut object = Map::new();
    fields_into(schema, message, bytes, depth, &mut object)?;
    if message.array {
        let items = message.fields.first().map(|f| f.json).unwrap_or("items");
        return Ok(object
            .remove(items)
            .unwrap_or_else(|| Value::Array(Vec::new())));
    }
    Ok(Value::Object(object))
}

fn fields_into(
    schema: &Schema,
    message: &Message,
    bytes: &[u8],
    depth: usize,
    object: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        let Some(field) = message.field(number) else {
            continue; // unknown fields are skipped, as protobuf decoders do
        };
        let in_field = |e: ProtobufError| e.in_field(message.name, field.json);
        match field.label {
            Label::Optional(Type::Message(name)) if field.inline => {
                let WireValue::Len(inner) = value else {
                    return Err(in_field(ProtobufError::WrongWireType));
                };
                let nested = schema.message(name)?;
                fields_into(schema, nested, inner, depth + 1, object).map_err(in_field)?;
            }
            Label::Optional(ty) => match single(schema, ty, value, depth).map_err(in_field)? {
                Some(v) if field.pointer || !field.omitempty || !is_zero(&v) => {
                    object.insert(field.json.to_owned(), v);
                }
                _ => {
                    object.remove(field.json);
                }
            },
            Label::Repeated(ty) => {
                let entry = object
                    .entry(field.json.to_owned())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(items) = entry else {
                    return Err(in_field(ProtobufError::WrongWireType));
                };
                repeated(schema, ty, value, depth, items).map_err(in_field)?;
            }
            Label::Map(key, ty) => {
                let WireValue::Len(entry) = value else {
                    return Err(in_field(ProtobufError::WrongWireType));
                };
                let (k, v) = map_entry(schema, key, ty, entry, depth).map_err(in_field)?;
                let map = object
                    .entry(field.json.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(k, v);
                }
            }
        }
    }
    Ok(())
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn repeated(
    schema: &Schema,
    ty: Type,
    value: WireValue<'_>,
    depth: usize,
    items: &mut Vec<Value>,
) -> Result<(), ProtobufError> {
    // Packed numbers: one length-delimited run of values.
    if let (Type::Scalar(s), WireValue::Len(bytes)) = (ty, value)
        && !matches!(s, Scalar::String | Scalar::Bytes)
    {
        let mut reader = Reader::new(bytes);
        while !reader.is_empty() {
            let wire = match s {
                Scalar::Double => WireValue::Fixed64(reader.fixed64()?),
                Scalar::Float => WireValue::Fixed32(reader.fixed32()?),
                _ => WireValue::Varint(reader.varint()?),
            };
            items.push(scalar(s, wire)?);
        }
        return Ok(());
    }
    if let Some(v) = single(schema, ty, value, depth)? {
        items.push(v);
    }
    Ok(())
}

fn map_entry(
    schema: &Schema,
    key: Scalar,
    ty: Type,
    bytes: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let (mut k, mut v) = (None, None);
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        match number {
            1 => k = Some(scalar(key, value)?),
            2 => v = single(schema, ty, value, depth)?,
            _ => {}
        }
    }
    let k = match k {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    // A missing value is the type's zero value.
    let v = match (v, ty) {
        (Some(v), _) => v,
        (None, Type::Scalar(s)) => zero(s),
        (None, Type::Message(name)) => {
            single(schema, Type::Message(name), WireValue::Len(&[]), depth)?.unwrap_or(Value::Null)
        }
    };
    Ok((k, v))
}

fn zero(s: Scalar) -> Value {
    match s {
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        _ => Value::from(0),
    }
}

/// One value of a field; `None` for a value that is absent in JSON (Go's zero time, an empty
/// raw extension).
pub(crate) fn single(
    schema: &Schema,
    ty: Type,
    value: WireValue<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    let name = match ty {
        Type::Scalar(s) => return scalar(s, value).map(Some),
        Type::Message(name) => name,
    };
    let WireValue::Len(bytes) = value else {
        return Err(ProtobufError::WrongWireType);
    };
    let Some(kind) = special::special(name.name) else {
        return message(schema, schema.message(name)?, bytes, depth + 1).map(Some);
    };
    Ok(match kind {
        Special::Time | Special::MicroTime => special::read_timestamp(bytes)?
            .map(|ts| Value::String(special::format_time(ts, kind == Special::MicroTime))),
        Special::Duration => {
            let mut nanos = 0_i64;
            let mut reader = Reader::new(bytes);
            while let Some((number, value)) = reader.field()? {
                if let (1, WireValue::Varint(v)) = (number, value) {
                    nanos = v as i64;
                }
            }
            Some(Value::String(special::format_duration(nanos)))
        }
        Special::Quantity => Some(special::read_quantity(bytes)?),
        Special::IntOrString => Some(special::read_int_or_string(bytes)?),
        Special::RawJson => raw_json(bytes, depth)?,
        Special::PropsOrArray | Special::PropsOrBool | Special::PropsOrStringArray => {
            Some(schema_props_or(schema, kind, name, bytes, depth)?)
        }
    })
}

/// A `bytes raw = 1` message: JSON, or an enveloped protobuf object.
fn raw_json(bytes: &[u8], depth: usize) -> Result<Option<Value>, ProtobufError> {
    let mut raw: &[u8] = &[];
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        if let (1, WireValue::Len(b)) = (number, value) {
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.starts_with(envelope::MAGIC) {
        return envelope::decode_at_depth(raw, depth + 1).map(Some);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(ProtobufError::RawJson)
}

/// The numbers of the schema field and of the other field (array, bool or strings).
pub(crate) fn props_or_fields(kind: Special) -> (u32, u32) {
    if kind == Special::PropsOrBool {
        (2, 1)
    } else {
        (1, 2)
    }
}

fn schema_props_or(
    schema: &Schema,
    kind: Special,
    name: MessageRef,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    let message_schema = schema.message(name)?;
    let decoded = message(schema, message_schema, bytes, depth + 1)?;
    let Value::Object(mut fields) = decoded else {
        return Ok(Value::Null);
    };
    let (schema_number, other_number) = props_or_fields(kind);
    let json = |number| {
        message_schema
            .field(number)
            .map(|f| f.json)
            .unwrap_or_default()
    };
    if let Some(schema) = fields.remove(json(schema_number)) {
        return Ok(schema);
    }
    Ok(match (kind, fields.remove(json(other_number))) {
        (_, Some(other)) => other,
        (Special::PropsOrBool, None) => Value::Bool(false),
        (_, None) => Value::Array(Vec::new()),
    })
}

fn scalar(s: Scalar, value: WireValue<'_>) -> Result<Value, ProtobufError> {
    Ok(match (s, value) {
        (Scalar::String, WireValue::Len(b)) => Value::String(utf8(b)?.to_owned()),
        (Scalar::Bytes, WireValue::Len(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Scalar::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        (Scalar::Int32, WireValue::Varint(v)) => Value::from(v as i64 as i32),
        (Scalar::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (Scalar::Uint32, WireValue::Varint(v)) => Value::from(v as u32),
        (Scalar::Uint64, WireValue::Varint(v)) => Value::from(v),
        (Scalar::Double, WireValue::Fixed64(v)) => float(f64::from_bits(v))?,
        (Scalar::Float, WireValue::Fixed32(v)) => float(f64::from(f32::from_bits(v)))?,
        _ => return Err(ProtobufError::WrongWireType),
    })
}

fn float(f: f64) -> Result<Value, ProtobufError> {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| ProtobufError::InvalidValue(format!("number {f}")))
}
