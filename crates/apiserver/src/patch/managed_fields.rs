//! Approximate Kubernetes `metadata.managedFields` tracking and server-side apply (SSA)
//! over plain `serde_json::Value` objects.
//!
//! Upstream (structured-merge-diff plus apimachinery's `managedfields` package) tracks
//! ownership with full OpenAPI type information. This module has no schema, so it works
//! with a small model that stays consistent with itself and with what clients observe:
//!
//! * An object's fields are the *leaves* it sets: scalars, `null`, empty objects and
//!   atomic lists. Lists that merge by a key (the caller's `list_key` says which, e.g.
//!   `containers` by `name`) are split into items (`k:{"name":"web"}`), and each item is
//!   owned as a node of its own as well as through its fields. Every other list is one
//!   atomic leaf.
//! * Non-apply writes (create, update, patch) give the writing manager's `Update` entry
//!   every field whose value changed, and take those fields away from everybody else.
//!   Objects that a write brings into existence are also owned as a node (`".":{}`),
//!   which is what upstream shows for maps such as `data` or `metadata.labels`.
//! * Apply compares the applied configuration with the live object: a field the config
//!   would change that another entry owns is a conflict (unless forced). Fields the
//!   applier owned before, omits now, and nobody else owns are removed.
//!
//! Conflicts are real: they are computed from recorded ownership, never guessed. The
//! approximations are in what gets recorded for schema-dependent cases (see the notes on
//! [`record_update`] and [`apply`]).
//!
//! Input objects come from users, so nothing here panics on malformed input: non-object
//! values are treated as objects without fields, and undecodable `managedFields` entries
//! already stored on an object are ignored (see each function for details).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Bound;

use serde_json::{Map, Value};

/// Metadata fields that upstream never records as owned (its "strip set"), because the
/// server controls them or they identify the object rather than describe it.
const STRIPPED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// Top-level fields that are always structs in Kubernetes types. Upstream never owns a
/// struct as a node (only its fields), so neither do we, even when a write creates it.
const STRUCT_ROOTS: &[&str] = &["metadata", "spec", "status"];

/// Reason string upstream uses for each conflict cause in the 409 `Status` details.
pub(crate) const FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// Errors from decoding `managedFields` entries or FieldsV1 documents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ManagedFieldsError {
    /// A FieldsV1 document is malformed (not an object, unknown key prefix, bad key JSON).
    #[error("invalid fieldsV1: {0}")]
    InvalidFieldsV1(String),
    /// One entry of `metadata.managedFields` is malformed.
    #[error("invalid managedFields entry {index}: {reason}")]
    InvalidEntry {
        /// Position of the entry in the list.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// `metadata.managedFields` is present but is not a list.
    #[error("metadata.managedFields must be a list")]
    NotAList,
}

/// One step of a field path. The variants mirror the FieldsV1 key prefixes, and their
/// declaration order (fields, keys, values, indices) is the order upstream sorts them in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A named object field: `f:<name>`.
    Field(String),
    /// An item of a list merged by key: `k:{"name":"c1"}`. Holds `(key field, canonical
    /// JSON of its value)` pairs sorted by field name, so equal keys compare equal.
    Key(Vec<(String, String)>),
    /// An item of a set-like list, identified by its canonical JSON: `v:<json>`. Never
    /// produced here; accepted so entries written by real servers or clients survive.
    Value(String),
    /// A list item identified by position: `i:<n>`. Never produced here; accepted for the
    /// same reason as [`PathElement::Value`].
    Index(u64),
}

impl PathElement {
    /// Builds the key element of an item of a list merged by `field` whose value is `value`.
    pub(crate) fn key(field: &str, value: &Value) -> Self {
        PathElement::Key(vec![(field.to_owned(), canonical_json(value))])
    }

