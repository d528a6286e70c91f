//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
//!
//! This is the PATCH flavour `kubectl apply`, `kubectl patch` and `kubectl edit` send
//! for built-in kinds. It is JSON merge patch (RFC 7386) plus two things:
//!
//! * lists can *merge* instead of being replaced: either as a set of primitive values
//!   (`metadata.finalizers`) or as objects identified by a merge key (`containers` by
//!   `name`). Which list does what is schema knowledge; [`builtin_list_strategy`] carries
//!   the table for built-in kinds and [`strategic_merge`] takes it as a callback;
//! * `$`-prefixed directives inside the patch: `$patch` (`replace`/`delete`),
//!   `$retainKeys`, `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>`.
//!
//! The behaviour follows the API server's implementation (k8s.io/apimachinery
//! `pkg/util/strategicpatch`, `StrategicMergeMapPatch`), including how it orders merged
//! lists, which surprises people: items named by the patch take the patch's order and
//! win ties against items the patch does not mention, so a plain patch that adds a new
//! container puts it *before* the untouched ones (the kubectl patch task page shows this
//! with its `patch-demo-ctr-2` example). `kubectl apply`/`edit` avoid this by always
//! sending `$setElementOrder/<field>`, which pins the final order.
//!
//! Deliberate differences from upstream, all where upstream leaks patch syntax into the
//! stored object or silently does something odd:
//!
//! * directive keys never reach the result: values the original lacks are not copied
//!   verbatim but merged into an empty value, so nested directives and `null`s are
//!   resolved there too;
//! * `$patch: delete` on a nested map removes the field (upstream leaves `{}`);
//! * unknown `$` keys are rejected (upstream stores them and lets decoding drop them);
//! * `$deleteFromPrimitiveList/<field>` on a missing field is a no-op (upstream would
//!   *add* the values), and it is applied after the field's own merge instead of in
//!   random map order;
//! * `{"$patch": "replace"}` is also accepted in primitive lists, and directive elements
//!   in lists without merge semantics are dropped rather than stored.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

mod identity;
mod list_strategy;
mod merger;

use identity::*;
pub(crate) use list_strategy::{builtin_list_map_keys, builtin_list_strategy};
use merger::*;

/// Key of the directive that replaces or deletes the map (or list) it appears in.
const PATCH_KEY: &str = "$patch";
/// Key of the directive that lists the only fields a map may keep.
const RETAIN_KEYS_KEY: &str = "$retainKeys";
/// Prefix of the directive that fixes the final order of a merging list.
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder/";
/// Prefix of the directive that removes values from a primitive merging list.
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList/";
/// Nesting limit for maps and lists. Patches come from users, and recursion on an
/// unbounded depth could overflow the stack; serde_json's parser already stops at 128
/// levels, so this only bites on values built some other way.
const MAX_DEPTH: usize = 256;

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// The patch list replaces the original list (fields without a `patchStrategy` tag,
    /// i.e. atomic lists such as `tolerations` or `args`).
    Replace,
    /// Items are objects identified by the named field (`patchStrategy:"merge"` with a
    /// `patchMergeKey`, e.g. `containers` by `name`).
    MergeByKey(&'static str),
    /// Items are primitive values merged as a set (`patchStrategy:"merge"` without a merge
    /// key, e.g. `metadata.finalizers`).
    MergePrimitives,
}

