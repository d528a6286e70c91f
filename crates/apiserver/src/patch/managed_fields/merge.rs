//! The merge of server-side apply (structured-merge-diff's `merge`): the configuration is
//! merged into the live object field by field; list-maps merge item by item on their keys
//! (`x-kubernetes-list-map-keys`, e.g. a Service's ports by `port` *and* `protocol`), sets of
//! primitives as sets, and every other list is atomic: the configuration's list replaces
//! the live one. Merged lists keep the live items where they are and append the new ones
//! in the configuration's order, as kube-apiserver does (a strategic merge patch would put
//! new items first and key a Service's ports by `port` alone).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::ListKeys;

/// How the list at a path (field names from the object root, list indices left out) merges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListMerge {
    /// The configuration's list replaces the live one.
    Atomic,
    /// Items are identified by these fields.
    Map(ListKeys),
    /// Items are primitives, merged as a set.
    Set,
}

/// `config` merged into `live`. A `null` in the configuration removes the field, as the
/// strategic merge this replaces did.
pub(crate) fn merge_applied(
    live: &Value,
    config: &Value,
    lists: &dyn Fn(&[&str]) -> ListMerge,
) -> Value {
    let mut path = Vec::new();
    merge_at(live, config, lists, &mut path)
}

fn merge_at<'a>(
    live: &Value,
    config: &'a Value,
    lists: &dyn Fn(&[&str]) -> ListMerge,
    path: &mut Vec<&'a str>,
) -> Value {
    match (live, config) {
        (Value::Object(live), Value::Object(config)) => {
            let mut out: Map<String, Value> = live.clone();
            for (name, value) in config {
                if value.is_null() {
                    out.remove(name);
                    continue;
                }
                let merged = match live.get(name) {
                    Some(current) => {
                        path.push(name);
                        let merged = merge_at(current, value, lists, path);
                        path.pop();
                        merged
                    }
                    None => without_nulls(value),
                };
                out.insert(name.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(live), Value::Array(config)) => match lists(path) {
            ListMerge::Atomic => Value::Array(config.iter().map(without_nulls).collect()),
            ListMerge::Set => {
                let mut out = live.clone();
                for item in config {
                    if !out.contains(item) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            ListMerge::Map(keys) => {
                let key_of = |item: &Value| -> String {
                    let values: Vec<Option<&Value>> = keys.iter().map(|k| item.get(*k)).collect();
                    serde_json::to_string(&values).unwrap_or_default()
                };
                let mut out = live.clone();
                let mut at: HashMap<String, usize> = HashMap::with_capacity(out.len());
                for (index, item) in out.iter().enumerate() {
                    at.entry(key_of(item)).or_insert(index);
                }
                for item in config {
                    let key = key_of(item);
                    match at.get(&key) {
                        Some(&index) => {
                            let merged = merge_at(&out[index], item, lists, path);
                            out[index] = merged;
                        }
                        None => {
                            at.insert(key, out.len());
                            out.push(without_nulls(item));
                        }
                    }
                }
                Value::Array(out)
            }
        },
        _ => without_nulls(config),
    }
}

/// The defaults of list-map key fields in the built-in schemas (structured-merge-diff's
/// `default` on a key field): a port's `protocol` is `TCP`.
const KEY_DEFAULTS: &[(&str, &str)] = &[("protocol", "TCP")];

/// Fills in the key fields a configuration's list-map items leave out that have a default,
/// as kube-apiserver does since structured-merge-diff keys items with defaulted keys (v1.20
/// answered 500 instead), so `{"port": 80}` is the item `{"port": 80, "protocol": "TCP"}`.
pub(crate) fn default_list_keys(config: &mut Value, lists: &dyn Fn(&[&str]) -> ListMerge) {
    let mut path = Vec::new();
    default_keys_at(config, lists, &mut path);
}

fn default_keys_at(
    value: &mut Value,
    lists: &dyn Fn(&[&str]) -> ListMerge,
    path: &mut Vec<String>,
) {
    match value {
        Value::Object(fields) => {
            for (name, child) in fields.iter_mut() {
                path.push(name.clone());
                default_keys_at(child, lists, path);
                path.pop();
            }
        }
        Value::Array(items) => {
            let borrowed: Vec<&str> = path.iter().map(String::as_str).collect();
            let keys = match lists(&borrowed) {
                ListMerge::Map(keys) => keys,
                _ => &[],
            };
            for item in items {
                if let Value::Object(fields) = item {
                    for (key, default) in KEY_DEFAULTS {
                        if keys.contains(key) && !fields.contains_key(*key) {
                            fields.insert((*key).to_owned(), Value::String((*default).to_owned()));
                        }
                    }
                }
                default_keys_at(item, lists, path);
            }
        }
        _ => {}
    }
}

/// A configured value as it is stored: `null` fields of objects left out.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lists(path: &[&str]) -> ListMerge {
        match path {
            ["spec", "ports"] => ListMerge::Map(&["port", "protocol"]),
            ["spec", "containers"] => ListMerge::Map(&["name"]),
            ["metadata", "finalizers"] => ListMerge::Set,
            _ => ListMerge::Atomic,
        }
    }

    #[test]
    fn list_maps_merge_on_every_key_and_append_new_items() {
        let live = json!({"spec": {"ports": [
            {"port": 80, "protocol": "TCP", "targetPort": 8080},
        ]}});
        let config = json!({"spec": {"ports": [
            {"port": 53, "protocol": "UDP"},
            {"port": 80, "protocol": "UDP"},
            {"port": 80, "protocol": "TCP", "name": "http"},
        ]}});
        assert_eq!(
            merge_applied(&live, &config, &lists),
            json!({"spec": {"ports": [
                {"port": 80, "protocol": "TCP", "targetPort": 8080, "name": "http"},
                {"port": 53, "protocol": "UDP"},
                {"port": 80, "protocol": "UDP"},
            ]}})
        );
    }

    #[test]
    fn live_items_keep_their_order() {
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let config = json!({"spec": {"containers": [{"name": "c"}, {"name": "b", "image": "x"}]}});
        assert_eq!(
            merge_applied(&live, &config, &lists),
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "image": "x"}, {"name": "c"}]}})
        );
    }

    #[test]
    fn a_left_out_protocol_key_is_its_default() {
        let mut config =
            json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
        default_list_keys(&mut config, &lists);
        assert_eq!(
            config,
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}})
        );
        let live =
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}});
        assert_eq!(
            merge_applied(&live, &config, &lists)["spec"]["ports"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn sets_union_atomic_lists_replace_and_nulls_remove() {
        let live = json!({"metadata": {"finalizers": ["x", "y"], "labels": {"a": "1", "b": "2"}}, "spec": {"args": ["1", "2"]}});
        let config = json!({"metadata": {"finalizers": ["z", "x"], "labels": {"a": null}}, "spec": {"args": ["3"]}});
        assert_eq!(
            merge_applied(&live, &config, &lists),
            json!({"metadata": {"finalizers": ["x", "y", "z"], "labels": {"b": "2"}}, "spec": {"args": ["3"]}})
        );
    }
}
