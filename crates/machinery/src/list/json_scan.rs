//! Byte-level JSON scanning: the extent of a value and the members of an object, without
//! building anything. Used to split lists into items and to edit or peek at an item's
//! metadata before (or instead of) decoding it.
//!
//! Every function here takes a complete, already-received byte slice and returns `None`
//! when the JSON is malformed or cut short; none of them panics on any input.

/// The index of the first byte at or after `at` that is not JSON whitespace.
pub(crate) fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The index just after the string that starts (with its opening quote) at `start`.
pub(crate) fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    if bytes.get(start) != Some(&b'"') {
        return None;
    }
    let mut at = start + 1;
    loop {
        let offset = memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        at += offset;
        if bytes[at] == b'\\' {
            at += 2;
        } else {
            return Some(at + 1);
        }
    }
}

/// The index just after the JSON value that starts at `start` (no leading whitespace).
pub(crate) fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            loop {
                match bytes.get(at)? {
                    b'"' => {
                        at = string_end(bytes, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            // A number or a literal: it ends at the first delimiter.
            let rest = &bytes[start..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            (len > 0).then_some(start + len)
        }
    }
}

/// One member of a JSON object, as byte ranges of the scanned slice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member {
    /// Where the key's opening quote is.
    pub(crate) key_start: usize,
    /// The key's raw text (between the quotes, escapes untouched).
    pub(crate) key: (usize, usize),
    /// Where the value starts and ends.
    pub(crate) value: (usize, usize),
}

/// The members of the object that starts at `start`, in order; `None` when it is not a
/// well-formed object.
pub(crate) fn object_members(bytes: &[u8], start: usize) -> Option<Vec<Member>> {
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let mut members = Vec::new();
    let mut at = skip_whitespace(bytes, start + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let key_start = at;
        let key_end = string_end(bytes, key_start)?;
        at = skip_whitespace(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_whitespace(bytes, at + 1);
        let value_end = value_end(bytes, value_start)?;
        members.push(Member {
            key_start,
            key: (key_start + 1, key_end - 1),
            value: (value_start, value_end),
        });
        at = skip_whitespace(bytes, value_end);
        match bytes.get(at)? {
            b',' => at = skip_whitespace(bytes, at + 1),
            b'}' => return Some(members),
            _ => return None,
        }
    }
}

/// The member named `name` of the object that starts at `start`.
pub(crate) fn find_member(bytes: &[u8], start: usize, name: &[u8]) -> Option<Member> {
    object_members(bytes, start)?
        .into_iter()
        .find(|member| &bytes[member.key.0..member.key.1] == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_end_where_json_says() {
        let text = br#"{"a":"x\"}","b":[1,{"c":"]"}],"d":12.5e3,"e":true}"#;
        assert_eq!(value_end(text, 0), Some(text.len()));
        let members = object_members(text, 0).unwrap();
        let keys: Vec<&[u8]> = members.iter().map(|m| &text[m.key.0..m.key.1]).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"d", b"e"]);
        let d = members[2];
        assert_eq!(&text[d.value.0..d.value.1], b"12.5e3");
        let b = find_member(text, 0, b"b").unwrap();
        assert_eq!(&text[b.value.0..b.value.1], br#"[1,{"c":"]"}]"#);
    }

    #[test]
    fn malformed_or_truncated_input_is_none_never_a_panic() {
        for text in [
            &b""[..],
            b"{",
            b"{\"a\"",
            b"{\"a\":",
            b"{\"a\":1",
            b"{\"a\":1,",
            b"{\"a\" 1}",
            b"{\"a\":\"\\",
            b"[",
            b"\"abc",
            b"}",
        ] {
            assert!(object_members(text, 0).is_none(), "{text:?}");
            let _ = value_end(text, 0);
        }
        assert_eq!(object_members(b"{ }", 0).map(|m| m.len()), Some(0));
    }
}
