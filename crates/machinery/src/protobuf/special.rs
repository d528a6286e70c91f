//! apimachinery types whose JSON form is not their protobuf message: `Time` and `MicroTime`
//! (RFC 3339 strings, seconds+nanos on the wire), `Duration` (Go duration strings,
//! nanoseconds on the wire), `Quantity` (a string either way), `IntOrString` (a number or a
//! string), and the raw JSON holders (`RawExtension`, `FieldsV1`, apiextensions' `JSON`).

use serde_json::Value;

use super::ProtobufError;
use super::wire::{Reader, WireType, WireValue, put_key, put_len, put_varint};

pub(crate) const TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Time";
pub(crate) const MICRO_TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime";
pub(crate) const DURATION: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration";
pub(crate) const QUANTITY: &str = "k8s.io.apimachinery.pkg.api.resource.Quantity";
pub(crate) const INT_OR_STRING: &str = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
pub(crate) const RAW_EXTENSION: &str = "k8s.io.apimachinery.pkg.runtime.RawExtension";
pub(crate) const FIELDS_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1";
const APIEXTENSIONS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";

/// Which special form a message has, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    /// `bytes raw = 1` holding JSON (or an enveloped protobuf object).
    RawJson,
    /// apiextensions' `JSONSchemaPropsOrArray`: an object or an array of them.
    PropsOrArray,
    /// `JSONSchemaPropsOrBool`: an object or a bool.
    PropsOrBool,
    /// `JSONSchemaPropsOrStringArray`: an object or an array of strings.
    PropsOrStringArray,
}

pub(crate) fn special(message: &str) -> Option<Special> {
    Some(match message {
        TIME => Special::Time,
        MICRO_TIME => Special::MicroTime,
        DURATION => Special::Duration,
        QUANTITY => Special::Quantity,
        INT_OR_STRING => Special::IntOrString,
        RAW_EXTENSION | FIELDS_V1 => Special::RawJson,
        _ => match message.strip_prefix(APIEXTENSIONS)? {
            "JSON" => Special::RawJson,
            "JSONSchemaPropsOrArray" => Special::PropsOrArray,
            "JSONSchemaPropsOrBool" => Special::PropsOrBool,
            "JSONSchemaPropsOrStringArray" => Special::PropsOrStringArray,
            _ => return None,
        },
    })
}

/// Reads a seconds+nanos message (Time, MicroTime) or `None` for an empty one (Go's zero time).
pub(crate) fn read_timestamp(bytes: &[u8]) -> Result<Option<jiff::Timestamp>, ProtobufError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0_i64, 0_i32);
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        match (number, value) {
            (1, WireValue::Varint(v)) => seconds = v as i64,
            (2, WireValue::Varint(v)) => nanos = v as i64 as i32,
            _ => {}
        }
    }
    jiff::Timestamp::new(seconds, nanos)
        .map(Some)
        .map_err(|e| ProtobufError::InvalidValue(format!("timestamp {seconds}s {nanos}ns: {e}")))
}

/// The longest time [`write_time`] writes: `2006-01-02T15:04:05.000000Z`.
pub(crate) const TIME_TEXT_MAX: usize = 27;

