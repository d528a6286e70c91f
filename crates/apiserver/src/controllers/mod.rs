//! What kube-controller-manager does that every client notices: the garbage collector
//! (dependents of a deleted owner go, or are orphaned, by their `ownerReferences` and the
//! owner's propagation policy) and the namespace controller (a deleted namespace is
//! emptied, then removed), the service-account controller (a `default` ServiceAccount
//! in every namespace) and the ClusterRole aggregation controller (an aggregated role's
//! rules gathered from the roles it selects); with them, apiextensions-apiserver's CRD finalizer (a deleted
//! CustomResourceDefinition's custom resources go before it does). Deleting marks objects
//! (finalizers `foregroundDeletion`, `orphan` and `customresourcecleanup`, a Namespace's
//! `Terminating` phase) and answers at once; these controllers finish the work right
//! after, in the background, as on a real cluster.
//!
//! They run on one task, woken through the generic store's write hook by writes that can
//! concern them (a delete, a new namespace, an object with owner references or a
//! deletion mark), and repeat their passes until nothing changes. They write through the
//! generic store like any client, as `kube-controller-manager`.

mod clusterrole_aggregation_controller;
mod crd_cleanup_controller;
mod garbage_collector;
mod graph;
mod namespace_controller;
mod service_account_controller;
mod writer;

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Notify, watch};

use crate::authentication::UserInfo;
use crate::registry::store::{Committed, GenericStore, WriteHook};
use crate::registry::{ResourceDef, Special};

/// The most passes one wake-up runs: each pass makes progress (a deletion level, a
/// finalizer removed), so owner chains deeper than this finish on the next wake-up.
const MAX_PASSES: usize = 64;

/// The switch and wake-up signal of the server's controllers. It is the generic store's
/// [`WriteHook`]: writes that can concern the controllers wake them.
#[derive(Debug)]
pub(crate) struct Controllers {
    wake: Notify,
    garbage_collector: bool,
    user: UserInfo,
}

impl Controllers {
    /// Controllers with the garbage collector on or off (the namespace controller always
    /// runs: without it a deleted namespace would stay `Terminating`).
    pub(crate) fn new(garbage_collector: bool) -> Self {
        Controllers {
            wake: Notify::new(),
            garbage_collector,
            user: writer::controller_user(),
        }
    }

    /// Asks for a pass soon (coalesced with other requests).
    fn wake(&self) {
        self.wake.notify_one();
    }

    /// Asks for a pass if `object`, just written, concerns the controllers: it has owners,
    /// or it is marked for deletion.
    fn wake_for(&self, object: &Value) {
        let metadata = object.get("metadata");
        let has_owners = metadata
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .is_some_and(|refs| !refs.is_empty());
        let deleting = metadata.and_then(|m| m.get("deletionTimestamp")).is_some();
        if has_owners || deleting {
            self.wake();
        }
    }

    /// One pass of every controller over `store`; whether anything changed.
    pub(crate) fn sync_once(&self, store: &GenericStore<'_>) -> bool {
        let writer = writer::Writer {
            store,
            user: &self.user,
        };
        let graph = graph::Graph::load(store);
        let mut changed = namespace_controller::sync(&writer, &graph);
        changed |= service_account_controller::sync(&writer, &graph);
        changed |= crd_cleanup_controller::sync(&writer, &graph);
        changed |= clusterrole_aggregation_controller::sync(&writer, &graph);
        if self.garbage_collector {
            changed |= garbage_collector::sync(&writer, &graph);
        }
        changed
    }
}

impl WriteHook for Controllers {
    fn committed(&self, resource: &ResourceDef, write: Committed<'_>) {
        match write {
            // A new namespace needs its `default` ServiceAccount.
            Committed::Created(_) if resource.special == Special::Namespace => self.wake(),
            // Any ClusterRole can feed an aggregated one.
            _ if clusterrole_aggregation_controller::concerns(
                &resource.group,
                &resource.plural,
            ) =>
            {
                self.wake();
            }
            Committed::Created(object) | Committed::Updated(object) => self.wake_for(object),
            Committed::Deleted => self.wake(),
        }
    }
}

/// Runs the controllers until `stopped` turns true: on each wake-up, `pass` (one pass of
/// every controller, on the blocking pool) repeats until nothing changes.
pub(crate) async fn run(
    controllers: Arc<Controllers>,
    pass: impl Fn() -> bool + Send + Sync + 'static,
    mut stopped: watch::Receiver<bool>,
) {
    let pass = Arc::new(pass);
    loop {
        tokio::select! {
            () = controllers.wake.notified() => {}
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    return;
                }
                continue;
            }
        }
        let pass = Arc::clone(&pass);
        let passes = tokio::task::spawn_blocking(move || {
            for _ in 0..MAX_PASSES {
                if !pass() {
                    break;
                }
            }
        });
        if let Err(err) = passes.await {
            tracing::error!(error = %err, "a controller pass failed; it runs again on the next change");
        }
    }
}
