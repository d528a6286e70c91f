//! CRD conversion webhooks (apiextensions-apiserver's `conversion/webhook_converter.go`):
//! a CRD whose `spec.conversion.strategy` is `Webhook` has its objects converted between
//! versions by a `ConversionReview` posted to its webhook ([`ConversionWebhook`]), one
//! request for all the objects of a read or write, within kube-apiserver's fixed 30 s.
//! The answer is checked as upstream checks it: the same uid (v1 reviews), a `Success`
//! result, as many objects as were sent, each in the desired version with the same kind,
//! name, namespace and uid; of its metadata only labels and annotations are kept, the
//! rest is restored from the original. A failure is the error kube-apiserver answers
//! with (a 500 whose message names the webhook's failure).
//!
//! Reads and watches convert in async context ([`convert`]); the store, which runs on
//! the blocking pool, waits for the same call ([`convert_blocking`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kubeclient_machinery::{Status, StatusReason};
use serde_json::{Map, Value, json};

use crate::registry::ResourceDef;
use crate::registry::admission::WebhookPolicy;
use crate::registry::validate;
use crate::webhook_client::{self, CallError, Endpoint, WebhookRequest, ca_bundle_of};

/// kube-apiserver's deadline of a conversion webhook call (not configurable upstream;
/// the builder's `conversion_webhook_timeout` shortens it for tests).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The `ConversionReview` versions this server speaks.
pub(crate) const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's conversion webhook: `spec.conversion.webhook` of a CRD whose strategy is
/// `Webhook`, read leniently (the CRD's validation ran when it was written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConversionWebhook {
    /// Where it is called; `None` when `clientConfig` names neither a URL nor a service.
    pub(crate) endpoint: Option<Endpoint>,
    /// `clientConfig.caBundle`, decoded (PEM).
    pub(crate) ca_bundle: Vec<u8>,
    /// `conversionReviewVersions`, in the CRD's order.
    pub(crate) review_versions: Vec<String>,
}

impl ConversionWebhook {
    /// The conversion webhook of `crd`, if its strategy is `Webhook`.
    pub(crate) fn of_crd(crd: &Value) -> Option<Arc<ConversionWebhook>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        let client = webhook.get("clientConfig").unwrap_or(&Value::Null);
        Some(Arc::new(ConversionWebhook {
            endpoint: Endpoint::of_client_config(client),
            ca_bundle: ca_bundle_of(client),
            review_versions: crate::object::string_list(webhook.get("conversionReviewVersions")),
        }))
    }

    /// The review version sent: the first of `conversionReviewVersions` this server
    /// speaks, as upstream picks it.
    fn review_version(&self) -> Option<&'static str> {
        self.review_versions
            .iter()
            .find_map(|version| REVIEW_VERSIONS.into_iter().find(|v| v == version))
    }
}

/// A conversion that failed, in kube-apiserver's words
/// (`conversion webhook for <gvk> failed: ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConversionError(pub(crate) String);

impl ConversionError {
    /// The answer kube-apiserver gives for it: a plain error, so a 500 Status without a
    /// reason whose message is the error's text.
    pub(crate) fn status(&self) -> Box<Status> {
        let mut status = Status::failure(StatusReason::InternalError, self.0.clone());
        status.reason.clear();
        status.code = 500;
        Box::new(status)
    }
}

/// What is converted: the objects (all needing it), where to, and how they came.
pub(crate) struct Conversion<'a> {
    /// The webhook.
    pub(crate) webhook: &'a ConversionWebhook,
    /// The resource the objects belong to (for its list kind and metadata checks).
    pub(crate) resource: &'a ResourceDef,
    /// The objects to convert.
    pub(crate) objects: Vec<Value>,
    /// The `apiVersion` they are converted to.
    pub(crate) desired: String,
    /// Whether they are the items of a list (upstream's messages differ).
    pub(crate) list: bool,
    /// How webhooks may be called.
    pub(crate) policy: WebhookPolicy,
}

/// A review ready to post.
struct Prepared {
    request: WebhookRequest,
    uid: String,
    version: &'static str,
    /// Go's `GroupVersionKind` of the input, as the messages show it.
    input: String,
}

