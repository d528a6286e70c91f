//! Walking objects into owned field paths, and judging which of them an apply changes.

use super::*;

/// What a recorded path points at; decides how "changed" is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NodeKind {
    /// A scalar, `null` or atomic list: changed when its value changes.
    Leaf,
    /// An item of a keyed list: changed only when it appears.
    Item,
    /// An object or keyed list: owned as a node only by the non-apply write that creates
    /// it.
    Object,
}

/// The default of a port's `protocol`, which keys ports lists with the port.
pub(super) static DEFAULT_PROTOCOL: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::String("TCP".to_owned()));

type NodeMap<'v> = BTreeMap<Vec<PathElement>, (NodeKind, &'v Value)>;

/// One item of a keyed list: its path element, the item, and the item's fields.
type KeyedItem<'v> = (PathElement, &'v Value, &'v Map<String, Value>);

/// How a kind's fields are shaped, by field-name path (list positions left out): which
/// lists merge by keys, and which objects are atomic (owned whole, as a leaf).
pub(crate) struct Shape<'a> {
    /// The keys a list merges by; `None`: atomic.
    pub list_key: &'a dyn Fn(&[&str]) -> Option<ListKeys>,
    /// Whether the object (or the items of the list) at the path is atomic
    /// (`+structType=atomic`, such as a LabelSelector).
    pub atomic: &'a dyn Fn(&[&str]) -> bool,
}

/// Every ownable node of an object, with its kind and value.
pub(super) fn walk_object<'v>(obj: &'v Value, shape: &Shape<'_>) -> NodeMap<'v> {
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
                    walk_value(meta_value, &mut path, &mut names, shape, &mut out);
                    names.pop();
                    path.pop();
                }
                names.pop();
                path.pop();
            }
            _ => {
                path.push(PathElement::Field(field.clone()));
                names.push(field.as_str());
                walk_value(value, &mut path, &mut names, shape, &mut out);
                names.pop();
                path.pop();
            }
        }
    }
    out
}