    /// The FieldsV1 object key for this element (`f:name`, `k:{...}`, `v:...`, `i:0`).
    pub(crate) fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(pairs) => {
                let mut out = String::from("k:{");
                for (i, (field, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(field));
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses one FieldsV1 object key. The `"."` marker is not an element; callers handle it.
    pub(crate) fn from_fields_v1_key(key: &str) -> Result<Self, ManagedFieldsError> {
        let bad = |why: &str| ManagedFieldsError::InvalidFieldsV1(format!("{why}: {key:?}"));
        if let Some(name) = key.strip_prefix("f:") {
            return Ok(PathElement::Field(name.to_owned()));
        }
        if let Some(text) = key.strip_prefix("k:") {
            let parsed: Value =
                serde_json::from_str(text).map_err(|_| bad("key is not valid JSON"))?;
            let Value::Object(fields) = parsed else {
                return Err(bad("key is not a JSON object"));
            };
            if fields.is_empty() {
                return Err(bad("key has no fields"));
            }
            // Sort explicitly: serde_json's map keeps insertion order when its
            // `preserve_order` feature is on, and equal keys must compare equal.
            let sorted: BTreeMap<&String, String> = fields
                .iter()
                .map(|(field, value)| (field, canonical_json(value)))
                .collect();
            return Ok(PathElement::Key(
                sorted.into_iter().map(|(f, v)| (f.clone(), v)).collect(),
            ));
        }
        if let Some(text) = key.strip_prefix("v:") {
            let parsed: Value =
                serde_json::from_str(text).map_err(|_| bad("value is not valid JSON"))?;
            return Ok(PathElement::Value(canonical_json(&parsed)));
        }
        if let Some(text) = key.strip_prefix("i:") {
            let index = text
                .parse::<u64>()
                .map_err(|_| bad("index is not a number"))?;
            return Ok(PathElement::Index(index));
        }
        Err(bad("unknown path element"))
    }

    /// True if `item` (an element of a list) is the one this element designates.
    fn matches_item(&self, item: &Value) -> bool {
        match self {
            PathElement::Key(pairs) => item.as_object().is_some_and(|fields| {
                pairs.iter().all(|(field, want)| {
                    fields
                        .get(field)
                        .is_some_and(|got| canonical_json(got) == *want)
                })
            }),
            PathElement::Value(want) => canonical_json(item) == *want,
            PathElement::Field(_) | PathElement::Index(_) => false,
        }
    }
}

/// Formats like upstream's `fieldpath.Path` string: `.name`, `[name="web"]`, `[=value]`,
/// `[0]`; this is the text conflict messages and causes carry.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(pairs) => {
                f.write_str("[")?;
                for (i, (field, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{field}={value}")?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={value}]"),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// Renders a whole path the way conflict messages show it, e.g.
/// `.spec.containers[name="web"].image`.
pub(crate) fn path_to_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of owned field paths. A path in the set means its node is owned: a leaf value,
/// or (for list items and objects) the node itself, shown as `".":{}` in FieldsV1 when
/// the node also has owned children.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    paths: BTreeSet<Vec<PathElement>>,
}

impl FieldSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a path; returns true if it was not already present.
    pub(crate) fn insert(&mut self, path: Vec<PathElement>) -> bool {
        self.paths.insert(path)
    }

    /// True if exactly this path is in the set.
    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        self.paths.contains(path)
    }

    /// True if `prefix` itself or any path below it is in the set.
    pub(crate) fn contains_prefix(&self, prefix: &[PathElement]) -> bool {
        // Paths sort lexicographically, so `prefix` and everything below it form one
        // contiguous run starting at `prefix`; the first path at or after it decides.
        self.paths
            .range::<[PathElement], _>((Bound::Included(prefix), Bound::Unbounded))
            .next()
            .is_some_and(|first| first.starts_with(prefix))
    }

    /// Number of paths.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.paths.len()
    }

    /// True if the set has no paths.
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The paths in sorted order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[PathElement]> + '_ {
        self.paths.iter().map(Vec::as_slice)
    }

    /// Paths in either set.
    #[must_use]
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.union(&other.paths).cloned().collect(),
        }
    }

    /// Paths in `self` but not in `other`.
    #[must_use]
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.difference(&other.paths).cloned().collect(),
        }
    }

    /// Keeps only the paths for which `keep` returns true.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&[PathElement]) -> bool) {
        self.paths.retain(|path| keep(path));
    }

    /// The paths rendered as conflict-message text (`.spec.replicas`), in sorted order.
    #[cfg(test)]
    pub(crate) fn to_path_strings(&self) -> Vec<String> {
        self.iter().map(path_to_string).collect()
    }

    /// Encodes the set as a FieldsV1 document: `{"f:data":{".":{},"f:mode":{}}}`.
    pub(crate) fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            owned: bool,
            children: BTreeMap<PathElement, Node>,
        }
        fn encode(node: &Node) -> Value {
            let mut out = Map::new();
            // Upstream writes "." first; with serde_json's default sorted maps "." sorts
            // before "f:"/"k:" anyway, and with `preserve_order` insertion order keeps it.
            if node.owned && !node.children.is_empty() {
                out.insert(".".to_owned(), Value::Object(Map::new()));
            }
            for (element, child) in &node.children {
                out.insert(element.to_fields_v1_key(), encode(child));
            }
            Value::Object(out)
        }

        let mut root = Node::default();
        for path in &self.paths {
            let mut node = &mut root;
            for element in path {
                node = node.children.entry(element.clone()).or_default();
            }
            node.owned = true;
        }
        encode(&root)
    }

    /// Decodes a FieldsV1 document. `{}` children are owned leaves, `".":{}` marks an
    /// owned node that also has children.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, ManagedFieldsError> {
        fn decode(
            value: &Value,
            path: &mut Vec<PathElement>,
            out: &mut FieldSet,
        ) -> Result<(), ManagedFieldsError> {
            let Value::Object(children) = value else {
                return Err(ManagedFieldsError::InvalidFieldsV1(format!(
                    "expected an object at {:?}, found {value}",
                    path_to_string(path)
                )));
            };
            for (key, child) in children {
                if key == "." {
                    out.insert(path.clone());
                    continue;
                }
                path.push(PathElement::from_fields_v1_key(key)?);
                let result = match child {
                    Value::Object(grandchildren) if grandchildren.is_empty() => {
                        out.insert(path.clone());
                        Ok(())
                    }
                    _ => decode(child, path, out),
                };
                path.pop();
                result?;
            }
            Ok(())
        }

        let mut out = FieldSet::new();
        decode(value, &mut Vec::new(), &mut out)?;
        Ok(out)
    }
}

impl FromIterator<Vec<PathElement>> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Vec<PathElement>>>(iter: I) -> Self {
        FieldSet {
            paths: iter.into_iter().collect(),
        }
    }
}

