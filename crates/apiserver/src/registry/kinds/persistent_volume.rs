//! PersistentVolumes and PersistentVolumeClaims (kube-apiserver's
//! `pkg/registry/core/persistentvolume{,claim}`): a claim's `volumeMode` defaults to
//! `Filesystem` and a new one is `Pending`, of the default StorageClass when it names none
//! (the `DefaultStorageClass` admission plugin); a DELETE of either answers with the
//! object.

use serde_json::{Map, Value, json};

use crate::registry::defaults::{child, child_or_insert, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};
use crate::storage::Store;

/// The annotations that make a StorageClass the default (the beta one still counts).
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// A claim without `storageClassName` gets the default StorageClass's name: the newest
/// class annotated as default, by name on a tie (`DefaultStorageClass`, `GetDefaultClass`).
/// A claim with `storageClassName: ""` keeps it (it asks for no class).
fn default_storage_class(store: &Store, claim: &mut Map<String, Value>) {
    let named = claim
        .get("spec")
        .and_then(|s| s.get("storageClassName"))
        .is_some_and(|n| !n.is_null());
    if named {
        return;
    }
    let classes = store.snapshot(
        &kubeclient_machinery::GroupResource::new("storage.k8s.io", "storageclasses"),
        "",
    );
    let default = classes
        .objects
        .iter()
        .map(|o| &o.value)
        .filter(|class| {
            DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
                class
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(*key))
                    .and_then(Value::as_str)
                    == Some("true")
            })
        })
        .max_by_key(|class| {
            let field = |f: &str| {
                class
                    .pointer(&format!("/metadata/{f}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            (field("creationTimestamp"), std::cmp::Reverse(field("name")))
        })
        .and_then(|class| class.pointer("/metadata/name").cloned());
    if let (Some(name), Some(spec)) = (default, child(claim, "spec")) {
        spec.insert("storageClassName".to_owned(), name);
    }
}

/// The PersistentVolumeClaim strategy.
pub(crate) struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::PERSISTENT_VOLUME_CLAIM)
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        if let Some(spec) = child(object, "spec") {
            set(spec, "volumeMode", json!("Filesystem"));
        }
    }

    fn prepare_for_create(&self, ctx: StrategyContext<'_>, object: &mut Map<String, Value>) {
        default_storage_class(ctx.store, object);
        set(child_or_insert(object, "status"), "phase", json!("Pending"));
    }

    fn return_deleted_object(&self) -> bool {
        true
    }
}

/// The PersistentVolume strategy.
pub(crate) struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn return_deleted_object(&self) -> bool {
        true
    }
}
