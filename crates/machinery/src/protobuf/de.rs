//! Protobuf bytes straight into typed structs: a serde `Deserializer` driven by the schema
//! presents each message as a map of JSON field names, so a `k8s-openapi` type's own
//! `Deserialize` fills it from the wire, with no JSON text and no intermediate
//! `serde_json::Value` (only the rare special forms, such as CRD schema unions, go through
//! one). It follows the same rules as the JSON form ([`decode`](super::decode)): zero values
//! of `omitempty` non-pointer fields are left out, inlined messages are merged, empty
//! times are absent.

use std::fmt;

use base64::Engine as _;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

use super::schema::{Field, Label, Message, Scalar, Schema, Type, schema};
use super::special::{self, Special, utf8};
use super::wire::{Reader, WireValue};
use super::{MAX_DEPTH, ProtobufError, envelope, to_json, typed};

/// The message of `metadata.managedFields`, skipped when asked to.
const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const MANAGED_FIELDS: u32 = 17;
/// How many messages deep inlining may go.
const MAX_INLINE: usize = 4;

/// Decodes an enveloped protobuf object straight into `K`.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::protobuf;
///
/// let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "cfg"}, "data": {"a": "b"}});
/// let decoded: ConfigMap = protobuf::from_protobuf(&protobuf::encode(&cm)?)?;
/// assert_eq!(decoded.data.unwrap()["a"], "b");
/// # Ok::<(), protobuf::ProtobufError>(())
/// ```
///
/// # Errors
///
/// [`ProtobufError`] for bytes that do not decode, or do not fit `K`.
pub fn from_protobuf<K: DeserializeOwned + 'static>(bytes: &[u8]) -> Result<K, ProtobufError> {
    from_protobuf_with(bytes, false)
}

/// As [`from_protobuf`]; with `strip_managed_fields`, `metadata.managedFields` are skipped
/// on the wire instead of decoded.
///
/// # Errors
///
/// As [`from_protobuf`].
pub fn from_protobuf_with<K: DeserializeOwned + 'static>(
    bytes: &[u8],
    strip_managed_fields: bool,
) -> Result<K, ProtobufError> {
    let (api_version, kind, raw) = envelope::open(bytes)?;
    item_from_protobuf(api_version, kind, raw, strip_managed_fields)
}

/// Decodes one message of a kind without an envelope (a list item) straight into `K`.
///
/// # Errors
///
/// As [`from_protobuf`].
pub fn item_from_protobuf<K: DeserializeOwned + 'static>(
    api_version: &str,
    kind: &str,
    item: &[u8],
    strip_managed_fields: bool,
) -> Result<K, ProtobufError> {
    if let Some(decoded) = typed::decode(api_version, kind, item, strip_managed_fields) {
        return decoded;
    }
    item_from_protobuf_by_serde(api_version, kind, item, strip_managed_fields)
}

/// As [`from_protobuf_with`], always through `K`'s serde `Deserialize` driven by the schema:
/// the path of kinds without a generated decoder, public for comparisons (benchmarks).
///
/// # Errors
///
/// As [`from_protobuf`].
pub fn from_protobuf_via_serde<K: DeserializeOwned>(
    bytes: &[u8],
    strip_managed_fields: bool,
) -> Result<K, ProtobufError> {
    let (api_version, kind, raw) = envelope::open(bytes)?;
    item_from_protobuf_by_serde(api_version, kind, raw, strip_managed_fields)
}

/// [`item_from_protobuf`] through `K`'s serde `Deserialize`, driven by the schema (the
/// path of kinds without a generated decoder).
pub(crate) fn item_from_protobuf_by_serde<K: DeserializeOwned>(
    api_version: &str,
    kind: &str,
    item: &[u8],
    strip_managed_fields: bool,
) -> Result<K, ProtobufError> {
    let schema = schema()?;
    let message = schema.kind_message(api_version, kind)?;
    let de = MessageDe {
        ctx: Ctx {
            schema,
            strip: strip_managed_fields,
        },
        message,
        bytes: item,
        depth: 0,
        type_meta: Some((api_version, kind)),
    };
    K::deserialize(de).map_err(|e| ProtobufError::InvalidValue(e.0))
}

