//! Table and PartialObjectMetadata representations (apiserver-semantics §8.4, §8.5).

use serde_json::{Value, json};

use crate::registry::ResourceDef;
use crate::registry::kinds::strategy_for;
use crate::registry::printers::{self, human_age as age};

/// What a Table row carries as its `object` (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// PartialObjectMetadata (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses `includeObject`.
    ///
    /// # Errors
    ///
    /// The bad value.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, UnknownIncludeObject> {
        match value {
            None | Some("" | "Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(UnknownIncludeObject(other.to_owned())),
        }
    }
}

/// An `includeObject` other than `None`, `Metadata` or `Object`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown includeObject {0:?}")]
pub(crate) struct UnknownIncludeObject(pub(crate) String);

/// `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}`.
pub(crate) fn partial_object_metadata(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

fn column(name: &str, column_type: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": column_type, "format": format, "description": description, "priority": priority})
}

/// The columns of a built-in resource's printer (its strategy's), if it has one.
fn builtin_columns(resource: &ResourceDef) -> Option<&'static [printers::Column]> {
    if !resource.builtin {
        return None;
    }
    strategy_for(resource).table_columns()
}

/// The table columns of a resource: Name, any custom printer columns, then the creation
/// time (`Created At` for built-ins, as upstream's default convertor; `Age` for custom
/// resources whose CRD names no columns).
pub(crate) fn column_definitions(resource: &ResourceDef) -> Value {
    if let Some(columns) = builtin_columns(resource) {
        return Value::Array(printers::column_definitions(resource, columns));
    }
    let mut columns = vec![printers::name_column(0)];
    for printer in &resource.printer_columns {
        columns.push(column(
            &printer.name,
            &printer.column_type,
            &printer.format,
            &printer.description,
            printer.priority,
        ));
    }
    if resource.builtin {
        columns.push(column(
            "Created At",
            "date",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0,
        ));
    } else if resource.printer_columns.is_empty() {
        // apiextensions-apiserver's default for a CRD without additionalPrinterColumns;
        // a CRD that names its columns gets exactly those.
        columns.push(column(
            "Age",
            "date",
            "",
            "Time since the object was created.",
            0,
        ));
    }
    Value::Array(columns)
}

/// A simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`) lookup.
fn json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = object;
    for segment in path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
    {
        let (field, index) = match segment.split_once('[') {
            Some((field, rest)) => (field, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (segment, None),
        };
        current = current.get(field)?;
        if let Some(index) = index {
            current = current.get(index)?;
        }
    }
    Some(current)
}

/// One row of the table.
pub(crate) fn row(resource: &ResourceDef, object: &Value, include: IncludeObject) -> Value {
    let metadata = object.get("metadata");
    let name = metadata
        .and_then(|m| m.get("name"))
        .cloned()
        .unwrap_or(Value::Null);
    let created = metadata
        .and_then(|m| m.get("creationTimestamp"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let builtin_cells =
        builtin_columns(resource).map(|columns| printers::cells(resource, columns, object));
    let mut row = json!({"cells": builtin_cells.unwrap_or_else(|| default_cells(resource, object, name, created))});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => row["object"] = partial_object_metadata(object),
        IncludeObject::Object => row["object"] = object.clone(),
    }
    row
}

/// The cells of the default table: name, custom printer columns, creation time.
fn default_cells(resource: &ResourceDef, object: &Value, name: Value, created: &str) -> Vec<Value> {
    let mut cells = vec![name];
    for printer in &resource.printer_columns {
        let cell = json_path(object, &printer.json_path)
            .cloned()
            .unwrap_or(Value::Null);
        cells.push(if printer.column_type == "date" {
            cell.as_str().map_or(Value::Null, |t| Value::String(age(t)))
        } else {
            cell
        });
    }
    if resource.builtin {
        cells.push(Value::String(created.to_owned()));
    } else if resource.printer_columns.is_empty() {
        cells.push(Value::String(age(created)));
    }
    cells
}

/// A Table of objects with the given list metadata. `with_columns: false` writes
/// `"columnDefinitions": null`, as watch events after the first do.
pub(crate) fn table<'a>(
    resource: &ResourceDef,
    objects: impl Iterator<Item = &'a Value>,
    include: IncludeObject,
    list_metadata: Value,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects
        .map(|object| row(resource, object, include))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": if with_columns { column_definitions(resource) } else { Value::Null },
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn rows_have_one_cell_per_column_and_metadata_objects() {
        let registry = Registry::new();
        let configmaps = registry.lookup("", "v1", "configmaps").unwrap();
        let object = json!({"metadata": {"name": "a", "creationTimestamp": "2024-05-01T10:00:00Z"}, "data": {}});
        let table = table(
            &configmaps,
            std::iter::once(&object),
            IncludeObject::Metadata,
            json!({"resourceVersion": "5"}),
            true,
        );
        assert_eq!(
            table["columnDefinitions"].as_array().unwrap().len(),
            table["rows"][0]["cells"].as_array().unwrap().len()
        );
        assert_eq!(table["rows"][0]["cells"][0], "a");
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn include_object_values_are_checked() {
        assert_eq!(
            IncludeObject::parse(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::parse(Some("All")),
            Err(UnknownIncludeObject("All".to_owned()))
        );
    }

    #[test]
    fn json_paths_and_ages() {
        let object = json!({"spec": {"items": [{"v": 3}]}});
        assert_eq!(json_path(&object, ".spec.items[0].v"), Some(&json!(3)));
        assert_eq!(json_path(&object, ".spec.missing"), None);
        assert!(age("2000-01-01T00:00:00Z").ends_with('y'));
        assert_eq!(age("garbage"), "<unknown>");
    }
}
