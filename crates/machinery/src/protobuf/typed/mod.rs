//! Protobuf straight into `k8s-openapi` structs by generated code: one [`Message`] impl per
//! struct (`generated.rs`, by `scripts/gen-protobuf-decoders`) matches each field by its
//! number and fills the Rust field behind it, with no serde layer, no field-name matching
//! and no RFC 3339 text for times. The rules are those of the schema-driven decoder
//! ([`from_protobuf`](super::from_protobuf)), which the tests hold it to: zero values of
//! `omitempty` non-pointer fields are left out, inlined messages fill their parent's fields,
//! empty times and raw extensions are absent, `Time` keeps seconds and `MicroTime`
//! microseconds (as their JSON forms do), vectors are allocated at their exact size.
//!
//! The generated decoders are found by the type asked for ([`decode`]); kinds without one
//! (custom resources, CRDs, whose schema unions need the JSON form) keep the serde path.
//!
//! The same generated impls write the structs back as messages
//! ([`encode_message`], runtime in `encode.rs`), for the compact informer cache.

pub(crate) mod encode;
mod generated;

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::special::{int_or_string, quantity_text, raw_of, read_timestamp, utf8};
use super::wire::{Reader, WireValue};
use super::{MAX_DEPTH, ProtobufError, envelope, schema};

/// What a decode carries down the messages.
pub(crate) struct Ctx {
    /// Skip `metadata.managedFields` on the wire.
    pub(crate) strip_managed_fields: bool,
    depth: usize,
}

/// A struct with a generated decoder.
pub(crate) trait Message: Sized {
    /// The protobuf message's full name (for errors).
    const NAME: &'static str;

    /// The value decoding starts from: `Default::default()`, or for the few structs without
    /// `Default` (a required time inside) every field at its default and the time at the
    /// Unix epoch, until the wire sets it.
    fn empty() -> Self;

    /// Fills the field numbered `number` from `value`. `reader` is positioned after it, so
    /// a repeated field can take its following entries at once.
    fn merge_field<'a>(
        &mut self,
        number: u32,
        value: WireValue<'a>,
        reader: &mut Reader<'a>,
        ctx: &mut Ctx,
    ) -> Result<(), ProtobufError>;

    /// Writes the struct's fields (the message's contents, without a key or length).
    fn encode_fields(&self, out: &mut encode::Out<'_>);
}

/// The JSON name of a message's field, for errors.
fn json_name(message: &'static str, number: u32) -> &'static str {
    schema::schema()
        .ok()
        .and_then(|s| s.message(message).ok())
        .and_then(|m| m.field(number))
        .map_or("", |f| f.json)
}

/// Reads a message's fields from `bytes` into `msg` (protobuf's merge: fields that appear
/// again replace scalars and merge messages).
fn merge_message<M: Message>(
    msg: &mut M,
    bytes: &[u8],
    ctx: &mut Ctx,
) -> Result<(), ProtobufError> {
    each_field(bytes, ctx, |number, value, reader, ctx| {
        msg.merge_field(number, value, reader, ctx)
            .map_err(|e| e.in_field(M::NAME, json_name(M::NAME, number)))
    })
}

/// Calls `f` for every field of the message in `bytes`, one level deeper.
fn each_field<'a>(
    bytes: &'a [u8],
    ctx: &mut Ctx,
    mut f: impl FnMut(u32, WireValue<'a>, &mut Reader<'a>, &mut Ctx) -> Result<(), ProtobufError>,
) -> Result<(), ProtobufError> {
    if ctx.depth >= MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    ctx.depth += 1;
    let mut reader = Reader::new(bytes);
    let result = (|| {
        while let Some((number, value)) = reader.field()? {
            f(number, value, &mut reader, ctx)?;
        }
        Ok(())
    })();
    ctx.depth -= 1;
    result
}

/// An inlined message (`VolumeSource` in `Volume`): its fields fill the parent's.
pub(crate) fn decode_inlined<'a>(
    value: WireValue<'a>,
    ctx: &mut Ctx,
    f: impl FnMut(u32, WireValue<'a>, &mut Reader<'a>, &mut Ctx) -> Result<(), ProtobufError>,
) -> Result<(), ProtobufError> {
    let WireValue::Len(bytes) = value else {
        return Err(ProtobufError::WrongWireType);
    };
    each_field(bytes, ctx, f)
}

