//! Identifying list items (by merge key, or by value for primitive lists) and the
//! `$setElementOrder` reordering.

use super::*;

/// A `$patch` element inside a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListDirective {
    /// `{"$patch": "replace"}`: the list becomes the other patch elements.
    Replace,
    /// `{"$patch": "delete", "<key>": v}`: drop the original item with that key.
    Delete,
}

/// A hashable stand-in for a JSON value, used to match merge keys and set members.
///
/// Numbers are normalised so `80` and `80.0` match, as they do upstream (Go decodes both
/// to the same float64). Composite values fall back to their JSON text, which is only an
/// approximation of equality but such values never serve as merge keys in practice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Ident {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Composite(String),
}

/// Converts a value to its [`Ident`].
pub(super) fn ident_of(value: &Value) -> Ident {
    match value {
        Value::Null => Ident::Null,
        Value::Bool(b) => Ident::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ident::Int(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Ident::Int(i128::from(u))
            } else {
                match n.as_f64() {
                    // Whole floats well inside i64 convert exactly and must match integers.
                    Some(f) if f.fract() == 0.0 && f.abs() < 1e18 => Ident::Int(f as i128),
                    Some(f) => Ident::Float(f.to_bits()),
                    None => Ident::Composite(n.to_string()),
                }
            }
        }
        Value::String(s) => Ident::Str(s.clone()),
        Value::Array(_) | Value::Object(_) => Ident::Composite(value.to_string()),
    }
}

/// How items of a merging list are identified.
#[derive(Debug, Clone, Copy)]
pub(super) enum Identity {
    /// By the value of this field (objects only).
    Key(&'static str),
    /// By the item itself (primitives).
    Value,
}

impl Identity {
    /// The identity of an item, or `None` for an object lacking the merge key (or a
    /// non-object in a keyed list). Such items can come from stored data; they are kept
    /// but never matched.
    pub(super) fn of(self, item: &Value) -> Option<Ident> {
        match self {
            Identity::Key(key) => item.as_object().and_then(|m| m.get(key)).map(ident_of),
            Identity::Value => Some(ident_of(item)),
        }
    }
}

/// First position of every identity in a sequence.
pub(super) fn first_positions(ids: impl Iterator<Item = Option<Ident>>) -> HashMap<Ident, usize> {
    let mut positions = HashMap::new();
    for (index, id) in ids.enumerate() {
        if let Some(id) = id {
            positions.entry(id).or_insert(index);
        }
    }
    positions
}

/// Orders a merged list the way the API server does.
///
/// Items named in `wanted` (the patch list, or `$setElementOrder`) are sorted by that
/// order. The rest ("server-only" items) keep their relative order, which is already the
/// server's because merging never moves original items. The two runs are then interleaved:
/// a server-only item goes first only if both it and the next named item exist in the
/// original and it came earlier there; otherwise the named item goes first. That is why
/// a brand-new item lands ahead of the untouched ones.
pub(super) fn normalize_order(
    merged: Vec<Value>,
    identity: Identity,
    wanted: &HashMap<Ident, usize>,
    server_order: &HashMap<Ident, usize>,
) -> Vec<Value> {
    let mut named = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let id = identity.of(&item);
        let server_pos = id.as_ref().and_then(|id| server_order.get(id).copied());
        match id.as_ref().and_then(|id| wanted.get(id).copied()) {
            Some(wanted_pos) => named.push((wanted_pos, server_pos, item)),
            None => server_only.push((server_pos, item)),
        }
    }
    // Stable, so duplicates keep their relative order.
    named.sort_by_key(|(wanted_pos, _, _)| *wanted_pos);

    let mut out = Vec::with_capacity(named.len() + server_only.len());
    let mut named = named
        .into_iter()
        .map(|(_, server_pos, item)| (server_pos, item))
        .peekable();
    let mut server_only = server_only.into_iter().peekable();
    loop {
        let take_server_only = match (server_only.peek(), named.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((Some(left), _)), Some((Some(right), _))) => left < right,
            (Some(_), Some(_)) => false,
        };
        let next = if take_server_only {
            server_only.next()
        } else {
            named.next()
        };
        if let Some((_, item)) = next {
            out.push(item);
        }
    }
    out
}