impl Conversion<'_> {
    /// Go's `%v` of the input's GroupVersionKind: the object's, or the list's.
    fn input_kind(&self) -> String {
        let api_version = self
            .objects
            .first()
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = if self.list {
            self.resource.list_kind.as_str()
        } else {
            self.objects
                .first()
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        format!("{api_version}, Kind={kind}")
    }

    fn prepare(&self) -> Result<Prepared, ConversionError> {
        let input = self.input_kind();
        let failed = |reason: String| {
            ConversionError(format!("conversion webhook for {input} failed: {reason}"))
        };
        let version = self
            .webhook
            .review_version()
            .ok_or_else(|| failed("no supported conversion review versions".to_owned()))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{version}"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": self.desired, "objects": self.objects},
        });
        let body = serde_json::to_vec(&review).map_err(|err| failed(err.to_string()))?;
        let request = WebhookRequest::to(
            self.webhook.endpoint.as_ref(),
            &self.webhook.ca_bundle,
            body,
            self.policy.conversion_timeout,
            self.policy.allow_remote,
        )
        .map_err(|reason| failed(format!("could not get REST client: {reason}")))?;
        Ok(Prepared {
            request,
            uid,
            version,
            input,
        })
    }

    /// The converted objects of the answer, checked, with their metadata restored.
    fn finish(
        self,
        prepared: &Prepared,
        answer: Result<Bytes, CallError>,
    ) -> Result<Vec<Value>, ConversionError> {
        let input = &prepared.input;
        let failed = |reason: String| {
            ConversionError(format!("conversion webhook for {input} failed: {reason}"))
        };
        let body = answer.map_err(|err| failed(err.to_string()))?;
        let converted = converted_objects(&body, prepared).map_err(failed)?;
        if converted.len() != self.objects.len() {
            return Err(ConversionError(format!(
                "conversion webhook for {input} returned {} objects, expected {}",
                converted.len(),
                self.objects.len()
            )));
        }
        let mut results = Vec::with_capacity(converted.len());
        for (index, (original, converted)) in self.objects.iter().zip(converted).enumerate() {
            results.push(self.checked(input, index, original, converted)?);
        }
        Ok(results)
    }

    /// One converted object, checked against its original, its metadata restored.
    fn checked(
        &self,
        input: &str,
        index: usize,
        original: &Value,
        converted: Value,
    ) -> Result<Value, ConversionError> {
        // Upstream counts the item before its checks in a list: they name the next index.
        let (invalid, shown) = if self.list {
            ("invalid converted object at index", index + 1)
        } else {
            ("invalid object at index", 0)
        };
        let returned = |what: &str, at: usize, reason: String| {
            ConversionError(format!(
                "conversion webhook for {input} returned {what} {at}: {reason}"
            ))
        };
        let Value::Object(mut converted) = converted else {
            return Err(returned(
                invalid,
                index,
                format!(
                    "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&converted)
                ),
            ));
        };
        let got_version = converted
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if got_version != self.desired {
            return Err(returned(
                invalid,
                shown,
                format!(
                    "invalid groupVersion (expected {}, received {got_version})",
                    self.desired
                ),
            ));
        }
        let kind_of = |object: &Map<String, Value>| {
            object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let original_map = original.as_object().cloned().unwrap_or_default();
        let (want_kind, got_kind) = (kind_of(&original_map), kind_of(&converted));
        if want_kind != got_kind {
            return Err(returned(
                invalid,
                shown,
                format!("invalid kind (expected {want_kind}, received {got_kind})"),
            ));
        }
        let (object_error, metadata_error) = if self.list {
            (
                format!("invalid converted object at index {shown}"),
                format!("invalid metadata in object at index {shown}"),
            )
        } else {
            ("invalid object".to_owned(), "invalid metadata".to_owned())
        };
        let plain = |what: &str, reason: String| {
            ConversionError(format!(
                "conversion webhook for {input} returned {what}: {reason}"
            ))
        };
        same_identity(original, &converted).map_err(|reason| plain(&object_error, reason))?;
        restore_metadata(self.resource, original, &mut converted)
            .map_err(|reason| plain(&metadata_error, reason))?;
        Ok(Value::Object(converted))
    }
}

