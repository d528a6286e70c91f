//! [`Call`]: what a resource handler needs from the request, read once. The handlers of
//! each verb add their own methods to it in their files.

use std::sync::Arc;

use bytes::Bytes;

use super::route::ResourcePath;
use crate::authentication::UserInfo;
use crate::query;
use crate::registry::ResourceDef;
use crate::state::State;

/// What a resource handler needs from the request, read once.
pub(crate) struct Call {
    pub state: Arc<State>,
    pub resource: Arc<ResourceDef>,
    pub path: ResourcePath,
    pub query: query::Query,
    pub accept: Option<String>,
    pub content_type: String,
    pub user_agent: String,
    pub body: Bytes,
    /// Who sent the request.
    pub user: UserInfo,
}
