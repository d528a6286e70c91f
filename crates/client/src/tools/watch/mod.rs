//! client-go's `tools/watch`: a [`RetryWatcher`] that resumes a watch from its last
//! resourceVersion, and the `until` helpers that wait on a watch for conditions:
//! [`until_without_retry`], [`until`], [`until_with_sync`] and [`list_watch_until`].

mod retry_watcher;
mod until;

pub use retry_watcher::{RetryWatcher, RetryWatcherError};
pub use until::{
    ConditionFunc, PreconditionFunc, UntilError, list_watch_until, until, until_with_sync,
    until_without_retry,
};
