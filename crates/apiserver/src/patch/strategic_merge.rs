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

/// The list strategy for a field of a built-in kind, given the path of field names from
/// the object root to the list, ignoring list indices
/// (e.g. `["spec","template","spec","containers"]`). Unknown fields and kinds replace.
///
/// The table mirrors the `patchStrategy`/`patchMergeKey` struct tags of k8s.io/api as of
/// Kubernetes v1.34 (core/v1 `PodSpec`, `Container`/`EphemeralContainerCommon`,
/// `PodStatus`, `NodeSpec`/`NodeStatus`, `ServiceSpec`, `ObjectMeta`; apps/v1, batch/v1,
/// autoscaling/v2 and policy/v1 status conditions). Notably `tolerations`, `envFrom`,
/// `resizePolicy`, `readinessGates` and container `resources.claims` carry no patch
/// strategy upstream (they are `listType=atomic` or map-typed for server-side apply only),
/// so they are replaced; `Service.spec.ports` merges on `port` alone although its
/// list-map key is `(port, protocol)`.
#[must_use]
pub(crate) fn builtin_list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    // ObjectMeta is embedded everywhere (object root, pod templates, claim templates), so
    // its two merging lists are recognised by their last two segments.
    match path {
        [.., "metadata", "finalizers"] => return ListStrategy::MergePrimitives,
        [.., "metadata", "ownerReferences"] => return ListStrategy::MergeByKey("uid"),
        _ => {}
    }
    if let Some(pod_spec) = pod_spec_prefix(kind).and_then(|prefix| path.strip_prefix(prefix)) {
        return pod_spec_list_strategy(pod_spec);
    }
    kind_list_strategy(kind, path)
}

/// Where a kind keeps its pod spec.
fn pod_spec_prefix(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "PodTemplate" => Some(&["template", "spec"]),
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template", "spec"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// List strategies inside a `PodSpec`, given the path relative to it.
fn pod_spec_list_strategy(path: &[&str]) -> ListStrategy {
    match path {
        ["containers" | "initContainers" | "ephemeralContainers"] => {
            ListStrategy::MergeByKey("name")
        }
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
            ListStrategy::MergeByKey("name")
        }
        ["hostAliases"] => ListStrategy::MergeByKey("ip"),
        ["topologySpreadConstraints"] => ListStrategy::MergeByKey("topologyKey"),
        [
            "containers" | "initContainers" | "ephemeralContainers",
            field,
        ] => match *field {
            "env" => ListStrategy::MergeByKey("name"),
            "ports" => ListStrategy::MergeByKey("containerPort"),
            "volumeMounts" => ListStrategy::MergeByKey("mountPath"),
            "volumeDevices" => ListStrategy::MergeByKey("devicePath"),
            // envFrom, resizePolicy, restartPolicyRules, command, args: atomic upstream.
            _ => ListStrategy::Replace,
        },
        // tolerations, readinessGates, dnsConfig lists: atomic upstream.
        _ => ListStrategy::Replace,
    }
}

/// Kinds whose `status.conditions` merge by `type` upstream.
const CONDITIONS_BY_TYPE: &[&str] = &[
    "Pod",
    "Node",
    "Service",
    "Namespace",
    "PersistentVolumeClaim",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
];

/// List strategies outside pod specs and object metadata.
fn kind_list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    match (kind, path) {
        ("Pod", ["status", "podIPs" | "hostIPs"]) => ListStrategy::MergeByKey("ip"),
        ("Pod", ["status", "resourceClaimStatuses"]) => ListStrategy::MergeByKey("name"),
        ("Node", ["status", "addresses"]) => ListStrategy::MergeByKey("type"),
        ("Node", ["spec", "podCIDRs"]) => ListStrategy::MergePrimitives,
        ("Service", ["spec", "ports"]) => ListStrategy::MergeByKey("port"),
        ("ServiceAccount", ["secrets"]) => ListStrategy::MergeByKey("name"),
        ("ComponentStatus", ["conditions"]) => ListStrategy::MergeByKey("type"),
        (kind, ["status", "conditions"]) if CONDITIONS_BY_TYPE.contains(&kind) => {
            ListStrategy::MergeByKey("type")
        }
        _ => ListStrategy::Replace,
    }
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

/// A `$patch` element inside a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListDirective {
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
enum Ident {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Composite(String),
}