/// The methods every deserializer here shares: a value that is read is present (`Some`),
/// newtypes are transparent, everything else is `deserialize_any`.
macro_rules! present_and_forwarded {
    () => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            visitor.visit_some(self)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, DeError> {
            visitor.visit_newtype_struct(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    };
}

/// The deserializer's error: a message (serde's errors carry no source).
#[derive(Debug)]
pub(crate) struct DeError(String);

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError(msg.to_string())
    }
}

impl From<ProtobufError> for DeError {
    fn from(err: ProtobufError) -> Self {
        DeError(crate::ErrorChain(&err).to_string())
    }
}

#[derive(Clone, Copy)]
struct Ctx {
    schema: &'static Schema,
    strip: bool,
}

/// One message, as a map of its JSON fields.
struct MessageDe<'a> {
    ctx: Ctx,
    message: &'static Message,
    bytes: &'a [u8],
    depth: usize,
    /// `apiVersion` and `kind`, presented first (top-level objects and list items).
    type_meta: Option<(&'a str, &'a str)>,
}

/// Whether a singular field's value is absent from the JSON form: a zero value of an
/// `omitempty` non-pointer field, an empty time, an empty raw extension.
fn absent(schema: &Schema, field: &Field, value: WireValue<'_>) -> bool {
    let Label::Optional(ty) = field.label else {
        return false;
    };
    match (ty, value) {
        (Type::Scalar(_), value) if field.omitempty && !field.pointer => value.is_zero(),
        (Type::Message(name), WireValue::Len(b)) => {
            match schema.message(name).ok().and_then(|m| m.special) {
                Some(Special::Time | Special::MicroTime) => b.is_empty(),
                Some(Special::RawJson) => special::raw_of(b).is_ok_and(<[u8]>::is_empty),
                _ => false,
            }
        }
        _ => false,
    }
}

impl<'de> de::Deserializer<'de> for MessageDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.depth > MAX_DEPTH {
            return Err(ProtobufError::TooDeep.into());
        }
        if self.message.array {
            let ty = match self.message.fields.first().map(|f| f.label) {
                Some(Label::Repeated(ty)) => ty,
                _ => return Err(ProtobufError::WrongWireType.into()),
            };
            return visitor.visit_seq(SeqDe::new(self.ctx, ty, 1, self.bytes, self.depth));
        }
        visitor.visit_map(MapDe {
            ctx: self.ctx,
            type_meta: self
                .type_meta
                .map(|(a, k)| [("apiVersion", a), ("kind", k)]),
            type_meta_index: 0,
            stack: [
                Some((self.message, Reader::new(self.bytes))),
                None,
                None,
                None,
            ],
            len: 1,
            pending: None,
            depth: self.depth,
        })
    }

    present_and_forwarded!();
}

/// The value of the key just handed out.
enum Pending<'a> {
    /// A singular field's value.
    Single(&'static Field, WireValue<'a>),
    /// A repeated or map field: the span of its consecutive entries on the wire, and how
    /// many values they hold (`None` when numbers are packed).
    Run(&'static Field, &'a [u8], Option<usize>),
}

/// A message as a map, read from the wire as the keys are asked for: no allocation per
/// field. Go writes the entries of a repeated field together; a field that appears again
/// later is handed out again (and refused by the struct as a duplicate).
struct MapDe<'a> {
    ctx: Ctx,
    type_meta: Option<[(&'static str, &'a str); 2]>,
    type_meta_index: usize,
    /// The message being read, and inlined messages inside it (Kubernetes nests at most
    /// two: `Volume` > `VolumeSource`), on the stack rather than the heap.
    stack: [Option<(&'static Message, Reader<'a>)>; MAX_INLINE],
    len: usize,
    pending: Option<Pending<'a>>,
    depth: usize,
}

