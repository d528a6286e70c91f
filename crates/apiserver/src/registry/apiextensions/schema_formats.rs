//! The string `format`s of OpenAPI schemas that kube-apiserver checks on custom resources
//! (kube-openapi's `strfmt` registry): a string that does not parse as its format is
//! invalid (`spec.x in body must be of type uuid: "nope"`). Unknown formats, and formats on
//! numbers (`int32`, `int64`, `float`, `double`), are not checked, as upstream.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use base64::Engine as _;

/// Whether `value` is a valid `format`; `None` for a format that is not checked.
pub(crate) fn conforms(format: &str, value: &str) -> Option<bool> {
    let valid = match format {
        "date-time" | "datetime" => is_date_time(value),
        "date" => is_date(value),
        "duration" => is_duration(value),
        "uuid" => is_uuid(value, None),
        "uuid3" => is_uuid(value, Some('3')),
        "uuid4" => is_uuid(value, Some('4')),
        "uuid5" => is_uuid(value, Some('5')),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => Ipv4Addr::from_str(value).is_ok(),
        "ipv6" => value.contains(':') && Ipv6Addr::from_str(value).is_ok(),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uri" => is_uri(value),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok(),
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "hexcolor" => {
            let digits = value.strip_prefix('#').unwrap_or(value);
            matches!(digits.len(), 3 | 6) && digits.bytes().all(|b| b.is_ascii_hexdigit())
        }
        "ssn" => {
            let digits: String = value.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
            digits.len() == 9 && digits.bytes().all(|b| b.is_ascii_digit())
        }
        _ => return None,
    };
    Some(valid)
}

/// RFC 3339 with the `T` separator and a zone (`2006-01-02T15:04:05.999Z07:00`).
fn is_date_time(value: &str) -> bool {
    // ASCII only, so the byte offsets below are character boundaries.
    if !value.is_ascii() {
        return false;
    }
    let Some((date, rest)) = value.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) || rest.len() < 9 {
        return false;
    }
    let (clock, zone) = rest.split_at(8);
    let clock_ok = clock.len() == 8
        && clock.as_bytes().get(2) == Some(&b':')
        && clock.as_bytes().get(5) == Some(&b':')
        && in_range(&clock[0..2], 0, 23)
        && in_range(&clock[3..5], 0, 59)
        && in_range(&clock[6..8], 0, 60);
    let zone = match zone.strip_prefix('.') {
        Some(fraction) => {
            let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            &fraction[digits..]
        }
        None => zone,
    };
    let zone_ok = matches!(zone, "Z" | "z")
        || (zone.len() == 6
            && matches!(zone.as_bytes().first(), Some(b'+' | b'-'))
            && zone.as_bytes().get(3) == Some(&b':')
            && in_range(&zone[1..3], 0, 23)
            && in_range(&zone[4..6], 0, 59));
    clock_ok && zone_ok
}

fn in_range(digits: &str, low: u32, high: u32) -> bool {
    digits.bytes().all(|b| b.is_ascii_digit())
        && digits
            .parse::<u32>()
            .is_ok_and(|n| (low..=high).contains(&n))
}

/// A calendar date `2006-01-02`.
fn is_date(value: &str) -> bool {
    value.len() == 10 && jiff::civil::Date::strptime("%Y-%m-%d", value).is_ok()
}

/// Go's `time.ParseDuration` syntax (`1h30m`, `-1.5s`), or a number and a unit word as
/// strfmt also accepts (`3 days`, `2w`, `1 hour`).
fn is_duration(value: &str) -> bool {
    is_go_duration(value) || is_worded_duration(value)
}

fn is_go_duration(value: &str) -> bool {
    let mut rest = value.strip_prefix(['+', '-']).unwrap_or(value);
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let number = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if number == 0 || rest[..number].bytes().filter(|b| *b == b'.').count() > 1 {
            return false;
        }
        rest = &rest[number..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|unit| rest.starts_with(**unit))
            .max_by_key(|unit| unit.len());
        let Some(unit) = unit else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    true
}

fn is_worded_duration(value: &str) -> bool {
    const UNITS: [&str; 22] = [
        "ns",
        "us",
        "µs",
        "ms",
        "s",
        "sec",
        "second",
        "m",
        "min",
        "minute",
        "h",
        "hr",
        "hour",
        "d",
        "day",
        "w",
        "wk",
        "week",
        "nanosecond",
        "microsecond",
        "millisecond",
        "seconds",
    ];
    let digits = value.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let unit = value[digits..].trim_start();
    let singular = unit.strip_suffix('s').filter(|u| !u.is_empty());
    UNITS.contains(&unit) || singular.is_some_and(|u| UNITS.contains(&u))
}

