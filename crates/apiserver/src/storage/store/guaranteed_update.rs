//! Writes of a store over a backend: kube-apiserver's `GuaranteedUpdate`. The decision
//! runs on the cached object; the result commits to the backend only if the backend still
//! holds that object's revision (a create only if the key is free). When another server
//! (or a write the feed has not applied yet) got in between, the writer waits for the
//! feed to bring the key's newer state and decides again. A committed write is answered
//! once the feed applied it, with the change the cache recorded, so the answer, the cache
//! and every watch agree on its revision.

use std::sync::Arc;
use std::time::Duration;

use kubeclient_machinery::{GroupResource, Status};
use serde_json::Value;

use super::super::cacher::in_place;
use super::super::{BackendError, Cacher, Change, ChangeKind, StoredObject, WriteError};
use super::{Store, Write, WriteOutcome, set_resource_version};

/// How often a write decides again after losing to another writer before it answers 409.
const ATTEMPTS: usize = 16;
/// How long a writer waits for the feed to apply a write (its own, or the one it lost
/// to); past it, a committed write is answered from the backend's result.
const APPLIED_WAIT: Duration = Duration::from_secs(10);

/// What one attempt asks of the backend.
enum Operation {
    Create(Value),
    /// The new object, and the revision the backend must still hold.
    Update(Value, u64),
    /// The revision the backend must still hold.
    Delete(u64),
}

impl Store {
    /// Runs the read-decide-compare-and-swap loop of one write over the backend.
    pub(super) fn guaranteed_update<E: WriteError>(
        &self,
        cacher: &Cacher,
        resource: &GroupResource,
        key: &str,
        mut decide: impl FnMut(Option<&Arc<StoredObject>>) -> Result<Write, E>,
    ) -> Result<WriteOutcome, E> {
        let _queue = self.stripe(resource, key);
        in_place(|| {
            for _ in 0..ATTEMPTS {
                let snapshot = self.get(resource, key);
                let before = snapshot.as_ref().map(|o| o.rv);
                let operation = match (decide(snapshot.as_ref())?, &snapshot) {
                    (Write::Unchanged, _) | (Write::Delete, None) => return Ok(nothing(snapshot)),
                    (Write::Create(value) | Write::Update(value), None) => Operation::Create(value),
                    (Write::Create(mut value) | Write::Update(mut value), Some(current)) => {
                        set_resource_version(&mut value, current.rv);
                        if value == current.value {
                            return Ok(nothing(snapshot));
                        }
                        Operation::Update(value, current.rv)
                    }
                    (Write::Delete, Some(current)) => Operation::Delete(current.rv),
                };
                match commit(cacher, resource, key, operation) {
                    // The backend found nothing to change (the same stored bytes).
                    Ok(Some(stored)) if Some(stored.rv) == before => return Ok(nothing(snapshot)),
                    Ok(stored) => return Ok(self.settled(resource, key, snapshot, stored)),
                    Err(
                        BackendError::Conflict { .. }
                        | BackendError::NotFound { .. }
                        | BackendError::AlreadyExists { .. },
                    ) => {
                        // The cache is behind the backend: wait for the key's newer state.
                        self.wait_until(APPLIED_WAIT, |inner| {
                            Store::revision_of(inner, resource, key) != before
                        });
                    }
                    Err(error) => {
                        return Err(E::storage_failed(Box::new(
                            error.status(resource, name_of(key)),
                        )));
                    }
                }
            }
            Err(E::storage_failed(lost(resource, key)))
        })
    }

    /// The outcome of a committed write (`stored`: the backend's new object, `None` after
    /// a delete): the change the feed recorded for it, once applied.
    fn settled(
        &self,
        resource: &GroupResource,
        key: &str,
        snapshot: Option<Arc<StoredObject>>,
        stored: Option<Arc<StoredObject>>,
    ) -> WriteOutcome {
        let before = snapshot.as_ref().map(|o| o.rv);
        let written = stored.as_ref().map(|o| o.rv);
        let applied = match written {
            Some(rv) => self.wait_until(APPLIED_WAIT, |inner| inner.revision >= rv),
            None => self.wait_until(APPLIED_WAIT, |inner| {
                Store::revision_of(inner, resource, key) != before
            }),
        };
        {
            let inner = self.lock();
            let recorded = inner.tables.get(resource).and_then(|table| {
                table
                    .history
                    .iter()
                    .rev()
                    .take_while(|change| change.rv > before.unwrap_or(0))
                    .find(|change| {
                        change.key == key
                            && change.prev.as_ref().map(|o| o.rv) == before
                            && change.new.as_ref().map(|o| o.rv) == written
                    })
                    .cloned()
            });
            if let Some(change) = recorded {
                return WriteOutcome {
                    object: change.new.clone(),
                    previous: change.prev.clone(),
                    change: Some(change),
                };
            }
        }
        if !applied {
            tracing::warn!(
                resource = %resource,
                key,
                "the watch cache has not applied a committed write in time; answering from the backend's result"
            );
        }
        let kind = match (&snapshot, &stored) {
            (_, None) => ChangeKind::Deleted,
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), Some(_)) => ChangeKind::Updated,
        };
        let rv = written.unwrap_or_else(|| self.revision());
        let change = Change::new(rv, kind, key.to_owned(), snapshot.clone(), stored.clone());
        WriteOutcome {
            object: stored,
            previous: snapshot,
            change: Some(Arc::new(change)),
        }
    }
}

/// Runs one conditional write on the backend: the stored object, `None` after a delete.
fn commit(
    cacher: &Cacher,
    resource: &GroupResource,
    key: &str,
    operation: Operation,
) -> Result<Option<Arc<StoredObject>>, BackendError> {
    let backend = cacher.backend().clone();
    let (resource, key) = (resource.clone(), key.to_owned());
    cacher.block_on(async move {
        match operation {
            Operation::Create(value) => backend.create(&resource, &key, value).await.map(Some),
            Operation::Update(value, expected) => backend
                .update(&resource, &key, value, expected)
                .await
                .map(Some),
            Operation::Delete(expected) => backend
                .delete(&resource, &key, Some(expected))
                .await
                .map(|_| None),
        }
    })
}

/// The outcome of a write that stores nothing.
fn nothing(current: Option<Arc<StoredObject>>) -> WriteOutcome {
    WriteOutcome {
        object: current.clone(),
        previous: current,
        change: None,
    }
}

/// The name in an object's key (`namespace/name` or `name`).
fn name_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// 409 for a write that kept losing to other writers (or, through
/// [`Store::write`], whose single decision lost once).
pub(super) fn lost(resource: &GroupResource, key: &str) -> Box<Status> {
    let conflict = BackendError::Conflict {
        key: key.to_owned(),
        expected: 0,
        found: 0,
    };
    Box::new(conflict.status(resource, name_of(key)))
}