/// The kind of write recorded in a managedFields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Operation {
    /// Server-side apply. Declared first because upstream sorts `Apply` entries first.
    Apply,
    /// Any other write: create, update, patch.
    Update,
}

impl Operation {
    /// The wire spelling: `"Apply"` or `"Update"`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One decoded entry of `metadata.managedFields`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManagedFieldsEntry {
    /// The field manager's name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: Operation,
    /// API version of the latest write recorded in this entry.
    pub api_version: String,
    /// Time of the latest write (RFC 3339), if known.
    pub time: Option<String>,
    /// Subresource the writes went through (`status`, `scale`), if any.
    pub subresource: Option<String>,
    /// Fields owned through this entry.
    pub fields: FieldSet,
}

impl ManagedFieldsEntry {
    /// True if this entry belongs to the given (manager, operation, subresource) triple,
    /// which is what identifies an entry here.
    pub(crate) fn is_for(
        &self,
        manager: &str,
        operation: Operation,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// Encodes the entry in the wire shape, with keys in upstream's order.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        // Upstream omits empty strings (Go `omitempty`), including an empty manager name.
        if !self.manager.is_empty() {
            out.insert("manager".to_owned(), Value::from(self.manager.as_str()));
        }
        out.insert("operation".to_owned(), Value::from(self.operation.as_str()));
        out.insert(
            "apiVersion".to_owned(),
            Value::from(self.api_version.as_str()),
        );
        if let Some(time) = &self.time {
            out.insert("time".to_owned(), Value::from(time.as_str()));
        }
        out.insert("fieldsType".to_owned(), Value::from("FieldsV1"));
        out.insert("fieldsV1".to_owned(), self.fields.to_fields_v1());
        if let Some(subresource) = &self.subresource {
            out.insert("subresource".to_owned(), Value::from(subresource.as_str()));
        }
        Value::Object(out)
    }

    /// Decodes one wire entry, with upstream's validation: operation `Apply` or `Update`,
    /// a non-empty apiVersion, fieldsType `FieldsV1` and a well-formed fieldsV1.
    /// `index` is only used in error messages.
    pub(crate) fn from_json(value: &Value, index: usize) -> Result<Self, ManagedFieldsError> {
        let invalid = |reason: String| ManagedFieldsError::InvalidEntry { index, reason };
        let Value::Object(entry) = value else {
            return Err(invalid("must be an object".to_owned()));
        };
        let text = |name: &str| -> Result<Option<String>, ManagedFieldsError> {
            match entry.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(format!("{name} must be a string"))),
            }
        };
        let manager = text("manager")?.unwrap_or_default();
        let operation = match text("operation")?.as_deref() {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            _ => return Err(invalid("operation must be `Apply` or `Update`".to_owned())),
        };
        let api_version = text("apiVersion")?
            .filter(|v| !v.is_empty())
            .ok_or_else(|| invalid("apiVersion must not be empty".to_owned()))?;
        match text("fieldsType")?.as_deref() {
            Some("FieldsV1") => {}
            None | Some("") => return Err(invalid("missing fieldsType".to_owned())),
            Some(other) => return Err(invalid(format!("invalid fieldsType {other:?}"))),
        }
        let fields = match entry.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(fields) => FieldSet::from_fields_v1(fields).map_err(|e| invalid(e.to_string()))?,
        };
        Ok(ManagedFieldsEntry {
            manager,
            operation,
            api_version,
            time: text("time")?,
            subresource: text("subresource")?.filter(|s| !s.is_empty()),
            fields,
        })
    }
}

/// Decodes `metadata.managedFields` strictly. A missing or `null` list is empty; a
/// non-list or any malformed entry is an error. Servers can use this to reject bad
/// client-supplied managedFields with 422 before calling [`record_update`].
pub(crate) fn read_managed_fields(
    obj: &Value,
) -> Result<Vec<ManagedFieldsEntry>, ManagedFieldsError> {
    match managed_fields_value(obj) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| ManagedFieldsEntry::from_json(item, index))
            .collect(),
        Some(_) => Err(ManagedFieldsError::NotAList),
    }
}

/// Writes entries into `obj.metadata.managedFields` in upstream's normal form: entries
/// with the same (manager, operation, subresource) merged (the latest write's apiVersion
/// and time win), empty entries dropped, sorted by operation, time, manager, apiVersion,
/// subresource. With no entries left the field is removed, as upstream omits it.
/// A non-object `obj` (or non-object `metadata`) is left untouched.
pub(crate) fn write_managed_fields(obj: &mut Value, entries: Vec<ManagedFieldsEntry>) {
    let entries = normalize(entries);
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        if let Some(meta) = root.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        return;
    }
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        let list = entries.iter().map(ManagedFieldsEntry::to_json).collect();
        meta.insert("managedFields".to_owned(), Value::Array(list));
    }
}

/// Which part of the object a write may take ownership of. Upstream's status strategies
/// reset `status` on main-resource writes and everything but `status` on `/status`
/// writes; the caller knows which applies to the resource and says so here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FieldScope {
    /// Every field (resources without a status subresource).
    #[default]
    All,
    /// Everything except `status` (main resource of a type with a status subresource).
    ExcludeStatus,
    /// Only `status` (writes through the `/status` subresource).
    OnlyStatus,
}

