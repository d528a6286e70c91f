//! [`ChangedInputs`]: which inputs of the cluster's passes were written since the last
//! pass, as the write hook saw them, so that a pass skips the parts whose inputs did not
//! change (their outcome would be the same) instead of walking every object again.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::registry::ResourceDef;

/// One flag per input; all set at first, so the first pass runs everything.
#[derive(Debug)]
pub(super) struct ChangedInputs {
    pods: AtomicBool,
    nodes: AtomicBool,
    namespaces: AtomicBool,
    /// Services, Endpoints and EndpointSlices.
    services: AtomicBool,
    /// Anything at all (what a ResourceQuota counts: `count/<resource>` names any).
    anything: AtomicBool,
}

/// What changed since the last pass (taken at its start).
#[derive(Clone, Copy, Debug)]
pub(super) struct Changed {
    pub(super) pods: bool,
    pub(super) nodes: bool,
    pub(super) namespaces: bool,
    pub(super) services: bool,
    pub(super) anything: bool,
}

impl Default for ChangedInputs {
    fn default() -> Self {
        ChangedInputs {
            pods: AtomicBool::new(true),
            nodes: AtomicBool::new(true),
            namespaces: AtomicBool::new(true),
            services: AtomicBool::new(true),
            anything: AtomicBool::new(true),
        }
    }
}

impl ChangedInputs {
    /// Notes a committed write to an object of `resource`.
    pub(super) fn note(&self, resource: &ResourceDef) {
        self.anything.store(true, Ordering::Release);
        let flag = match (resource.group.as_str(), resource.plural.as_str()) {
            ("", "pods") => &self.pods,
            ("", "nodes") => &self.nodes,
            ("", "namespaces") => &self.namespaces,
            ("", "services" | "endpoints") | ("discovery.k8s.io", "endpointslices") => {
                &self.services
            }
            _ => return,
        };
        flag.store(true, Ordering::Release);
    }

    /// What changed since the last call (writes from now on count for the next).
    pub(super) fn take(&self) -> Changed {
        Changed {
            pods: self.pods.swap(false, Ordering::AcqRel),
            nodes: self.nodes.swap(false, Ordering::AcqRel),
            namespaces: self.namespaces.swap(false, Ordering::AcqRel),
            services: self.services.swap(false, Ordering::AcqRel),
            anything: self.anything.swap(false, Ordering::AcqRel),
        }
    }
}