pub(super) fn walk_value<'v>(
    value: &'v Value,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    shape: &Shape<'_>,
    out: &mut NodeMap<'v>,
) {
    match value {
        // An atomic struct is one value, owned whole.
        Value::Object(_) if (shape.atomic)(names) => {
            out.insert(path.clone(), (NodeKind::Leaf, value));
        }
        // Objects, even empty ones, are never leaves: upstream's apply owns only what is
        // inside a map or struct, so `labels: {}` in a config claims nothing.
        Value::Object(fields) => {
            if !is_struct_root(path) {
                out.insert(path.clone(), (NodeKind::Object, value));
            }
            walk_fields(fields, path, names, shape, out);
        }
        // `metadata.finalizers` is a set (`+listType=set`): the list is a node and each
        // member is owned as `v:<json>`, as upstream records it.
        Value::Array(items) if names.as_slice() == ["metadata", "finalizers"] && is_set(items) => {
            out.insert(path.clone(), (NodeKind::Object, value));
            for item in items {
                path.push(PathElement::Value(canonical_json(item)));
                out.insert(path.clone(), (NodeKind::Item, item));
                path.pop();
            }
        }
        Value::Array(items) => match keyed_items(items, names, shape.list_key) {
            Some(keyed) => {
                // A keyed list is owned as a node by the write that brings it into
                // existence, as upstream (which compares with the type's empty value)
                // shows for every such list except a pod's `containers`, always present.
                if names.last() != Some(&"containers") {
                    out.insert(path.clone(), (NodeKind::Object, value));
                }
                let atomic_items = (shape.atomic)(names);
                for (element, item, fields) in keyed {
                    path.push(element);
                    out.insert(path.clone(), (NodeKind::Item, item));
                    // Item fields continue the field-name path directly: list_key paths
                    // leave list positions and keys out. Atomic items are owned whole.
                    if !atomic_items {
                        walk_fields(fields, path, names, shape, out);
                    }
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

pub(super) fn walk_fields<'v>(
    fields: &'v Map<String, Value>,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    shape: &Shape<'_>,
    out: &mut NodeMap<'v>,
) {
    for (field, child) in fields {
        path.push(PathElement::Field(field.clone()));
        names.push(field.as_str());
        walk_value(child, path, names, shape, out);
        names.pop();
        path.pop();
    }
}

/// Whether a list can be owned member by member: non-empty, scalar members, none twice
/// (otherwise it is one atomic leaf, as a list whose keys repeat).
fn is_set(items: &[Value]) -> bool {
    let mut seen = BTreeSet::new();
    !items.is_empty()
        && items.iter().all(|item| {
            matches!(item, Value::String(_) | Value::Number(_) | Value::Bool(_))
                && seen.insert(canonical_json(item))
        })
}

/// Splits a list into keyed items, or returns `None` to treat it as one atomic leaf:
/// when it has no key, is empty, or any item lacks a scalar key or repeats one (upstream
/// rejects duplicates; falling back to atomic keeps ownership well-defined instead).
pub(super) fn keyed_items<'v>(
    items: &'v [Value],
    names: &[&str],
    list_key: &dyn Fn(&[&str]) -> Option<ListKeys>,
) -> Option<Vec<KeyedItem<'v>>> {
    let keys = list_key(names)?;
    if items.is_empty() {
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let fields = item.as_object()?;
        let mut pairs = Vec::with_capacity(keys.len());
        for key in keys {
            let key_value = match fields.get(*key) {
                Some(value) => value,
                // A key field with a schema default (a port's protocol) keys by it.
                None if *key == "protocol" => &DEFAULT_PROTOCOL,
                None => return None,
            };
            if !matches!(
                key_value,
                Value::String(_) | Value::Number(_) | Value::Bool(_)
            ) {
                return None;
            }
            pairs.push((*key, key_value));
        }
        let element = PathElement::keyed(&pairs);
        if !seen.insert(element.clone()) {
            return None;
        }
        out.push((element, item, fields));
    }
    Some(out)
}

/// Adds a custom resource's top-level `spec` and `status` objects of `obj` as nodes (they
/// are maps of its schema, not the structs [`is_struct_root`] leaves out).
pub(super) fn add_custom_resource_roots<'v>(obj: &'v Value, nodes: &mut NodeMap<'v>) {
    for root in ["spec", "status"] {
        if let Some(value) = obj.get(root).filter(|v| v.is_object()) {
            nodes.insert(
                vec![PathElement::Field(root.to_owned())],
                (NodeKind::Object, value),
            );
        }
    }
}

/// True for the top-level struct fields that are never owned as nodes.
pub(super) fn is_struct_root(path: &[PathElement]) -> bool {
    matches!(path, [PathElement::Field(f)] if STRUCT_ROOTS.contains(&f.as_str()))
}

/// For an Update: the in-scope paths the write changed (to be owned by the writer) and
/// the paths that disappeared (to be released by everybody).
pub(super) fn diff_nodes(
    old_obj: &Value,
    old_nodes: &NodeMap<'_>,
    new_nodes: &NodeMap<'_>,
    scope: FieldScope,
) -> (FieldSet, FieldSet) {
    let mut in_old = Resolver::new(old_obj);
    let changed = new_nodes
        .iter()
        .filter(|(path, _)| scope.contains(path))
        .filter(|(path, (kind, value))| match kind {
            NodeKind::Leaf => {
                !matches!(old_nodes.get(*path), Some((NodeKind::Leaf, old)) if *old == *value)
            }
            NodeKind::Item => !old_nodes.contains_key(*path),
            // An object is owned as a node only by the write that brings it into being.
            NodeKind::Object => !in_old
                .resolve(path)
                .is_some_and(|old| old.is_object() || old.is_array()),
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
pub(super) fn changes_live(kind: NodeKind, applied: &Value, live: Option<&Value>) -> bool {
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
