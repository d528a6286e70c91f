//! The registry: which resources are served (built-ins plus those defined by
//! CustomResourceDefinitions), and the discovery and OpenAPI documents describing them.

mod builtin;
mod crd;
pub mod discovery;
pub mod openapi;
mod resource;

use std::sync::{Arc, RwLock};

pub use crd::{crd_resources, crd_status};
pub use resource::{FieldSelectors, PrinterColumn, ResourceDef, ScaleSpec, Special};

/// The served resources. Cheap to read concurrently; CRD writes replace entries.
#[derive(Debug)]
pub struct Registry {
    resources: RwLock<Vec<Arc<ResourceDef>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// The built-in resources.
    pub fn new() -> Self {
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
        self.resources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every served resource, in registration order.
    pub fn all(&self) -> Vec<Arc<ResourceDef>> {
        self.read().clone()
    }

    /// The resource served at `group/version/plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.read()
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The resource of a kind in a group version.
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.read()
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Whether anything is served in this group (and version, if given).
    pub fn serves(&self, group: &str, version: Option<&str>) -> bool {
        self.read()
            .iter()
            .any(|r| r.group == group && version.is_none_or(|v| r.version == v))
    }

    /// Serves (or re-serves, after an update) the versions a CRD defines.
    pub fn register(&self, group: &str, plural: &str, resources: Vec<ResourceDef>) {
        let mut all = self
            .resources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retain(|r| !(r.group == group && r.plural == plural));
        all.extend(resources.into_iter().map(Arc::new));
    }

    /// Stops serving a resource in every version.
    pub fn unregister(&self, group: &str, plural: &str) {
        let mut all = self
            .resources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retain(|r| !(r.group == group && r.plural == plural));
    }
}
