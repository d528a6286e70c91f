//! Owner references, as controller-runtime's `controllerutil` writes them:
//! [`set_controller_reference`] (the one owner with `controller: true`, which the garbage
//! collector follows and [`ControllerBuilder::owns`](super::ControllerBuilder::owns)
//! maps back to), [`set_owner_reference`], [`remove_owner_reference`] and
//! [`is_controlled_by`].
//!
//! An owner is identified by its API group (not its version), kind and name, so a
//! reference written at `apps/v1beta2` is the same owner as one at `apps/v1`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeclient_machinery::Object;

/// Why an owner reference cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnerReferenceError {
    /// The owner has no name or uid: it was not read from the server (create it first,
    /// and use the object the server returned).
    #[error("the owner {kind} {name:?} has no uid; use the object the server returned")]
    OwnerNotPersisted {
        /// The owner's kind.
        kind: String,
        /// The owner's name (may be empty).
        name: String,
    },
    /// A cluster-scoped object cannot be owned by a namespaced one.
    #[error(
        "a cluster-scoped object cannot have a namespaced owner (owner's namespace {owner_namespace})"
    )]
    ClusterScopedWithNamespacedOwner {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// Owner references do not cross namespaces.
    #[error(
        "cross-namespace owner references are disallowed: owner in {owner_namespace}, object in {object_namespace}"
    )]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// The object already has another controller (controller-runtime's
    /// `AlreadyOwnedError`); only one owner may be its controller.
    #[error("the object is already controlled by {kind} {name:?}")]
    AlreadyOwned {
        /// The kind of the current controller.
        kind: String,
        /// The name of the current controller.
        name: String,
    },
}

/// A reference to `owner` with `controller: true` and `blockOwnerDeletion: true` (what
/// `set_controller_reference` adds; kube-rs's `controller_owner_ref`).
///
/// # Errors
///
/// [`OwnerReferenceError::OwnerNotPersisted`] when the owner has no name or uid.
pub fn controller_reference<O: Object + ?Sized>(
    owner: &O,
) -> Result<OwnerReference, OwnerReferenceError> {
    let mut reference = owner_reference(owner)?;
    reference.controller = Some(true);
    reference.block_owner_deletion = Some(true);
    Ok(reference)
}

/// A plain reference to `owner` (no `controller`, no `blockOwnerDeletion`).
///
/// # Errors
///
/// [`OwnerReferenceError::OwnerNotPersisted`] when the owner has no name or uid.
pub fn owner_reference<O: Object + ?Sized>(
    owner: &O,
) -> Result<OwnerReference, OwnerReferenceError> {
    if owner.name().is_empty() || owner.uid().is_empty() {
        return Err(OwnerReferenceError::OwnerNotPersisted {
            kind: owner.kind().into_owned(),
            name: owner.name().to_owned(),
        });
    }
    Ok(OwnerReference {
        api_version: owner.api_version().into_owned(),
        kind: owner.kind().into_owned(),
        name: owner.name().to_owned(),
        uid: owner.uid().to_owned(),
        controller: None,
        block_owner_deletion: None,
    })
}

/// Makes `owner` the controller of `object` (controller-runtime's
/// `SetControllerReference`): a reference to the same owner is replaced, another
/// owner's plain reference stays, another controller is an error.
///
/// # Errors
///
/// [`OwnerReferenceError`]: an owner not read from the server, a namespace mismatch, or
/// another controller already in place.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use kubeclient::controller::{is_controlled_by, set_controller_reference};
///
/// let mut owner = Deployment::default();
/// owner.metadata.name = Some("web".into());
/// owner.metadata.namespace = Some("prod".into());
/// owner.metadata.uid = Some("6b1b".into());
/// let mut child = ReplicaSet::default();
/// child.metadata.namespace = Some("prod".into());
/// set_controller_reference(&owner, &mut child)?;
/// assert!(is_controlled_by(&child, &owner));
/// # Ok::<(), kubeclient::controller::OwnerReferenceError>(())
/// ```
pub fn set_controller_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerReferenceError>
where
    O: Object + ?Sized,
    K: Object + ?Sized,
{
    let reference = controller_reference(owner)?;
    check_namespaces(owner, object)?;
    if let Some(current) = object.controller_of()
        && !same_owner(current, &reference)
    {
        return Err(OwnerReferenceError::AlreadyOwned {
            kind: current.kind.clone(),
            name: current.name.clone(),
        });
    }
    upsert(object, reference);
    Ok(())
}