impl<'a> MapDe<'a> {
    /// The next field that is present in the JSON form.
    fn next_field(&mut self) -> Result<Option<Pending<'a>>, ProtobufError> {
        loop {
            let Some(top) = self.len.checked_sub(1) else {
                return Ok(None);
            };
            let Some(Some((message, reader))) = self.stack.get_mut(top) else {
                return Ok(None);
            };
            let message: &'static Message = message;
            let before = reader.remaining();
            let Some((number, value)) = reader.field()? else {
                self.len = top;
                continue;
            };
            let Some(field) = message.field(number) else {
                continue;
            };
            if self.ctx.strip && number == MANAGED_FIELDS && message.name == OBJECT_META {
                continue;
            }
            match (field.label, value) {
                (Label::Optional(Type::Message(name)), WireValue::Len(inner)) if field.inline => {
                    let nested = self.ctx.schema.message(name)?;
                    let slot = self.stack.get_mut(self.len).ok_or(ProtobufError::TooDeep)?;
                    *slot = Some((nested, Reader::new(inner)));
                    self.len += 1;
                }
                (Label::Optional(_), value) => {
                    if !absent(self.ctx.schema, field, value) {
                        return Ok(Some(Pending::Single(field, value)));
                    }
                }
                (Label::Repeated(ty) | Label::Map(_, ty), first) => {
                    // Take every consecutive entry of this field, counting them so that
                    // vectors are allocated at their exact size (as the JSON decoder does).
                    let numeric = matches!(ty, Type::Scalar(s) if !matches!(s, Scalar::String | Scalar::Bytes));
                    let mut packed = numeric && matches!(first, WireValue::Len(_));
                    let mut entries = 1usize;
                    loop {
                        let mut ahead = *reader;
                        match ahead.field()? {
                            Some((next, value)) if next == number => {
                                *reader = ahead;
                                entries += 1;
                                packed |= numeric && matches!(value, WireValue::Len(_));
                            }
                            _ => break,
                        }
                    }
                    let taken = before.len() - reader.remaining().len();
                    let hint = (!packed).then_some(entries);
                    return Ok(Some(Pending::Run(field, &before[..taken], hint)));
                }
            }
        }
    }
}

impl<'de> de::MapAccess<'de> for MapDe<'de> {
    type Error = DeError;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        if let Some(type_meta) = &self.type_meta
            && let Some((name, _)) = type_meta.get(self.type_meta_index)
        {
            return seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some);
        }
        let Some(pending) = self.next_field()? else {
            return Ok(None);
        };
        let name = match &pending {
            Pending::Single(field, _) | Pending::Run(field, _, _) => field.json,
        };
        self.pending = Some(pending);
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        if let Some(type_meta) = &self.type_meta
            && let Some((_, value)) = type_meta.get(self.type_meta_index)
        {
            self.type_meta_index += 1;
            return seed.deserialize(BorrowedStrDeserializer::new(value));
        }
        let pending = self
            .pending
            .take()
            .ok_or_else(|| DeError("a value without a key".to_owned()))?;
        let (field, value) = match pending {
            Pending::Single(field, value) => (
                field,
                match field.label {
                    Label::Optional(ty) => seed.deserialize(ValueDe {
                        ctx: self.ctx,
                        ty,
                        value,
                        depth: self.depth,
                    }),
                    _ => Err(ProtobufError::WrongWireType.into()),
                },
            ),
            Pending::Run(field, span, hint) => (
                field,
                match field.label {
                    Label::Repeated(ty) => seed.deserialize(SeqAsDe(SeqDe {
                        hint,
                        ..SeqDe::new(self.ctx, ty, field.number, span, self.depth)
                    })),
                    Label::Map(key, ty) => seed.deserialize(MapEntriesDe {
                        ctx: self.ctx,
                        key,
                        ty,
                        span,
                        depth: self.depth,
                    }),
                    Label::Optional(_) => Err(ProtobufError::WrongWireType.into()),
                },
            ),
        };
        value.map_err(|e| DeError(format!("{}: {}", field.json, e.0)))
    }
}

/// One value of a field.
struct ValueDe<'a> {
    ctx: Ctx,
    ty: Type,
    value: WireValue<'a>,
    depth: usize,
}

impl<'de> ValueDe<'de> {
    /// The JSON form of a special message that has no direct path (CRD schema unions).
    fn via_json(&self, bytes: &[u8]) -> Result<serde_json::Value, DeError> {
        Ok(
            to_json::single(self.ctx.schema, self.ty, WireValue::Len(bytes), self.depth)?
                .unwrap_or(serde_json::Value::Null),
        )
    }
}