/// Why a strategic merge patch could not be applied. Every variant names the field path
/// (dot separated, list positions left out) where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StrategicMergeError {
    /// The patch document itself is not a JSON object.
    #[error("strategic merge patch must be a JSON object, got {found}")]
    PatchNotObject {
        /// What the patch was instead (e.g. "a list").
        found: &'static str,
    },
    /// A `$`-prefixed key that is not a known directive.
    #[error("unknown patch directive `{directive}` at {path}")]
    UnknownDirective {
        /// Path of the map holding the key.
        path: String,
        /// The offending key.
        directive: String,
    },
    /// `$patch` holds something other than `"replace"` or `"delete"`.
    #[error("invalid `$patch` value {value} at {path}: expected \"replace\" or \"delete\"")]
    InvalidPatchValue {
        /// Path of the map or list holding the directive.
        path: String,
        /// The value found, as JSON.
        value: String,
    },
    /// A `$patch` directive that cannot apply to the list it appears in.
    #[error("invalid `$patch` element in list {path}: {reason}")]
    InvalidListDirective {
        /// Path of the list.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A directive whose value has the wrong shape.
    #[error("invalid `{directive}` at {path}: expected {expected}")]
    InvalidDirectiveValue {
        /// Path of the map holding the directive.
        path: String,
        /// The directive key.
        directive: String,
        /// What the value should have been.
        expected: &'static str,
    },
    /// An item of a list merged by key is not an object.
    #[error("item in list {path} must be an object with merge key `{key}`, got {found}")]
    ItemNotObject {
        /// Path of the list.
        path: String,
        /// The list's merge key.
        key: &'static str,
        /// What the item was instead.
        found: &'static str,
    },
    /// An item of a list merged by key lacks the key.
    #[error("item in list {path} is missing its merge key `{key}`")]
    MissingMergeKey {
        /// Path of the list.
        path: String,
        /// The list's merge key.
        key: &'static str,
    },
    /// A list merged as a set of primitives received an object or list in the patch.
    #[error("list {path} merges primitive values, but the patch contains {found}")]
    ItemNotPrimitive {
        /// Path of the list.
        path: String,
        /// What the item was instead.
        found: &'static str,
    },
    /// The patch sets a field that its own `$retainKeys` list would drop.
    #[error("field `{field}` at {path} is set by the patch but not listed in `$retainKeys`")]
    RetainKeysViolation {
        /// Path of the map holding `$retainKeys`.
        path: String,
        /// The unlisted field.
        field: String,
    },
    /// The patch list has items missing from, or out of order with, `$setElementOrder`.
    #[error(
        "items of list {path} are missing from, or out of order with, its `$setElementOrder` list"
    )]
    ElementOrderMismatch {
        /// Path of the list.
        path: String,
    },
    /// The patch nests maps and lists deeper than this implementation accepts.
    #[error("patch is nested more than {max} levels deep at {path}")]
    TooDeep {
        /// Path where the limit was hit.
        path: String,
        /// The limit.
        max: usize,
    },
}

/// Applies a strategic merge `patch` to `original` and returns the patched document.
///
/// `strategy` says how the list at a given field path merges (see
/// [`builtin_list_strategy`]). The patch must be a JSON object; an `original` that is not
/// an object is treated as `{}`. Neither input is modified.
///
/// # Errors
///
/// Returns a [`StrategicMergeError`] naming the offending field path when the patch is
/// not an object, uses an unknown or malformed directive, has a keyed-list item without
/// its merge key, or disagrees with its own `$retainKeys`/`$setElementOrder` lists.
pub(crate) fn strategic_merge(
    original: &Value,
    patch: &Value,
    strategy: &dyn Fn(&[&str]) -> ListStrategy,
) -> Result<Value, StrategicMergeError> {
    let Value::Object(patch) = patch else {
        return Err(StrategicMergeError::PatchNotObject {
            found: kind_name(patch),
        });
    };
    let base = match original {
        Value::Object(fields) => fields.clone(),
        _ => Map::new(),
    };
    let mut merger = Merger {
        strategy,
        path: Vec::new(),
        depth: 0,
    };
    // A root-level `$patch: delete` empties the object; there is no parent to remove it from.
    let merged = merger.merge_map(base, patch)?.unwrap_or_default();
    Ok(Value::Object(merged))
}

/// Removes a key without disturbing the order of the others. `Map::remove` swap-removes
/// when serde_json's `preserve_order` feature is on, which would shuffle fields.
fn remove_key(map: &mut Map<String, Value>, key: &str) {
    map.retain(|k, _| k != key);
}

/// A short description of a value's JSON type for error messages.
fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