/// 32 hex digits, dashes optional at 8-4-4-4-12; `version` the digit a versioned UUID has.
fn is_uuid(value: &str, version: Option<char>) -> bool {
    let hex: String = value.chars().filter(|c| *c != '-').collect();
    let dashes_ok = value.len() == 32 || {
        let groups: Vec<usize> = value.split('-').map(str::len).collect();
        groups == [8, 4, 4, 4, 12]
    };
    dashes_ok
        && hex.len() == 32
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
        && version.is_none_or(|digit| hex.chars().nth(12) == Some(digit))
}

/// `local@domain`, as Go's `net/mail` reads a bare address.
fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    let atom = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && !part.ends_with('.')
            && !part.contains("..")
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c))
    };
    atom(local) && atom(domain)
}

/// Labels of letters, digits and inner dashes, each at most 63 long, 255 in all.
fn is_hostname(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 255
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}

fn is_cidr(value: &str) -> bool {
    let Some((address, bits)) = value.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match IpAddr::from_str(address) {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `01:23:..`, `01-23-..` or `0123.4567.89ab`.
fn is_mac(value: &str) -> bool {
    let octets_ok = |count: usize| matches!(count, 6 | 8 | 20);
    for separator in [':', '-'] {
        let parts: Vec<&str> = value.split(separator).collect();
        if parts.len() > 1 {
            return octets_ok(parts.len())
                && parts
                    .iter()
                    .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
    let groups: Vec<&str> = value.split('.').collect();
    groups.len() > 1
        && octets_ok(groups.len() * 2)
        && groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:...`) or an absolute path.
fn is_uri(value: &str) -> bool {
    if value.starts_with('/') {
        return !value.contains(char::is_whitespace);
    }
    let Some((scheme, _)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !value.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::conforms;

    /// The values kube-apiserver v1.20 accepted and rejected for each format.
    #[test]
    fn formats_accept_and_reject_what_kube_apiserver_does() {
        let cases = [
            ("date-time", "2020-01-02T03:04:05Z", true),
            ("date-time", "2020-01-02T03:04:05.123+01:00", true),
            ("date-time", "yesterday", false),
            ("date-time", "2020-01-02T03:04:05", false),
            ("date-time", "2020-01-02 03:04:05Z", false),
            ("date-time", "2020-01-02T03:04Z", false),
            ("date", "2020-02-29", true),
            ("date", "2020-13-45", false),
            ("duration", "1h30m", true),
            ("duration", "-5m", true),
            ("duration", "1.5h", true),
            ("duration", "1d", true),
            ("duration", "3 days", true),
            ("duration", "2w", true),
            ("duration", "1 hour", true),
            ("duration", "10", false),
            ("duration", "forever", false),
            ("uuid", "0123456789abcdef0123456789abcdef", true),
            ("uuid", "01234567-89ab-cdef-0123-456789abcdef", true),
            ("uuid", "nope", false),
            ("email", "a@b", true),
            ("email", "not-mail", false),
            ("hostname", "a.b-c.com", true),
            ("hostname", "-bad-", false),
            ("ipv4", "1.2.3.4", true),
            ("ipv4", "1.2.3", false),
            ("ipv6", "::1", true),
            ("ipv6", "zz", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "1.2.3.4", false),
            ("mac", "01-23-45-67-89-ab", true),
            ("mac", "xx", false),
            ("uri", "/path", true),
            ("uri", "::", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "@@@", false),
        ];
        for (format, value, valid) in cases {
            assert_eq!(conforms(format, value), Some(valid), "{format} {value:?}");
        }
        assert_eq!(conforms("no-such-format", "anything"), None);
        assert_eq!(conforms("int32", "9999999999"), None);
    }

    proptest::proptest! {
        /// Any text, of any format, gets an answer: no slicing inside a character, no panic.
        #[test]
        fn any_text_of_any_format_is_judged_without_panicking(
            text in "\\PC{0,40}",
            format in proptest::sample::select(vec![
                "date-time", "date", "duration", "uuid", "uuid4", "email", "hostname", "ipv4",
                "ipv6", "cidr", "mac", "uri", "byte", "bsonobjectid", "hexcolor", "ssn",
            ]),
        ) {
            let _ = conforms(format, &text);
            let _ = conforms(format, &format!("2020-01-02T{text}"));
            let _ = conforms(format, &format!("{text}T03:04:05é"));
        }
    }
}
