//! The protobuf wire format: varints, keys and length-delimited fields, read from a borrowed
//! slice with every length checked against what is left (a length prefix never allocates).

use super::ProtobufError;

/// How a field's value is laid out on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

impl WireType {
    fn from_bits(bits: u64) -> Option<Self> {
        match bits {
            0 => Some(Self::Varint),
            1 => Some(Self::Fixed64),
            2 => Some(Self::Len),
            5 => Some(Self::Fixed32),
            _ => None,
        }
    }

    fn bits(self) -> u64 {
        match self {
            Self::Varint => 0,
            Self::Fixed64 => 1,
            Self::Len => 2,
            Self::Fixed32 => 5,
        }
    }
}

/// A field's value as read from the wire, before the schema gives it a meaning.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

impl WireValue<'_> {
    /// Whether this is its type's zero value (0, false, "", no bytes): what `omitempty`
    /// leaves out of JSON.
    pub(crate) fn is_zero(self) -> bool {
        match self {
            WireValue::Varint(v) | WireValue::Fixed64(v) => v == 0,
            WireValue::Fixed32(v) => v == 0,
            WireValue::Len(b) => b.is_empty(),
        }
    }
}

/// Reads fields from one message's bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not read yet.
    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, ProtobufError> {
        // Most varints (keys, lengths, small numbers) are one byte.
        if let Some((&byte, rest)) = self.buf.split_first()
            && byte < 0x80
        {
            self.buf = rest;
            return Ok(u64::from(byte));
        }
        let mut value: u64 = 0;
        for (i, &byte) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        if self.buf.len() < 10 {
            Err(ProtobufError::Truncated)
        } else {
            Err(ProtobufError::InvalidVarint)
        }
    }

    #[inline]
    fn take(&mut self, len: usize) -> Result<&'a [u8], ProtobufError> {
        if len > self.buf.len() {
            return Err(ProtobufError::Truncated);
        }
        let (head, tail) = self.buf.split_at(len);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, ProtobufError> {
        let bytes: [u8; 8] = self
            .take(8)?
            .try_into()
            .map_err(|_| ProtobufError::Truncated)?;
        Ok(u64::from_le_bytes(bytes))
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, ProtobufError> {
        let bytes: [u8; 4] = self
            .take(4)?
            .try_into()
            .map_err(|_| ProtobufError::Truncated)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// The next field's number and value, or `None` at the end of the message.
    #[inline]
    pub(crate) fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, ProtobufError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(ProtobufError::InvalidFieldNumber)?;
        let wire_type =
            WireType::from_bits(key & 7).ok_or(ProtobufError::UnsupportedWireType { number })?;
        let value = match wire_type {
            WireType::Varint => WireValue::Varint(self.varint()?),
            WireType::Fixed64 => WireValue::Fixed64(self.fixed64()?),
            WireType::Fixed32 => WireValue::Fixed32(self.fixed32()?),
            WireType::Len => {
                let len = usize::try_from(self.varint()?).map_err(|_| ProtobufError::Truncated)?;
                WireValue::Len(self.take(len)?)
            }
        };
        Ok(Some((number, value)))
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: WireType) {
    put_varint(out, (u64::from(number) << 3) | wire_type.bits());
}

pub(crate) fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, WireType::Len);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_overlong_ones_are_refused() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(Reader::new(&out).varint().unwrap(), value);
        }
        assert!(matches!(
            Reader::new(&[0xff; 11]).varint(),
            Err(ProtobufError::InvalidVarint)
        ));
        assert!(matches!(
            Reader::new(&[0xff, 0xff]).varint(),
            Err(ProtobufError::Truncated)
        ));
    }

    #[test]
    fn a_length_beyond_the_message_is_truncation_not_an_allocation() {
        // Field 1, length-delimited, length 2^62.
        let mut bytes = vec![0x0a];
        put_varint(&mut bytes, 1 << 62);
        assert!(matches!(
            Reader::new(&bytes).field(),
            Err(ProtobufError::Truncated)
        ));
    }
}
