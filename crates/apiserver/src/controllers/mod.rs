//! What kube-controller-manager does that every client notices: the garbage collector
//! (dependents of a deleted owner go, or are orphaned, by their `ownerReferences` and the
//! owner's propagation policy) and the namespace controller (a deleted namespace is
//! emptied, then removed), and the service-account controller (a `default` ServiceAccount
//! in every namespace); with them, apiextensions-apiserver's CRD finalizer (a deleted
//! CustomResourceDefinition's custom resources go before it does). Deleting marks objects
//! (finalizers `foregroundDeletion`, `orphan` and `customresourcecleanup`, a Namespace's
//! `Terminating` phase) and answers at once; these controllers finish the work right
//! after, in the background, as on a real cluster.
//!
//! They run on one task, woken by writes that can concern them (a delete, an object with
//! owner references or a deletion mark), and repeat their passes until nothing changes.

mod crd_cleanup_controller;
mod garbage_collector;
mod graph;
mod namespace_controller;
mod service_account_controller;

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Notify, watch};

use crate::state::State;

/// The most passes one wake-up runs: each pass makes progress (a deletion level, a
/// finalizer removed), so owner chains deeper than this finish on the next wake-up.
const MAX_PASSES: usize = 64;

/// The switch and wake-up signal of the server's controllers.
#[derive(Debug)]
pub(crate) struct Controllers {
    wake: Notify,
    garbage_collector: bool,
}

impl Controllers {
    /// Controllers with the garbage collector on or off (the namespace controller always
    /// runs: without it a deleted namespace would stay `Terminating`).
    pub(crate) fn new(garbage_collector: bool) -> Self {
        Controllers {
            wake: Notify::new(),
            garbage_collector,
        }
    }

    /// Asks for a pass soon (coalesced with other requests).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Asks for a pass if `object`, just written, concerns the controllers: it has owners,
    /// or it is marked for deletion.
    pub(crate) fn wake_for(&self, object: &Value) {
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
}

/// Runs the controllers until `stopped` turns true.
pub(crate) async fn run(state: Arc<State>, mut stopped: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = state.controllers.wake.notified() => {}
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    return;
                }
                continue;
            }
        }
        let pass_state = Arc::clone(&state);
        let passes = tokio::task::spawn_blocking(move || {
            for _ in 0..MAX_PASSES {
                if !sync_once(&pass_state) {
                    break;
                }
            }
        });
        if let Err(err) = passes.await {
            tracing::error!(error = %err, "a controller pass failed; it runs again on the next change");
        }
    }
}

/// One pass of every controller; whether anything changed.
fn sync_once(state: &State) -> bool {
    let graph = graph::Graph::load(state);
    let mut changed = namespace_controller::sync(state, &graph);
    changed |= service_account_controller::sync(state, &graph);
    changed |= crd_cleanup_controller::sync(state, &graph);
    if state.controllers.garbage_collector {
        changed |= garbage_collector::sync(state, &graph);
    }
    changed
}
