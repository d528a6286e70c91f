//! Secrets (kube-apiserver's `pkg/registry/core/secret`): type `Opaque` by default,
//! `stringData` merged into `data` base64-encoded, an immutable `type`, and the
//! `immutable` mark of ConfigMaps.

use base64::Engine as _;
use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use super::config_map::immutable_data;
use crate::registry::defaults::{child_or_insert, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};

/// The Secret strategy.
pub(crate) struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::SECRET)
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        defaults(object);
    }

    fn immutable_causes(&self, current: &Value, desired: &Value, causes: &mut Vec<StatusCause>) {
        if let (Some(before), Some(after)) = (current.get("type"), desired.get("type"))
            && before != after
        {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {:?}: field is immutable",
                    after.as_str().unwrap_or("")
                ),
                "type",
            ));
        }
        immutable_data(current, desired, causes);
    }
}

fn defaults(object: &mut Map<String, Value>) {
    set(object, "type", json!("Opaque"));
    let Some(Value::Object(string_data)) = object.remove("stringData") else {
        return;
    };
    let data = child_or_insert(object, "data");
    for (key, value) in string_data {
        let text = value.as_str().unwrap_or("");
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        data.insert(key, json!(encoded));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_merge_string_data_into_data() {
        let mut secret = json!({"stringData": {"a": "b"}, "data": {"c": "ZA=="}});
        let map = secret.as_object_mut().unwrap();
        defaults(map);
        assert_eq!(
            secret,
            json!({"type": "Opaque", "data": {"a": "Yg==", "c": "ZA=="}})
        );
    }
}