impl FieldScope {
    /// True if the write may touch ownership of `path`.
    pub(crate) fn contains(self, path: &[PathElement]) -> bool {
        let is_status = matches!(path.first(), Some(PathElement::Field(f)) if f == "status");
        match self {
            FieldScope::All => true,
            FieldScope::ExcludeStatus => !is_status,
            FieldScope::OnlyStatus => is_status,
        }
    }
}

/// Who is writing and how; shared by [`record_update`] and [`apply`]. (Bundled into one
/// struct so the functions stay readable; they would otherwise take nine arguments.)
pub(crate) struct WriteContext<'a> {
    /// Field manager name (`fieldManager` parameter or the User-Agent prefix).
    pub manager: &'a str,
    /// API version of the request, e.g. `v1` or `apps/v1`.
    pub api_version: &'a str,
    /// Subresource of the request (`Some("status")`), or `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// Time of the write, RFC 3339 (`2024-05-01T10:00:00Z`).
    pub time: &'a str,
    /// Which fields this write may own.
    pub scope: FieldScope,
    /// For a list at the given field-name path from the root (list indices and keys
    /// left out), the field its items merge by, e.g.
    /// `["spec","template","spec","containers"] -> Some("name")`; `None` means atomic.
    pub list_key: &'a dyn Fn(&[&str]) -> Option<&'static str>,
}

impl WriteContext<'_> {
    fn entry(&self, operation: Operation, fields: FieldSet) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: self.manager.to_owned(),
            operation,
            api_version: self.api_version.to_owned(),
            time: Some(self.time.to_owned()),
            subresource: self.subresource.map(str::to_owned),
            fields,
        }
    }
}

/// The fields an object (typically an apply configuration) sets: its leaves and the
/// items of keyed lists, skipping `apiVersion`, `kind` and the metadata fields upstream
/// never records (name, namespace, uid, resourceVersion, generation, creationTimestamp,
/// selfLink, clusterName, managedFields). A non-object `obj` has no fields.
#[cfg(test)]
pub(crate) fn fields_of(
    obj: &Value,
    list_key: &dyn Fn(&[&str]) -> Option<&'static str>,
) -> FieldSet {
    walk_object(obj, list_key)
        .into_iter()
        .filter(|(_, (kind, _))| *kind != NodeKind::Object)
        .map(|(path, _)| path)
        .collect()
}

/// Records a non-apply write (create, update, patch) in `new.metadata.managedFields`.
///
/// * Starting point: `old`'s entries. If `new` carries `managedFields: [{}]` the tracking
///   is reset and starts from nothing; if it carries other valid, non-empty entries
///   (clients may edit the field) those are used as given. Writes to a subresource ignore
///   whatever `new` carries, and undecodable entries fall back to `old`'s, like upstream.
///   An empty list `[]` is *not* a reset (upstream treats it as "field not sent").
/// * Every field in scope whose value differs from `old` (all set fields when `old` is
///   `None`, i.e. create) moves to `manager`'s `Update` entry for this subresource, which
///   gets this write's apiVersion and time; other entries lose those fields. A write that
///   changes nothing leaves the entry (and its time) alone, as upstream does.
/// * Fields that no longer exist leave every entry; entries left empty are dropped.
///
/// Approximation: objects the write brings into existence (other than the top-level
/// `metadata`/`spec`/`status` structs) are owned as nodes too, which matches upstream for
/// maps like `data` and `labels` and over-reports for nested structs.
///
/// A non-object `new` is left untouched; a non-object `old` counts as absent.
pub(crate) fn record_update(old: Option<&Value>, new: &mut Value, ctx: &WriteContext<'_>) {
    if !new.is_object() {
        return;
    }
    let old = old.filter(|v| v.is_object());
    let mut entries = base_entries(old, new, ctx.subresource.is_some());

    let empty = Value::Object(Map::new());
    let old_obj = old.unwrap_or(&empty);
    let (changed, removed) = {
        let old_nodes = walk_object(old_obj, ctx.list_key);
        let new_nodes = walk_object(new, ctx.list_key);
        diff_nodes(old_obj, &old_nodes, &new_nodes, ctx.scope)
    };

    for entry in &mut entries {
        if !entry.is_for(ctx.manager, Operation::Update, ctx.subresource) {
            entry.fields = entry.fields.difference(&changed);
        }
        entry.fields = entry.fields.difference(&removed);
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.is_for(ctx.manager, Operation::Update, ctx.subresource))
        {
            Some(mine) => {
                mine.fields = mine.fields.union(&changed);
                mine.api_version = ctx.api_version.to_owned();
                mine.time = Some(ctx.time.to_owned());
            }
            None => entries.push(ctx.entry(Operation::Update, changed)),
        }
    }
    finish(new, entries, ctx.scope);
}

