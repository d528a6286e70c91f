//! [`ResourceEventHandler`]: what an informer tells its handlers, and adapters (closures,
//! filtering).

use std::sync::Arc;

use kubeclient_machinery::DeletedObject;

/// Receives an informer's notifications, one at a time and in order, after the cache has
/// been updated (read the cache through a lister for the latest state). Handlers must be
/// quick or hand work to a work queue: each has its own unbounded buffer, so a slow one
/// delays nobody else but grows its own backlog.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubeclient::cache::ResourceEventHandler;
/// use kubeclient::machinery::{DeletedObject, Object};
///
/// struct Log;
/// impl ResourceEventHandler<Pod> for Log {
///     fn on_add(&self, pod: &Arc<Pod>, _initial: bool) { println!("added {}", pod.name()); }
///     fn on_delete(&self, pod: &DeletedObject<Pod>) { println!("deleted {}", pod.key()); }
/// }
/// ```
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object appeared; `is_in_initial_list` for objects of the initial list (and the
    /// cache replayed to a handler added late).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object changed (or, with the same resourceVersion, was re-delivered by a resync).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted: its final state, or a tombstone when the deletion was
    /// inferred by a relist.
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }

    /// Whether [`on_update`](Self::on_update) reads its `old` argument (the default).
    ///
    /// An informer with a compact cache holds the object an update replaces compressed and
    /// must decode it to hand it over, which costs about as much as decoding the watch
    /// event itself. A handler that answers `false` is spared that decode: its `on_update`
    /// gets the new object as `old` too, unless another handler of the informer had the
    /// old one decoded already. With the default (shared) cache the old object costs
    /// nothing and is always the real one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::cache::ResourceEventHandler;
    /// use kubeclient::machinery::Object;
    ///
    /// /// Enqueues the key of every changed Pod; never looks at the previous state.
    /// struct Enqueue;
    /// impl ResourceEventHandler<Pod> for Enqueue {
    ///     fn on_update(&self, _old: &Arc<Pod>, new: &Arc<Pod>) { println!("{}", new.name()); }
    ///     fn reads_old_object(&self) -> bool { false }
    /// }
    /// ```
    fn reads_old_object(&self) -> bool {
        true
    }
}

/// One notification, as delivered to a handler or read from
/// [`SharedIndexInformer::notifications`](super::SharedIndexInformer::notifications).
#[derive(Debug)]
#[doc(
    alias = "addNotification",
    alias = "updateNotification",
    alias = "deleteNotification"
)]
pub enum Notification<K> {
    /// [`ResourceEventHandler::on_add`].
    Add {
        /// The object.
        obj: Arc<K>,
        /// Part of the initial list.
        is_in_initial_list: bool,
    },
    /// [`ResourceEventHandler::on_update`].
    Update {
        /// The previous state.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// [`ResourceEventHandler::on_delete`].
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => Notification::Add {
                obj: obj.clone(),
                is_in_initial_list: *is_in_initial_list,
            },
            Notification::Update { old, new } => Notification::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Notification::Delete(obj) => Notification::Delete(obj.clone()),
        }
    }
}

impl<K: 'static> Notification<K> {
    /// Calls the matching method of `handler`.
    pub fn deliver(&self, handler: &dyn ResourceEventHandler<K>) {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new } => handler.on_update(old, new),
            Notification::Delete(obj) => handler.on_delete(obj),
        }
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type UpdateNewFn<K> = Box<dyn Fn(&Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A handler from closures; missing ones do nothing (client-go's
/// `ResourceEventHandlerDetailedFuncs`).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::cache::ResourceEventHandlerFuncs;
/// use kubeclient::machinery::Object;
///
/// let handler = ResourceEventHandlerFuncs::<ConfigMap>::new()
///     .on_add(|cm, _| println!("added {}", cm.name()))
///     .on_delete(|cm| println!("deleted {}", cm.key()));
/// # let _ = handler;
/// ```
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    update_new: Option<UpdateNewFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        ResourceEventHandlerFuncs {
            add: None,
            update: None,
            update_new: None,
            delete: None,
        }
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that does nothing yet.
    #[must_use]
    pub fn new() -> Self {
        ResourceEventHandlerFuncs::default()
    }

    /// With an add callback.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// With an update callback, given the old and the new object.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// With an update callback given only the new object: a compact cache then never
    /// decodes the object an update replaced for this handler (see
    /// [`ResourceEventHandler::reads_old_object`]). Ignored when
    /// [`on_update`](Self::on_update) is set too.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::cache::ResourceEventHandlerFuncs;
    /// use kubeclient::machinery::Object;
    ///
    /// let handler = ResourceEventHandlerFuncs::<Pod>::new()
    ///     .on_update_new(|pod| println!("changed {}", pod.name()));
    /// # let _ = handler;
    /// ```
    #[must_use]
    pub fn on_update_new(mut self, f: impl Fn(&Arc<K>) + Send + Sync + 'static) -> Self {
        self.update_new = Some(Box::new(f));
        self
    }

    /// With a delete callback.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        } else if let Some(f) = &self.update_new {
            f(new);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }

    fn reads_old_object(&self) -> bool {
        self.update.is_some()
    }
}

/// Forwards only objects that pass a filter (client-go's `FilteringResourceEventHandler`):
/// an update that makes an object pass becomes an add, one that makes it fail a delete.
pub struct FilteringResourceEventHandler<K, H> {
    filter: Box<dyn Fn(&K) -> bool + Send + Sync>,
    handler: H,
}

impl<K, H> FilteringResourceEventHandler<K, H> {
    /// Wraps `handler` with `filter`.
    #[must_use]
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, handler: H) -> Self {
        FilteringResourceEventHandler {
            filter: Box::new(filter),
            handler,
        }
    }
}

impl<K: kubeclient_machinery::Object, H: ResourceEventHandler<K>> ResourceEventHandler<K>
    for FilteringResourceEventHandler<K, H>
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self.handler.on_delete(&DeletedObject::Final(old.clone())),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        // A tombstone without a last known state cannot be filtered: forward it.
        if obj.object().is_none_or(|o| (self.filter)(o)) {
            self.handler.on_delete(obj);
        }
    }
}
