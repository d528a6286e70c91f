//! [`ControllerError`]: why a controller could not run.

use crate::cache::InformerError;

/// Why [`Controller::run`](super::Controller::run) returned without running its workers
/// to the end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// The informer factory the controller was built on was shut down before its caches
    /// synced: nothing would ever be delivered. Build controllers on a running factory,
    /// and shut the factory down after the controllers stop.
    #[error("the informer factory was shut down before the controller's caches synced")]
    FactoryShutDown,
    /// A handler could not be registered on a shared informer (it had stopped).
    #[error("cannot register the controller's event handlers")]
    Informer(#[from] InformerError),
}
