//! PersistentVolumes and PersistentVolumeClaims (kube-apiserver's
//! `pkg/registry/core/persistentvolume{,claim}`): a claim's `volumeMode` defaults to
//! `Filesystem` and a new one is `Pending`; a DELETE of either answers with the object.

use serde_json::{Map, Value, json};

use crate::registry::defaults::{child, child_or_insert, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};

/// The PersistentVolumeClaim strategy.
pub(crate) struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::config::PERSISTENT_VOLUME_CLAIM)
    }

    fn prepare_for_create(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        claim_defaults(object);
        set(child_or_insert(object, "status"), "phase", json!("Pending"));
    }

    fn prepare_for_update(
        &self,
        _: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        _: &Value,
    ) {
        claim_defaults(object);
    }

    fn return_deleted_object(&self) -> bool {
        true
    }
}

fn claim_defaults(object: &mut Map<String, Value>) {
    if let Some(spec) = child(object, "spec") {
        set(spec, "volumeMode", json!("Filesystem"));
    }
}

/// The PersistentVolume strategy.
pub(crate) struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn return_deleted_object(&self) -> bool {
        true
    }
}