/// A value read from the wire: a scalar, a special type or a generated message.
pub(crate) trait Decode: Sized {
    /// A value from one wire value; `None` when it stands for an absent value (an empty time
    /// or raw extension).
    fn decode(value: WireValue<'_>, ctx: &mut Ctx) -> Result<Option<Self>, ProtobufError>;

    /// Merges a later occurrence of the same field: scalars are replaced, messages merge.
    fn merge(&mut self, value: WireValue<'_>, ctx: &mut Ctx) -> Result<(), ProtobufError> {
        if let Some(v) = Self::decode(value, ctx)? {
            *self = v;
        }
        Ok(())
    }

    /// The value of a map entry that has no value: the type's zero value.
    fn missing(ctx: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Self::decode(WireValue::Len(&[]), ctx)
    }

    /// Fills an absent optional field (messages are built in place, not moved in).
    fn decode_into(
        slot: &mut Option<Self>,
        value: WireValue<'_>,
        ctx: &mut Ctx,
    ) -> Result<(), ProtobufError> {
        *slot = Self::decode(value, ctx)?;
        Ok(())
    }

    /// Appends one value of a repeated field (messages are built in place, not moved in).
    fn push(vec: &mut Vec<Self>, value: WireValue<'_>, ctx: &mut Ctx) -> Result<(), ProtobufError> {
        if let Some(v) = Self::decode(value, ctx)? {
            vec.push(v);
        }
        Ok(())
    }

    /// Whether repeated values may come packed in one length-delimited field.
    const PACKABLE: bool = false;

    /// The next packed value.
    fn packed(reader: &mut Reader<'_>) -> Result<WireValue<'static>, ProtobufError> {
        Ok(WireValue::Varint(reader.varint()?))
    }
}

/// A struct field: a value, an `Option`, a `Vec` or a map of values.
pub(crate) trait Slot {
    /// Fills the field from `value` (and, for repeated fields, the entries that follow it
    /// in `reader`).
    fn fill<'a>(
        &mut self,
        value: WireValue<'a>,
        reader: &mut Reader<'a>,
        number: u32,
        ctx: &mut Ctx,
    ) -> Result<(), ProtobufError>;
}

/// A repeated field: counts the consecutive entries (Go writes them together) so the vector
/// is allocated at its exact size, then decodes them; packed numbers are expanded.
fn fill_vec<'a, T: Decode>(
    vec: &mut Vec<T>,
    first: WireValue<'a>,
    reader: &mut Reader<'a>,
    number: u32,
    ctx: &mut Ctx,
) -> Result<(), ProtobufError> {
    if T::PACKABLE
        && let WireValue::Len(bytes) = first
    {
        let mut packed = Reader::new(bytes);
        while !packed.is_empty() {
            if let Some(v) = T::decode(T::packed(&mut packed)?, ctx)? {
                vec.push(v);
            }
        }
        return Ok(());
    }
    let mut count = 1;
    let mut ahead = *reader;
    while let Some((next, _)) = ahead.field()? {
        if next != number {
            break;
        }
        count += 1;
    }
    vec.reserve_exact(count);
    T::push(vec, first, ctx)?;
    for _ in 1..count {
        if let Some((_, value)) = reader.field()? {
            T::push(vec, value, ctx)?;
        }
    }
    Ok(())
}

/// One entry (key 1, value 2) of a map field.
fn fill_map<T: Decode>(
    map: &mut BTreeMap<String, T>,
    entry: WireValue<'_>,
    ctx: &mut Ctx,
) -> Result<(), ProtobufError> {
    let WireValue::Len(bytes) = entry else {
        return Err(ProtobufError::WrongWireType);
    };
    let (mut key, mut value) = ("", None);
    let mut reader = Reader::new(bytes);
    while let Some((number, v)) = reader.field()? {
        match (number, v) {
            (1, WireValue::Len(b)) => key = utf8(b)?,
            (1, _) => return Err(ProtobufError::WrongWireType),
            (2, v) => value = Some(v),
            _ => {}
        }
    }
    let value = match value {
        Some(v) => T::decode(v, ctx)?,
        None => T::missing(ctx)?,
    };
    if let Some(value) = value {
        map.insert(key.to_owned(), value);
    }
    Ok(())
}