impl<'de> de::Deserializer<'de> for ValueDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let name = match (self.ty, self.value) {
            (Type::Scalar(s), value) => return scalar(s, value, visitor),
            (Type::Message(name), WireValue::Len(_)) => name,
            _ => return Err(ProtobufError::WrongWireType.into()),
        };
        let WireValue::Len(bytes) = self.value else {
            return Err(ProtobufError::WrongWireType.into());
        };
        let message = self.ctx.schema.message(name)?;
        match message.special {
            None => MessageDe {
                ctx: self.ctx,
                message,
                bytes,
                depth: self.depth + 1,
                type_meta: None,
            }
            .deserialize_any(visitor),
            Some(kind @ (Special::Time | Special::MicroTime)) => {
                match special::read_timestamp(bytes)? {
                    Some(ts) => {
                        let mut buf = [0; special::TIME_TEXT_MAX];
                        match special::write_time(ts, kind == Special::MicroTime, &mut buf) {
                            Some(text) => visitor.visit_str(text),
                            None => visitor
                                .visit_string(special::format_time(ts, kind == Special::MicroTime)),
                        }
                    }
                    None => visitor.visit_unit(),
                }
            }
            Some(Special::Quantity) => visitor.visit_str(special::quantity_text(bytes)?),
            Some(Special::IntOrString) => match special::int_or_string(bytes)? {
                Ok(text) => visitor.visit_str(text),
                Err(int) => visitor.visit_i64(i64::from(int)),
            },
            Some(Special::RawJson) => {
                let raw = special::raw_of(bytes)?;
                if raw.starts_with(envelope::MAGIC) {
                    let value = envelope::decode_at_depth(raw, self.depth + 1)?;
                    return de::Deserializer::deserialize_any(value, visitor)
                        .map_err(|e| DeError(e.to_string()));
                }
                let mut json = serde_json::Deserializer::from_slice(raw);
                de::Deserializer::deserialize_any(&mut json, visitor)
                    .map_err(|e| DeError(e.to_string()))
            }
            Some(_) => {
                let value = self.via_json(bytes)?;
                de::Deserializer::deserialize_any(value, visitor)
                    .map_err(|e| DeError(e.to_string()))
            }
        }
    }

    present_and_forwarded!();
}

fn scalar<'de, V: Visitor<'de>>(
    s: Scalar,
    value: WireValue<'de>,
    visitor: V,
) -> Result<V::Value, DeError> {
    match (s, value) {
        (Scalar::String, WireValue::Len(b)) => visitor.visit_borrowed_str(utf8(b)?),
        (Scalar::Bytes, WireValue::Len(b)) => {
            visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Scalar::Bool, WireValue::Varint(v)) => visitor.visit_bool(v != 0),
        (Scalar::Int32, WireValue::Varint(v)) => visitor.visit_i64(i64::from(v as i64 as i32)),
        (Scalar::Int64, WireValue::Varint(v)) => visitor.visit_i64(v as i64),
        (Scalar::Uint32, WireValue::Varint(v)) => visitor.visit_u64(u64::from(v as u32)),
        (Scalar::Uint64, WireValue::Varint(v)) => visitor.visit_u64(v),
        (Scalar::Double, WireValue::Fixed64(v)) => visitor.visit_f64(f64::from_bits(v)),
        (Scalar::Float, WireValue::Fixed32(v)) => visitor.visit_f64(f64::from(f32::from_bits(v))),
        _ => Err(ProtobufError::WrongWireType.into()),
    }
}

/// The values of a repeated field, read from the span of its entries; packed numbers are
/// expanded as they are read.
struct SeqDe<'a> {
    ctx: Ctx,
    ty: Type,
    number: u32,
    reader: Reader<'a>,
    packed: Option<Reader<'a>>,
    /// How many values there are, when known from the reading of the span.
    hint: Option<usize>,
    depth: usize,
}

impl<'a> SeqDe<'a> {
    fn new(ctx: Ctx, ty: Type, number: u32, span: &'a [u8], depth: usize) -> Self {
        SeqDe {
            ctx,
            ty,
            number,
            reader: Reader::new(span),
            packed: None,
            hint: None,
            depth,
        }
    }

    /// How many elements the span holds, so vectors are allocated at their exact size (as
    /// the JSON decoder does); `None` for packed numbers or a malformed span.
    fn count(&self) -> Option<usize> {
        let mut reader = self.reader;
        let mut count = 0usize;
        while let Some((number, value)) = reader.field().ok()? {
            if number == self.number {
                if matches!((self.ty, value), (Type::Scalar(s), WireValue::Len(_)) if !matches!(s, Scalar::String | Scalar::Bytes))
                {
                    return None;
                }
                count += 1;
            }
        }
        Some(count)
    }

