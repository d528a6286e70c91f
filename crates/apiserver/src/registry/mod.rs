//! The registry: which resources are served (built-ins plus those defined by
//! CustomResourceDefinitions), the generic store every write goes through ([`store`]),
//! one [`Strategy`](strategy::Strategy) per kind or family ([`kinds`]: defaults,
//! validation, immutable fields, create-on-update, deletion, garbage collection), the
//! pieces they share (`defaults`, `workloads`, `validate`, `immutable`), custom resources
//! ([`apiextensions`]: CRDs, schemas, version conversion), the allocators, and the
//! discovery and OpenAPI documents describing the resources. No HTTP here: the endpoints
//! parse a request, call the store, and encode what it returns.

pub(crate) mod admission;
mod allocators;
pub(crate) mod apiextensions;
mod builtin;
mod builtin_types;
pub(crate) mod cluster_role_aggregation;
pub(crate) mod defaults;
pub(crate) mod discovery;
pub(crate) mod event_versions;
mod immutable;
pub(crate) mod kinds;
pub(crate) mod metrics;
pub(crate) mod names;
pub(crate) mod openapi;
pub(crate) mod printers;
mod resource;
pub(crate) mod resource_quota;
pub(crate) mod store;
pub(crate) mod strategy;
mod type_errors;
pub(crate) mod validate;
mod webhook_client_config;
pub(crate) mod workloads;

use std::sync::{Arc, RwLock};

pub(crate) use apiextensions::crd::{
    CRD_CLEANUP_FINALIZER, crd_resources, crd_served_resources, crd_status, set_terminating,
};
pub(crate) use apiextensions::crd_validation::validate as validate_crd;
pub(crate) use builtin::{ALL_VERBS, metrics_resources};
pub(crate) use builtin_types::{BuiltinType, WithType, builtin_type};
pub(crate) use resource::{
    FOREGROUND_DELETION, FieldSelectors, ORPHAN, Propagation, ResourceDef, Special,
};

/// The served resources. Cheap to read concurrently; CRD writes replace entries.
#[derive(Debug)]
pub(crate) struct Registry {
    resources: RwLock<Vec<Arc<ResourceDef>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// The built-in resources.
    pub(crate) fn new() -> Self {
        Registry {
            resources: RwLock::new(
                builtin::builtin_resources()
                    .into_iter()
                    .map(Arc::new)
                    .collect(),
            ),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<ResourceDef>>> {
        crate::sync::read(&self.resources)
    }

    /// Every served resource, in registration order.
    pub(crate) fn all(&self) -> Vec<Arc<ResourceDef>> {
        self.read().clone()
    }

    /// The resource served at `group/version/plural`: a built-in before anything a CRD
    /// defines.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceDef>> {
        let all = self.read();
        let matching =
            |r: &&Arc<ResourceDef>| r.group == group && r.version == version && r.plural == plural;
        all.iter()
            .filter(matching)
            .find(|r| r.builtin)
            .or_else(|| all.iter().find(matching))
            .cloned()
    }

    /// The resource `group/plural` in any served version: a built-in before anything a
    /// CRD defines.
    pub(crate) fn find(&self, group: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        let all = self.read();
        let matching = |r: &&Arc<ResourceDef>| r.group == group && r.plural == plural;
        all.iter()
            .filter(matching)
            .find(|r| r.builtin)
            .or_else(|| all.iter().find(matching))
            .cloned()
    }

    /// Whether anything is served in this group (and version, if given).
    pub(crate) fn serves(&self, group: &str, version: Option<&str>) -> bool {
        self.read()
            .iter()
            .any(|r| r.group == group && version.is_none_or(|v| r.version == v))
    }

    /// Whether `group/plural` is a built-in resource (in any version).
    pub(crate) fn is_builtin(&self, group: &str, plural: &str) -> bool {
        self.read()
            .iter()
            .any(|r| r.builtin && r.group == group && r.plural == plural)
    }

    /// Serves (or re-serves, after an update) the versions a CRD defines, replacing what
    /// the CRD served before. A CRD never replaces a built-in: when `group/plural` is a
    /// built-in resource nothing is registered and the answer is `false` (kube-apiserver
    /// serves its own resources before apiextensions-apiserver's, so such a CRD is
    /// accepted but never reached).
    pub(crate) fn register(&self, group: &str, plural: &str, resources: Vec<ResourceDef>) -> bool {
        let mut all = crate::sync::write(&self.resources);
        if all
            .iter()
            .any(|r| r.builtin && r.group == group && r.plural == plural)
        {
            return false;
        }
        all.retain(|r| r.builtin || !(r.group == group && r.plural == plural));
        all.extend(resources.into_iter().map(Arc::new));
        true
    }

    /// Follows a write to a CustomResourceDefinition that the watch cache's feed applied
    /// (over a backend several servers share): serves what it defines after a create or
    /// an update, stops serving it once it is removed, so a CRD written through another
    /// server is served here too. This server's own CRD writes come through here as well
    /// and change nothing more.
    pub(crate) fn follow_crd(&self, change: &crate::storage::Change) {
        match (&change.new, &change.prev) {
            (Some(new), _) => self.serve_crd(&new.value),
            (None, Some(removed)) => {
                if let Ok(resources) = crd_resources(&removed.value)
                    && let Some(first) = resources.first()
                {
                    self.unregister(&first.group, &first.plural);
                }
            }
            (None, None) => {}
        }
    }

    /// Serves what a stored CustomResourceDefinition defines (after a create or an
    /// update). One whose group and plural name a built-in resource serves nothing: the
    /// built-in stays what is served.
    pub(crate) fn serve_crd(&self, crd: &serde_json::Value) {
        if let Ok(resources) = crd_served_resources(crd)
            && let Some(first) = resources.first()
        {
            let (group, plural) = (first.group.clone(), first.plural.clone());
            if !self.register(&group, &plural, resources) {
                tracing::debug!(%group, %plural, "a CRD names a built-in resource; the built-in stays served");
            }
        }
    }

    /// Stops serving what a CRD defined for `group/plural`, in every version; built-in
    /// resources stay. Whether anything was served.
    pub(crate) fn unregister(&self, group: &str, plural: &str) -> bool {
        let mut all = crate::sync::write(&self.resources);
        let before = all.len();
        all.retain(|r| r.builtin || !(r.group == group && r.plural == plural));
        all.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom_cronjobs() -> Vec<ResourceDef> {
        let mut cronjobs = Registry::new()
            .lookup("batch", "v1", "cronjobs")
            .map(|r| (*r).clone())
            .expect("CronJobs are built in");
        cronjobs.builtin = false;
        vec![cronjobs]
    }

    #[test]
    fn a_crd_never_replaces_or_removes_a_builtin() {
        let registry = Registry::new();
        assert!(!registry.register("batch", "cronjobs", custom_cronjobs()));
        assert!(
            registry
                .lookup("batch", "v1", "cronjobs")
                .is_some_and(|r| r.builtin)
        );
        assert!(!registry.unregister("batch", "cronjobs"));
        assert!(
            registry
                .lookup("batch", "v1", "cronjobs")
                .is_some_and(|r| r.builtin)
        );
        assert!(registry.is_builtin("batch", "cronjobs"));
    }
}
