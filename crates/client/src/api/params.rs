//! Request options: list, watch, create/replace, patch, delete.

use serde::Serialize;

/// Options of a list (client-go's `ListOptions`).
///
/// # Examples
///
/// ```
/// use kubeclient::ListParams;
/// let params = ListParams::default().labels("app=web").limit(100);
/// assert_eq!(params.label_selector.as_deref(), Some("app=web"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct ListParams {
    /// A label selector, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// A field selector, e.g. `metadata.name=web-0`.
    pub field_selector: Option<String>,
    /// At most this many items per page.
    pub limit: Option<u32>,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`: unset (most recent), `"0"` (any), or a version.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: `Exact` or `NotOlderThan`.
    pub resource_version_match: Option<String>,
    /// Server-side timeout for the list.
    pub timeout_seconds: Option<u32>,
}

impl ListParams {
    /// With a label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// With a field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// With a page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Continuing after a page.
    pub fn continue_token(mut self, token: &str) -> Self {
        self.continue_token = Some(token.to_owned());
        self
    }

    /// At a resourceVersion (with `NotOlderThan` semantics unless [`exact`](Self::exact)).
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.to_owned());
        self
    }

    /// Exactly at the resourceVersion given to [`at`](Self::at).
    pub fn exact(mut self) -> Self {
        self.resource_version_match = Some("Exact".to_owned());
        self
    }

    /// The query parameters.
    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        let mut push = |name, value: &Option<String>| {
            if let Some(value) = value {
                query.push((name, value.clone()));
            }
        };
        push("labelSelector", &self.label_selector);
        push("fieldSelector", &self.field_selector);
        push("continue", &self.continue_token);
        push("resourceVersion", &self.resource_version);
        push("resourceVersionMatch", &self.resource_version_match);
        if let Some(limit) = self.limit {
            query.push(("limit", limit.to_string()));
        }
        if let Some(timeout) = self.timeout_seconds {
            query.push(("timeoutSeconds", timeout.to_string()));
        }
        query
    }
}

/// Options of a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct WatchParams {
    /// A label selector.
    pub label_selector: Option<String>,
    /// A field selector.
    pub field_selector: Option<String>,
    /// The server ends the watch after this many seconds. Default 290.
    pub timeout_seconds: u32,
    /// Ask for bookmarks. Default true.
    pub bookmarks: bool,
    /// Stream the current state first, ended by the initial-events-end bookmark
    /// (`sendInitialEvents`, a watch-list). Default false.
    pub send_initial_events: bool,
}

impl Default for WatchParams {
    fn default() -> Self {
        WatchParams {
            label_selector: None,
            field_selector: None,
            timeout_seconds: 290,
            bookmarks: true,
            send_initial_events: false,
        }
    }
}

impl WatchParams {
    /// With a label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// With a field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// With a server-side timeout.
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// As a watch-list (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan`).
    pub fn initial_events(mut self) -> Self {
        self.send_initial_events = true;
        self
    }

    pub(crate) fn query(&self, resource_version: &str) -> Vec<(&'static str, String)> {
        let mut query = vec![
            ("watch", "true".to_owned()),
            ("timeoutSeconds", self.timeout_seconds.to_string()),
        ];
        if !resource_version.is_empty() {
            query.push(("resourceVersion", resource_version.to_owned()));
        }
        if self.bookmarks {
            query.push(("allowWatchBookmarks", "true".to_owned()));
        }
        if self.send_initial_events {
            query.push(("sendInitialEvents", "true".to_owned()));
            query.push(("resourceVersionMatch", "NotOlderThan".to_owned()));
        }
        if let Some(selector) = &self.label_selector {
            query.push(("labelSelector", selector.clone()));
        }
        if let Some(selector) = &self.field_selector {
            query.push(("fieldSelector", selector.clone()));
        }
        query
    }
}

/// Options of create and replace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct PostParams {
    /// `dryRun=All`: validate without storing.
    pub dry_run: bool,
    /// The field manager recorded in managedFields.
    pub field_manager: Option<String>,
}

impl PostParams {
    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if self.dry_run {
            query.push(("dryRun", "All".to_owned()));
        }
        if let Some(manager) = &self.field_manager {
            query.push(("fieldManager", manager.clone()));
        }
        query
    }
}

/// A patch and its type.
#[derive(Clone, Debug)]
pub enum Patch<P: Serialize> {
    /// Server-side apply (`application/apply-patch+yaml`); needs a field manager.
    Apply(P),
    /// JSON patch (RFC 6902).
    Json(json_patch::Patch),
    /// JSON merge patch (RFC 7386).
    Merge(P),
    /// Strategic merge patch (built-in types only).
    Strategic(P),
}

impl<P: Serialize> Patch<P> {
    pub(crate) fn content_type(&self) -> &'static str {
        match self {
            Patch::Apply(_) => "application/apply-patch+yaml",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Patch::Apply(p) | Patch::Merge(p) | Patch::Strategic(p) => serde_json::to_vec(p),
            Patch::Json(p) => serde_json::to_vec(p),
        }
    }
}

/// Options of a patch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct PatchParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The field manager (required for server-side apply).
    pub field_manager: Option<String>,
    /// Server-side apply: take ownership of conflicting fields.
    pub force: bool,
}

impl PatchParams {
    /// Server-side apply as `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchParams {
            field_manager: Some(manager.to_owned()),
            ..PatchParams::default()
        }
    }

    /// Forcing conflicts (server-side apply only).
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if self.dry_run {
            query.push(("dryRun", "All".to_owned()));
        }
        if let Some(manager) = &self.field_manager {
            query.push(("fieldManager", manager.clone()));
        }
        if self.force {
            query.push(("force", "true".to_owned()));
        }
        query
    }
}

/// Options of a delete, sent as a `DeleteOptions` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[must_use]
pub struct DeleteParams {
    /// `["All"]` for a dry run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// Seconds before the object is deleted (0: now).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<u32>,
    /// `Foreground`, `Background` or `Orphan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
    /// Delete only if the object still has this UID / resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
}

/// Delete preconditions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The UID the object must have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The resourceVersion the object must have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

impl DeleteParams {
    /// The `DeleteOptions` body.
    pub(crate) fn body(&self) -> serde_json::Result<Vec<u8>> {
        let mut value = serde_json::to_value(self)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("kind".to_owned(), "DeleteOptions".into());
            object.insert("apiVersion".to_owned(), "v1".into());
        }
        serde_json::to_vec(&value)
    }
}