/// Adds (or refreshes) a plain reference to `owner` on `object` (controller-runtime's
/// `SetOwnerReference`); an existing reference to the same owner keeps its `controller`
/// and `blockOwnerDeletion`.
///
/// # Errors
///
/// [`OwnerReferenceError`]: an owner not read from the server or a namespace mismatch.
pub fn set_owner_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerReferenceError>
where
    O: Object + ?Sized,
    K: Object + ?Sized,
{
    let mut reference = owner_reference(owner)?;
    check_namespaces(owner, object)?;
    if let Some(existing) = object
        .owner_references()
        .iter()
        .find(|r| same_owner(r, &reference))
    {
        reference.controller = existing.controller;
        reference.block_owner_deletion = existing.block_owner_deletion;
    }
    upsert(object, reference);
    Ok(())
}

/// Removes the references to `owner` (by group, kind and name); `true` when one was
/// there (controller-runtime's `RemoveOwnerReference`). An emptied list becomes absent.
pub fn remove_owner_reference<O, K>(owner: &O, object: &mut K) -> bool
where
    O: Object + ?Sized,
    K: Object + ?Sized,
{
    // Matched by group, kind and name: an owner without a uid still names its references.
    let reference = OwnerReference {
        api_version: owner.api_version().into_owned(),
        kind: owner.kind().into_owned(),
        name: owner.name().to_owned(),
        ..OwnerReference::default()
    };
    let meta = object.meta_mut();
    let Some(references) = meta.owner_references.as_mut() else {
        return false;
    };
    let before = references.len();
    references.retain(|r| !same_owner(r, &reference));
    let removed = references.len() != before;
    if references.is_empty() {
        meta.owner_references = None;
    }
    removed
}

/// Whether `owner` is `object`'s controller: same group, kind and name, and the same uid
/// (a re-created owner of the same name is another object).
#[must_use]
pub fn is_controlled_by<K, O>(object: &K, owner: &O) -> bool
where
    K: Object + ?Sized,
    O: Object + ?Sized,
{
    object.controller_of().is_some_and(|current| {
        current.uid == owner.uid()
            && current.name == owner.name()
            && current.kind == owner.kind()
            && group_of(&current.api_version) == group_of(&owner.api_version())
    })
}

fn check_namespaces<O, K>(owner: &O, object: &K) -> Result<(), OwnerReferenceError>
where
    O: Object + ?Sized,
    K: Object + ?Sized,
{
    let Some(owner_namespace) = owner.namespace() else {
        return Ok(()); // a cluster-scoped owner may own anything
    };
    match object.namespace() {
        None => Err(OwnerReferenceError::ClusterScopedWithNamespacedOwner {
            owner_namespace: owner_namespace.to_owned(),
        }),
        Some(object_namespace) if object_namespace != owner_namespace => {
            Err(OwnerReferenceError::CrossNamespace {
                owner_namespace: owner_namespace.to_owned(),
                object_namespace: object_namespace.to_owned(),
            })
        }
        Some(_) => Ok(()),
    }
}

/// The group of an `apiVersion` (`""` for the core group's `v1`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn same_owner(a: &OwnerReference, b: &OwnerReference) -> bool {
    a.kind == b.kind && a.name == b.name && group_of(&a.api_version) == group_of(&b.api_version)
}

