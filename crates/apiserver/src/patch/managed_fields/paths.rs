//! Resolving and removing field paths inside objects.
//!
//! `k:{..}` and `v:` elements name a list item by its content. Finding each one by
//! scanning its list costs O(n) per path, so the n paths into an n-item list cost O(n²):
//! 10,000 `env` entries took 12-25 s per apply. Here a list is indexed the first time a
//! path enters it (O(n), once), and each later lookup costs O(key size), so resolving or
//! removing every path of an object is about linear overall, O(n log n) with the sorted
//! sets around it.

use std::collections::HashMap;

use super::*;

/// Lists shorter than this are scanned: indexing them would cost more than it saves.
const INDEX_FROM: usize = 16;

/// Where the items of one list are, by key (for one set of key fields) and by value.
///
/// Invariant: each position is that of the *first* item with that key or value when the
/// list was indexed, the item a scan would find then.
#[derive(Default)]
struct ItemIndex {
    /// The key fields (sorted, as in a [`PathElement::Key`]) and the key elements.
    keys: Option<(Vec<String>, HashMap<PathElement, usize>)>,
    /// Items by canonical JSON.
    values: Option<HashMap<String, usize>>,
}

/// What an index knows of an element.
enum Lookup {
    /// The first position that matched when the list was indexed.
    At(usize),
    /// No item matched when the list was indexed.
    Absent,
    /// The index cannot tell (another set of key fields, or another kind of element).
    Unknown,
}

impl ItemIndex {
    fn lookup(&mut self, items: &[Value], element: &PathElement) -> Lookup {
        let found = match element {
            PathElement::Key(pairs) => {
                let (names, by_key) = self.keys.get_or_insert_with(|| {
                    let names: Vec<String> = pairs.iter().map(|(field, _)| field.clone()).collect();
                    let by_key = index_by_keys(items, &names);
                    (names, by_key)
                });
                if !names.iter().eq(pairs.iter().map(|(field, _)| field)) {
                    return Lookup::Unknown;
                }
                by_key.get(element)
            }
            PathElement::Value(want) => self
                .values
                .get_or_insert_with(|| {
                    let mut by_value = HashMap::with_capacity(items.len());
                    for (position, item) in items.iter().enumerate() {
                        by_value.entry(canonical_json(item)).or_insert(position);
                    }
                    by_value
                })
                .get(want),
            PathElement::Field(_) | PathElement::Index(_) => return Lookup::Unknown,
        };
        found.map_or(Lookup::Absent, |&position| Lookup::At(position))
    }
}

/// The key element of every item that has the `names` fields (an absent `protocol`
/// keys by its default, as [`PathElement::matches_item`] reads it), to its first position.
fn index_by_keys(items: &[Value], names: &[String]) -> HashMap<PathElement, usize> {
    let mut index = HashMap::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let Some(fields) = item.as_object() else {
            continue;
        };
        let pairs: Option<Vec<(String, String)>> = names
            .iter()
            .map(|name| {
                let value = match fields.get(name) {
                    Some(value) => value,
                    None if name == "protocol" => &DEFAULT_PROTOCOL,
                    None => return None,
                };
                Some((name.clone(), canonical_json(value)))
            })
            .collect();
        if let Some(pairs) = pairs {
            index.entry(PathElement::Key(pairs)).or_insert(position);
        }
    }
    index
}

/// A list's identity while the object it is in is being read or edited: the address of
/// its items (which moves with no edit made here: items are never added) and its length.
fn list_id(items: &[Value]) -> (usize, usize) {
    (items.as_ptr() as usize, items.len())
}

/// Resolves many paths inside one object, indexing each list once.
pub(super) struct Resolver<'v> {
    root: &'v Value,
    indexes: HashMap<(usize, usize), ItemIndex>,
}

impl<'v> Resolver<'v> {
    /// A resolver over `root`, with no list indexed yet.
    pub(super) fn new(root: &'v Value) -> Self {
        Resolver {
            root,
            indexes: HashMap::new(),
        }
    }

