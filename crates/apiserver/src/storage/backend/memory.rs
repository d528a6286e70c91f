//! The in-memory [`Store`] as a [`Backend`]: every call completes at once, under the
//! store's lock, so the conditional writes are its atomic `write` with a decision that
//! checks the precondition.

use std::sync::Arc;

use futures_util::FutureExt;
use kubeclient_machinery::GroupResource;
use serde_json::Value;

use super::super::{ListPage, ListRequest, Store, StoredObject, WatchFrom, Write};
use super::{Backend, BackendError, BackendFuture, ChangeStream, ListOptions};

impl Backend for Store {
    fn revision(&self) -> BackendFuture<'_, u64> {
        let revision = Store::revision(self);
        async move { Ok(revision) }.boxed()
    }

    fn get<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
    ) -> BackendFuture<'a, Option<Arc<StoredObject>>> {
        let object = Store::get(self, resource, key);
        async move { Ok(object) }.boxed()
    }

    fn list<'a>(
        &'a self,
        resource: &'a GroupResource,
        options: ListOptions<'a>,
    ) -> BackendFuture<'a, ListPage> {
        let page = Store::list(
            self,
            resource,
            &ListRequest {
                at: options.at,
                prefix: options.prefix,
                start_after: options.start_after,
                limit: options.limit,
                filter: &|_| true,
            },
        );
        async move { Ok(page?) }.boxed()
    }

    fn create<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let outcome = self.write(resource, key, |current| match current {
            Some(_) => Err(BackendError::AlreadyExists {
                key: key.to_owned(),
            }),
            None => Ok(Write::Create(object)),
        });
        async move { stored(key, outcome?.object) }.boxed()
    }

    fn update<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        object: Value,
        expected_revision: u64,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let outcome = self.write(resource, key, |current| -> Result<_, BackendError> {
            check_revision(key, current, Some(expected_revision))?;
            Ok(Write::Update(object))
        });
        async move { stored(key, outcome?.object) }.boxed()
    }

    fn delete<'a>(
        &'a self,
        resource: &'a GroupResource,
        key: &'a str,
        expected_revision: Option<u64>,
    ) -> BackendFuture<'a, Arc<StoredObject>> {
        let outcome = self.write(resource, key, |current| -> Result<_, BackendError> {
            check_revision(key, current, expected_revision)?;
            Ok(Write::Delete)
        });
        async move { stored(key, outcome?.previous) }.boxed()
    }

    fn watch<'a>(
        &'a self,
        resource: &'a GroupResource,
        prefix: &'a str,
        after: u64,
    ) -> BackendFuture<'a, ChangeStream> {
        let subscription = Store::watch(self, resource, prefix, WatchFrom::After(after));
        async move {
            let subscription = subscription?;
            Ok(ChangeStream::memory(
                subscription.backlog,
                subscription.changes,
                subscription.after,
            ))
        }
        .boxed()
    }

    fn compact(&self) -> BackendFuture<'_, u64> {
        Store::compact(self);
        let revision = Store::revision(self);
        async move { Ok(revision) }.boxed()
    }
}

/// The precondition of a write: the object exists and, when `expected` is given, is
/// still at that revision.
fn check_revision(
    key: &str,
    current: Option<&Arc<StoredObject>>,
    expected: Option<u64>,
) -> Result<(), BackendError> {
    let current = current.ok_or_else(|| BackendError::NotFound {
        key: key.to_owned(),
    })?;
    match expected {
        Some(expected) if expected != current.rv => Err(BackendError::Conflict {
            key: key.to_owned(),
            expected,
            found: current.rv,
        }),
        _ => Ok(()),
    }
}

/// The object a write reports; a decided write always has one.
fn stored(key: &str, object: Option<Arc<StoredObject>>) -> Result<Arc<StoredObject>, BackendError> {
    object.ok_or_else(|| BackendError::NotFound {
        key: key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::suite;
    use crate::storage::Store;

    #[tokio::test]
    async fn the_in_memory_store_passes_the_backend_suite() {
        suite::run("memory", || async { Arc::new(Store::new(1000)) as Arc<_> }).await;
    }
}