/// The [`Slot`] impls of a [`Decode`] type: the value itself, `Option`, `Vec`,
/// `Option<Vec>`, and string-keyed maps of it.
macro_rules! slots {
    ($($t:ty),*) => {$(
        impl $crate::protobuf::typed::Slot for $t {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                _reader: &mut $crate::protobuf::wire::Reader<'a>,
                _number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                $crate::protobuf::typed::Decode::merge(self, value, ctx)
            }
        }
        impl $crate::protobuf::typed::Slot for Option<$t> {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                _reader: &mut $crate::protobuf::wire::Reader<'a>,
                _number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                match self {
                    Some(v) => $crate::protobuf::typed::Decode::merge(v, value, ctx),
                    None => $crate::protobuf::typed::Decode::decode_into(self, value, ctx),
                }
            }
        }
        impl $crate::protobuf::typed::Slot for Vec<$t> {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                reader: &mut $crate::protobuf::wire::Reader<'a>,
                number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                $crate::protobuf::typed::fill_vec(self, value, reader, number, ctx)
            }
        }
        impl $crate::protobuf::typed::Slot for Option<Vec<$t>> {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                reader: &mut $crate::protobuf::wire::Reader<'a>,
                number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                $crate::protobuf::typed::fill_vec(
                    self.get_or_insert_with(Vec::new),
                    value,
                    reader,
                    number,
                    ctx,
                )
            }
        }
        impl $crate::protobuf::typed::Slot for std::collections::BTreeMap<String, $t> {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                _reader: &mut $crate::protobuf::wire::Reader<'a>,
                _number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                $crate::protobuf::typed::fill_map(self, value, ctx)
            }
        }
        impl $crate::protobuf::typed::Slot for Option<std::collections::BTreeMap<String, $t>> {
            fn fill<'a>(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'a>,
                _reader: &mut $crate::protobuf::wire::Reader<'a>,
                _number: u32,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                $crate::protobuf::typed::fill_map(
                    self.get_or_insert_with(Default::default),
                    value,
                    ctx,
                )
            }
        }
    )*};
}
pub(crate) use slots;

/// The [`Decode`] impl of a generated [`Message`].
macro_rules! message {
    ($t:ty) => {
        impl $crate::protobuf::typed::Decode for $t
        where
            $t: $crate::protobuf::typed::Message,
        {
            fn decode(
                value: $crate::protobuf::wire::WireValue<'_>,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<Option<Self>, $crate::protobuf::ProtobufError> {
                let mut message = <$t as $crate::protobuf::typed::Message>::empty();
                $crate::protobuf::typed::Decode::merge(&mut message, value, ctx)?;
                Ok(Some(message))
            }

            fn merge(
                &mut self,
                value: $crate::protobuf::wire::WireValue<'_>,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                match value {
                    $crate::protobuf::wire::WireValue::Len(bytes) => {
                        $crate::protobuf::typed::merge_message(self, bytes, ctx)
                    }
                    _ => Err($crate::protobuf::ProtobufError::WrongWireType),
                }
            }

            fn decode_into(
                slot: &mut Option<Self>,
                value: $crate::protobuf::wire::WireValue<'_>,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                let message = slot.insert(<$t as $crate::protobuf::typed::Message>::empty());
                $crate::protobuf::typed::Decode::merge(message, value, ctx)
            }

            fn push(
                vec: &mut Vec<Self>,
                value: $crate::protobuf::wire::WireValue<'_>,
                ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<(), $crate::protobuf::ProtobufError> {
                vec.push(<$t as $crate::protobuf::typed::Message>::empty());
                match vec.last_mut() {
                    Some(message) => $crate::protobuf::typed::Decode::merge(message, value, ctx),
                    None => Ok(()),
                }
            }
        }
        impl $crate::protobuf::typed::encode::Encode for $t {
            fn put_value(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                out.message(number, |out| {
                    $crate::protobuf::typed::Message::encode_fields(self, out);
                });
            }
        }
        $crate::protobuf::typed::encode::puts!($t);
    };
}
pub(crate) use message;

