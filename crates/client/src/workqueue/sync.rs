//! Lock helper that ignores poisoning: no user code runs while a work queue's state is
//! half-updated, so a poisoned lock still guards consistent state.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
