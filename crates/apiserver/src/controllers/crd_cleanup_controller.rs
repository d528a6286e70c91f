//! apiextensions-apiserver's CRD finalizer: a deleted CustomResourceDefinition (held by the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating` condition
//! `InstanceDeletionPending`) has its custom resources deleted (`InstanceDeletionInProgress`);
//! once none is left (those with finalizers stay until they are removed), the finalizer
//! goes and so does the CRD, which stops being served.

use super::graph::{Graph, Node};
use crate::handlers::now_rfc3339;
use crate::registry::{
    CRD_CLEANUP_FINALIZER, Propagation, Special, crd_resources, set_terminating,
};
use crate::state::State;

/// One pass; whether anything changed.
pub(super) fn sync(state: &State, graph: &Graph) -> bool {
    let mut changed = false;
    let terminating = graph.nodes.iter().filter(|node| {
        node.resource.special == Special::CustomResourceDefinition
            && node.deleting()
            && node.has_finalizer(CRD_CLEANUP_FINALIZER)
    });
    for crd in terminating {
        changed |= clean_up(state, graph, crd);
    }
    changed
}

fn clean_up(state: &State, graph: &Graph, crd: &Node) -> bool {
    let Some(served) = crd_resources(&crd.object.value)
        .ok()
        .and_then(|resources| resources.into_iter().next())
    else {
        return crd.remove_finalizer(state, CRD_CLEANUP_FINALIZER);
    };
    let mut changed = crd.rewrite(state, |object| {
        set_terminating(
            object,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &now_rfc3339(),
        );
    });
    let mut remaining = false;
    for node in graph.nodes.iter().filter(|node| {
        !node.resource.builtin
            && node.resource.group == served.group
            && node.resource.plural == served.plural
    }) {
        remaining = true;
        changed |= node.delete(state, Propagation::Background);
    }
    if remaining || changed {
        return changed;
    }
    crd.remove_finalizer(state, CRD_CLEANUP_FINALIZER)
}