/// The [`Decode`] and [`Slot`] impls of an object type without properties (`{}` in JSON,
/// a JSON value in `k8s-openapi`): whatever its message holds, it reads as `{}`.
macro_rules! empty_object {
    ($t:ty) => {
        impl $crate::protobuf::typed::Decode for $t {
            fn decode(
                value: $crate::protobuf::wire::WireValue<'_>,
                _ctx: &mut $crate::protobuf::typed::Ctx,
            ) -> Result<Option<Self>, $crate::protobuf::ProtobufError> {
                match value {
                    $crate::protobuf::wire::WireValue::Len(_) => Ok(Some(Self(
                        serde_json::Value::Object(serde_json::Map::new()),
                    ))),
                    _ => Err($crate::protobuf::ProtobufError::WrongWireType),
                }
            }
        }
        impl $crate::protobuf::typed::encode::Encode for $t {
            fn put_value(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                $crate::protobuf::typed::encode::put_empty_object(&self.0, number, out);
            }
        }
        $crate::protobuf::typed::slots!($t);
        $crate::protobuf::typed::encode::puts!($t);
    };
}
pub(crate) use empty_object;

slots!(
    String,
    bool,
    i32,
    i64,
    f64,
    ByteString,
    Quantity,
    IntOrString,
    Time,
    MicroTime,
    FieldsV1,
    RawExtension
);

/// A Go named slice of strings (`Verbs`, `ExtraValue`): one message of repeated `items = 1`.
impl Decode for Vec<String> {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        let mut items = Vec::new();
        read_string_array(&mut items, value)?;
        Ok(Some(items))
    }
}

fn read_string_array(items: &mut Vec<String>, value: WireValue<'_>) -> Result<(), ProtobufError> {
    let mut reader = Reader::new(len(value)?);
    while let Some((number, item)) = reader.field()? {
        if number == 1 {
            items.push(utf8(len(item)?)?.to_owned());
        }
    }
    Ok(())
}

/// A field whose type is a Go named slice of strings.
pub(crate) trait StringArraySlot {
    /// Appends the array's items.
    fn items(&mut self) -> &mut Vec<String>;
}

impl StringArraySlot for Vec<String> {
    fn items(&mut self) -> &mut Vec<String> {
        self
    }
}

impl StringArraySlot for Option<Vec<String>> {
    fn items(&mut self) -> &mut Vec<String> {
        self.get_or_insert_with(Vec::new)
    }
}

/// Fills a field whose type is a Go named slice of strings (`APIResource.verbs`).
pub(crate) fn fill_string_array(
    slot: &mut impl StringArraySlot,
    value: WireValue<'_>,
) -> Result<(), ProtobufError> {
    read_string_array(slot.items(), value)
}

impl Slot for BTreeMap<String, Vec<String>> {
    fn fill<'a>(
        &mut self,
        value: WireValue<'a>,
        _: &mut Reader<'a>,
        _: u32,
        ctx: &mut Ctx,
    ) -> Result<(), ProtobufError> {
        fill_map(self, value, ctx)
    }
}

impl Slot for Option<BTreeMap<String, Vec<String>>> {
    fn fill<'a>(
        &mut self,
        value: WireValue<'a>,
        _: &mut Reader<'a>,
        _: u32,
        ctx: &mut Ctx,
    ) -> Result<(), ProtobufError> {
        fill_map(self.get_or_insert_with(BTreeMap::new), value, ctx)
    }
}

fn varint(value: WireValue<'_>) -> Result<u64, ProtobufError> {
    match value {
        WireValue::Varint(v) => Ok(v),
        _ => Err(ProtobufError::WrongWireType),
    }
}

fn len(value: WireValue<'_>) -> Result<&[u8], ProtobufError> {
    match value {
        WireValue::Len(b) => Ok(b),
        _ => Err(ProtobufError::WrongWireType),
    }
}

impl Decode for String {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(utf8(len(value)?)?.to_owned()))
    }
}

impl Decode for bool {
    const PACKABLE: bool = true;

    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(varint(value)? != 0))
    }

    fn missing(_: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(false))
    }
}

impl Decode for i32 {
    const PACKABLE: bool = true;

    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        // int32 is sign-extended to 64 bits on the wire.
        Ok(Some(varint(value)? as i64 as i32))
    }

    fn missing(_: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(0))
    }
}

