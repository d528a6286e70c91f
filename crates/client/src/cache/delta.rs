//! The queue vocabulary: [`Delta`], [`DeltaType`] and [`Deltas`].

use std::ops::Deref;
use std::sync::Arc;

use kubeclient_machinery::{DeletedObject, Object};

use super::error::{Error, Result};
use super::store::{KeyFunc, key_of};

/// What happened to an object (Go's `DeltaType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeltaType {
    /// The object was added (watch `ADDED`).
    Added,
    /// The object was modified (watch `MODIFIED`).
    Updated,
    /// The object was deleted, or its deletion was inferred by a relist.
    Deleted,
    /// The object was in a relist (queues configured to emit it; otherwise `Sync`).
    Replaced,
    /// The object is re-delivered by a periodic resync, or was in a relist (DeltaFIFO
    /// without `emit_delta_type_replaced`).
    Sync,
    /// A whole relist as one change (an atomic [`RealFIFO`](super::RealFIFO)).
    ReplacedAll,
    /// A whole resync as one change (an atomic [`RealFIFO`](super::RealFIFO)).
    SyncAll,
}

/// The contents of a [`Delta::ReplacedAll`]: everything a relist returned (Go's
/// `ReplacedAllInfo`), already transformed.
#[derive(Debug, PartialEq)]
pub struct ReplacedAllInfo<K> {
    /// The resourceVersion of the list.
    pub resource_version: String,
    /// The listed objects, in list order.
    pub objects: Vec<Arc<K>>,
}

impl<K> Clone for ReplacedAllInfo<K> {
    fn clone(&self) -> Self {
        ReplacedAllInfo {
            resource_version: self.resource_version.clone(),
            objects: self.objects.clone(),
        }
    }
}

/// One change to one object (Go's `Delta`). The variants carry exactly what each type can
/// hold: only a deletion can carry a tombstone.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub enum Delta<K> {
    /// The object was added.
    Added(Arc<K>),
    /// The object was modified; this is its new state.
    Updated(Arc<K>),
    /// The object was deleted: its final state, or a
    /// [`DeletedFinalStateUnknown`](kubeclient_machinery::DeletedFinalStateUnknown) tombstone
    /// when the deletion was inferred by a relist.
    Deleted(DeletedObject<K>),
    /// The object was in a relist.
    Replaced(Arc<K>),
    /// The object is re-delivered unchanged (resync, or a relist without `Replaced`).
    Sync(Arc<K>),
    /// A relist, delivered as one transaction: the consumer replaces its whole state with
    /// these objects (an atomic [`RealFIFO`](super::RealFIFO); client-go's `AtomicFIFO`).
    ReplacedAll(ReplacedAllInfo<K>),
    /// A resync of every known object, as one change (an atomic
    /// [`RealFIFO`](super::RealFIFO)).
    SyncAll,
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(obj) => Delta::Added(Arc::clone(obj)),
            Delta::Updated(obj) => Delta::Updated(Arc::clone(obj)),
            Delta::Deleted(obj) => Delta::Deleted(obj.clone()),
            Delta::Replaced(obj) => Delta::Replaced(Arc::clone(obj)),
            Delta::Sync(obj) => Delta::Sync(Arc::clone(obj)),
            Delta::ReplacedAll(info) => Delta::ReplacedAll(info.clone()),
            Delta::SyncAll => Delta::SyncAll,
        }
    }
}

impl<K> Delta<K> {
    /// The kind of change.
    #[must_use]
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
            Delta::ReplacedAll(_) => DeltaType::ReplacedAll,
            Delta::SyncAll => DeltaType::SyncAll,
        }
    }

    /// The object: for a tombstone its last known state, which may be absent; none for
    /// the whole-state changes `ReplacedAll` and `SyncAll`.
    #[must_use]
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                Some(obj)
            }
            Delta::Deleted(DeletedObject::Final(obj)) => Some(obj),
            Delta::Deleted(DeletedObject::FinalStateUnknown(tombstone)) => tombstone.obj.as_ref(),
            Delta::ReplacedAll(_) | Delta::SyncAll => None,
        }
    }

    /// Whether this is a deletion inferred by a relist.
    #[must_use]
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Delta::Deleted(DeletedObject::FinalStateUnknown(_)))
    }
}

impl<K: Object> Delta<K> {
    /// The key of the delta's object: a tombstone's own key, otherwise `key_func`'s; empty
    /// for the whole-state changes, which concern no single object.
    pub(super) fn key(&self, key_func: Option<&KeyFunc<K>>) -> Result<String> {
        match self {
            Delta::Deleted(deleted) => deleted_key(key_func, deleted),
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                key_of(key_func, obj)
            }
            Delta::ReplacedAll(_) | Delta::SyncAll => Ok(String::new()),
        }
    }
}

/// The key of a deletion: a tombstone's own key (a relist inferred it, client-go's
/// `DeletedFinalStateUnknown.Key`), otherwise `key_func`'s key of the final state.
pub(super) fn deleted_key<K: Object>(
    key_func: Option<&KeyFunc<K>>,
    deleted: &DeletedObject<K>,
) -> Result<String> {
    match deleted {
        DeletedObject::FinalStateUnknown(tombstone) => Ok(tombstone.key.clone()),
        DeletedObject::Final(obj) => key_of(key_func, obj),
    }
}

/// The key of the newest change in `deltas` (client-go's `KeyOf` on `Deltas`).
pub(super) fn deltas_key<K: Object>(
    key_func: Option<&KeyFunc<K>>,
    deltas: &Deltas<K>,
) -> Result<String> {
    match deltas.newest() {
        Some(delta) => delta.key(key_func),
        None => Err(Error::Key("object was an empty Deltas".into())),
    }
}

/// The changes to one object, oldest first, as popped from a queue (Go's `Deltas`).
///
/// Dereferences to a slice, so `len`, `iter`, `first` and `last` work as usual.
#[derive(Debug, PartialEq)]
pub struct Deltas<K> {
    deltas: Vec<Delta<K>>,
}

impl<K> Deltas<K> {
    pub(super) fn one(delta: Delta<K>) -> Self {
        Deltas {
            deltas: vec![delta],
        }
    }

    pub(super) fn push(&mut self, delta: Delta<K>) {
        self.deltas.push(delta);
    }

    pub(super) fn as_vec_mut(&mut self) -> &mut Vec<Delta<K>> {
        &mut self.deltas
    }

    /// The oldest change.
    #[must_use]
    pub fn oldest(&self) -> Option<&Delta<K>> {
        self.deltas.first()
    }

    /// The newest change.
    #[must_use]
    pub fn newest(&self) -> Option<&Delta<K>> {
        self.deltas.last()
    }

    /// The changes, oldest first.
    #[must_use]
    pub fn into_vec(self) -> Vec<Delta<K>> {
        self.deltas
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Deltas {
            deltas: self.deltas.clone(),
        }
    }
}

impl<K> Deref for Deltas<K> {
    type Target = [Delta<K>];

    fn deref(&self) -> &[Delta<K>] {
        &self.deltas
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = std::vec::IntoIter<Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.deltas.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.deltas.iter()
    }
}