/// Server-side apply of `applied` (the configuration sent with
/// `application/apply-patch+yaml`) onto `live`.
///
/// 1. The config's fields F (see [`fields_of`], limited to `ctx.scope`). Each field of F
///    whose value the config would change (it differs from `live`, or `live` lacks it) and
///    that another entry owns is a conflict. Entries are identified by (manager,
///    operation, subresource), so the applier's own `Update` entry counts as another
///    owner, as upstream. With `force` the fields move to the applier instead.
/// 2. Fields the applier's previous `Apply` entry owned, that F omits and no other entry
///    owns (not even below them), are removed from the live object; objects and lists
///    emptied by that are removed too unless somebody owns them.
/// 3. The result is `merge(live_after_removal, applied)`; the applier's `Apply` entry
///    becomes F with this apiVersion and time; fields that no longer exist leave every
///    entry, empty entries are dropped, and managedFields is written into the result.
/// 4. With `live == None` (apply creates the object) the result is `merge({}, applied)`,
///    i.e. the applied object itself for any sensible merge, plus its `Apply` entry.
///
/// `applied` must not carry `metadata.managedFields` (upstream answers 400; the caller
/// should check first); it is ignored here. A non-object `applied` is treated as an empty
/// configuration `{}`; a non-object `live` as absent. Undecodable entries on `live` are
/// ignored. Conflicts report `time: None`: upstream's conflict carries the manager
/// identifier, which never includes the time, so real servers print no ` at <time>`.
pub(crate) fn apply(
    live: Option<&Value>,
    applied: &Value,
    force: bool,
    ctx: &WriteContext<'_>,
    merge: &dyn Fn(&Value, &Value) -> Value,
) -> Result<Value, ApplyConflicts> {
    let mut config = if applied.is_object() {
        applied.clone()
    } else {
        Value::Object(Map::new())
    };
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let config_nodes = walk_object(&config, ctx.list_key);
    let applied_set: FieldSet = config_nodes
        .iter()
        .filter(|(path, (kind, _))| *kind != NodeKind::Object && ctx.scope.contains(path))
        .map(|(path, _)| path.clone())
        .collect();

    let Some(live) = live.filter(|v| v.is_object()) else {
        let mut result = merge(&Value::Object(Map::new()), &config);
        finish(
            &mut result,
            vec![ctx.entry(Operation::Apply, applied_set)],
            ctx.scope,
        );
        return Ok(result);
    };

    let mut others = read_lenient(live);
    let previous = match others
        .iter()
        .position(|e| e.is_for(ctx.manager, Operation::Apply, ctx.subresource))
    {
        Some(index) => others.remove(index).fields,
        None => FieldSet::new(),
    };

    // 1. Conflicts: fields the config changes that somebody else owns.
    let mut changing = FieldSet::new();
    let mut found: Vec<(String, &[PathElement], Conflict)> = Vec::new();
    for path in applied_set.iter() {
        let Some((kind, value)) = config_nodes.get(path) else {
            continue;
        };
        if !changes_live(*kind, value, resolve(live, path)) {
            continue;
        }
        changing.insert(path.to_vec());
        for entry in others.iter().filter(|e| e.fields.contains(path)) {
            let conflict = Conflict {
                manager: entry.manager.clone(),
                operation: entry.operation,
                api_version: entry.api_version.clone(),
                time: None,
                subresource: entry.subresource.clone(),
                field: path_to_string(path),
            };
            found.push((conflict.identifier(), path, conflict));
        }
    }
    if !found.is_empty() {
        if !force {
            // Group order follows upstream (sorted manager identifiers); within a manager
            // the fields come in path order.
            found.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            return Err(ApplyConflicts {
                conflicts: found.into_iter().map(|(_, _, c)| c).collect(),
            });
        }
        for entry in &mut others {
            entry.fields = entry.fields.difference(&changing);
        }
    }

    // 2. Remove what the applier dropped from its config, unless someone else owns it.
    let owned_by_others = others
        .iter()
        .fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
    let mut pruned = live.clone();
    let mut doomed: Vec<&[PathElement]> = Vec::new();
    for path in previous.iter() {
        // Removing a list item takes its fields with it; removing those fields first
        // would instead strip the item's key and lose track of the item.
        let below_doomed = doomed.last().is_some_and(|top| path.starts_with(top));
        if !below_doomed
            && ctx.scope.contains(path)
            && !applied_set.contains_prefix(path)
            && !owned_by_others.contains_prefix(path)
        {
            doomed.push(path);
        }
    }
    // Reverse order removes later list items and deeper paths first, so the remaining
    // paths (notably `i:` positions) still point where they did.
    for path in doomed.iter().rev() {
        if remove_path(&mut pruned, path) {
            remove_emptied_parents(&mut pruned, path, &applied_set, &owned_by_others);
        }
    }

    // 3. Merge and record.
    let mut result = merge(&pruned, &config);
    others.push(ctx.entry(Operation::Apply, applied_set));
    finish(&mut result, others, ctx.scope);
    Ok(result)
}

/// One field an apply would change that another manager's entry owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The other entry's manager name.
    pub manager: String,
    /// The other entry's operation.
    pub operation: Operation,
    /// The other entry's apiVersion (printed only for `Update` entries, like upstream).
    pub api_version: String,
    /// Printed as ` at <time>` after the apiVersion of `Update` entries when set.
    /// [`apply`] leaves it `None` to match what real servers print (see there).
    pub time: Option<String>,
    /// The other entry's subresource, printed as ` with subresource "<name>"`.
    pub subresource: Option<String>,
    /// The field, e.g. `.spec.replicas` or `.spec.containers[name="web"].image`.
    pub field: String,
}

