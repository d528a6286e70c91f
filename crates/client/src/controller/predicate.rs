//! [`Predicate`]s: which informer events reach a controller's queue
//! (controller-runtime's `pkg/predicate`). Creates, deletes and resyncs pass unless a
//! predicate says otherwise; the built-in predicates judge updates only.
//!
//! - [`GenerationChanged`]: `metadata.generation` moved (a spec change; status and metadata
//!   writes do not move it). Beware: adding a finalizer or a label does not pass it.
//! - [`LabelsChanged`], [`AnnotationsChanged`]: the map differs.
//! - [`ResourceVersionChanged`]: anything changed (drops resyncs).
//! - [`PredicateExt::and`], [`or`](PredicateExt::or), [`not`](PredicateExt::not) compose
//!   them; [`UpdateFn`] wraps a closure.

use kubeclient_machinery::Object;

/// Decides whether an informer event enqueues anything.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::predicate::{GenerationChanged, LabelsChanged, Predicate, PredicateExt};
///
/// let spec_or_labels = GenerationChanged.or(LabelsChanged);
/// let old = ConfigMap::default();
/// let mut new = old.clone();
/// assert!(!Predicate::<ConfigMap>::update(&spec_or_labels, &old, &new));
/// new.metadata.labels = Some([("tier".to_owned(), "web".to_owned())].into());
/// assert!(Predicate::<ConfigMap>::update(&spec_or_labels, &old, &new));
/// ```
pub trait Predicate<K>: Send + Sync + 'static {
    /// An object was added (also each object of the initial list). Default: pass.
    fn create(&self, _obj: &K) -> bool {
        true
    }

    /// An object changed from `old` to `new` (or was resynced: both the same). Default: pass.
    fn update(&self, _old: &K, _new: &K) -> bool {
        true
    }

    /// An object was deleted (its last known state). Default: pass.
    fn delete(&self, _obj: &K) -> bool {
        true
    }
}

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for std::sync::Arc<P> {
    fn create(&self, obj: &K) -> bool {
        (**self).create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
}

/// Passes updates that change `metadata.generation` (controller-runtime's
/// `GenerationChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationChanged;

impl<K: Object> Predicate<K> for GenerationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.generation() != new.generation()
    }
}

/// Passes updates that change `metadata.labels` (controller-runtime's
/// `LabelChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelsChanged;

impl<K: Object> Predicate<K> for LabelsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.labels() != new.labels()
    }
}

/// Passes updates that change `metadata.annotations` (controller-runtime's
/// `AnnotationChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationsChanged;

impl<K: Object> Predicate<K> for AnnotationsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.annotations() != new.annotations()
    }
}

/// Passes updates that change `metadata.resourceVersion`: every real change, no resync
/// (controller-runtime's `ResourceVersionChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceVersionChanged;

impl<K: Object> Predicate<K> for ResourceVersionChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.resource_version() != new.resource_version()
    }
}

/// A predicate on updates from a closure; creates and deletes pass.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::controller::predicate::{Predicate, UpdateFn};
///
/// let data_changed = UpdateFn(|old: &ConfigMap, new: &ConfigMap| old.data != new.data);
/// assert!(!data_changed.update(&ConfigMap::default(), &ConfigMap::default()));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct UpdateFn<F>(pub F);

impl<K, F> Predicate<K> for UpdateFn<F>
where
    F: Fn(&K, &K) -> bool + Send + Sync + 'static,
{
    fn update(&self, old: &K, new: &K) -> bool {
        (self.0)(old, new)
    }
}

/// Both predicates pass (see [`PredicateExt::and`]).
#[derive(Clone, Copy, Debug)]
pub struct And<A, B>(A, B);

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for And<A, B> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) && self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) && self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) && self.1.delete(obj)
    }
}

/// Either predicate passes (see [`PredicateExt::or`]).
#[derive(Clone, Copy, Debug)]
pub struct Or<A, B>(A, B);

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) || self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
}

/// The predicate fails (see [`PredicateExt::not`]).
#[derive(Clone, Copy, Debug)]
pub struct Not<A>(A);

impl<K, A: Predicate<K>> Predicate<K> for Not<A> {
    fn create(&self, obj: &K) -> bool {
        !self.0.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        !self.0.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        !self.0.delete(obj)
    }
}

/// Combinators on every predicate (controller-runtime's `predicate.And`, `Or`, `Not`).
pub trait PredicateExt: Sized {
    /// Passes when both pass.
    #[must_use]
    fn and<B>(self, other: B) -> And<Self, B> {
        And(self, other)
    }

    /// Passes when either passes.
    #[must_use]
    fn or<B>(self, other: B) -> Or<Self, B> {
        Or(self, other)
    }

    /// Passes when this one fails (on every event kind: `not` of a predicate that passes
    /// creates drops creates).
    #[must_use]
    fn not(self) -> Not<Self> {
        Not(self)
    }
}

impl<P: Sized> PredicateExt for P {}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn config_map(generation: i64, rv: &str, label: Option<&str>, note: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.generation = Some(generation);
        cm.metadata.resource_version = Some(rv.to_owned());
        cm.metadata.labels = label.map(|l| [("l".to_owned(), l.to_owned())].into());
        cm.metadata.annotations = note.map(|a| [("a".to_owned(), a.to_owned())].into());
        cm
    }

    #[test]
    fn each_builtin_predicate_passes_only_its_own_change() {
        let old = config_map(1, "10", Some("x"), Some("y"));
        let cases: [(&str, ConfigMap, [bool; 4]); 5] = [
            ("resync", old.clone(), [false, false, false, false]),
            (
                "status write",
                config_map(1, "11", Some("x"), Some("y")),
                [false, false, false, true],
            ),
            (
                "spec change",
                config_map(2, "11", Some("x"), Some("y")),
                [true, false, false, true],
            ),
            (
                "label change",
                config_map(1, "11", Some("z"), Some("y")),
                [false, true, false, true],
            ),
            (
                "annotation removed",
                config_map(1, "11", Some("x"), None),
                [false, false, true, true],
            ),
        ];
        for (name, new, expected) in cases {
            let got = [
                GenerationChanged.update(&old, &new),
                LabelsChanged.update(&old, &new),
                AnnotationsChanged.update(&old, &new),
                ResourceVersionChanged.update(&old, &new),
            ];
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn creates_and_deletes_pass_the_update_predicates() {
        let cm = ConfigMap::default();
        assert!(Predicate::<ConfigMap>::create(&GenerationChanged, &cm));
        assert!(Predicate::<ConfigMap>::delete(&LabelsChanged, &cm));
    }

    #[test]
    fn combinators_follow_boolean_logic_on_every_event_kind() {
        let old = config_map(1, "10", Some("x"), None);
        let relabelled = config_map(1, "11", Some("z"), None);
        let both = GenerationChanged.and(LabelsChanged);
        let either = GenerationChanged.or(LabelsChanged);
        assert!(!Predicate::<ConfigMap>::update(&both, &old, &relabelled));
        assert!(Predicate::<ConfigMap>::update(&either, &old, &relabelled));
        let no_creates = UpdateFn(|_: &ConfigMap, _: &ConfigMap| true).not();
        assert!(!no_creates.create(&old), "not inverts creates too");
        assert!(!no_creates.update(&old, &relabelled));
    }
}