/// [`format_time`] into a buffer, without allocating; `None` outside 1970-9999 (where
/// [`format_time`] is used).
pub(crate) fn write_time(
    ts: jiff::Timestamp,
    micro: bool,
    buf: &mut [u8; TIME_TEXT_MAX],
) -> Option<&str> {
    let seconds = ts.as_second();
    if seconds < 0 || ts.subsec_nanosecond() < 0 {
        return None;
    }
    let (days, secs_of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    if year > 9999 {
        return None;
    }
    let mut put = |at: usize, value: i64, width: usize| {
        let mut value = value;
        for i in (at..at + width).rev() {
            if let Some(slot) = buf.get_mut(i) {
                *slot = b'0' + (value % 10) as u8;
            }
            value /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, secs_of_day / 3600, 2);
    put(14, secs_of_day / 60 % 60, 2);
    put(17, secs_of_day % 60, 2);
    let len = if micro {
        put(20, i64::from(ts.subsec_nanosecond() / 1000), 6);
        27
    } else {
        20
    };
    for (at, byte) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')] {
        buf[at] = byte;
    }
    if micro {
        buf[19] = b'.';
    }
    buf[len - 1] = b'Z';
    std::str::from_utf8(&buf[..len]).ok()
}

/// Howard Hinnant's `civil_from_days`: (year, month, day) of days since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// RFC 3339 in UTC, as Go's `metav1.Time` (seconds) and `MicroTime` (microseconds) write it.
pub(crate) fn format_time(ts: jiff::Timestamp, micro: bool) -> String {
    let seconds = ts.as_second();
    let (days, secs_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    if seconds < 0 || ts.subsec_nanosecond() < 0 || year > 9999 {
        // Before 1970 (where the sub-second part is negative) or beyond four digits: jiff.
        let format = if micro {
            "%Y-%m-%dT%H:%M:%S.%6fZ"
        } else {
            "%Y-%m-%dT%H:%M:%SZ"
        };
        return ts.strftime(format).to_string();
    }
    if micro {
        let micros = ts.subsec_nanosecond() / 1000;
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}Z")
    } else {
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
    }
}

pub(crate) fn write_timestamp(
    text: &str,
    micro: bool,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|e| ProtobufError::InvalidValue(format!("time {text:?}: {e}")))?;
    let nanos = if micro {
        ts.subsec_nanosecond() / 1000 * 1000
    } else {
        0
    };
    put_key(out, 1, WireType::Varint);
    put_varint(out, ts.as_second() as u64);
    if nanos != 0 {
        put_key(out, 2, WireType::Varint);
        put_varint(out, i64::from(nanos) as u64);
    }
    Ok(())
}

const UNITS: [(&str, i128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's `time.ParseDuration`: `1h2m3.5s`, `-300ms`, `0`.
pub(crate) fn parse_duration(text: &str) -> Result<i64, ProtobufError> {
    let bad = || ProtobufError::InvalidValue(format!("duration {text:?}"));
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(bad)?;
        let (number, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, scale)| *scale)
            .ok_or_else(bad)?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(bad());
        }
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(bad)?;
        let mut divisor = 1_i128;
        for digit in fraction.bytes().take(18) {
            divisor *= 10;
            part += i128::from(digit - b'0') * scale / divisor;
        }
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = tail;
    }
    let total = if negative { -total } else { total };
    i64::try_from(total).map_err(|_| bad())
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `300ms`, `0s`.
pub(crate) fn format_duration(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n == 0 {
        return "0s".to_owned();
    }
    let fraction = |value: u64, digits: u32| {
        let scale = 10_u64.pow(digits);
        let (whole, rest) = (value / scale, value % scale);
        if rest == 0 {
            whole.to_string()
        } else {
            let text = format!("{whole}.{rest:0width$}", width = digits as usize);
            text.trim_end_matches('0').to_owned()
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n, 3));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(n, 6));
    }
    let (hours, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = fraction(rest, 9);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// The one string field (`string = 1`) of a Quantity.
pub(crate) fn quantity_text(bytes: &[u8]) -> Result<&str, ProtobufError> {
    let mut text = "";
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        if let (1, WireValue::Len(b)) = (number, value) {
            text = utf8(b)?;
        }
    }
    Ok(text)
}

/// [`quantity_text`] as its JSON form.
pub(crate) fn read_quantity(bytes: &[u8]) -> Result<Value, ProtobufError> {
    Ok(Value::String(quantity_text(bytes)?.to_owned()))
}

/// An IntOrString's value: `Ok(Err(int))` for the integer form, `Ok(Ok(text))` for the
/// string form (`type = 1`).
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
pub(crate) fn int_or_string(bytes: &[u8]) -> Result<Result<&str, i32>, ProtobufError> {
    let (mut kind, mut int, mut text) = (0_u64, 0_i32, "");
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        match (number, value) {
            (1, WireValue::Varint(v)) => kind = v,
            (2, WireValue::Varint(v)) => int = v as i64 as i32,
            (3, WireValue::Len(b)) => text = utf8(b)?,
            _ => {}
        }
    }
    Ok(if kind == 1 { Ok(text) } else { Err(int) })
}

