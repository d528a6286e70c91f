//! The garbage collector (kube-controller-manager's `garbagecollector`): for each pass,
//!
//! - an owner being deleted with the `orphan` finalizer: its dependents lose their owner
//!   reference to it, then the finalizer goes (and with it, usually, the owner);
//! - an owner being deleted with the `foregroundDeletion` finalizer: its dependents are
//!   deleted (in the foreground themselves when they have dependents), and once no
//!   dependent with `blockOwnerDeletion: true` is left, the finalizer goes;
//! - an object none of whose owners exists any more is deleted in the background; one that
//!   still has an owner loses the references to the missing ones.
//!
//! Owners are identified by uid, which is unique across the server, so an owner deleted
//! and re-created under the same name does not adopt the old one's dependents.

use std::collections::HashSet;

use super::graph::{Graph, Node};
use super::writer::Writer;
use crate::registry::{FOREGROUND_DELETION, ORPHAN, Propagation};

/// One pass; whether anything changed.
pub(super) fn sync(writer: &Writer<'_>, graph: &Graph) -> bool {
    let mut changed = false;
    for owner in graph.nodes.iter().filter(|node| node.deleting()) {
        if owner.has_finalizer(ORPHAN) {
            changed |= orphan_dependents(writer, graph, owner);
        } else if owner.has_finalizer(FOREGROUND_DELETION) {
            changed |= delete_dependents_in_foreground(writer, graph, owner);
        }
    }
    for node in &graph.nodes {
        changed |= collect_if_owners_are_gone(writer, graph, node);
    }
    changed
}

fn orphan_dependents(writer: &Writer<'_>, graph: &Graph, owner: &Node) -> bool {
    let uid = HashSet::from([owner.uid()]);
    let mut changed = false;
    for dependent in graph.dependents_of(owner.uid()) {
        changed |= dependent.remove_owner_refs(writer, &uid);
    }
    changed | owner.remove_finalizer(writer, ORPHAN)
}

fn delete_dependents_in_foreground(writer: &Writer<'_>, graph: &Graph, owner: &Node) -> bool {
    let mut changed = false;
    let mut blocked = false;
    for dependent in graph.dependents_of(owner.uid()) {
        let propagation = if graph.has_dependents(dependent.uid()) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        changed |= dependent.delete(writer, propagation);
        blocked |= dependent
            .owner_refs()
            .any(|r| r.uid == owner.uid() && r.block_owner_deletion);
    }
    // A blocking dependent deleted just now is still in this pass's graph: the next pass
    // (which `changed` asks for) sees whether it is gone.
    if !blocked && !changed {
        changed |= owner.remove_finalizer(writer, FOREGROUND_DELETION);
    }
    changed
}

fn collect_if_owners_are_gone(writer: &Writer<'_>, graph: &Graph, node: &Node) -> bool {
    let mut missing: HashSet<&str> = HashSet::new();
    let mut present = 0usize;
    for owner in node.owner_refs() {
        if graph.get(owner.uid).is_some() {
            present += 1;
        } else {
            missing.insert(owner.uid);
        }
    }
    if missing.is_empty() {
        return false;
    }
    if present == 0 {
        node.delete(writer, Propagation::Background)
    } else {
        node.remove_owner_refs(writer, &missing)
    }
}
