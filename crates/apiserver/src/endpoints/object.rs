//! Helpers shared by the verb handlers: body decoding, keys, names, selectors, options.

use std::borrow::Cow;
use std::sync::Arc;

use kubeclient_machinery::protobuf::{self, ProtobufError};
use kubeclient_machinery::selector::{FieldLookup, JsonFields};
use kubeclient_machinery::{
    ErrorChain, FieldSelector, GroupResource, LabelSelector, Status, StatusCause, StatusReason,
};
use serde_json::Value;

use super::call::Call;
use crate::registry::{FieldSelectors, event_versions};
use crate::response::{HandlerResult, fail};
use crate::storage::StoredObject;

pub(crate) use crate::object::{meta_str, metadata_mut, now, store_key};

impl Call {
    /// The group and resource, for Status messages.
    pub(crate) fn group_resource(&self) -> GroupResource {
        self.resource.group_resource()
    }

    /// Where the resource's objects are stored (`events.k8s.io` Events with core Events).
    pub(crate) fn storage(&self) -> GroupResource {
        event_versions::storage_of(&self.resource)
    }

    /// Stored objects as the request's resource serves them (the version asked for),
    /// converted in one webhook call when the CRD names one (`list`: they are a list's
    /// items).
    ///
    /// # Errors
    ///
    /// The conversion webhook's failure (500).
    pub(crate) async fn present(
        &self,
        stored: Vec<Arc<StoredObject>>,
        list: bool,
    ) -> HandlerResult<Vec<Arc<StoredObject>>> {
        crate::registry::apiextensions::version_conversion::present(
            &self.resource,
            stored,
            list,
            self.state.config.webhooks,
        )
        .await
    }

    /// The storage key prefix of the request's namespace (`ns/`), or `""` for every
    /// namespace and for cluster-scoped resources.
    pub(crate) fn namespace_prefix(&self) -> String {
        self.path
            .namespace
            .as_ref()
            .map(|ns| format!("{ns}/"))
            .unwrap_or_default()
    }

    /// 404 for the named object.
    pub(crate) fn not_found(&self, name: &str) -> Box<Status> {
        fail(Status::not_found(&self.group_resource(), name))
    }

    /// The request body as JSON (JSON or YAML bodies, and protobuf ones for built-in
    /// kinds; an empty Content-Type is JSON).
    pub(crate) fn decode_body(&self) -> HandlerResult<Value> {
        let media = self.content_type.split(';').next().unwrap_or("").trim();
        let value: Value = match media {
            protobuf::MEDIA_TYPE if self.resource.builtin => self.decode_protobuf_body()?,
            ""
            | "application/json"
            | "application/merge-patch+json"
            | "application/json-patch+json"
            | "application/strategic-merge-patch+json" => serde_json::from_slice(&self.body)
                .map_err(|err| {
                    fail(Status::bad_request(format!(
                        "the body of the request could not be decoded as JSON: {err}"
                    )))
                })?,
            "application/yaml" | "application/apply-patch+yaml" => {
                let text = std::str::from_utf8(&self.body).map_err(|_| {
                    fail(Status::bad_request("the body of the request is not UTF-8"))
                })?;
                crate::yaml_body::decode(text).map_err(|err| {
                    fail(Status::bad_request(format!(
                        "the body of the request could not be decoded as YAML: {err}"
                    )))
                })?
            }
            other => {
                return Err(fail(Status::failure(
                    StatusReason::UnsupportedMediaType,
                    format!(
                        "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml{}",
                        if self.resource.builtin {
                            ", application/vnd.kubernetes.protobuf"
                        } else {
                            ""
                        }
                    ),
                )));
            }
        };
        Ok(value)
    }