/// Converts a value to its [`Ident`].
fn ident_of(value: &Value) -> Ident {
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
enum Identity {
    /// By the value of this field (objects only).
    Key(&'static str),
    /// By the item itself (primitives).
    Value,
}

impl Identity {
    /// The identity of an item, or `None` for an object lacking the merge key (or a
    /// non-object in a keyed list). Such items can come from stored data; they are kept
    /// but never matched.
    fn of(self, item: &Value) -> Option<Ident> {
        match self {
            Identity::Key(key) => item.as_object().and_then(|m| m.get(key)).map(ident_of),
            Identity::Value => Some(ident_of(item)),
        }
    }
}

/// First position of every identity in a sequence.
fn first_positions(ids: impl Iterator<Item = Option<Ident>>) -> HashMap<Ident, usize> {
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
fn normalize_order(
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

/// State of one merge: the list-strategy callback plus where we are in the document.
struct Merger<'a> {
    /// Decides how the list at a field path merges.
    strategy: &'a dyn Fn(&[&str]) -> ListStrategy,
    /// Field names from the root to the value being merged; list positions are left out
    /// because the strategy table is keyed by field names only.
    path: Vec<String>,
    /// Current nesting of maps and lists, checked against [`MAX_DEPTH`].
    depth: usize,
}

impl Merger<'_> {
    /// The current path for error messages.
    fn path_string(&self) -> String {
        if self.path.is_empty() {
            "(root)".to_owned()
        } else {
            self.path.join(".")
        }
    }

    /// The strategy of the list at the current path.
    fn list_strategy(&self) -> ListStrategy {
        let segments: Vec<&str> = self.path.iter().map(String::as_str).collect();
        (self.strategy)(&segments)
    }

    /// Steps one level deeper, refusing to go past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), StrategicMergeError> {
        if self.depth >= MAX_DEPTH {
            return Err(StrategicMergeError::TooDeep {
                path: self.path_string(),
                max: MAX_DEPTH,
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Steps back out after [`Merger::enter`].
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Error for a directive value of the wrong shape at the current path.
    fn invalid_directive(&self, directive: &str, expected: &'static str) -> StrategicMergeError {
        StrategicMergeError::InvalidDirectiveValue {
            path: self.path_string(),
            directive: directive.to_owned(),
            expected,
        }
    }

    /// Error for a `$patch` value that is neither `replace` nor `delete`.
    fn invalid_patch_value(&self, value: &Value) -> StrategicMergeError {
        StrategicMergeError::InvalidPatchValue {
            path: self.path_string(),
            value: value.to_string(),
        }
    }

    /// Merges a patch value into an optional original value. `None` in the result means
    /// the field must be removed (a `null` patch, or a map carrying `$patch: delete`).
    fn merge_value(
        &mut self,
        original: Option<Value>,
        patch: &Value,
    ) -> Result<Option<Value>, StrategicMergeError> {
        match patch {
            Value::Null => Ok(None),
            Value::Object(patch) => {
                // A type change (e.g. a string becoming a map) replaces, like upstream;
                // merging into an empty map still resolves the patch's directives.
                let base = match original {
                    Some(Value::Object(fields)) => fields,
                    _ => Map::new(),
                };
                Ok(self.merge_map(base, patch)?.map(Value::Object))
            }
            Value::Array(patch) => {
                let base = match original {
                    Some(Value::Array(items)) => Some(items),
                    _ => None,
                };
                Ok(Some(Value::Array(self.merge_list(base, patch)?)))
            }
            scalar => Ok(Some(scalar.clone())),
        }
    }

    /// A patch value with nothing to merge into, resolved as if merged into emptiness.
    /// `null` list elements survive as `null`, since they are values, not deletions.
    fn fresh_item(&mut self, item: &Value) -> Result<Option<Value>, StrategicMergeError> {
        if item.is_null() {
            return Ok(Some(Value::Null));
        }
        self.merge_value(None, item)
    }

    /// Merges a patch map into an original map; `None` means `$patch: delete`.
    fn merge_map(
        &mut self,
        original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
        self.enter()?;
        let result = self.merge_map_entered(original, patch);
        self.leave();
        result
    }

    /// [`Merger::merge_map`] once the depth is accounted for.
    fn merge_map_entered(
        &mut self,
        original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
        // `$patch` acts on the map as a whole, so it wins over everything else in it.
        if let Some(directive) = patch.get(PATCH_KEY) {
            return match directive.as_str() {
                Some("replace") => self.merge_fields(Map::new(), patch).map(Some),
                Some("delete") => Ok(None),
                _ => Err(self.invalid_patch_value(directive)),
            };
        }
        self.merge_fields(original, patch).map(Some)
    }

    /// Merges every field of `patch` (ignoring `$patch`, already handled) into `original`.
    ///
    /// The order mirrors the API server: `$retainKeys` first (it prunes the original),
    /// then lists that have a `$setElementOrder`, then all other fields, and finally
    /// `$deleteFromPrimitiveList` so deletions see the merged list.
    fn merge_fields(
        &mut self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Map<String, Value>, StrategicMergeError> {
        let mut retain_keys = None;
        let mut element_orders = Vec::new();
        let mut deletions = Vec::new();
        for (key, value) in patch {
            if !key.starts_with('$') || key == PATCH_KEY {
                continue;
            }
            if key == RETAIN_KEYS_KEY {
                retain_keys = Some(value);
            } else if let Some(field) = key
                .strip_prefix(SET_ELEMENT_ORDER_PREFIX)
                .filter(|field| !field.is_empty())
            {
                element_orders.push((key.as_str(), field, value));
            } else if let Some(field) = key
                .strip_prefix(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
                .filter(|field| !field.is_empty())
            {
                deletions.push((key.as_str(), field, value));
            } else {
                return Err(StrategicMergeError::UnknownDirective {
                    path: self.path_string(),
                    directive: key.clone(),
                });
            }
        }

        if let Some(names) = retain_keys {
            self.apply_retain_keys(&mut original, patch, names)?;
        }

        let mut ordered_fields = HashSet::new();
        for (directive, field, order) in element_orders {
            if self.apply_element_order(&mut original, patch, directive, field, order)? {
                ordered_fields.insert(field);
            }
        }

        for (key, value) in patch {
            if key.starts_with('$') || ordered_fields.contains(key.as_str()) {
                continue;
            }
            if value.is_null() {
                remove_key(&mut original, key);
                continue;
            }
            // Taking the value out (leaving null in its slot) lets the merge own it
            // without a clone, and re-inserting keeps the field's position.
            let current = original.get_mut(key).map(Value::take);
            self.path.push(key.clone());
            let merged = self.merge_value(current, value);
            self.path.pop();
            match merged? {
                Some(value) => {
                    original.insert(key.clone(), value);
                }
                None => remove_key(&mut original, key),
            }
        }

        for (directive, field, values) in deletions {
            let Value::Array(values) = values else {
                return Err(self.invalid_directive(directive, "a list of values to remove"));
            };
            // Deleting from a list that is not there leaves nothing to do.
            if let Some(Value::Array(items)) = original.get_mut(field) {
                let doomed: HashSet<Ident> = values.iter().map(ident_of).collect();
                items.retain(|item| !doomed.contains(&ident_of(item)));
            }
        }
        Ok(original)
    }

    /// `$retainKeys`: drops original fields not listed. The patch may not set unlisted
    /// fields itself, since they would be dropped too; upstream rejects that as well.
    fn apply_retain_keys(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        names: &Value,
    ) -> Result<(), StrategicMergeError> {
        let Value::Array(names) = names else {
            return Err(self.invalid_directive(RETAIN_KEYS_KEY, "a list of field names"));
        };
        let mut keep = HashSet::new();
        for name in names {
            let Some(name) = name.as_str() else {
                return Err(self.invalid_directive(RETAIN_KEYS_KEY, "a list of field names"));
            };
            keep.insert(name);
        }
        for (key, value) in patch {
            if key.starts_with('$') || value.is_null() {
                continue;
            }
            if !keep.contains(key.as_str()) {
                return Err(StrategicMergeError::RetainKeysViolation {
                    path: self.path_string(),
                    field: key.clone(),
                });
            }
        }
        original.retain(|key, _| keep.contains(key.as_str()));
        Ok(())
    }

    /// `$setElementOrder/<field>`: merges the field's list (if the patch has one) and then
    /// fixes its order. Returns whether the field was handled; a `null` patch value is left
    /// to the ordinary field loop, which deletes it.
    fn apply_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        directive: &str,
        field: &str,
        order: &Value,
    ) -> Result<bool, StrategicMergeError> {
        let Value::Array(order) = order else {
            return Err(self.invalid_directive(directive, "a list"));
        };
        let patch_list = match patch.get(field) {
            None => None,
            Some(Value::Array(items)) => Some(items.as_slice()),
            Some(Value::Null) => return Ok(false),
            Some(_) => {
                return Err(self.invalid_directive(directive, "the patched field to be a list"));
            }
        };
        let current = original.get_mut(field).map(Value::take);
        self.path.push(field.to_owned());
        let result = self.merge_in_element_order(current, patch_list, order);
        self.path.pop();
        if let Some(value) = result? {
            original.insert(field.to_owned(), value);
        }
        Ok(true)
    }

    /// Merges `patch_list` into `current` and orders the result by `order`; `None` when
    /// neither side has the field, so the directive alone does not create it.
    fn merge_in_element_order(
        &mut self,
        current: Option<Value>,
        patch_list: Option<&[Value]>,
        order: &[Value],
    ) -> Result<Option<Value>, StrategicMergeError> {
        let original_list = match (current, patch_list) {
            (None, None) => return Ok(None),
            (Some(Value::Array(items)), _) => items,
            // Nothing to merge and nothing list-like to reorder.
            (Some(other), None) => return Ok(Some(other)),
            (_, Some(_)) => Vec::new(),
        };
        let identity = match self.list_strategy() {
            // Without merge semantics the patch list stands as sent; kubectl never orders
            // such lists, so the directive is ignored rather than guessed at.
            ListStrategy::Replace => {
                let list = match patch_list {
                    Some(patch_list) => self.merge_list(Some(original_list), patch_list)?,
                    None => original_list,
                };
                return Ok(Some(Value::Array(list)));
            }
            ListStrategy::MergeByKey(key) => Identity::Key(key),
            ListStrategy::MergePrimitives => Identity::Value,
        };
        let mut order_ids = Vec::with_capacity(order.len());
        for item in order {
            order_ids.push(self.required_ident(identity, item)?);
        }
        if let Some(patch_list) = patch_list {
            self.check_patch_follows_order(identity, patch_list, &order_ids)?;
        }
        let server_order = first_positions(original_list.iter().map(|item| identity.of(item)));
        let merged = match patch_list {
            Some(patch_list) => self.merge_list(Some(original_list), patch_list)?,
            None => original_list,
        };
        let wanted = first_positions(order_ids.into_iter().map(Some));
        Ok(Some(Value::Array(normalize_order(
            merged,
            identity,
            &wanted,
            &server_order,
        ))))
    }

    /// The identity of a patch-side item, which must have one.
    fn required_ident(
        &self,
        identity: Identity,
        item: &Value,
    ) -> Result<Ident, StrategicMergeError> {
        match identity {
            Identity::Value => Ok(ident_of(item)),
            Identity::Key(key) => {
                let Value::Object(fields) = item else {
                    return Err(StrategicMergeError::ItemNotObject {
                        path: self.path_string(),
                        key,
                        found: kind_name(item),
                    });
                };
                fields
                    .get(key)
                    .map(ident_of)
                    .ok_or_else(|| StrategicMergeError::MissingMergeKey {
                        path: self.path_string(),
                        key,
                    })
            }
        }
    }

    /// Upstream requires every non-directive patch item to appear in `$setElementOrder`,
    /// in the same relative order; anything else means the two were built from different
    /// documents.
    fn check_patch_follows_order(
        &self,
        identity: Identity,
        patch_list: &[Value],
        order_ids: &[Ident],
    ) -> Result<(), StrategicMergeError> {
        let mut remaining = order_ids.iter();
        for item in patch_list {
            if self.list_directive(item)?.is_some() {
                continue;
            }
            let id = self.required_ident(identity, item)?;
            if !remaining.by_ref().any(|ordered| *ordered == id) {
                return Err(StrategicMergeError::ElementOrderMismatch {
                    path: self.path_string(),
                });
            }
        }
        Ok(())
    }

    /// Reads a `$patch` list element, if `item` is one.
    fn list_directive(&self, item: &Value) -> Result<Option<ListDirective>, StrategicMergeError> {
        let Some(directive) = item.as_object().and_then(|fields| fields.get(PATCH_KEY)) else {
            return Ok(None);
        };
        match directive.as_str() {
            Some("replace") => Ok(Some(ListDirective::Replace)),
            Some("delete") => Ok(Some(ListDirective::Delete)),
            _ => Err(self.invalid_patch_value(directive)),
        }
    }

    /// Merges a patch list into an optional original list, per the field's strategy.
    fn merge_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicMergeError> {
        self.enter()?;
        let result = match self.list_strategy() {
            ListStrategy::Replace => self.replace_list(patch),
            ListStrategy::MergePrimitives => self.merge_primitive_list(original, patch),
            ListStrategy::MergeByKey(key) => self.merge_keyed_list(original, patch, key),
        };
        self.leave();
        result
    }

    /// An atomic list: the patch list wins. Directive elements have nothing to act on
    /// here, so they are dropped instead of being stored as data.
    fn replace_list(&mut self, patch: &[Value]) -> Result<Vec<Value>, StrategicMergeError> {
        let mut out = Vec::with_capacity(patch.len());
        for item in patch {
            if self.list_directive(item)?.is_some() {
                continue;
            }
            if let Some(value) = self.fresh_item(item)? {
                out.push(value);
            }
        }
        Ok(out)
    }

    /// A set of primitives: union, ordered like the API server (see [`normalize_order`]).
    fn merge_primitive_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicMergeError> {
        let mut replace = false;
        let mut additions = Vec::with_capacity(patch.len());
        for item in patch {
            match self.list_directive(item)? {
                Some(ListDirective::Replace) => {
                    replace = true;
                    continue;
                }
                Some(ListDirective::Delete) => {
                    return Err(StrategicMergeError::InvalidListDirective {
                        path: self.path_string(),
                        reason: "`$patch: delete` needs a merge key; remove primitive values \
                                 with `$deleteFromPrimitiveList/<field>`",
                    });
                }
                None => {}
            }
            if item.is_object() || item.is_array() {
                return Err(StrategicMergeError::ItemNotPrimitive {
                    path: self.path_string(),
                    found: kind_name(item),
                });
            }
            additions.push(item);
        }
        if replace {
            return Ok(additions.into_iter().cloned().collect());
        }
        let original = original.unwrap_or_default();
        let server_order = first_positions(original.iter().map(|item| Some(ident_of(item))));
        let wanted = first_positions(additions.iter().map(|item| Some(ident_of(item))));
        // Set semantics: the first occurrence of each value survives, as upstream dedupes.
        let mut seen = HashSet::new();
        let mut merged = Vec::with_capacity(original.len() + additions.len());
        for item in original.into_iter().chain(additions.into_iter().cloned()) {
            if seen.insert(ident_of(&item)) {
                merged.push(item);
            }
        }
        Ok(normalize_order(
            merged,
            Identity::Value,
            &wanted,
            &server_order,
        ))
    }

    /// A list of objects identified by `key`: deletions, then in-place merges and
    /// additions, then ordering like the API server (see [`normalize_order`]).
    fn merge_keyed_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
        key: &'static str,
    ) -> Result<Vec<Value>, StrategicMergeError> {
        let identity = Identity::Key(key);
        let mut replace = false;
        let mut doomed = HashSet::new();
        let mut items = Vec::with_capacity(patch.len());
        for item in patch {
            let Value::Object(fields) = item else {
                return Err(StrategicMergeError::ItemNotObject {
                    path: self.path_string(),
                    key,
                    found: kind_name(item),
                });
            };
            match self.list_directive(item)? {
                Some(ListDirective::Replace) => replace = true,
                Some(ListDirective::Delete) => {
                    doomed.insert(self.required_ident(identity, item)?);
                }
                None => items.push((self.required_ident(identity, item)?, fields)),
            }
        }

        if replace {
            let mut out = Vec::with_capacity(items.len());
            for (_, fields) in items {
                if let Some(fields) = self.merge_map(Map::new(), fields)? {
                    out.push(Value::Object(fields));
                }
            }
            return Ok(out);
        }

        let mut merged = original.unwrap_or_default();
        if !doomed.is_empty() {
            merged.retain(|item| !identity.of(item).is_some_and(|id| doomed.contains(&id)));
        }
        let server_order = first_positions(merged.iter().map(|item| identity.of(item)));
        // Where each key lives in `merged`; the first item with a key is the one patched,
        // and items appended below become targets for later duplicates in the patch.
        let mut slots = server_order.clone();
        for (id, fields) in &items {
            match slots
                .get(id)
                .copied()
                .and_then(|index| merged.get_mut(index))
            {
                Some(slot) => {
                    let base = match slot.take() {
                        Value::Object(existing) => existing,
                        _ => Map::new(),
                    };
                    *slot = Value::Object(self.merge_map(base, fields)?.unwrap_or_default());
                }
                None => {
                    let fresh = self.merge_map(Map::new(), fields)?.unwrap_or_default();
                    slots.insert(id.clone(), merged.len());
                    merged.push(Value::Object(fresh));
                }
            }
        }
        let wanted = first_positions(items.iter().map(|(id, _)| Some(id.clone())));
        Ok(normalize_order(merged, identity, &wanted, &server_order))
    }
}

#[cfg(test)]
mod tests;
