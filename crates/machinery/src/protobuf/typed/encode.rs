//! The generated encoders' runtime: `k8s-openapi` structs written as protobuf messages
//! straight from their fields (no serde, no JSON), in field-number order, with canonical
//! lengths.
//!
//! The encoding is the inverse of the generated decoders, not a copy of Go's bytes: a value
//! the decoder would read back as the struct's default (a zero scalar, an empty list) is
//! left out. Where the decoder could *not* give back the same struct, the encoding says so
//! ([`Fidelity::Inexact`]) instead of silently changing the object: a zero value that the
//! decoder leaves absent (`Some("")` in a field JSON omits when empty), an empty list or map
//! that is `Some` in Rust, a `Time` with sub-second digits (its JSON form keeps seconds), a
//! Rust field the protobuf message has no number for. Callers that need the object back
//! exactly (the compact cache) fall back to JSON for those objects.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::super::wire::{WireType, put_key, put_len, put_varint};

/// Whether an encoded message decodes back to the struct it was written from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fidelity {
    /// Decoding the bytes gives back an equal struct.
    Exact,
    /// Some value of the struct is not carried, or reads back differently (see the module
    /// documentation); the bytes are still a valid message of the type.
    Inexact,
}

/// Where an encoding is written, and whether it is still exact.
pub(crate) struct Out<'a> {
    buf: &'a mut Vec<u8>,
    exact: bool,
}

impl<'a> Out<'a> {
    pub(crate) fn new(buf: &'a mut Vec<u8>) -> Self {
        Out { buf, exact: true }
    }

    pub(crate) fn fidelity(&self) -> Fidelity {
        if self.exact {
            Fidelity::Exact
        } else {
            Fidelity::Inexact
        }
    }

    /// Records that the bytes will not decode back to the same struct.
    pub(crate) fn inexact(&mut self) {
        self.exact = false;
    }

    /// A Rust field without a protobuf number: carried only when it is unset.
    pub(crate) fn unmapped<T: Default + PartialEq>(&mut self, value: &T) {
        if *value != T::default() {
            self.inexact();
        }
    }

    fn varint_field(&mut self, number: u32, value: u64) {
        put_key(self.buf, number, WireType::Varint);
        put_varint(self.buf, value);
    }

    fn bytes_field(&mut self, number: u32, bytes: &[u8]) {
        put_len(self.buf, number, bytes);
    }

    /// A length-delimited field whose contents `write` appends. The length is written after
    /// the contents, in its shortest form (moved up when it needs more than one byte).
    pub(crate) fn message(&mut self, number: u32, write: impl FnOnce(&mut Out<'_>)) {
        put_key(self.buf, number, WireType::Len);
        let at = self.buf.len();
        self.buf.push(0);
        write(self);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            // Lossless: the branch checked it is below 128.
            self.buf[at] = len as u8;
        } else {
            let mut prefix = Vec::with_capacity(10);
            put_varint(&mut prefix, len as u64);
            self.buf.splice(at..=at, prefix);
        }
    }
}

/// A value a field holds: a scalar, a special type or a generated message.
pub(crate) trait Encode {
    /// Writes the value as field `number` (key and value).
    fn put_value(&self, number: u32, out: &mut Out<'_>);

    /// Whether this is the value an absent field reads as (left out of plain fields).
    fn is_zero(&self) -> bool {
        false
    }
}

/// A struct field: a value, an `Option`, a `Vec` or a map of values.
pub(crate) trait Put {
    /// Writes the field's value(s) as field `number`.
    fn put(&self, number: u32, out: &mut Out<'_>);

    /// Writes a field whose zero value the decoder leaves absent (`omitempty` scalars):
    /// a `Some` zero cannot come back, so it makes the encoding inexact.
    fn put_nonzero(&self, number: u32, out: &mut Out<'_>) {
        self.put(number, out);
    }
}

fn put_entry<T: Encode>(key: &str, value: &T, number: u32, out: &mut Out<'_>) {
    out.message(number, |out| {
        out.bytes_field(1, key.as_bytes());
        value.put_value(2, out);
    });
}

/// The [`Put`] impls of an [`Encode`] type: the value itself, `Option`, `Vec`,
/// `Option<Vec>`, and string-keyed maps of it (the shapes [`slots!`](super::slots) decodes).
macro_rules! puts {
    ($($t:ty),*) => {$(
        impl $crate::protobuf::typed::encode::Put for $t {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                use $crate::protobuf::typed::encode::Encode;
                if !self.is_zero() {
                    self.put_value(number, out);
                }
            }
        }
        impl $crate::protobuf::typed::encode::Put for Option<$t> {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                if let Some(value) = self {
                    $crate::protobuf::typed::encode::Encode::put_value(value, number, out);
                }
            }

            fn put_nonzero(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                use $crate::protobuf::typed::encode::Encode;
                match self {
                    Some(value) if value.is_zero() => out.inexact(),
                    Some(value) => value.put_value(number, out),
                    None => {}
                }
            }
        }
        impl $crate::protobuf::typed::encode::Put for Vec<$t> {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                for value in self {
                    $crate::protobuf::typed::encode::Encode::put_value(value, number, out);
                }
            }
        }
        impl $crate::protobuf::typed::encode::Put for Option<Vec<$t>> {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                match self {
                    Some(values) if values.is_empty() => out.inexact(),
                    Some(values) => $crate::protobuf::typed::encode::Put::put(values, number, out),
                    None => {}
                }
            }
        }
        impl $crate::protobuf::typed::encode::Put for std::collections::BTreeMap<String, $t> {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                $crate::protobuf::typed::encode::put_map(self, number, out);
            }
        }
        impl $crate::protobuf::typed::encode::Put for Option<std::collections::BTreeMap<String, $t>> {
            fn put(&self, number: u32, out: &mut $crate::protobuf::typed::encode::Out<'_>) {
                match self {
                    Some(map) if map.is_empty() => out.inexact(),
                    Some(map) => $crate::protobuf::typed::encode::put_map(map, number, out),
                    None => {}
                }
            }
        }
    )*};
}
pub(crate) use puts;

