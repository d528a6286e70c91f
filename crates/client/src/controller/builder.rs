//! [`ControllerBuilder`] and the [`Controller`] it builds.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::cache::{
    EventHandlerRegistration, InformerError, Lister, ResourceEventHandler, SharedIndexInformer,
};
use crate::informers::{FactoryHandle, FactoryResource, SharedInformerFactory};
use crate::workqueue::{
    MetricsProvider, QueueConfig, RateLimiter, RateLimitingQueue, default_controller_rate_limiter,
};

use futures_util::stream::BoxStream;

use super::enqueue_handlers::{EnqueueMapped, EnqueueObject, EnqueueOwner, Filtered, MapFn};
use super::outcome::{ReconcileOutcome, Reporter};
use super::predicate::{Predicate, PredicateExt};

/// Registers one handler on the factory's shared informer of some type, feeding `queue`.
type Watch = Box<dyn FnOnce(&RateLimitingQueue<String>) -> Result<Registered, InformerError>>;

/// A handler registered by a controller, and how to remove it again when the controller
/// stops (the shared informer goes on serving other controllers).
pub(super) struct Registered {
    /// `apiVersion/Kind` of the informer, for logs.
    pub(super) resource: String,
    pub(super) registration: EventHandlerRegistration,
    pub(super) remove: Box<dyn Fn(&EventHandlerRegistration) + Send + Sync>,
}

/// Registers `handler` on `informer`, behind `predicate` when there is one.
fn register<T: FactoryResource>(
    informer: &SharedIndexInformer<T>,
    handler: impl ResourceEventHandler<T>,
    predicate: Option<Arc<dyn Predicate<T>>>,
) -> Result<Registered, InformerError> {
    let registration = match predicate {
        Some(predicate) => informer.add_event_handler(Filtered { handler, predicate })?,
        None => informer.add_event_handler(handler)?,
    };
    let informer = informer.clone();
    Ok(Registered {
        resource: format!("{}/{}", T::API_VERSION, T::KIND),
        registration,
        remove: Box::new(move |registration| informer.remove_event_handler(registration)),
    })
}

/// Builds a [`Controller`] for the primary type `K` over a shared informer factory
/// (controller-runtime's `builder.ControllerManagedBy(mgr).For(&K{}).Owns(..).Watches(..)`).
///
/// Handlers are registered on the factory's shared informers by [`build`](Self::build); a
/// factory that already started replays its caches to them (late handlers), and
/// [`Controller::run`] starts the informers the build created.
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::{Action, Controller, ReconcileRequest, retry_with_backoff};
/// use kubeclient::applyconfigurations::core::v1::ConfigMapApplyConfiguration;
/// use kubeclient::informers::SharedInformerFactory;
/// use kubeclient::{Api, ApplyOptions, CancellationToken, Client};
///
/// async fn reconcile(request: ReconcileRequest<Deployment>, client: Arc<Client>) -> Result<Action, kubeclient::Error> {
///     let Some(deployment) = request.object else { return Ok(Action::done()) }; // gone
///     // Server-side apply of exactly the fields this controller owns (docs/APPLY.md).
///     let replicas = deployment.spec.replicas.unwrap_or(1);
///     let summary = ConfigMapApplyConfiguration::new(format!("{}-summary", request.name), &request.namespace)
///         .with_data([("replicas", replicas.to_string())]);
///     let configmaps: Api<ConfigMap> = Api::namespaced(Client::clone(&client), &request.namespace);
///     configmaps.apply_configuration(&summary, &ApplyOptions::new("deployment-summary").force()).await?;
///     Ok(Action::done())
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let factory = SharedInformerFactory::new(client.clone());
/// let controller = Controller::<Deployment>::builder("deployments", &factory)
///     .owns::<ReplicaSet>()
///     // a ConfigMap change reconciles the Deployment named in its `app` label
///     .watches::<ConfigMap>(|cm| {
///         let app = cm.metadata.labels.as_ref().and_then(|l| l.get("app"));
///         app.map(|app| format!("{}/{app}", cm.metadata.namespace.as_deref().unwrap_or(""))).into_iter().collect()
///     })
///     .workers(2)
///     .build()?;
/// let stop = CancellationToken::new();
/// controller.run(reconcile, retry_with_backoff, Arc::new(client), stop).await?;
/// # Ok(()) }
/// ```
#[doc(alias = "Builder", alias = "ControllerManagedBy")]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ControllerBuilder<'f, K> {
    factory: &'f SharedInformerFactory,
    name: String,
    workers: usize,
    limiter: Option<Arc<dyn RateLimiter<String>>>,
    metrics: Option<Arc<dyn MetricsProvider>>,
    watches: Vec<Watch>,
    predicate: Option<Arc<dyn Predicate<K>>>,
}

impl<'f, K: FactoryResource> ControllerBuilder<'f, K> {
    /// Owned objects of type `C`: an event on one enqueues the key of its controller owner
    /// (the owner reference with `controller: true`) when that owner is a `K`.
    pub fn owns<C: FactoryResource>(self) -> Self {
        self.owns_filtered::<C>(None)
    }

    /// [`owns`](Self::owns), for the events of owned objects that pass `predicate`
    /// (controller-runtime's `Owns(obj, builder.WithPredicates(..))`).
    pub fn owns_with<C: FactoryResource>(self, predicate: impl Predicate<C>) -> Self {
        self.owns_filtered::<C>(Some(Arc::new(predicate)))
    }

    fn owns_filtered<C: FactoryResource>(
        mut self,
        predicate: Option<Arc<dyn Predicate<C>>>,
    ) -> Self {
        let informer = self.factory.informer::<C>();
        self.watches.push(Box::new(move |queue| {
            register(
                &informer,
                EnqueueOwner::<K> {
                    queue: queue.clone(),
                    owner: PhantomData,
                },
                predicate,
            )
        }));
        self
    }

