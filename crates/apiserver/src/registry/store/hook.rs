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

/// A hook that ignores every write (for tests that run no controllers).
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoHook;

#[cfg(test)]
impl WriteHook for NoHook {
    fn committed(&self, _: &ResourceDef, _: Committed<'_>) {}
}