    /// A protobuf body, with the real server's messages for bytes that are not one.
    fn decode_protobuf_body(&self) -> HandlerResult<Value> {
        protobuf::decode(&self.body).map_err(|err| {
            let detail = match err {
                ProtobufError::MissingMagic => {
                    let head: String = self.body.iter().take(16).map(|b| format!("{b:02x}")).collect();
                    format!(
                        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({head})"
                    )
                }
                other => ErrorChain(&other).to_string(),
            };
            fail(Status::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): {detail}",
                self.resource.kind
            )))
        })
    }

    /// `fieldManager`, or the User-Agent up to its first `/` (as the API server defaults it).
    pub(crate) fn field_manager(&self) -> String {
        if let Some(manager) = self.query.non_empty("fieldManager") {
            return manager.to_owned();
        }
        let agent: String = self
            .user_agent
            .split('/')
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_control())
            .take(128)
            .collect();
        if agent.is_empty() {
            "unknown".to_owned()
        } else {
            agent
        }
    }

    /// Whether `dryRun=All` was asked.
    ///
    /// # Errors
    ///
    /// 422 for any other `dryRun` value.
    pub(crate) fn dry_run(&self) -> HandlerResult<bool> {
        dry_run_value(self.query.get("dryRun"))
    }

    /// The selectors of a list, watch or deletecollection, as one filter.
    ///
    /// # Errors
    ///
    /// 400 for an unparsable selector or an unsupported field.
    pub(crate) fn selector_filter(&self) -> HandlerResult<ObjectFilter> {
        let labels: LabelSelector = self
            .query
            .get("labelSelector")
            .unwrap_or("")
            .parse()
            .map_err(|err| fail(Status::bad_request(format!("{err}"))))?;
        let fields: FieldSelector = self
            .query
            .get("fieldSelector")
            .unwrap_or("")
            .parse()
            .map_err(|err| fail(Status::bad_request(format!("{err}"))))?;
        match &self.resource.field_selectors {
            FieldSelectors::Builtin(specs) => fields
                .check_supported(specs)
                .map_err(|err| fail(Status::bad_request(err.to_string())))?,
            FieldSelectors::Custom(selectable) => {
                if let Some(term) = fields.terms().iter().find(|t| {
                    !matches!(t.field.as_str(), "metadata.name" | "metadata.namespace")
                        && !selectable.contains(&t.field)
                }) {
                    return Err(fail(Status::bad_request(format!(
                        "{:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                        term.field
                    ))));
                }
            }
        }
        Ok(ObjectFilter {
            labels,
            fields,
            field_selectors: self.resource.field_selectors.clone(),
            name: None,
        })
    }
}

/// `dryRun` must be absent or `All`.
pub(crate) fn dry_run_value(value: Option<&str>) -> HandlerResult<bool> {
    match value {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(fail(Status::invalid(
            "meta.k8s.io",
            "DryRunOptions",
            "",
            vec![StatusCause::new(
                "FieldValueNotSupported",
                &format!("Unsupported value: {other:?}: supported values: \"All\""),
                "dryRun",
            )],
        ))),
    }
}

/// Label and field selectors applied to stored objects.
#[derive(Debug)]
pub(crate) struct ObjectFilter {
    labels: LabelSelector,
    fields: FieldSelector,
    field_selectors: FieldSelectors,
    /// A name the object must have (a watch on one object's path).
    name: Option<String>,
}

struct CustomFields<'a> {
    object: &'a Value,
}

impl FieldLookup for CustomFields<'_> {
    fn field_value(&self, field: &str) -> Option<Cow<'_, str>> {
        let mut value = self.object;
        for segment in field.split('.') {
            value = value.get(segment)?;
        }
        match value {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Bool(b) => Some(Cow::Owned(b.to_string())),
            Value::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }
}

impl ObjectFilter {
    /// Whether the filter selects everything.
    pub(crate) fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty() && self.name.is_none()
    }

    /// This filter, also requiring `metadata.name == name`.
    pub(crate) fn with_name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Whether an object is selected.
    pub(crate) fn matches(&self, object: &StoredObject) -> bool {
        self.matches_value(&object.value)
    }

    /// Whether an object (as JSON) is selected.
    pub(crate) fn matches_value(&self, object: &Value) -> bool {
        if self
            .name
            .as_deref()
            .is_some_and(|name| meta_str(object, "name") != name)
        {
            return false;
        }
        if !self.labels.is_empty() {
            let labels = object.get("metadata").and_then(|m| m.get("labels"));
            if !self
                .labels
                .matches_with(&|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
            {
                return false;
            }
        }
        if self.fields.is_empty() {
            return true;
        }
        match &self.field_selectors {
            FieldSelectors::Builtin(specs) => self.fields.matches(&JsonFields::new(object, specs)),
            FieldSelectors::Custom(_) => self.fields.matches(&CustomFields { object }),
        }
    }

    /// The name a `metadata.name=` term pins, if any (lets a list read one key).
    pub(crate) fn exact_name(&self) -> Option<&str> {
        self.name
            .as_deref()
            .or_else(|| self.fields.requires_exact_match("metadata.name"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_accepts_only_all() {
        assert!(!dry_run_value(None).unwrap());
        assert!(dry_run_value(Some("All")).unwrap());
        assert_eq!(dry_run_value(Some("Some")).unwrap_err().code, 422);
    }
}