impl Conflict {
    /// Upstream's description of the other manager (`printManager`): `"name"`, then
    /// ` with subresource "s"` if any, then for `Update` entries ` using <apiVersion>`
    /// and ` at <time>` if a time is set.
    pub(crate) fn manager_description(&self) -> String {
        let mut out = go_quote(&self.manager);
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            out.push_str(" with subresource ");
            out.push_str(&go_quote(subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(" using ");
            out.push_str(&self.api_version);
            if let Some(time) = &self.time {
                out.push_str(" at ");
                out.push_str(time);
            }
        }
        out
    }

    /// Upstream's manager identifier, the JSON it groups and sorts conflicts by: the
    /// entry without fields, with apiVersion only for `Update`. (The time is included when
    /// set so that groups never mix descriptions; upstream's identifiers have none.)
    fn identifier(&self) -> String {
        let mut out = format!("{{\"manager\":{}", json_string(&self.manager));
        out.push_str(&format!(
            ",\"operation\":{}",
            json_string(self.operation.as_str())
        ));
        if self.operation == Operation::Update && !self.api_version.is_empty() {
            out.push_str(&format!(
                ",\"apiVersion\":{}",
                json_string(&self.api_version)
            ));
        }
        if let Some(time) = &self.time {
            out.push_str(&format!(",\"time\":{}", json_string(time)));
        }
        if let Some(subresource) = self.subresource.as_deref().filter(|s| !s.is_empty()) {
            out.push_str(&format!(",\"subresource\":{}", json_string(subresource)));
        }
        out.push('}');
        out
    }
}

/// The conflicts that made an apply fail (HTTP 409, reason `Conflict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApplyConflicts {
    /// The conflicts, grouped by manager in upstream's order when produced by [`apply`].
    pub conflicts: Vec<Conflict>,
}

impl ApplyConflicts {
    /// The `Status.message`, exactly as upstream formats it:
    /// `Apply failed with 1 conflict: conflict with "m" using v1: .data.mode`, or for
    /// several `Apply failed with N conflicts: conflicts with "a":\n- .x\nconflicts with "b" ...`
    /// with managers sorted by their identifier.
    pub(crate) fn message(&self) -> String {
        if let [only] = self.conflicts.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager_description(),
                only.field
            );
        }
        let mut groups: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
        for conflict in &self.conflicts {
            groups
                .entry(conflict.identifier())
                .or_insert_with(|| (conflict.manager_description(), Vec::new()))
                .1
                .push(&conflict.field);
        }
        let mut lines = Vec::new();
        for (description, fields) in groups.values() {
            lines.push(format!("conflicts with {description}:"));
            lines.extend(fields.iter().map(|field| format!("- {field}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.conflicts.len(),
            lines.join("\n")
        )
    }

    /// `Status.details.causes` as `(reason, message, field)`:
    /// `("FieldManagerConflict", "conflict with \"m\" using v1", ".data.mode")`.
    pub(crate) fn causes(&self) -> Vec<(String, String, String)> {
        self.conflicts
            .iter()
            .map(|c| {
                (
                    FIELD_MANAGER_CONFLICT.to_owned(),
                    format!("conflict with {}", c.manager_description()),
                    c.field.clone(),
                )
            })
            .collect()
    }

    /// The complete 409 `Status` body upstream answers with.
    #[cfg(test)]
    pub(crate) fn to_status(&self) -> Value {
        let causes: Vec<Value> = self
            .causes()
            .into_iter()
            .map(|(reason, message, field)| {
                let mut cause = Map::new();
                cause.insert("reason".to_owned(), Value::from(reason));
                cause.insert("message".to_owned(), Value::from(message));
                cause.insert("field".to_owned(), Value::from(field));
                Value::Object(cause)
            })
            .collect();
        let mut details = Map::new();
        details.insert("causes".to_owned(), Value::Array(causes));
        let mut status = Map::new();
        status.insert("kind".to_owned(), Value::from("Status"));
        status.insert("apiVersion".to_owned(), Value::from("v1"));
        status.insert("metadata".to_owned(), Value::Object(Map::new()));
        status.insert("status".to_owned(), Value::from("Failure"));
        status.insert("message".to_owned(), Value::from(self.message()));
        status.insert("reason".to_owned(), Value::from("Conflict"));
        status.insert("details".to_owned(), Value::Object(details));
        status.insert("code".to_owned(), Value::from(409));
        Value::Object(status)
    }
}

impl fmt::Display for ApplyConflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyConflicts {}

// ---------------------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------------------

/// What a recorded path points at; decides how "changed" is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    /// A scalar, `null` or atomic list: changed when its value changes.
    Leaf,
    /// An item of a keyed list: changed only when it appears.
    Item,
    /// An object: owned as a node only by the non-apply write that creates it.
    Object,
}

type NodeMap<'v> = BTreeMap<Vec<PathElement>, (NodeKind, &'v Value)>;

/// One item of a keyed list: its path element, the item, and the item's fields.
type KeyedItem<'v> = (PathElement, &'v Value, &'v Map<String, Value>);

