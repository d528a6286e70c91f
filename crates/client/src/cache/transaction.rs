//! [`Transaction`]: several store writes applied under one lock (client-go's
//! `Transaction`, `TransactionStore` and `TransactionError` of `store.go`).

use std::fmt;
use std::sync::Arc;

use kubeclient_machinery::Object;

use super::error::Error;
use super::representation::Representation;
use super::store::Cache;

/// What a [`Transaction`] does (Go's `TransactionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransactionType {
    /// Store a new object.
    Add,
    /// Replace a stored object.
    Update,
    /// Remove the object's key.
    Delete,
}

/// One write of a transaction (Go's `Transaction`).
#[derive(Debug)]
pub struct Transaction<K> {
    /// What to do.
    pub kind: TransactionType,
    /// The object written (for a deletion, its final state).
    pub object: Arc<K>,
}

impl<K> Transaction<K> {
    /// A write of `kind` with `object`.
    #[must_use]
    pub fn new(kind: TransactionType, object: Arc<K>) -> Self {
        Transaction { kind, object }
    }
}

impl<K> Clone for Transaction<K> {
    fn clone(&self) -> Self {
        Transaction {
            kind: self.kind,
            object: Arc::clone(&self.object),
        }
    }
}

/// Some writes of a transaction failed (Go's `TransactionError`); the others were
/// applied.
#[derive(Debug, thiserror::Error)]
pub struct TransactionError {
    /// The positions of the writes that were applied.
    pub successful_indices: Vec<usize>,
    /// How many writes the transaction had.
    pub total_transactions: usize,
    /// Why the others failed, in order.
    pub errors: Vec<Error>,
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self
            .total_transactions
            .saturating_sub(self.successful_indices.len());
        write!(
            f,
            "{failed} of {} transactions failed",
            self.total_transactions
        )?;
        for err in &self.errors {
            write!(f, "; {}", kubeclient_machinery::ErrorChain(err))?;
        }
        Ok(())
    }
}

impl TransactionError {
    pub(super) fn new(total: usize) -> Self {
        TransactionError {
            successful_indices: Vec::with_capacity(total),
            total_transactions: total,
            errors: Vec::new(),
        }
    }

    pub(super) fn record(&mut self, index: usize, outcome: Result<(), Error>) {
        match outcome {
            Ok(()) => self.successful_indices.push(index),
            Err(err) => self.errors.push(err),
        }
    }

    pub(super) fn into_result(self) -> Result<(), TransactionError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

/// A store that applies several writes under one lock acquisition, so a batch makes
/// progress under contention and readers never see half of it (Go's `TransactionStore`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient_machinery::Object;
/// use kubeclient::cache::{Cache, CacheOptions, KnownObjects, Transaction, TransactionStore, TransactionType};
///
/// let cache = Cache::<ConfigMap>::new(CacheOptions::default());
/// let named = |name: &str| {
///     let mut cm = ConfigMap::default();
///     cm.meta_mut().name = Some(name.into());
///     Arc::new(cm)
/// };
/// cache
///     .transaction(vec![
///         Transaction::new(TransactionType::Add, named("a")),
///         Transaction::new(TransactionType::Add, named("b")),
///         Transaction::new(TransactionType::Delete, named("a")),
///     ])
///     .unwrap();
/// assert_eq!(cache.list_keys(), ["b"]);
/// ```
pub trait TransactionStore<K> {
    /// Applies `transactions` in order under one lock.
    ///
    /// # Errors
    ///
    /// [`TransactionError`] when some failed (a key or index function error); the others
    /// were applied.
    fn transaction(&self, transactions: Vec<Transaction<K>>) -> Result<(), TransactionError>;
}

impl<K: Object, R: Representation<K>> TransactionStore<K> for Cache<K, R> {
    /// Keys and transforms are computed first; a write whose key or transform fails is
    /// reported and skipped, the rest applied under the store's lock.
    fn transaction(&self, transactions: Vec<Transaction<K>>) -> Result<(), TransactionError> {
        let total = transactions.len();
        let mut keyed = Vec::with_capacity(total);
        let mut positions = Vec::with_capacity(total);
        let mut failure = TransactionError::new(total);
        for (i, transaction) in transactions.into_iter().enumerate() {
            match self.prepare(transaction) {
                Ok(prepared) => {
                    keyed.push(prepared);
                    positions.push(i);
                }
                Err(err) => failure.record(i, Err(err)),
            }
        }
        if let Err(store_failure) = self.thread_safe_store().transaction(keyed) {
            failure.errors.extend(store_failure.errors);
            let applied = store_failure.successful_indices.iter();
            failure
                .successful_indices
                .extend(applied.filter_map(|&j| positions.get(j).copied()));
        } else {
            failure.successful_indices.extend(positions);
        }
        failure.successful_indices.sort_unstable();
        failure.into_result()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::cache::test_util::cm;
    use crate::cache::{CacheOptions, KeyFunc, KnownObjects};

    #[test]
    fn a_transaction_applies_every_write_in_order() {
        let cache = Cache::<ConfigMap>::new(CacheOptions::default());
        let writes = vec![
            Transaction::new(TransactionType::Add, cm("a", "1")),
            Transaction::new(TransactionType::Update, cm("a", "2")),
            Transaction::new(TransactionType::Add, cm("b", "1")),
            Transaction::new(TransactionType::Delete, cm("b", "1")),
        ];
        cache.transaction(writes).unwrap();
        assert_eq!(cache.list_keys(), ["a"]);
        let a = cache.get_by_key("a").unwrap().unwrap();
        assert_eq!(a.resource_version(), "2");
        cache.thread_safe_store().check_invariants();
    }

    #[test]
    fn a_failing_write_is_reported_and_the_others_are_applied() {
        let key_func: KeyFunc<ConfigMap> = Arc::new(|cm| {
            if cm.name() == "bad" {
                Err("no key for bad".into())
            } else {
                Ok(cm.name().to_owned())
            }
        });
        let cache = Cache::new(CacheOptions::default().key_func(key_func));
        let writes = vec![
            Transaction::new(TransactionType::Add, cm("a", "1")),
            Transaction::new(TransactionType::Add, cm("bad", "1")),
            Transaction::new(TransactionType::Add, cm("c", "1")),
        ];
        let err = cache.transaction(writes).unwrap_err();
        assert_eq!(err.successful_indices, [0, 2]);
        assert_eq!(err.total_transactions, 3);
        assert_eq!(err.errors.len(), 1);
        assert!(err.to_string().starts_with("1 of 3 transactions failed"));
        let mut keys = cache.list_keys();
        keys.sort();
        assert_eq!(keys, ["a", "c"]);
    }
}