/// The `convertedObjects` of a webhook's answer to `prepared`, checked as upstream's
/// `getConvertedObjectsFromResponse` checks it (a v1beta1 answer's uid is not).
fn converted_objects(body: &[u8], prepared: &Prepared) -> Result<Vec<Value>, String> {
    let answer: Value = serde_json::from_slice(body)
        .map_err(|err| format!("couldn't get version/kind; json parse error: {err}"))?;
    let api_version = answer
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = answer.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        let shown: String = String::from_utf8_lossy(body).chars().take(256).collect();
        return Err(format!("Object 'Kind' is missing in '{shown}'"));
    }
    let expected = format!("apiextensions.k8s.io/{}", prepared.version);
    if kind != "ConversionReview"
        || !REVIEW_VERSIONS
            .iter()
            .any(|v| api_version == format!("apiextensions.k8s.io/{v}"))
    {
        let from_version = api_version.rsplit('/').next().unwrap_or("");
        return Err(format!(
            "converting ({from_version}.{kind}) to ({}.ConversionReview): unknown conversion",
            prepared.version
        ));
    }
    let v1 = prepared.version == "v1";
    if v1 && api_version != expected {
        return Err(format!(
            "expected webhook response of {expected}, Kind=ConversionReview, got {api_version}, Kind={kind}"
        ));
    }
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or_else(|| "no response provided".to_owned())?;
    let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if v1 && uid != prepared.uid {
        return Err(format!(
            "expected response.uid={:?}, got {uid:?}",
            prepared.uid
        ));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    if status != "Success" {
        let message = result.get("message").and_then(Value::as_str).unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_owned());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    match response.get("convertedObjects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(objects)) => Ok(objects.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field ConversionResponse.response.convertedObjects of type []runtime.RawExtension",
            json_kind(other)
        )),
    }
}

/// Go's name of a JSON value's type, as `encoding/json` names it.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%T` of a value decoded into `interface{}`.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Upstream's `validateConvertedObject`: kind, name, namespace and uid unchanged.
fn same_identity(original: &Value, converted: &Map<String, Value>) -> Result<(), String> {
    let converted = Value::Object(converted.clone());
    for (field, what) in [
        ("/kind", "kind"),
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "UID"),
    ] {
        let text = |object: &Value| {
            object
                .pointer(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (want, got) = (text(original), text(&converted));
        if want != got {
            return Err(format!("must have the same {what}: {want} != {got}"));
        }
    }
    Ok(())
}

/// Upstream's `restoreObjectMeta`: the original's metadata, but the converted object's
/// labels and annotations (validated when they changed).
fn restore_metadata(
    resource: &ResourceDef,
    original: &Value,
    converted: &mut Map<String, Value>,
) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(metadata)) => metadata.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let entries = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(entries)) => entries,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        if let Some((key, value)) = entries.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!(
                "metadata.{field}[{key}] must be a string, but is {} in converted object",
                go_type(value)
            ));
        }
        let answered_entries = Value::Object(entries.clone());
        if restored.get(field) != Some(&answered_entries) {
            changed = true;
        }
        restored.insert(field.to_owned(), answered_entries);
    }
    converted.insert("metadata".to_owned(), Value::Object(restored));
    if changed {
        let object = Value::Object(converted.clone());
        if let Err(status) = validate::check_metadata(resource, &object) {
            let causes: Vec<String> = status
                .details
                .iter()
                .flat_map(|details| &details.causes)
                .map(|cause| format!("{}: {}", cause.field, cause.message))
                .collect();
            return Err(match causes.as_slice() {
                [one] => one.clone(),
                _ => format!("[{}]", causes.join(", ")),
            });
        }
    }
    Ok(())
}

/// Converts the objects through the webhook, in async context (reads, lists, watches).
///
/// # Errors
///
/// The conversion's failure, in kube-apiserver's words.
pub(crate) async fn convert(conversion: Conversion<'_>) -> Result<Vec<Value>, ConversionError> {
    if conversion.objects.is_empty() {
        return Ok(Vec::new());
    }
    let prepared = conversion.prepare()?;
    let answer = webhook_client::post(prepared.request.clone()).await;
    conversion.finish(&prepared, answer)
}

/// Converts the objects through the webhook, waiting for it: for the store and the
/// write handlers, which run on the blocking pool.
///
/// # Errors
///
/// As [`convert`].
pub(crate) fn convert_blocking(conversion: Conversion<'_>) -> Result<Vec<Value>, ConversionError> {
    if conversion.objects.is_empty() {
        return Ok(Vec::new());
    }
    let prepared = conversion.prepare()?;
    let answer = webhook_client::post_blocking(vec![prepared.request.clone()])
        .pop()
        .unwrap_or_else(|| Err(CallError::Client("no answer".to_owned())));
    conversion.finish(&prepared, answer)
}
