//! ConfigMaps (kube-apiserver's `pkg/registry/core/configmap`): once marked `immutable`,
//! neither their data nor that mark may change (Secrets share the rule).

use kubeclient_machinery::StatusCause;
use serde_json::{Value, json};

use crate::registry::printers::{self, Column};
use crate::registry::strategy::Strategy;

/// The ConfigMap strategy.
pub(crate) struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::CONFIG_MAP)
    }

    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        immutable_data(current, desired, causes);
    }
}

/// The causes of an update that changes `data`, `binaryData` or the `immutable` mark of
/// an object marked `immutable` (ConfigMaps and Secrets).
pub(crate) fn immutable_data(current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
    if current.pointer("/immutable") != Some(&json!(true)) {
        return;
    }
    let forbidden = |field: &str| {
        StatusCause::new(
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
            field,
        )
    };
    if desired.pointer("/immutable") != Some(&json!(true)) {
        causes.push(forbidden("immutable"));
    }
    for field in ["data", "binaryData"] {
        let pointer = format!("/{field}");
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == &json!({}));
        let (before, after) = (current.pointer(&pointer), desired.pointer(&pointer));
        if before != after && !(empty(before) && empty(after)) {
            causes.push(forbidden(field));
        }
    }
}