pub(crate) fn put_map<T: Encode>(map: &BTreeMap<String, T>, number: u32, out: &mut Out<'_>) {
    for (key, value) in map {
        put_entry(key, value, number, out);
    }
}

/// A field whose type is a Go named slice of strings (`APIResource.verbs`): one message
/// of repeated `items = 1`.
pub(crate) trait StringArrayPut {
    /// The items, when the field is set.
    fn items(&self) -> Option<&[String]>;
}

impl StringArrayPut for Vec<String> {
    fn items(&self) -> Option<&[String]> {
        Some(self)
    }
}

impl StringArrayPut for Option<Vec<String>> {
    fn items(&self) -> Option<&[String]> {
        self.as_deref()
    }
}

/// Writes a Go named slice of strings (an empty one too: it reads back as `Some([])`).
pub(crate) fn put_string_array(slot: &impl StringArrayPut, number: u32, out: &mut Out<'_>) {
    if let Some(items) = slot.items() {
        out.message(number, |out| {
            for item in items {
                out.bytes_field(1, item.as_bytes());
            }
        });
    }
}

impl Encode for Vec<String> {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_string_array(self, number, out);
    }
}

impl Put for BTreeMap<String, Vec<String>> {
    fn put(&self, number: u32, out: &mut Out<'_>) {
        put_map(self, number, out);
    }
}

impl Put for Option<BTreeMap<String, Vec<String>>> {
    fn put(&self, number: u32, out: &mut Out<'_>) {
        match self {
            Some(map) if map.is_empty() => out.inexact(),
            Some(map) => put_map(map, number, out),
            None => {}
        }
    }
}

impl Encode for String {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.bytes_field(number, self.as_bytes());
    }

    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

impl Encode for bool {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.varint_field(number, u64::from(*self));
    }

    fn is_zero(&self) -> bool {
        !*self
    }
}

impl Encode for i32 {
    #[allow(clippy::cast_sign_loss)]
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        // int32 is sign-extended to 64 bits on the wire.
        out.varint_field(number, i64::from(*self) as u64);
    }

    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl Encode for i64 {
    #[allow(clippy::cast_sign_loss)]
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.varint_field(number, *self as u64);
    }

    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl Encode for f64 {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_key(out.buf, number, WireType::Fixed64);
        out.buf.extend_from_slice(&self.to_bits().to_le_bytes());
    }

    fn is_zero(&self) -> bool {
        self.to_bits() == 0
    }
}

impl Encode for ByteString {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.bytes_field(number, &self.0);
    }
}

impl Encode for Quantity {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.message(number, |out| out.bytes_field(1, self.0.as_bytes()));
    }
}

impl Encode for IntOrString {
    #[allow(clippy::cast_sign_loss)]
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        out.message(number, |out| match self {
            IntOrString::Int(int) => out.varint_field(2, i64::from(*int) as u64),
            IntOrString::String(text) => {
                out.varint_field(1, 1);
                out.bytes_field(3, text.as_bytes());
            }
        });
    }
}

/// A seconds+nanos message. The decoder keeps whole seconds for `Time` and microseconds
/// for `MicroTime` (as their JSON forms do) and reads an empty message (the Unix epoch) as
/// no time: values it would change make the encoding inexact.
#[allow(clippy::cast_sign_loss)]
fn put_timestamp(ts: jiff::Timestamp, subsecond_unit: i32, number: u32, out: &mut Out<'_>) {
    let (seconds, nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos % subsecond_unit != 0 || (seconds == 0 && nanos == 0) {
        out.inexact();
    }
    out.message(number, |out| {
        if seconds != 0 {
            out.varint_field(1, seconds as u64);
        }
        if nanos != 0 {
            out.varint_field(2, i64::from(nanos) as u64);
        }
    });
}

impl Encode for Time {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_timestamp(self.0, 1_000_000_000, number, out);
    }
}

impl Encode for MicroTime {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_timestamp(self.0, 1_000, number, out);
    }
}

/// A raw-JSON message (`raw = 1`): the value's JSON text.
fn put_raw_json(value: &serde_json::Value, number: u32, out: &mut Out<'_>) {
    out.message(number, |out| {
        out.message(1, |out| {
            if serde_json::to_writer(&mut *out.buf, value).is_err() {
                out.inexact();
            }
        });
    });
}

impl Encode for FieldsV1 {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_raw_json(&self.0, number, out);
    }
}

impl Encode for RawExtension {
    fn put_value(&self, number: u32, out: &mut Out<'_>) {
        put_raw_json(&self.0, number, out);
    }
}

puts!(
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

/// Writes an empty message for an object type without properties; one holding anything
/// but `{}` cannot come back.
pub(crate) fn put_empty_object(value: &serde_json::Value, number: u32, out: &mut Out<'_>) {
    if value.as_object().is_none_or(|map| !map.is_empty()) {
        out.inexact();
    }
    out.message(number, |_| {});
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
