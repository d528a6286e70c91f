//! kube-controller-manager's PersistentVolume controller (`persistentvolume-binder`,
//! `pkg/controller/volume/persistentvolume`) with a simulated host-path provisioner: the
//! cluster starts with a default StorageClass `standard` (as kind and minikube do), and
//! each pending claim of a StorageClass that binds `Immediate` is provisioned at once a
//! PersistentVolume `pvc-<claim uid>` of the requested size and access modes on a
//! `hostPath`, both `Bound` to each other with the annotations the controller writes. A
//! volume whose claim is gone is deleted (`reclaimPolicy: Delete`) or `Released`.

use serde_json::{Map, Value, json};

use super::controller_utils::meta;
use super::writer::{PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, Writer};

/// The default StorageClass's name.
const DEFAULT_CLASS: &str = "standard";
/// The provisioner the simulated volumes come from.
const PROVISIONER: &str = "kubernetes.io/host-path";
/// Where the simulated volumes live on the (simulated) nodes.
const HOST_PATH_ROOT: &str = "/tmp/hostpath-provisioner";

/// Creates the default StorageClass `standard`, unless a class of that name exists.
pub(super) fn register_default_class(writer: &Writer<'_>) {
    let classes = kubeclient_machinery::GroupResource::new("storage.k8s.io", "storageclasses");
    if writer.store.storage.get(&classes, DEFAULT_CLASS).is_some() {
        return;
    }
    let class = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    });
    writer.create(STORAGE_CLASSES, None, class);
}

/// One pass: pending claims provisioned and bound, volumes of deleted claims reclaimed.
pub(super) fn sync(writer: &Writer<'_>, claims: &[&Value], volumes: &[&Value], classes: &[&Value]) {
    for claim in claims {
        let pending = claim
            .pointer("/spec/volumeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if pending && claim.pointer("/metadata/deletionTimestamp").is_none() {
            provision(writer, claim, volumes, classes);
        }
    }
    for volume in volumes {
        reclaim(writer, volume, claims);
    }
}

/// Provisions and binds a volume for `claim`, if its class binds at once.
fn provision(writer: &Writer<'_>, claim: &Value, volumes: &[&Value], classes: &[&Value]) {
    let class_name = claim
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(class) = classes.iter().find(|c| meta(c, "name") == class_name) else {
        return;
    };
    if class.get("volumeBindingMode").and_then(Value::as_str) == Some("WaitForFirstConsumer") {
        return;
    }
    let name = format!("pvc-{}", meta(claim, "uid"));
    let namespace = meta(claim, "namespace");
    let provisioner = class
        .get("provisioner")
        .and_then(Value::as_str)
        .unwrap_or(PROVISIONER);
    let storage = claim
        .pointer("/spec/resources/requests/storage")
        .cloned()
        .unwrap_or_else(|| json!("1Gi"));
    let access_modes = claim
        .pointer("/spec/accessModes")
        .cloned()
        .unwrap_or_else(|| json!(["ReadWriteOnce"]));
    let existing = volumes.iter().find(|v| meta(v, "name") == name).copied();
    let volume = match existing {
        Some(volume) => volume.clone(),
        None => {
            let volume = json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {
                    "name": name,
                    "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
                },
                "spec": {
                    "capacity": {"storage": storage},
                    "accessModes": access_modes,
                    "hostPath": {"path": format!("{HOST_PATH_ROOT}/{namespace}/{}", meta(claim, "name")), "type": ""},
                    "persistentVolumeReclaimPolicy": class.get("reclaimPolicy").cloned().unwrap_or_else(|| json!("Delete")),
                    "storageClassName": class_name,
                    "volumeMode": claim.pointer("/spec/volumeMode").cloned().unwrap_or_else(|| json!("Filesystem")),
                    "claimRef": {
                        "kind": "PersistentVolumeClaim", "apiVersion": "v1",
                        "namespace": namespace, "name": meta(claim, "name"),
                        "uid": meta(claim, "uid"), "resourceVersion": meta(claim, "resourceVersion"),
                    },
                },
            });
            let Some(created) = writer.create_object(PERSISTENT_VOLUMES, None, volume) else {
                return;
            };
            created
        }
    };
    writer.replace_status(PERSISTENT_VOLUMES, &volume, json!({"phase": "Bound"}));
    let bound = writer.update(
        PERSISTENT_VOLUME_CLAIMS,
        Some(namespace),
        meta(claim, "name"),
        meta(claim, "uid"),
        false,
        |object| {
            let spec = object.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("volumeName".to_owned(), json!(name));
            }
            let annotations = object
                .entry("metadata")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|m| m.entry("annotations").or_insert_with(|| json!({})));
            if let Some(Value::Object(annotations)) = annotations {
                for (key, value) in [
                    ("pv.kubernetes.io/bind-completed", "yes"),
                    ("pv.kubernetes.io/bound-by-controller", "yes"),
                    ("volume.beta.kubernetes.io/storage-provisioner", provisioner),
                    ("volume.kubernetes.io/storage-provisioner", provisioner),
                ] {
                    annotations.insert(key.to_owned(), json!(value));
                }
            }
            true
        },
    );
    if bound {
        let capacity = volume
            .pointer("/spec/capacity")
            .cloned()
            .unwrap_or_else(|| json!({"storage": storage}));
        let status = json!({"phase": "Bound", "accessModes": access_modes, "capacity": capacity});
        writer.update(
            PERSISTENT_VOLUME_CLAIMS,
            Some(namespace),
            meta(claim, "name"),
            meta(claim, "uid"),
            true,
            |object| {
                object.insert("status".to_owned(), status.clone());
                true
            },
        );
    }
}

/// A bound volume whose claim is gone is deleted or released, by its reclaim policy.
fn reclaim(writer: &Writer<'_>, volume: &Value, claims: &[&Value]) {
    let Some(reference) = volume.pointer("/spec/claimRef").and_then(Value::as_object) else {
        return;
    };
    let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("");
    if uid.is_empty() || claims.iter().any(|c| meta(c, "uid") == uid) {
        return;
    }
    if volume.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let policy = volume
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str);
    if policy == Some("Delete") {
        writer.delete(
            PERSISTENT_VOLUMES,
            None,
            meta(volume, "name"),
            meta(volume, "uid"),
            None,
        );
    } else {
        let mut status = Map::new();
        status.insert("phase".to_owned(), json!("Released"));
        writer.replace_status(PERSISTENT_VOLUMES, volume, Value::Object(status));
    }
}