/// Replaces the reference to the same owner, or appends.
fn upsert<K: Object + ?Sized>(object: &mut K, reference: OwnerReference) {
    let references = object
        .meta_mut()
        .owner_references
        .get_or_insert_with(Vec::new);
    match references.iter_mut().find(|r| same_owner(r, &reference)) {
        Some(existing) => *existing = reference,
        None => references.push(reference),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::api::rbac::v1::ClusterRole;

    fn named<K: Object + Default>(name: &str, namespace: Option<&str>, uid: &str) -> K {
        let mut object = K::default();
        let meta = object.meta_mut();
        meta.name = Some(name.to_owned());
        meta.namespace = namespace.map(str::to_owned);
        meta.uid = (!uid.is_empty()).then(|| uid.to_owned());
        object
    }

    #[test]
    fn set_controller_reference_adds_one_reference_and_refreshes_it_in_place() {
        let owner: Deployment = named("web", Some("prod"), "uid-1");
        let mut child: ReplicaSet = named("web-1", Some("prod"), "");
        set_controller_reference(&owner, &mut child).expect("set");
        set_controller_reference(&owner, &mut child).expect("set again");
        let references = child.owner_references();
        assert_eq!(references.len(), 1, "{references:?}");
        assert_eq!(references[0].api_version, "apps/v1");
        assert_eq!(references[0].kind, "Deployment");
        assert_eq!(references[0].controller, Some(true));
        assert_eq!(references[0].block_owner_deletion, Some(true));
        assert!(is_controlled_by(&child, &owner));
    }

    #[test]
    fn a_second_controller_is_refused_and_a_plain_owner_is_kept() {
        let owner: Deployment = named("web", Some("prod"), "uid-1");
        let other: StatefulSet = named("db", Some("prod"), "uid-2");
        let mut child: ReplicaSet = named("web-1", Some("prod"), "");
        set_owner_reference(&other, &mut child).expect("a plain owner");
        set_controller_reference(&owner, &mut child).expect("the controller");
        assert_eq!(child.owner_references().len(), 2);
        assert_eq!(
            set_controller_reference(&other, &mut child),
            Err(OwnerReferenceError::AlreadyOwned {
                kind: "Deployment".to_owned(),
                name: "web".to_owned()
            })
        );
        // Refreshing the plain reference keeps it plain; the controller keeps its flag.
        set_owner_reference(&owner, &mut child).expect("refresh");
        assert!(is_controlled_by(&child, &owner));
        assert!(remove_owner_reference(&other, &mut child));
        assert!(!remove_owner_reference(&other, &mut child));
        assert_eq!(child.owner_references().len(), 1);
    }

    #[test]
    fn namespaces_and_unpersisted_owners_are_refused() {
        let owner: Deployment = named("web", Some("prod"), "uid-1");
        let mut elsewhere: ReplicaSet = named("web-1", Some("dev"), "");
        assert!(matches!(
            set_controller_reference(&owner, &mut elsewhere),
            Err(OwnerReferenceError::CrossNamespace { .. })
        ));
        let mut cluster_scoped: ClusterRole = named("reader", None, "");
        assert!(matches!(
            set_owner_reference(&owner, &mut cluster_scoped),
            Err(OwnerReferenceError::ClusterScopedWithNamespacedOwner { .. })
        ));
        let unsaved: Deployment = named("web", Some("prod"), "");
        let mut child: ReplicaSet = named("web-1", Some("prod"), "");
        assert!(matches!(
            set_controller_reference(&unsaved, &mut child),
            Err(OwnerReferenceError::OwnerNotPersisted { .. })
        ));
        // A cluster-scoped owner may own a namespaced object.
        let namespace: Namespace = named("prod", None, "uid-ns");
        set_controller_reference(&namespace, &mut child).expect("cluster-scoped owner");
        assert_eq!(child.owner_references()[0].api_version, "v1");
    }

    #[test]
    fn a_recreated_owner_of_the_same_name_does_not_control_the_old_child() {
        let first: Deployment = named("web", Some("prod"), "uid-1");
        let second: Deployment = named("web", Some("prod"), "uid-2");
        let mut child: ReplicaSet = named("web-1", Some("prod"), "");
        set_controller_reference(&first, &mut child).expect("set");
        assert!(!is_controlled_by(&child, &second));
        // ... and adopting it replaces the stale reference instead of adding another.
        set_controller_reference(&second, &mut child).expect("adopt");
        assert_eq!(child.owner_references().len(), 1);
        assert!(is_controlled_by(&child, &second));
    }
}
