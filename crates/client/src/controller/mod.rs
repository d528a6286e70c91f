//! Controllers in client-go's shape, assembled by a builder (controller-runtime's
//! `builder.ControllerManagedBy`): informers from a shared [`SharedInformerFactory`],
//! handlers that enqueue `namespace/name` keys, a rate-limited work queue and N workers.
//!
//! - [`ControllerBuilder`]: the primary type, owned types (an event on an owned object
//!   enqueues its controller owner's key), other watched types with a mapping function,
//!   workers, rate limiter, queue metrics.
//! - [`Controller::run`]: starts the informers, waits for the caches, runs the workers
//!   with a shared context, stops on a [`CancellationToken`](crate::CancellationToken)
//!   after draining in-flight work, and returns a [`RunSummary`];
//!   [`Controller::outcomes`] streams every [`ReconcileOutcome`].
//! - [`Action`]: what a reconcile (or the error policy, after an error) asks for next:
//!   nothing, a requeue after a delay, or a requeue with backoff.
//! - [`predicate`]: which events enqueue (generation, labels, annotations changed).
//! - [`finalizer()`]: add a finalizer, run the cleanup on deletion, remove it.
//! - [`owner_reference`](mod@owner_reference): `set_controller_reference` and friends.
//!
//! A reconcile that returns `Ok` is forgotten by the rate limiter (its backoff resets); one
//! that returns `Err` is handed to the error policy ([`retry_with_backoff`]: re-queue with
//! [`add_rate_limited`], client-go's default limiter: per-item exponential 5 ms .. 1000 s,
//! overall 10 qps with a burst of 100); one that panics is re-queued with backoff.
//! Several controllers built on one factory share one informer (one watch) per resource.
//!
//! [`SharedInformerFactory`]: crate::informers::SharedInformerFactory
//! [`add_rate_limited`]: crate::workqueue::RateLimitingQueue::add_rate_limited

mod action;
mod builder;
mod enqueue_handlers;
mod error;
mod finalizer;
mod outcome;
pub mod owner_reference;
pub mod predicate;
mod worker;

pub use action::{Action, ReconcileRequest, retry_with_backoff};
pub use builder::{Controller, ControllerBuilder};
pub use error::ControllerError;
pub use finalizer::{
    FinalizerError, FinalizerEvent, add_finalizer, contains_finalizer, finalizer, remove_finalizer,
};
pub use outcome::{ReconcileError, ReconcileOutcome, RunSummary};
pub use owner_reference::{
    OwnerReferenceError, controller_reference, is_controlled_by, owner_reference,
    remove_owner_reference, set_controller_reference, set_owner_reference,
};