impl Decode for i64 {
    const PACKABLE: bool = true;

    #[allow(clippy::cast_possible_wrap)]
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(varint(value)? as i64))
    }

    fn missing(_: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(0))
    }
}

impl Decode for f64 {
    const PACKABLE: bool = true;

    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        match value {
            WireValue::Fixed64(v) => Ok(Some(f64::from_bits(v))),
            _ => Err(ProtobufError::WrongWireType),
        }
    }

    fn missing(_: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(0.0))
    }

    fn packed(reader: &mut Reader<'_>) -> Result<WireValue<'static>, ProtobufError> {
        Ok(WireValue::Fixed64(reader.fixed64()?))
    }
}

impl Decode for ByteString {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(ByteString(len(value)?.to_vec())))
    }
}

impl Decode for Quantity {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(Quantity(quantity_text(len(value)?)?.to_owned())))
    }
}

impl Decode for IntOrString {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(Some(match int_or_string(len(value)?)? {
            Ok(text) => IntOrString::String(text.to_owned()),
            Err(int) => IntOrString::Int(int),
        }))
    }
}

/// A seconds+nanos message as its JSON form keeps it: whole seconds for `Time`,
/// microseconds for `MicroTime`; `None` for an empty message (Go's zero time).
fn timestamp(
    value: WireValue<'_>,
    subsecond_unit: i32,
) -> Result<Option<jiff::Timestamp>, ProtobufError> {
    let Some(ts) = read_timestamp(len(value)?)? else {
        return Ok(None);
    };
    let nanos = ts.subsec_nanosecond();
    let (seconds, nanos) = if nanos < 0 {
        (ts.as_second() - 1, nanos + 1_000_000_000)
    } else {
        (ts.as_second(), nanos)
    };
    let kept = nanos - nanos % subsecond_unit;
    jiff::Timestamp::new(seconds, kept)
        .map(Some)
        .map_err(|e| ProtobufError::InvalidValue(format!("timestamp {seconds}s {kept}ns: {e}")))
}

impl Decode for Time {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(timestamp(value, 1_000_000_000)?.map(Time))
    }
}

impl Decode for MicroTime {
    fn decode(value: WireValue<'_>, _: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(timestamp(value, 1_000)?.map(MicroTime))
    }
}

/// The JSON held by a raw-JSON message (`raw = 1`); `None` when it is empty. A raw value
/// that is itself an enveloped protobuf object is decoded to its JSON form.
fn raw_json(value: WireValue<'_>, ctx: &Ctx) -> Result<Option<serde_json::Value>, ProtobufError> {
    let raw = raw_of(len(value)?)?;
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.starts_with(super::MAGIC) {
        return envelope::decode_at_depth(raw, ctx.depth + 1).map(Some);
    }
    // simd-json, as the JSON path decodes these values (a Pod's managedFields are ~1 KB).
    crate::decode_object(raw, false)
        .map(Some)
        .map_err(ProtobufError::RawJsonDecode)
}

impl Decode for FieldsV1 {
    fn decode(value: WireValue<'_>, ctx: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(raw_json(value, ctx)?.map(FieldsV1))
    }
}

impl Decode for RawExtension {
    fn decode(value: WireValue<'_>, ctx: &mut Ctx) -> Result<Option<Self>, ProtobufError> {
        Ok(raw_json(value, ctx)?.map(RawExtension))
    }
}

/// The decoder of one kind, stored by the type it decodes.
struct Entry {
    api_version: &'static str,
    kind: &'static str,
    decode: fn(&[u8], &mut Ctx, &mut dyn Any) -> Result<(), ProtobufError>,
    encode: fn(&dyn Any, &mut encode::Out<'_>) -> bool,
}

/// Every kind with a generated decoder, by the `TypeId` of its struct.
pub(crate) struct Table(HashMap<TypeId, Entry>);

impl Table {
    fn add<K: Message + k8s_openapi::Resource + 'static>(&mut self) {
        self.0.insert(
            TypeId::of::<K>(),
            Entry {
                api_version: K::API_VERSION,
                kind: K::KIND,
                decode: decode_into::<K>,
                encode: encode_from::<K>,
            },
        );
    }
}

