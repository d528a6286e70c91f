//! Field paths ([`PathElement`]) and sets of them ([`FieldSet`]), with the `fieldsV1`
//! encoding managedFields entries store them in.

use super::*;

/// One step of a field path. The variants mirror the FieldsV1 key prefixes, and their
/// declaration order (fields, keys, values, indices) is the order upstream sorts them in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A named object field: `f:<name>`.
    Field(String),
    /// An item of a list merged by key: `k:{"name":"c1"}`. Holds `(key field, canonical
    /// JSON of its value)` pairs sorted by field name, so equal keys compare equal.
    Key(Vec<(String, String)>),
    /// An item of a set-like list, identified by its canonical JSON: `v:<json>` (the
    /// members of `metadata.finalizers`).
    Value(String),
    /// A list item identified by position: `i:<n>`. Never produced here; accepted for the
    /// same reason as [`PathElement::Value`].
    Index(u64),
}

impl PathElement {
    /// Builds the key element of an item of a list keyed by `field` whose value is `value`.
    #[cfg(test)]
    pub(crate) fn key(field: &str, value: &Value) -> Self {
        PathElement::keyed(&[(field, value)])
    }

    /// Builds the key element of an item of a list keyed by several fields, given as
    /// `(field, value)` pairs.
    pub(crate) fn keyed(pairs: &[(&str, &Value)]) -> Self {
        let mut pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(field, value)| ((*field).to_owned(), canonical_json(value)))
            .collect();
        pairs.sort();
        PathElement::Key(pairs)
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
    pub(super) fn matches_item(&self, item: &Value) -> bool {
        match self {
            PathElement::Key(pairs) => item.as_object().is_some_and(|fields| {
                pairs.iter().all(|(field, want)| {
                    // A key field with a schema default (a port's protocol) keys by it
                    // while still absent, as the walk keys the item.
                    match fields.get(field) {
                        Some(got) => canonical_json(got) == *want,
                        None => field == "protocol" && canonical_json(&DEFAULT_PROTOCOL) == *want,
                    }
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