    /// The node at `path`, if any: the first list item each element matches.
    pub(super) fn resolve(&mut self, path: &[PathElement]) -> Option<&'v Value> {
        let mut current = self.root;
        for element in path {
            current = match element {
                PathElement::Field(name) => current.as_object()?.get(name)?,
                _ => {
                    let items: &'v [Value] = current.as_array()?;
                    items.get(self.position(items, element)?)?
                }
            };
        }
        Some(current)
    }

    fn position(&mut self, items: &[Value], element: &PathElement) -> Option<usize> {
        if items.len() < INDEX_FROM {
            return item_position(items, element);
        }
        match self
            .indexes
            .entry(list_id(items))
            .or_default()
            .lookup(items, element)
        {
            Lookup::At(position) => Some(position),
            Lookup::Absent => None,
            Lookup::Unknown => item_position(items, element),
        }
    }
}

/// The first item `element` designates (the `n`th for `i:n`).
pub(super) fn item_position(items: &[Value], element: &PathElement) -> Option<usize> {
    match element {
        PathElement::Index(index) => usize::try_from(*index).ok().filter(|i| *i < items.len()),
        PathElement::Key(_) | PathElement::Value(_) => {
            items.iter().position(|item| element.matches_item(item))
        }
        PathElement::Field(_) => None,
    }
}

/// Removes `doomed` paths from `root`, deepest and latest first, each followed by the
/// objects and lists above it that its removal left empty, stopping at anything in
/// `keep` or `keep_too` and at the top-level structs.
///
/// The result is exactly that of removing the paths one at a time (each list item found
/// again by its element in the list as it is then), but removed list items are only
/// marked while the paths are worked through and the lists are compacted once at the end,
/// and items are found through an index, so the whole costs O(object size + paths ×
/// depth) instead of a list scan and a shift per path.
pub(super) fn remove_paths(
    root: &mut Value,
    doomed: &[&[PathElement]],
    keep: &FieldSet,
    keep_too: &FieldSet,
) {
    let mut remover = Remover::default();
    for path in doomed.iter().rev() {
        if remover.remove(root, path) {
            remover.remove_emptied_parents(root, path, keep, keep_too);
        }
    }
    if !remover.removed.is_empty() {
        remover.compact(root);
    }
}

/// Path removal over marked (not yet dropped) list items; see [`remove_paths`].
#[derive(Default)]
struct Remover {
    indexes: HashMap<(usize, usize), ItemIndex>,
    /// By list: which items are removed. Invariant: lists keep their items (and so their
    /// identity) until [`Remover::compact`].
    removed: HashMap<(usize, usize), Vec<bool>>,
}

impl Remover {
    fn is_removed(&self, items: &[Value], position: usize) -> bool {
        self.removed
            .get(&list_id(items))
            .and_then(|marks| marks.get(position).copied())
            .unwrap_or(false)
    }

    /// The first item not removed that `element` designates in the list as it is now
    /// (the `n`th item not removed for `i:n`).
    fn position(&mut self, items: &[Value], element: &PathElement) -> Option<usize> {
        let scan = |remover: &Self| match element {
            PathElement::Index(index) => {
                let wanted = usize::try_from(*index).ok()?;
                (0..items.len())
                    .filter(|&p| !remover.is_removed(items, p))
                    .nth(wanted)
            }
            _ => (0..items.len()).find(|&p| {
                !remover.is_removed(items, p)
                    && items.get(p).is_some_and(|item| element.matches_item(item))
            }),
        };
        if items.len() < INDEX_FROM {
            return scan(self);
        }
        let lookup = self
            .indexes
            .entry(list_id(items))
            .or_default()
            .lookup(items, element);
        match lookup {
            // Items only lose fields here: one that did not match then never will.
            Lookup::Absent => None,
            // Still there and still matching (its key fields may have been removed).
            Lookup::At(position)
                if !self.is_removed(items, position)
                    && items
                        .get(position)
                        .is_some_and(|item| element.matches_item(item)) =>
            {
                Some(position)
            }
            Lookup::At(_) | Lookup::Unknown => scan(self),
        }
    }

