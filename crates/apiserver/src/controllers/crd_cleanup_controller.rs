//! apiextensions-apiserver's CRD finalizer: a deleted CustomResourceDefinition (held by the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating` condition
//! `InstanceDeletionPending`) has its custom resources deleted (`InstanceDeletionInProgress`);
//! once none is left (those with finalizers stay until they are removed), the finalizer
//! goes and so does the CRD, which stops being served.

use super::graph::{Graph, Node};
use super::writer::Writer;
use crate::object::now;
use crate::registry::{
    CRD_CLEANUP_FINALIZER, Propagation, Special, crd_resources, set_terminating,
};

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let mut changed = false;
    let terminating = graph.nodes.iter().filter(|node| {
        node.resource.special == Special::CustomResourceDefinition
            && node.deleting()
            && node.has_finalizer(CRD_CLEANUP_FINALIZER)
    });
    for crd in terminating {
        changed |= clean_up(writer, graph, crd);
    }
    changed
}

fn clean_up(writer: &Writer<'_>, graph: &Graph, crd: &Node) -> bool {
    let Some(served) = crd_resources(&crd.object.value)
        .ok()
        .and_then(|resources| resources.into_iter().next())
    else {
        return remove_finalizer_and_delete(writer, crd);
    };
    let mut changed = crd.rewrite_status(writer, |object| {
        set_terminating(
            object,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &now(),
        );
    });
    let mut remaining = false;
    for node in graph.nodes.iter().filter(|node| {
        !node.resource.builtin
            && node.resource.group == served.group
            && node.resource.plural == served.plural
    }) {
        remaining = true;
        changed |= node.delete(writer, Propagation::Background);
    }
    if remaining || changed {
        return changed;
    }
    remove_finalizer_and_delete(writer, crd)
}

/// Removes the cleanup finalizer, then deletes the CRD again ("which should clean it all
/// up if no finalizers remain and no-op if they do", as apiextensions-apiserver's
/// finalizer controller says).
fn remove_finalizer_and_delete(writer: &Writer<'_>, crd: &Node) -> bool {
    let removed = crd.remove_finalizer(writer, CRD_CLEANUP_FINALIZER);
    crd.finish_deletion(writer);
    removed
}
