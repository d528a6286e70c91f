//! The namespace controller (kube-controller-manager's `namespace`): a namespace marked
//! for deletion (`Terminating`) has every object in it deleted; once none is left (objects
//! with finalizers stay until those are removed), the `kubernetes` finalizer leaves its
//! `spec.finalizers` and the namespace itself goes.

use serde_json::Value;

use super::graph::{Graph, Node};
use super::writer::Writer;
use crate::registry::{Propagation, Special};

/// The finalizer the namespace controller owns.
const KUBERNETES_FINALIZER: &str = "kubernetes";

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let mut changed = false;
    let terminating = graph
        .nodes
        .iter()
        .filter(|node| node.resource.special == Special::Namespace && node.deleting());
    for namespace in terminating {
        changed |= empty_namespace(writer, graph, namespace);
    }
    changed
}

fn empty_namespace(writer: &Writer<'_>, graph: &Graph, namespace: &Node) -> bool {
    let name = namespace.object.name();
    let mut changed = false;
    let mut remaining = false;
    for node in graph
        .nodes
        .iter()
        .filter(|node| node.resource.namespaced && node.object.namespace() == name)
    {
        remaining = true;
        changed |= node.delete(writer, Propagation::Background);
    }
    if remaining || changed {
        return changed;
    }
    // Finalize (the `kubernetes` finalizer leaves `spec.finalizers`), then delete again,
    // which removes the namespace once no finalizer is left.
    let finalized = namespace.rewrite(writer, |object| {
        if let Some(Value::Object(spec)) = object.get_mut("spec")
            && let Some(Value::Array(finalizers)) = spec.get_mut("finalizers")
        {
            finalizers.retain(|f| f.as_str() != Some(KUBERNETES_FINALIZER));
        }
    });
    namespace.finish_deletion(writer);
    finalized
}
