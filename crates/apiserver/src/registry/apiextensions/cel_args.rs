//! Argument helpers of the Kubernetes CEL library functions (`cel_library.rs`,
//! `cel_net.rs`, `cel_quantity.rs`, `cel_format.rs`): typed access to arguments with the
//! `no such overload` error otherwise, and map building.

use std::sync::Arc;

use cel::objects::Key;
use cel::{ExecutionError, Value};

/// The error of a library function called with what it does not take.
pub(crate) fn no_overload(function: &str, args: &[&Value]) -> ExecutionError {
    ExecutionError::no_such_overload(
        function,
        args.iter().map(|v| v.type_of().to_string()).collect(),
    )
}

/// The string in `value`, or the overload error of `function`.
pub(crate) fn string_arg<'a>(function: &str, value: &'a Value) -> Result<&'a str, ExecutionError> {
    match value {
        Value::String(s) => Ok(s.as_str()),
        other => Err(no_overload(function, &[other])),
    }
}

pub(crate) fn list_of<'a>(function: &str, value: &'a Value) -> Result<&'a [Value], ExecutionError> {
    match value {
        Value::List(items) => Ok(items.as_slice()),
        other => Err(no_overload(function, &[other])),
    }
}

/// A CEL map with string keys.
pub(crate) fn string_map(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    let map: std::collections::HashMap<Key, Value> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Value::Map(cel::objects::Map { map: Arc::new(map) })
}