/// Every ownable node of an object, with its kind and value.
fn walk_object<'v>(
    obj: &'v Value,
    list_key: &dyn Fn(&[&str]) -> Option<&'static str>,
) -> NodeMap<'v> {
    let mut out = NodeMap::new();
    let Some(root) = obj.as_object() else {
        return out;
    };
    let mut path = Vec::new();
    let mut names: Vec<&'v str> = Vec::new();
    for (field, value) in root {
        match field.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                // The metadata struct itself is in upstream's strip set; only some of its
                // children can be owned.
                let Some(meta) = value.as_object() else {
                    continue;
                };
                path.push(PathElement::Field(field.clone()));
                names.push(field.as_str());
                for (meta_field, meta_value) in meta {
                    if STRIPPED_METADATA.contains(&meta_field.as_str()) {
                        continue;
                    }
                    path.push(PathElement::Field(meta_field.clone()));
                    names.push(meta_field.as_str());
                    walk_value(meta_value, &mut path, &mut names, list_key, &mut out);
                    names.pop();
                    path.pop();
                }
                names.pop();
                path.pop();
            }
            _ => {
                path.push(PathElement::Field(field.clone()));
                names.push(field.as_str());
                walk_value(value, &mut path, &mut names, list_key, &mut out);
                names.pop();
                path.pop();
            }
        }
    }
    out
}

fn walk_value<'v>(
    value: &'v Value,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    list_key: &dyn Fn(&[&str]) -> Option<&'static str>,
    out: &mut NodeMap<'v>,
) {
    match value {
        // Objects, even empty ones, are never leaves: upstream's apply owns only what is
        // inside a map or struct, so `labels: {}` in a config claims nothing.
        Value::Object(fields) => {
            if !is_struct_root(path) {
                out.insert(path.clone(), (NodeKind::Object, value));
            }
            walk_fields(fields, path, names, list_key, out);
        }
        Value::Array(items) => match keyed_items(items, names, list_key) {
            Some(keyed) => {
                for (element, item, fields) in keyed {
                    path.push(element);
                    out.insert(path.clone(), (NodeKind::Item, item));
                    // Item fields continue the field-name path directly: list_key paths
                    // leave list positions and keys out.
                    walk_fields(fields, path, names, list_key, out);
                    path.pop();
                }
            }
            None => {
                out.insert(path.clone(), (NodeKind::Leaf, value));
            }
        },
        _ => {
            out.insert(path.clone(), (NodeKind::Leaf, value));
        }
    }
}

fn walk_fields<'v>(
    fields: &'v Map<String, Value>,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    list_key: &dyn Fn(&[&str]) -> Option<&'static str>,
    out: &mut NodeMap<'v>,
) {
    for (field, child) in fields {
        path.push(PathElement::Field(field.clone()));
        names.push(field.as_str());
        walk_value(child, path, names, list_key, out);
        names.pop();
        path.pop();
    }
}

/// Splits a list into keyed items, or returns `None` to treat it as one atomic leaf:
/// when it has no key, is empty, or any item lacks a scalar key or repeats one (upstream
/// rejects duplicates; falling back to atomic keeps ownership well-defined instead).
fn keyed_items<'v>(
    items: &'v [Value],
    names: &[&str],
    list_key: &dyn Fn(&[&str]) -> Option<&'static str>,
) -> Option<Vec<KeyedItem<'v>>> {
    let key = list_key(names)?;
    if items.is_empty() {
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let fields = item.as_object()?;
        let key_value = fields.get(key)?;
        if !matches!(
            key_value,
            Value::String(_) | Value::Number(_) | Value::Bool(_)
        ) {
            return None;
        }
        let element = PathElement::key(key, key_value);
        if !seen.insert(element.clone()) {
            return None;
        }
        out.push((element, item, fields));
    }
    Some(out)
}

/// True for the top-level struct fields that are never owned as nodes.
fn is_struct_root(path: &[PathElement]) -> bool {
    matches!(path, [PathElement::Field(f)] if STRUCT_ROOTS.contains(&f.as_str()))
}

/// For an Update: the in-scope paths the write changed (to be owned by the writer) and
/// the paths that disappeared (to be released by everybody).
fn diff_nodes(
    old_obj: &Value,
    old_nodes: &NodeMap<'_>,
    new_nodes: &NodeMap<'_>,
    scope: FieldScope,
) -> (FieldSet, FieldSet) {
    let changed = new_nodes
        .iter()
        .filter(|(path, _)| scope.contains(path))
        .filter(|(path, (kind, value))| match kind {
            NodeKind::Leaf => {
                !matches!(old_nodes.get(*path), Some((NodeKind::Leaf, old)) if *old == *value)
            }
            NodeKind::Item => !old_nodes.contains_key(*path),
            // An object is owned as a node only by the write that brings it into being.
            NodeKind::Object => !resolve(old_obj, path).is_some_and(Value::is_object),
        })
        .map(|(path, _)| path.clone())
        .collect();
    let removed = old_nodes
        .keys()
        .filter(|path| scope.contains(path) && !new_nodes.contains_key(*path))
        .cloned()
        .collect();
    (changed, removed)
}

/// Whether applying `applied` at a path would change the live value there.
fn changes_live(kind: NodeKind, applied: &Value, live: Option<&Value>) -> bool {
    match (kind, applied, live) {
        // A list item or object node changes only by appearing; its fields are judged
        // on their own.
        (NodeKind::Item | NodeKind::Object, _, live) => live.is_none(),
        // Setting an absent field to null leaves it absent.
        (NodeKind::Leaf, Value::Null, None) => false,
        (NodeKind::Leaf, applied, Some(live)) => applied != live,
        (NodeKind::Leaf, _, None) => true,
    }
}

