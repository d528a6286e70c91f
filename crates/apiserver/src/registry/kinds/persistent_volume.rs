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

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        if let Some(spec) = child(object, "spec") {
            set(spec, "volumeMode", json!("Filesystem"));
        }
    }

    fn prepare_for_create(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
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
