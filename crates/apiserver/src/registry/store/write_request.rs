//! One write: what it writes and how ([`WriteRequest`]), and how its object reached the
//! store ([`Decoding`]). What the store's callers and the checks it runs share; of the
//! store it imports only [`StoreResult`].

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use super::result::StoreResult;
use crate::authentication::UserInfo;
use crate::registry::ResourceDef;

/// Which request brought the object to the store: create and update name the kind in
/// their error messages, as the API server's body decoder does; patches do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoding {
    /// A POST or PUT body (or an object a controller or bootstrap writes).
    Body,
    /// The result of a patch.
    Patch,
}

/// The request's own check of the decoded object (the endpoint's `fieldValidation`:
/// unknown and duplicate fields), run where kube-apiserver's decoder would have run it;
/// it returns the warnings to send.
pub(crate) type FieldCheck<'a> =
    &'a (dyn Fn(&mut Value, Decoding) -> StoreResult<Vec<String>> + 'a);

/// No field check (controllers and bootstrap write well-formed objects).
fn no_field_check(_: &mut Value, _: Decoding) -> StoreResult<Vec<String>> {
    Ok(Vec::new())
}

/// One write: what it writes, and how. [`WriteRequest::new`] gives an object written by
/// the server itself (no dry run, no field check); the endpoints fill in the request's
/// options.
pub(crate) struct WriteRequest<'a> {
    /// The resource, in the version the request speaks.
    pub(crate) resource: &'a ResourceDef,
    /// The namespace (`None` for cluster-scoped resources).
    pub(crate) namespace: Option<&'a str>,
    /// The object's name (`""` for a create with `generateName`).
    pub(crate) name: &'a str,
    /// The subresource written (`status`, `scale`, `approval`, `ephemeralcontainers`).
    pub(crate) subresource: Option<&'a str>,
    /// `dryRun=All`: everything is checked, nothing is stored.
    pub(crate) dry_run: bool,
    /// Who writes.
    pub(crate) user: &'a UserInfo,
    /// The manager managedFields record the write under.
    pub(crate) field_manager: &'a str,
    /// How the object reached the store.
    pub(crate) decoding: Decoding,
    /// The request's field check.
    pub(crate) field_check: FieldCheck<'a>,
    /// Whether the admission webhooks see the write (a request's; the server's own
    /// writes are not admitted).
    pub(crate) admit: bool,
}

impl<'a> WriteRequest<'a> {
    /// A write by the server itself (a controller, bootstrap) as `user`, recorded under
    /// `field_manager`.
    pub(crate) fn new(
        resource: &'a ResourceDef,
        namespace: Option<&'a str>,
        name: &'a str,
        user: &'a UserInfo,
        field_manager: &'a str,
    ) -> Self {
        WriteRequest {
            resource,
            namespace,
            name,
            subresource: None,
            dry_run: false,
            user,
            field_manager,
            decoding: Decoding::Body,
            field_check: &no_field_check,
            admit: false,
        }
    }

    /// The group and resource, for Status messages.
    pub(crate) fn group_resource(&self) -> GroupResource {
        self.resource.group_resource()
    }
}