/// Starting entries for an Update (see [`record_update`]).
fn base_entries(old: Option<&Value>, new: &Value, is_subresource: bool) -> Vec<ManagedFieldsEntry> {
    let from_old = || old.map(read_lenient).unwrap_or_default();
    if is_subresource {
        return from_old();
    }
    match managed_fields_value(new) {
        Some(sent) if is_reset_marker(sent) => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => match read_managed_fields(new) {
            Ok(entries) => entries,
            Err(_) => from_old(),
        },
        // Absent, null or `[]`: the client did not send ownership, keep the stored one.
        _ => from_old(),
    }
}

/// `[{}]` (one entry with every field unset) resets managedFields, as upstream.
fn is_reset_marker(value: &Value) -> bool {
    match value.as_array().map(Vec::as_slice) {
        Some([Value::Object(entry)]) => entry
            .values()
            .all(|v| v.is_null() || v.as_str() == Some("")),
        _ => false,
    }
}

fn managed_fields_value(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

/// Stored entries, skipping undecodable ones rather than failing a write over them.
fn read_lenient(obj: &Value) -> Vec<ManagedFieldsEntry> {
    match managed_fields_value(obj) {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| ManagedFieldsEntry::from_json(item, index).ok())
            .collect(),
        _ => Vec::new(),
    }
}

fn normalize(entries: Vec<ManagedFieldsEntry>) -> Vec<ManagedFieldsEntry> {
    let mut out: Vec<ManagedFieldsEntry> = Vec::new();
    for entry in entries {
        let same = out.iter_mut().find(|e| {
            e.is_for(
                &entry.manager,
                entry.operation,
                entry.subresource.as_deref(),
            )
        });
        match same {
            Some(existing) => {
                existing.fields = existing.fields.union(&entry.fields);
                if entry.time >= existing.time {
                    existing.api_version = entry.api_version;
                    existing.time = entry.time;
                }
            }
            None => out.push(entry),
        }
    }
    out.retain(|e| !e.fields.is_empty());
    // Upstream's order. RFC 3339 UTC strings sort like the instants they name.
    out.sort_by(|a, b| {
        (
            a.operation,
            a.time.as_deref().unwrap_or(""),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                b.time.as_deref().unwrap_or(""),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    out
}

/// Drops in-scope paths that no longer exist in `obj` from every entry, then writes the
/// entries. This keeps ownership honest whatever the caller's merge did.
fn finish(obj: &mut Value, mut entries: Vec<ManagedFieldsEntry>, scope: FieldScope) {
    let snapshot: &Value = obj;
    for entry in &mut entries {
        entry
            .fields
            .retain(|path| !scope.contains(path) || resolve(snapshot, path).is_some());
    }
    write_managed_fields(obj, entries);
}

fn resolve<'v>(root: &'v Value, path: &[PathElement]) -> Option<&'v Value> {
    path.iter().try_fold(root, |value, element| match element {
        PathElement::Field(name) => value.as_object()?.get(name),
        _ => {
            let items = value.as_array()?;
            items.get(item_position(items, element)?)
        }
    })
}

fn resolve_mut<'v>(root: &'v mut Value, path: &[PathElement]) -> Option<&'v mut Value> {
    let mut current = root;
    for element in path {
        current = match element {
            PathElement::Field(name) => current.as_object_mut()?.get_mut(name)?,
            _ => {
                let items = current.as_array_mut()?;
                let position = item_position(items, element)?;
                items.get_mut(position)?
            }
        };
    }
    Some(current)
}

fn item_position(items: &[Value], element: &PathElement) -> Option<usize> {
    match element {
        PathElement::Index(index) => usize::try_from(*index).ok().filter(|i| *i < items.len()),
        PathElement::Key(_) | PathElement::Value(_) => {
            items.iter().position(|item| element.matches_item(item))
        }
        PathElement::Field(_) => None,
    }
}

/// Removes the node at `path`; returns false if it was not there.
fn remove_path(root: &mut Value, path: &[PathElement]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let Some(parent) = resolve_mut(root, parent_path) else {
        return false;
    };
    match last {
        PathElement::Field(name) => parent
            .as_object_mut()
            .is_some_and(|fields| fields.remove(name).is_some()),
        _ => {
            let Some(items) = parent.as_array_mut() else {
                return false;
            };
            match item_position(items, last) {
                Some(position) => {
                    items.remove(position);
                    true
                }
                None => false,
            }
        }
    }
}

/// After removing `path`, removes the objects and lists above it that the removal left
/// empty, stopping at anything owned and at the top-level structs.
fn remove_emptied_parents(
    root: &mut Value,
    path: &[PathElement],
    keep: &FieldSet,
    keep_too: &FieldSet,
) {
    let mut len = path.len();
    while len > 1 {
        len -= 1;
        let Some(parent) = path.get(..len) else {
            return;
        };
        if is_struct_root(parent) || keep.contains(parent) || keep_too.contains(parent) {
            return;
        }
        let emptied = match resolve(root, parent) {
            Some(Value::Object(fields)) => fields.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            _ => false,
        };
        if !emptied || !remove_path(root, parent) {
            return;
        }
    }
}

/// JSON text with object keys sorted at every level, so equal values have equal text
/// regardless of serde_json's `preserve_order` feature.
fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(fields) => {
                let mut sorted: Vec<(&String, &Value)> = fields.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (field, child)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(field));
                    out.push(':');
                    write(child, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn json_string(text: &str) -> String {
    Value::from(text).to_string()
}

/// Quotes like Go's `%q`, which upstream uses for manager names in messages.
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