    fn next_value(&mut self) -> Result<Option<WireValue<'a>>, ProtobufError> {
        loop {
            if let (Some(packed), Type::Scalar(s)) = (&mut self.packed, self.ty) {
                if !packed.is_empty() {
                    return Ok(Some(match s {
                        Scalar::Double => WireValue::Fixed64(packed.fixed64()?),
                        Scalar::Float => WireValue::Fixed32(packed.fixed32()?),
                        _ => WireValue::Varint(packed.varint()?),
                    }));
                }
                self.packed = None;
            }
            let Some((number, value)) = self.reader.field()? else {
                return Ok(None);
            };
            if number != self.number {
                continue;
            }
            match (self.ty, value) {
                (Type::Scalar(s), WireValue::Len(bytes))
                    if !matches!(s, Scalar::String | Scalar::Bytes) =>
                {
                    self.packed = Some(Reader::new(bytes));
                }
                _ => return Ok(Some(value)),
            }
        }
    }
}

impl<'de> de::SeqAccess<'de> for SeqDe<'de> {
    type Error = DeError;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        let Some(value) = self.next_value()? else {
            return Ok(None);
        };
        seed.deserialize(ValueDe {
            ctx: self.ctx,
            ty: self.ty,
            value,
            depth: self.depth,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        self.hint.or_else(|| self.count())
    }
}

/// A repeated field as a deserializer (a sequence).
struct SeqAsDe<'a>(SeqDe<'a>);

impl<'de> de::Deserializer<'de> for SeqAsDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_seq(self.0)
    }

    present_and_forwarded!();
}

/// A protobuf map field (entries of key 1, value 2) as a map, read from the span of its
/// entries.
struct MapEntriesDe<'a> {
    ctx: Ctx,
    key: Scalar,
    ty: Type,
    span: &'a [u8],
    depth: usize,
}

impl<'de> de::Deserializer<'de> for MapEntriesDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_map(MapEntriesAccess {
            ctx: self.ctx,
            key: self.key,
            ty: self.ty,
            reader: Reader::new(self.span),
            value: None,
            depth: self.depth,
        })
    }

    present_and_forwarded!();
}

struct MapEntriesAccess<'a> {
    ctx: Ctx,
    key: Scalar,
    ty: Type,
    reader: Reader<'a>,
    value: Option<Option<WireValue<'a>>>,
    depth: usize,
}

impl<'de> de::MapAccess<'de> for MapEntriesAccess<'de> {
    type Error = DeError;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        let Some((_, entry)) = self.reader.field()? else {
            return Ok(None);
        };
        let WireValue::Len(entry) = entry else {
            return Err(ProtobufError::WrongWireType.into());
        };
        let (mut key, mut value) = (None, None);
        let mut fields = Reader::new(entry);
        while let Some((number, v)) = fields.field()? {
            match number {
                1 => key = Some(v),
                2 => value = Some(v),
                _ => {}
            }
        }
        self.value = Some(value);
        match (self.key, key) {
            (Scalar::String, Some(WireValue::Len(b))) => seed
                .deserialize(BorrowedStrDeserializer::new(utf8(b)?))
                .map(Some),
            (Scalar::String, None) => seed.deserialize(BorrowedStrDeserializer::new("")).map(Some),
            (_, Some(WireValue::Varint(v))) => seed
                .deserialize((v as i64).to_string().into_deserializer())
                .map(Some),
            _ => Err(ProtobufError::WrongWireType.into()),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        match self.value.take().flatten() {
            Some(value) => seed.deserialize(ValueDe {
                ctx: self.ctx,
                ty: self.ty,
                value,
                depth: self.depth,
            }),
            // A missing value is the type's zero value.
            None => match self.ty {
                Type::Scalar(Scalar::Bool) => seed.deserialize(false.into_deserializer()),
                Type::Scalar(Scalar::String | Scalar::Bytes) => {
                    seed.deserialize(BorrowedStrDeserializer::new(""))
                }
                Type::Scalar(_) => seed.deserialize(0_i64.into_deserializer()),
                Type::Message(_) => seed.deserialize(ValueDe {
                    ctx: self.ctx,
                    ty: self.ty,
                    value: WireValue::Len(&[]),
                    depth: self.depth,
                }),
            },
        }
    }
}
