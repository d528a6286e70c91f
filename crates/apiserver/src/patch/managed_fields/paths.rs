//! Resolving and removing field paths inside objects.

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

pub(super) fn resolve_mut<'v>(root: &'v mut Value, path: &[PathElement]) -> Option<&'v mut Value> {
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

pub(super) fn item_position(items: &[Value], element: &PathElement) -> Option<usize> {
    match element {
        PathElement::Index(index) => usize::try_from(*index).ok().filter(|i| *i < items.len()),
        PathElement::Key(_) | PathElement::Value(_) => {
            items.iter().position(|item| element.matches_item(item))
        }
        PathElement::Field(_) => None,
    }
}

/// Removes the node at `path`; returns false if it was not there.
pub(super) fn remove_path(root: &mut Value, path: &[PathElement]) -> bool {
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
pub(super) fn remove_emptied_parents(
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
