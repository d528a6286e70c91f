//! Namespaces (kube-apiserver's `pkg/registry/core/namespace`): a new one is `Active`,
//! labelled with its name and finalized by `kubernetes`; its name is a DNS-1123 label; a
//! DELETE never removes it at once but marks it `Terminating` for the namespace
//! controller to empty (no propagation finalizer), and answers with the object.

use serde_json::{Map, Value, json};

use crate::object::metadata_mut;
use crate::registry::Propagation;
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{NameRule, Strategy, StrategyContext};

/// The label every namespace carries with its name (Kubernetes 1.21+).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The Namespace strategy.
pub(crate) struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::NAMESPACE)
    }

    fn prepare_for_create(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        object.insert("status".to_owned(), json!({"phase": "Active"}));
        let name = metadata_mut(object)
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        label_with_name(metadata_mut(object), &name);
        object
            .entry("spec")
            .or_insert_with(|| json!({"finalizers": ["kubernetes"]}));
    }

    fn name_generated(&self, metadata: &mut Map<String, Value>, name: &str) {
        if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
            labels.insert(NAME_LABEL.to_owned(), json!(name));
        }
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn deletion_finalizer(&self, _: Propagation) -> Option<&'static str> {
        None
    }

    fn deletes_through_controller(&self) -> bool {
        // The namespace controller empties it, then removes the `kubernetes` finalizer.
        true
    }

    fn prepare_for_deletion(&self, marked: &mut Map<String, Value>) {
        // The namespace registry's own Delete sets the deletionTimestamp only.
        metadata_mut(marked).remove("deletionGracePeriodSeconds");
        marked.insert("status".to_owned(), json!({"phase": "Terminating"}));
        let spec = marked.entry("spec").or_insert_with(|| json!({}));
        if let Value::Object(spec) = spec {
            let list = spec
                .entry("finalizers")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list
                && !list.iter().any(|f| f == "kubernetes")
            {
                list.push(json!("kubernetes"));
            }
        }
    }

    fn return_deleted_object(&self) -> bool {
        true
    }
}

/// Sets the name label in `metadata`.
fn label_with_name(metadata: &mut Map<String, Value>, name: &str) {
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if let Value::Object(labels) = labels {
        labels.insert(NAME_LABEL.to_owned(), json!(name));
    }
}