fn decode_into<K: Message + 'static>(
    bytes: &[u8],
    ctx: &mut Ctx,
    slot: &mut dyn Any,
) -> Result<(), ProtobufError> {
    match slot.downcast_mut::<Option<K>>() {
        Some(slot) => merge_message(slot.insert(K::empty()), bytes, ctx),
        None => Ok(()),
    }
}

/// Writes `obj`'s fields when it is a `K` (`false` otherwise).
fn encode_from<K: Message + 'static>(obj: &dyn Any, out: &mut encode::Out<'_>) -> bool {
    match obj.downcast_ref::<K>() {
        Some(obj) => {
            obj.encode_fields(out);
            true
        }
        None => false,
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Table(HashMap::new());
        generated::register(&mut table);
        table
    })
}

/// Whether `K` has a generated protobuf decoder and encoder ([`decode_message`],
/// [`encode_message`]): the built-in kinds.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient_machinery::DynamicObject;
/// use kubeclient_machinery::protobuf::has_generated_codec;
///
/// assert!(has_generated_codec::<Pod>());
/// assert!(!has_generated_codec::<DynamicObject>());
/// ```
#[must_use]
pub fn has_generated_codec<K: 'static>() -> bool {
    table().0.contains_key(&TypeId::of::<K>())
}

/// Decodes one message of `api_version`/`kind` (no envelope) into `K` with its generated
/// decoder; `None` when `K` has none (the caller uses the serde path).
pub(crate) fn decode<K: 'static>(
    api_version: &str,
    kind: &str,
    item: &[u8],
    strip_managed_fields: bool,
) -> Option<Result<K, ProtobufError>> {
    let entry = table().0.get(&TypeId::of::<K>())?;
    if entry.api_version != api_version || entry.kind != kind {
        return Some(Err(ProtobufError::InvalidValue(format!(
            "the object is {api_version}, Kind={kind}, not {}, Kind={}",
            entry.api_version, entry.kind
        ))));
    }
    let mut ctx = Ctx {
        strip_managed_fields,
        depth: 0,
    };
    let mut slot: Option<K> = None;
    Some(match (entry.decode)(item, &mut ctx, &mut slot) {
        Ok(()) => slot.ok_or(ProtobufError::Schema(format!(
            "the decoder registered for {kind} builds another type"
        ))),
        Err(err) => Err(err),
    })
}

/// Appends `obj` to `out` as its protobuf message (no envelope: the bytes
/// [`decode_message`] reads) with its generated encoder; `None` when `K` has none (custom
/// resources, CRDs, dynamic objects). The [`Fidelity`] says whether the bytes decode back
/// to an equal struct.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::protobuf::{Fidelity, decode_message, encode_message};
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("cfg".into());
/// cm.data = Some([("a".to_owned(), "b".to_owned())].into());
/// let mut bytes = Vec::new();
/// assert_eq!(encode_message(&cm, &mut bytes), Some(Fidelity::Exact));
/// assert_eq!(decode_message::<ConfigMap>(&bytes).unwrap()?, cm);
///
/// // An empty name reads back as no name: the encoder says so.
/// cm.metadata.name = Some(String::new());
/// assert_eq!(encode_message(&cm, &mut Vec::new()), Some(Fidelity::Inexact));
/// # Ok::<(), kubeclient_machinery::protobuf::ProtobufError>(())
/// ```
pub fn encode_message<K: 'static>(obj: &K, out: &mut Vec<u8>) -> Option<Fidelity> {
    let entry = table().0.get(&TypeId::of::<K>())?;
    let mut writer = encode::Out::new(out);
    (entry.encode)(obj, &mut writer).then(|| writer.fidelity())
}

/// Decodes one protobuf message of `K`'s kind (no envelope, as [`encode_message`] writes
/// it) with its generated decoder; `None` when `K` has none.
///
/// # Errors
///
/// [`ProtobufError`] when the bytes are not a valid message of the kind.
pub fn decode_message<K: 'static>(bytes: &[u8]) -> Option<Result<K, ProtobufError>> {
    let entry = table().0.get(&TypeId::of::<K>())?;
    decode(entry.api_version, entry.kind, bytes, false)
}

pub use encode::Fidelity;

#[cfg(test)]
mod tests;
