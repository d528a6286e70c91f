//! Controllers in client-go's shape, assembled by a builder (controller-runtime's
//! `builder.ControllerManagedBy`): informers from a shared [`SharedInformerFactory`],
//! handlers that enqueue `namespace/name` keys, a rate-limited work queue and N workers.
//!
//! - [`ControllerBuilder`]: the primary type, owned types (an event on an owned object
//!   enqueues its controller owner's key), other watched types with a mapping function,
//!   workers, rate limiter, queue metrics.
//! - [`Controller::run`]: waits for the caches, runs the workers, stops on a
//!   [`CancellationToken`](crate::CancellationToken) after draining in-flight work.
//! - [`Action`]: what a reconcile asks for next (nothing, or a requeue after a delay).
//!
//! A reconcile that returns `Ok` is forgotten by the rate limiter (its backoff resets); one
//! that returns `Err` or panics is re-queued with [`add_rate_limited`] (client-go's
//! default limiter: per-item exponential 5 ms .. 1000 s, overall 10 qps with a burst of 100).
//! Several controllers built on one factory share one informer (one watch) per resource.
//!
//! [`SharedInformerFactory`]: crate::informers::SharedInformerFactory
//! [`add_rate_limited`]: crate::workqueue::RateLimitingQueue::add_rate_limited

mod action;
mod builder;
mod enqueue_handlers;
mod worker;

pub use action::{Action, ReconcileRequest};
pub use builder::{Controller, ControllerBuilder};
