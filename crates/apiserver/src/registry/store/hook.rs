//! [`WriteHook`]: what the generic store tells after each committed write, so that
//! whoever reacts to writes (the server's controllers) is woken by the store instead of
//! every write path reaching for it.

use serde_json::Value;

use crate::registry::ResourceDef;

/// A write the store committed, with the object as it was written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Committed<'a> {
    /// A new object.
    Created(&'a Value),
    /// A changed object (or one whose last finalizer went, and which left storage).
    Updated(&'a Value),
    /// A DELETE that removed or marked the object.
    Deleted,
}

/// An observer of committed writes. Called after storage changed, outside its locks, on
/// the writer's thread: it must be quick (wake something up, never write back).
pub(crate) trait WriteHook: Send + Sync {
    /// `write` was committed to an object of `resource`.
    fn committed(&self, resource: &ResourceDef, write: Committed<'_>);
}

/// Several hooks, each told of every write in turn (the server's controllers and its
/// simulated cluster).
pub(crate) struct Hooks(pub(crate) Vec<std::sync::Arc<dyn WriteHook>>);

impl WriteHook for Hooks {
    fn committed(&self, resource: &ResourceDef, write: Committed<'_>) {
        for hook in &self.0 {
            hook.committed(resource, write);
        }
    }
}

/// Tells `hook` of a write a watch cache applied from its backend (another server's
/// write over the same etcd, or this server's own, which `hook` then hears of twice:
/// hooks only wake their owners, so twice is harmless). Resources the registry does not
/// serve are not told.
pub(crate) fn tell_applied(
    hook: &dyn WriteHook,
    registry: &crate::registry::Registry,
    resource: &kubeclient_machinery::GroupResource,
    change: &crate::storage::Change,
) {
    let Some(definition) = registry.find(&resource.group, &resource.resource) else {
        return;
    };
    let write = match (&change.kind, &change.new) {
        (crate::storage::ChangeKind::Created, Some(new)) => Committed::Created(&new.value),
        (_, Some(new)) => Committed::Updated(&new.value),
        (_, None) => Committed::Deleted,
    };
    hook.committed(&definition, write);
}

/// A hook that ignores every write (for tests that run no controllers).
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoHook;

#[cfg(test)]
impl WriteHook for NoHook {
    fn committed(&self, _: &ResourceDef, _: Committed<'_>) {}
}
