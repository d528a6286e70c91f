//! The registry: which resources are served (built-ins plus those defined by
//! CustomResourceDefinitions), and the discovery and OpenAPI documents describing them.

mod builtin;
mod builtin_types;
mod crd;
pub(crate) mod discovery;
pub(crate) mod event_versions;
pub(crate) mod openapi;
mod resource;

use std::sync::{Arc, RwLock};

pub(crate) use builtin::ALL_VERBS;
pub(crate) use builtin_types::{BuiltinType, WithType, builtin_type};
pub(crate) use crd::{CRD_CLEANUP_FINALIZER, crd_resources, crd_status, set_terminating};
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

    /// The resource served at `group/version/plural`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceDef>> {
        self.read()
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// Whether anything is served in this group (and version, if given).
    pub(crate) fn serves(&self, group: &str, version: Option<&str>) -> bool {
        self.read()
            .iter()
            .any(|r| r.group == group && version.is_none_or(|v| r.version == v))
    }

    /// Serves (or re-serves, after an update) the versions a CRD defines.
    pub(crate) fn register(&self, group: &str, plural: &str, resources: Vec<ResourceDef>) {
        let mut all = crate::sync::write(&self.resources);
        all.retain(|r| !(r.group == group && r.plural == plural));
        all.extend(resources.into_iter().map(Arc::new));
    }

    /// Stops serving a resource in every version.
    pub(crate) fn unregister(&self, group: &str, plural: &str) {
        let mut all = crate::sync::write(&self.resources);
        all.retain(|r| !(r.group == group && r.plural == plural));
    }
}
