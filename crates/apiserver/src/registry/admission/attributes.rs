//! [`Attributes`]: what admission knows of one write (kube-apiserver's
//! `admission.Attributes`), and the [`Operation`] it is.

use serde_json::{Value, json};

use crate::authentication::UserInfo;
use crate::registry::ResourceDef;

/// The operation a write is to admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A create (POST, or a PUT or apply that creates).
    Create,
    /// An update (PUT, PATCH, apply, the status and scale subresources).
    Update,
    /// A DELETE (one by one for a deletecollection).
    Delete,
}

impl Operation {
    /// Its name in rules and reviews.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the options a review carries for it.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// One write, as admission sees it.
#[derive(Clone, Debug)]
pub(crate) struct Attributes<'a> {
    /// The resource written, in the version the request speaks.
    pub(crate) resource: &'a ResourceDef,
    /// The subresource (`""` for the main resource).
    pub(crate) subresource: &'a str,
    /// The operation.
    pub(crate) operation: Operation,
    /// The namespace (`""` for cluster-scoped resources).
    pub(crate) namespace: &'a str,
    /// The object's name (`""` for a create with `generateName` before it has one).
    pub(crate) name: String,
    /// The object written (`None` for a DELETE); mutating webhooks change it.
    pub(crate) object: Option<Value>,
    /// The object before the write (updates and deletes).
    pub(crate) old_object: Option<Value>,
    /// `dryRun=All`.
    pub(crate) dry_run: bool,
    /// The request's options (`CreateOptions`, `UpdateOptions` or `DeleteOptions`,
    /// without `kind` and `apiVersion`).
    pub(crate) options: Value,
    /// Who writes.
    pub(crate) user: &'a UserInfo,
}

impl Attributes<'_> {
    /// The kind of the object reviewed: `autoscaling/v1` Scale for the scale
    /// subresource, else the resource's.
    pub(crate) fn kind(&self) -> (&str, &str, &str) {
        if self.subresource == "scale" {
            ("autoscaling", "v1", "Scale")
        } else {
            (
                self.resource.group.as_str(),
                self.resource.version.as_str(),
                self.resource.kind.as_str(),
            )
        }
    }

    /// The options as a review carries them, typed.
    pub(crate) fn typed_options(&self) -> Value {
        let mut options = match &self.options {
            Value::Object(map) => map.clone(),
            _ => serde_json::Map::new(),
        };
        options.insert("kind".to_owned(), json!(self.operation.options_kind()));
        options.insert("apiVersion".to_owned(), json!("meta.k8s.io/v1"));
        Value::Object(options)
    }

    /// The labels of `object`, if any.
    pub(crate) fn labels(
        object: Option<&Value>,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let labels = object?.get("metadata")?.get("labels");
        Some(
            labels
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
        )
    }
}