    /// Objects of type `O` mapped to the keys (`namespace/name`) of primary objects to
    /// reconcile; on an update both the old and the new object are mapped.
    pub fn watches<O: FactoryResource>(
        self,
        map: impl Fn(&O) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.watches_filtered(Arc::new(map), None)
    }

    /// [`watches`](Self::watches), for the events that pass `predicate`.
    pub fn watches_with<O: FactoryResource>(
        self,
        map: impl Fn(&O) -> Vec<String> + Send + Sync + 'static,
        predicate: impl Predicate<O>,
    ) -> Self {
        self.watches_filtered(Arc::new(map), Some(Arc::new(predicate)))
    }

    fn watches_filtered<O: FactoryResource>(
        mut self,
        map: MapFn<O>,
        predicate: Option<Arc<dyn Predicate<O>>>,
    ) -> Self {
        let informer = self.factory.informer::<O>();
        self.watches.push(Box::new(move |queue| {
            register(
                &informer,
                EnqueueMapped {
                    queue: queue.clone(),
                    map,
                },
                predicate,
            )
        }));
        self
    }

    /// Only events of primary objects that pass `predicate` enqueue them
    /// (controller-runtime's `For(obj, builder.WithPredicates(..))`); several calls must
    /// all pass. A requeue asked by a reconcile is not filtered.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn build(factory: &kubeclient::informers::SharedInformerFactory) -> Result<(), kubeclient::cache::InformerError> {
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kubeclient::controller::Controller;
    /// use kubeclient::controller::predicate::{GenerationChanged, LabelsChanged, PredicateExt};
    ///
    /// // Status writes (which do not move the generation) do not reconcile.
    /// let controller = Controller::<Deployment>::builder("deployments", factory)
    ///     .predicate(GenerationChanged.or(LabelsChanged))
    ///     .build()?;
    /// # drop(controller); Ok(()) }
    /// ```
    pub fn predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            None => Arc::new(predicate),
            Some(before) => Arc::new(before.and(predicate)),
        });
        self
    }

    /// How many keys are reconciled at once (default 1; 0 counts as 1). One key is never
    /// reconciled by two workers at once.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// The retry limiter (default [`default_controller_rate_limiter`]: per-item
    /// exponential 5 ms .. 1000 s, overall 10 qps with a burst of 100).
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<String>>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Reports the work queue's metrics (client-go's `workqueue_*` names, label `name` =
    /// the controller's name) to `provider`.
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    /// Creates the queue and registers the handlers on the shared informers.
    ///
    /// # Errors
    ///
    /// [`InformerError`] when one of the informers has already stopped (the factory was
    /// shut down).
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime (the queue's delay task needs one).
    #[track_caller]
    pub fn build(self) -> Result<Controller<K>, InformerError> {
        let mut config = QueueConfig::default().name(self.name.clone());
        if let Some(provider) = self.metrics {
            config = config.metrics_provider(provider);
        }
        let limiter = self.limiter.unwrap_or_else(default_controller_rate_limiter);
        let queue = RateLimitingQueue::new(limiter, config);
        let primary = self.factory.informer::<K>();
        let mut registrations = vec![register(
            &primary,
            EnqueueObject {
                queue: queue.clone(),
            },
            self.predicate,
        )?];
        for watch in self.watches {
            match watch(&queue) {
                Ok(registered) => registrations.push(registered),
                Err(err) => {
                    for registered in &registrations {
                        (registered.remove)(&registered.registration);
                    }
                    queue.shutdown();
                    return Err(err);
                }
            }
        }
        Ok(Controller {
            reporter: Arc::new(Reporter::new(&self.name)),
            name: self.name,
            workers: self.workers,
            queue,
            lister: self.factory.lister::<K>(),
            registrations,
            factory: self.factory.handle(),
        })
    }
}

/// A controller: a rate-limited queue of primary keys fed by shared informers, and the
/// workers that reconcile them (client-go's sample-controller `Controller`, assembled by a
/// [`ControllerBuilder`]).
pub struct Controller<K: FactoryResource> {
    pub(super) name: String,
    pub(super) workers: usize,
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) lister: Lister<K>,
    pub(super) registrations: Vec<Registered>,
    pub(super) factory: FactoryHandle,
    pub(super) reporter: Arc<Reporter>,
}

impl<K: FactoryResource> Controller<K> {
    /// Starts building a controller named `name` (the queue's name in metrics and logs)
    /// for primary objects of type `K`, over `factory`'s shared informers.
    pub fn builder<'f>(name: &str, factory: &'f SharedInformerFactory) -> ControllerBuilder<'f, K> {
        ControllerBuilder {
            factory,
            name: name.to_owned(),
            workers: 1,
            limiter: None,
            metrics: None,
            watches: Vec::new(),
            predicate: None,
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The work queue, to enqueue keys by hand or read retry counts.
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.queue
    }

    /// A lister over the primary objects' shared cache.
    pub fn lister(&self) -> &Lister<K> {
        &self.lister
    }

    /// A stream of every reconcile's outcome from now on, until [`run`](Self::run) returns.
    /// It never slows the workers: a subscriber that falls more than 1024 outcomes behind
    /// misses the oldest (and a warning says how many).
    #[must_use]
    pub fn outcomes(&self) -> BoxStream<'static, ReconcileOutcome> {
        self.reporter.subscribe()
    }

    /// Whether every handler of this controller has handled its informer's initial list.
    pub fn has_synced(&self) -> bool {
        self.registrations
            .iter()
            .all(|registered| registered.registration.has_synced())
    }
}

impl<K: FactoryResource> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}