    fn resolve_mut<'v>(
        &mut self,
        root: &'v mut Value,
        path: &[PathElement],
    ) -> Option<&'v mut Value> {
        let mut current = root;
        for element in path {
            current = match element {
                PathElement::Field(name) => current.as_object_mut()?.get_mut(name)?,
                _ => {
                    let items = current.as_array_mut()?;
                    let position = self.position(items, element)?;
                    items.get_mut(position)?
                }
            };
        }
        Some(current)
    }

    /// Removes the node at `path`; false if it was not there.
    fn remove(&mut self, root: &mut Value, path: &[PathElement]) -> bool {
        let Some((last, parent_path)) = path.split_last() else {
            return false;
        };
        let Some(parent) = self.resolve_mut(root, parent_path) else {
            return false;
        };
        match last {
            PathElement::Field(name) => parent
                .as_object_mut()
                .is_some_and(|fields| fields.remove(name).is_some()),
            _ => {
                let Some(items) = parent.as_array() else {
                    return false;
                };
                let Some(position) = self.position(items, last) else {
                    return false;
                };
                let marks = self
                    .removed
                    .entry(list_id(items))
                    .or_insert_with(|| vec![false; items.len()]);
                if let Some(mark) = marks.get_mut(position) {
                    *mark = true;
                }
                true
            }
        }
    }

    fn remove_emptied_parents(
        &mut self,
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
            let emptied = match self.resolve_mut(root, parent) {
                Some(Value::Object(fields)) => fields.is_empty(),
                Some(Value::Array(items)) => {
                    let items: &[Value] = items;
                    (0..items.len()).all(|p| self.is_removed(items, p))
                }
                _ => false,
            };
            if !emptied || !self.remove(root, parent) {
                return;
            }
        }
    }

    /// Drops the marked items, in one pass over the object.
    fn compact(&self, value: &mut Value) {
        match value {
            Value::Array(items) => {
                if let Some(marks) = self.removed.get(&list_id(items)) {
                    let mut marks = marks.iter();
                    items.retain(|_| !marks.next().copied().unwrap_or(false));
                }
                for item in items {
                    self.compact(item);
                }
            }
            Value::Object(fields) => {
                for child in fields.values_mut() {
                    self.compact(child);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The one-at-a-time scan these functions replace, kept as the reference.
    mod reference {
        use super::*;

        pub(super) fn resolve<'v>(root: &'v Value, path: &[PathElement]) -> Option<&'v Value> {
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

        pub(super) fn remove_paths(
            root: &mut Value,
            doomed: &[&[PathElement]],
            keep: &FieldSet,
            keep_too: &FieldSet,
        ) {
            for path in doomed.iter().rev() {
                if !remove_path(root, path) {
                    continue;
                }
                let mut len = path.len();
                while len > 1 {
                    len -= 1;
                    let parent = &path[..len];
                    if is_struct_root(parent) || keep.contains(parent) || keep_too.contains(parent)
                    {
                        break;
                    }
                    let emptied = match resolve(root, parent) {
                        Some(Value::Object(fields)) => fields.is_empty(),
                        Some(Value::Array(items)) => items.is_empty(),
                        _ => false,
                    };
                    if !emptied || !remove_path(root, parent) {
                        break;
                    }
                }
            }
        }
    }

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    /// Items from a small domain, so that keys repeat, lack fields or default.
    fn item() -> impl Strategy<Value = Value> {
        (
            prop::option::of(0u8..6),
            prop::option::of(0u8..3),
            prop::option::of(prop_oneof![Just("TCP"), Just("UDP")]),
            prop::option::of(0u8..3),
            prop::option::of((prop::option::of(0u8..2), prop::option::of(0u8..2))),
            0u8..10,
        )
            .prop_map(|(name, port, protocol, value, sub, shape)| {
                if shape == 0 {
                    return json!(name.unwrap_or(0));
                }
                let mut item = serde_json::Map::new();
                if let Some(name) = name {
                    item.insert("name".into(), json!(format!("n{name}")));
                }
                if let Some(port) = port {
                    item.insert("port".into(), json!(80 + u32::from(port)));
                }
                if let Some(protocol) = protocol {
                    item.insert("protocol".into(), json!(protocol));
                }
                if let Some(value) = value {
                    item.insert("value".into(), json!(value));
                }
                if let Some((a, b)) = sub {
                    let mut sub = serde_json::Map::new();
                    if let Some(a) = a {
                        sub.insert("a".into(), json!(a));
                    }
                    if let Some(b) = b {
                        sub.insert("b".into(), json!(b));
                    }
                    item.insert("sub".into(), Value::Object(sub));
                }
                Value::Object(item)
            })
    }

    fn object() -> impl Strategy<Value = Value> {
        (
            prop::collection::vec(item(), 0..40),
            prop::option::of(0u8..2),
        )
            .prop_map(|(list, other)| {
                let mut spec = json!({"list": list});
                if let Some(other) = other {
                    spec["other"] = json!({"x": other});
                }
                json!({"spec": spec})
            })
    }

    /// Paths into [`object`]'s shape, by every kind of element.
    fn path() -> impl Strategy<Value = Vec<PathElement>> {
        let element = prop_oneof![
            (0u8..7).prop_map(|n| PathElement::keyed(&[("name", &json!(format!("n{n}")))])),
            (0u8..4, prop_oneof![Just("TCP"), Just("UDP")]).prop_map(|(port, protocol)| {
                PathElement::keyed(&[
                    ("port", &json!(80 + u32::from(port))),
                    ("protocol", &json!(protocol)),
                ])
            }),
            (0u8..7).prop_map(|n| PathElement::Value(n.to_string())),
            Just(PathElement::Value("{}".to_owned())),
            (0u64..42).prop_map(PathElement::Index),
        ];
        let below = prop_oneof![
            Just(vec![]),
            Just(vec![field("name")]),
            Just(vec![field("port")]),
            Just(vec![field("value")]),
            Just(vec![field("sub")]),
            Just(vec![field("sub"), field("a")]),
            Just(vec![field("sub"), field("b")]),
        ];
        prop_oneof![
            4 => (element, below).prop_map(|(element, below)| {
                let mut path = vec![field("spec"), field("list"), element];
                path.extend(below);
                path
            }),
            1 => Just(vec![field("spec"), field("list")]),
            1 => Just(vec![field("spec"), field("other"), field("x")]),
            1 => Just(vec![field("spec"), field("other")]),
        ]
    }

    proptest! {
        #[test]
        fn the_indexed_resolver_finds_what_a_scan_finds(
            object in object(),
            paths in prop::collection::vec(path(), 0..60),
        ) {
            let mut resolver = Resolver::new(&object);
            for path in &paths {
                prop_assert_eq!(resolver.resolve(path), reference::resolve(&object, path));
            }
        }

        #[test]
        fn removing_in_one_pass_leaves_what_one_at_a_time_leaves(
            object in object(),
            paths in prop::collection::vec(path(), 0..60),
            kept in prop::collection::vec(path(), 0..6),
        ) {
            // As `apply` builds them: sorted, nothing below a doomed path.
            let set: FieldSet = paths.into_iter().collect();
            let mut doomed: Vec<&[PathElement]> = Vec::new();
            for path in set.iter() {
                if !doomed.last().is_some_and(|top| path.starts_with(top)) {
                    doomed.push(path);
                }
            }
            let keep: FieldSet = kept.into_iter().collect();
            let (mut fast, mut slow) = (object.clone(), object);
            remove_paths(&mut fast, &doomed, &keep, &FieldSet::new());
            reference::remove_paths(&mut slow, &doomed, &keep, &FieldSet::new());
            prop_assert_eq!(fast, slow);
        }
    }
}
