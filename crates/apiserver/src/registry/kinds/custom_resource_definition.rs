//! CustomResourceDefinitions (apiextensions-apiserver's `pkg/registry/customresourcedefinition`):
//! a new one must define servable resources and gets its initial status (names
//! accepted, established); `spec.conversion` defaults to `None` (a conversion webhook's
//! service port to 443); its validation
//! (`crd_validation.rs`); a DELETE marks it with the cleanup finalizer and the
//! `Terminating` condition, without a new generation, for the CRD cleanup controller to
//! remove its custom resources. What it serves is registered by the store after a write
//! (`crd.rs`).

use kubeclient_machinery::{Status, StatusCause};
use serde_json::{Map, Value, json};

use crate::object::{meta_str, metadata_mut, now};
use crate::registry::defaults::{child, set};
use crate::registry::strategy::{Strategy, StrategyContext};
use crate::registry::{
    CRD_CLEANUP_FINALIZER, Propagation, ResourceDef, crd_resources, crd_status, set_terminating,
    validate_crd,
};

/// The CustomResourceDefinition strategy.
pub(crate) struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn begin_create(
        &self,
        resource: &ResourceDef,
        object: &mut Map<String, Value>,
    ) -> Result<(), Box<Status>> {
        let crd = Value::Object(object.clone());
        crd_resources(&crd).map_err(|err| {
            Box::new(Status::invalid(
                &resource.group,
                &resource.kind,
                meta_str(&crd, "name"),
                vec![StatusCause::new(
                    "FieldValueInvalid",
                    &err.to_string(),
                    err.field,
                )],
            ))
        })?;
        let created = meta_str(&crd, "creationTimestamp").to_owned();
        object.insert("status".to_owned(), crd_status(&crd, &created));
        Ok(())
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        defaults(object);
    }

    fn validate(&self, object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        causes.extend(validate_crd(object, old));
    }

    fn deletion_finalizer(&self, _: Propagation) -> Option<&'static str> {
        // A CRD waits for its custom resources to go, whatever the propagation.
        Some(CRD_CLEANUP_FINALIZER)
    }

    fn deletion_bumps_generation(&self) -> bool {
        // apiextensions-apiserver marks a CRD by an update, which keeps its generation.
        false
    }

    fn prepare_for_deletion(&self, marked: &mut Map<String, Value>) {
        metadata_mut(marked).remove("deletionGracePeriodSeconds");
        set_terminating(
            marked,
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            &now(),
        );
    }
}

fn defaults(object: &mut Map<String, Value>) {
    if let Some(spec) = child(object, "spec") {
        set(spec, "conversion", json!({"strategy": "None"}));
        if let Some(conversion) = child(spec, "conversion") {
            set(conversion, "strategy", json!("None"));
            if let Some(service) = child(conversion, "webhook")
                .and_then(|webhook| child(webhook, "clientConfig"))
                .and_then(|client| child(client, "service"))
            {
                set(service, "port", json!(443));
            }
        }
    }
}
