//! The crate's one set of lock helpers; they ignore poisoning.
//!
//! No lock of this crate is held while its state is half-updated and user code could
//! panic: every user-supplied function (key, index, transform) runs before a store mutates
//! its state, a FIFO removes an item before handing it to `process`, and the work queues
//! and the client run no user code under their locks. A poisoned lock therefore still
//! guards consistent state and is safe to keep using.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