/// [`int_or_string`] as its JSON form.
pub(crate) fn read_int_or_string(bytes: &[u8]) -> Result<Value, ProtobufError> {
    Ok(match int_or_string(bytes)? {
        Ok(text) => Value::String(text.to_owned()),
        Err(int) => Value::from(int),
    })
}

/// The `raw = 1` bytes of a raw-JSON message (RawExtension, FieldsV1, apiextensions' JSON).
pub(crate) fn raw_of(bytes: &[u8]) -> Result<&[u8], ProtobufError> {
    let mut raw: &[u8] = &[];
    let mut reader = Reader::new(bytes);
    while let Some((number, value)) = reader.field()? {
        if let (1, WireValue::Len(b)) = (number, value) {
            raw = b;
        }
    }
    Ok(raw)
}

pub(crate) fn write_int_or_string(value: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    match value {
        Value::String(text) => {
            put_key(out, 1, WireType::Varint);
            put_varint(out, 1);
            put_len(out, 3, text.as_bytes());
        }
        Value::Number(n) => {
            let int = n
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| ProtobufError::InvalidValue(format!("IntOrString {n}")))?;
            put_key(out, 1, WireType::Varint);
            put_varint(out, 0);
            put_key(out, 2, WireType::Varint);
            put_varint(out, i64::from(int) as u64);
        }
        other => return Err(mismatch("an int or a string", other)),
    }
    Ok(())
}

pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, ProtobufError> {
    std::str::from_utf8(bytes).map_err(|_| ProtobufError::InvalidUtf8)
}

pub(crate) fn mismatch(expected: &'static str, found: &Value) -> ProtobufError {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ProtobufError::JsonType { expected, found }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_format_and_parse_like_go() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_723_000_000_000, "1h2m3s"),
            (3_600_000_000_000, "1h0m0s"),
            (-2_000_000_000, "-2s"),
        ] {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text).unwrap(), nanos, "{text}");
        }
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration(".5s").unwrap(), 500_000_000);
        for bad in ["", "5", "1x", "s", "-", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_keep_seconds_and_micro_times_keep_microseconds() {
        let mut out = Vec::new();
        write_timestamp("2024-05-01T10:00:00.123456789Z", true, &mut out).unwrap();
        let ts = read_timestamp(&out).unwrap().unwrap();
        assert_eq!(format_time(ts, true), "2024-05-01T10:00:00.123456Z");
        assert_eq!(format_time(ts, false), "2024-05-01T10:00:00Z");
        assert!(read_timestamp(&[]).unwrap().is_none());
        out.clear();
        write_timestamp("2024-05-01T12:00:00+02:00", false, &mut out).unwrap();
        let ts = read_timestamp(&out).unwrap().unwrap();
        assert_eq!(format_time(ts, false), "2024-05-01T10:00:00Z");
        assert!(write_timestamp("yesterday", false, &mut out).is_err());
        // The hand-written formatters agree with jiff's over the whole range.
        for seconds in [
            0_i64,
            1,
            59,
            86_399,
            86_400,
            951_782_400,
            1_709_164_800,
            4_102_444_799,
            253_402_207_199,
        ] {
            let ts = jiff::Timestamp::new(seconds, 123_456_000).unwrap();
            assert_eq!(
                format_time(ts, false),
                ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            );
            assert_eq!(
                format_time(ts, true),
                ts.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
            );
            let mut buf = [0; TIME_TEXT_MAX];
            let micro = format_time(ts, true);
            assert_eq!(write_time(ts, true, &mut buf), Some(micro.as_str()));
            let seconds = format_time(ts, false);
            assert_eq!(write_time(ts, false, &mut buf), Some(seconds.as_str()));
        }
        let old = jiff::Timestamp::new(-1, 500_000_000).unwrap();
        assert_eq!(format_time(old, true), "1969-12-31T23:59:59.500000Z");
    }
}
