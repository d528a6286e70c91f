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
//!
//! Here: entries, reading and writing `managedFields`, and the two write paths
//! ([`record_update`], [`apply`]). Beside it: `field_set` (paths, sets and the `fieldsV1`
//! codec), `walk` (objects into owned paths, and what an apply changes), `conflicts`,
//! `paths` (resolving and removing paths in objects), `encoding` (canonical JSON) and
//! `merge` (apply's merge of a configuration into the live object).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Bound;

use serde_json::{Map, Value};

mod conflicts;
mod encoding;
mod field_set;
mod merge;
mod paths;
mod walk;

pub(crate) use conflicts::{ApplyConflicts, Conflict};
use encoding::*;
pub(crate) use field_set::{FieldSet, PathElement, path_to_string};
pub(crate) use merge::{ListMerge, default_list_keys, merge_applied};
use paths::*;
use walk::*;

/// The fields that key the items of a list (`x-kubernetes-list-map-keys`), e.g.
/// `["port", "protocol"]` for a Service's ports.
pub(crate) type ListKeys = &'static [&'static str];

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
    /// left out), the fields its items are keyed by, e.g.
    /// `["spec","template","spec","containers"] -> Some(&["name"])`; `None` means atomic.
    pub list_key: &'a dyn Fn(&[&str]) -> Option<ListKeys>,
    /// Whether the object (or the list items) at a field-name path is atomic: owned
    /// whole, as `+structType=atomic` types (a LabelSelector) are upstream.
    pub atomic: &'a dyn Fn(&[&str]) -> bool,
    /// Whether the object is a custom resource: its `spec` and `status` are maps of its
    /// schema rather than Go structs, so a write that creates them owns them as nodes
    /// (`"f:spec":{".":{},...}`), as upstream records.
    pub custom_resource: bool,
}

impl WriteContext<'_> {
    fn shape(&self) -> Shape<'_> {
        Shape {
            list_key: self.list_key,
            atomic: self.atomic,
        }
    }

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
pub(crate) fn fields_of(obj: &Value, list_key: &dyn Fn(&[&str]) -> Option<ListKeys>) -> FieldSet {
    let shape = Shape {
        list_key,
        atomic: &|_| false,
    };
    walk_object(obj, &shape)
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
/// `metadata`/`spec`/`status` structs of built-in kinds) are owned as nodes too, which matches upstream for
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
        let mut old_nodes = walk_object(old_obj, &ctx.shape());
        let mut new_nodes = walk_object(new, &ctx.shape());
        if ctx.custom_resource {
            add_custom_resource_roots(old_obj, &mut old_nodes);
            add_custom_resource_roots(new, &mut new_nodes);
        }
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
    finish(new, entries, ctx.scope, old);
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
    let config_nodes = walk_object(&config, &ctx.shape());
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
            None,
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
    let mut in_live = Resolver::new(live);
    for path in applied_set.iter() {
        let Some((kind, value)) = config_nodes.get(path) else {
            continue;
        };
        if !changes_live(*kind, value, in_live.resolve(path)) {
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
    // Later list items and deeper paths go first, so the remaining paths (notably `i:`
    // positions) still point where they did.
    remove_paths(&mut pruned, &doomed, &applied_set, &owned_by_others);

    // 3. Merge and record.
    let mut result = merge(&pruned, &config);
    others.push(ctx.entry(Operation::Apply, applied_set));
    finish(&mut result, others, ctx.scope, Some(live));
    Ok(result)
}

// ---------------------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------------------

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

/// Drops in-scope paths that the write removed from `obj` from every entry, then writes
/// the entries. This keeps ownership honest whatever the caller's merge did. A path that
/// was not in the object `before` the write either stays owned (a Secret applier's
/// `stringData`, which the strategy turns into `data`, stays in its entry when another
/// manager writes, as upstream's field manager keeps it); with no object before (a
/// create), every path missing from `obj` is dropped.
fn finish(
    obj: &mut Value,
    mut entries: Vec<ManagedFieldsEntry>,
    scope: FieldScope,
    before: Option<&Value>,
) {
    let mut snapshot = Resolver::new(obj);
    let mut previous = before.map(Resolver::new);
    for entry in &mut entries {
        entry.fields.retain(|path| {
            !scope.contains(path)
                || snapshot.resolve(path).is_some()
                || previous
                    .as_mut()
                    .is_some_and(|previous| previous.resolve(path).is_none())
        });
    }
    write_managed_fields(obj, entries);
}

#[cfg(test)]
mod tests;
