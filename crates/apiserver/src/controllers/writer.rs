//! [`Writer`]: how the controllers write, through the generic store like any client, as
//! kube-controller-manager's user and field manager.

use crate::authentication::UserInfo;
use crate::registry::ResourceDef;
use crate::registry::store::{GenericStore, WriteRequest};

/// The field manager the controllers' writes are recorded under (client-go's default,
/// the program's name).
const FIELD_MANAGER: &str = "kube-controller-manager";

/// Who the controllers write as.
pub(super) fn controller_user() -> UserInfo {
    UserInfo {
        username: "system:kube-controller-manager".to_owned(),
        uid: String::new(),
        groups: vec!["system:authenticated".to_owned()],
        ..UserInfo::default()
    }
}

/// How the controllers write: through the generic store, as their user and field
/// manager.
pub(super) struct Writer<'a> {
    pub(super) store: &'a GenericStore<'a>,
    pub(super) user: &'a UserInfo,
}

impl Writer<'_> {
    /// A write to `name` of `resource` in `namespace`.
    pub(super) fn request<'r>(
        &'r self,
        resource: &'r ResourceDef,
        namespace: Option<&'r str>,
        name: &'r str,
    ) -> WriteRequest<'r> {
        WriteRequest::new(resource, namespace, name, self.user, FIELD_MANAGER)
    }
}
