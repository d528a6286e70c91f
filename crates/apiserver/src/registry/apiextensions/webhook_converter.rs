//! Calling a CRD's conversion webhook (apiextensions-apiserver's
//! `conversion/webhook_converter.go`): the objects of a read or write that are not in the
//! version wanted go to the CRD's [`ConversionWebhook`] in one `ConversionReview`, within
//! its deadline (kube-apiserver's fixed 30 s, [`WebhookPolicy::conversion_timeout`]). The answer is checked as upstream checks
//! it: the same uid (v1 reviews), a `Success` result, as many objects as were sent, each
//! in the desired version with the same kind, name, namespace and uid; of its metadata
//! only labels and annotations are kept, the rest is restored from the original. A
//! failure is the error kube-apiserver answers with (a 500 whose message names the
//! webhook's failure).
//!
//! Reads and watches convert in async context ([`convert`]); the store, which runs on
//! the blocking pool, waits for the same call ([`convert_blocking`]).

use bytes::Bytes;
use kubeclient_machinery::{Status, StatusReason};
use serde_json::{Map, Value, json};

use super::conversion_webhook::{ConversionWebhook, REVIEW_VERSIONS};
use crate::object::json_type;
use crate::registry::ResourceDef;
use crate::registry::validate;
use crate::webhook_client::{self, CallError, WebhookPolicy, WebhookRequest};

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
                    json_type(&converted)
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
            json_type(other)
        )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::crd_resources;
    use crate::webhook_client::Endpoint;

    fn resource() -> ResourceDef {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v2", "served": true, "storage": false}]},
        });
        crd_resources(&crd).unwrap().remove(0)
    }

    fn webhook(review_versions: &[&str]) -> ConversionWebhook {
        ConversionWebhook {
            endpoint: Some(Endpoint::Url("https://127.0.0.1:1/convert".to_owned())),
            ca_bundle: Vec::new(),
            review_versions: review_versions.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    fn widget() -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "a", "namespace": "default", "uid": "u-1", "generation": 1,
                            "labels": {"keep": "me"}}})
    }

    /// The outcome of an answer whose review carries `converted` (the review's uid and
    /// version filled in unless `review` overrides them).
    fn outcome(
        review_versions: &[&str],
        answer: impl FnOnce(&str, &str) -> Value,
    ) -> Result<Vec<Value>, ConversionError> {
        let resource = resource();
        let webhook = webhook(review_versions);
        let conversion = Conversion {
            webhook: &webhook,
            resource: &resource,
            objects: vec![widget()],
            desired: "example.com/v2".to_owned(),
            list: false,
            policy: WebhookPolicy::default(),
        };
        let prepared = conversion.prepare().unwrap();
        let body = answer(&prepared.uid, prepared.version).to_string();
        conversion.finish(&prepared, Ok(Bytes::from(body)))
    }

    fn review(uid: &str, version: &str, converted: Value) -> Value {
        json!({"apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "ConversionReview",
               "response": {"uid": uid, "result": {"status": "Success"}, "convertedObjects": [converted]}})
    }

    fn converted(metadata: Value) -> Value {
        json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": metadata, "spec": {"x": 1}})
    }

    #[test]
    fn metadata_is_restored_but_labels_and_annotations() {
        let result = outcome(&["v1"], |uid, version| {
            review(
                uid,
                version,
                converted(json!({"name": "a", "namespace": "default", "uid": "u-1",
                                 "generation": 42, "labels": {"new": "one"},
                                 "annotations": {"a": "b"}})),
            )
        })
        .unwrap();
        assert_eq!(
            result[0]["metadata"],
            json!({"name": "a", "namespace": "default", "uid": "u-1", "generation": 1,
                   "labels": {"new": "one"}, "annotations": {"a": "b"}})
        );
        assert_eq!(result[0]["spec"], json!({"x": 1}));
    }

    #[test]
    fn bad_metadata_is_refused_in_upstreams_words() {
        let prefix =
            "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: ";
        let cases = [
            (
                json!({"name": "a", "namespace": "default", "uid": "u-1",
                    "annotations": {"a": 1}}),
                "metadata.annotations[a] must be a string, but is int64 in converted object",
            ),
            (
                json!({"name": "a", "namespace": "default", "uid": "u-1", "labels": "x"}),
                "invalid metadata.labels of type string in converted object",
            ),
            (
                json!({"name": "a", "namespace": "default", "uid": "u-1",
                    "labels": {"bad key!": "v"}}),
                "metadata.labels: Invalid value: \"bad key!\": ",
            ),
        ];
        for (metadata, message) in cases {
            let err = outcome(&["v1"], |uid, version| {
                review(uid, version, converted(metadata))
            })
            .unwrap_err();
            assert!(
                err.0.starts_with(&format!("{prefix}{message}")),
                "{err} should start with {prefix}{message}"
            );
        }
        let err = outcome(&["v1"], |uid, version| {
            review(
                uid,
                version,
                json!({"apiVersion": "example.com/v2", "kind": "Widget"}),
            )
        })
        .unwrap_err();
        assert_eq!(
            err.0,
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: a != "
        );
    }

    #[test]
    fn a_v1_review_must_be_answered_in_v1_with_its_uid_a_v1beta1_one_need_not() {
        let err = outcome(&["v1"], |uid, _| {
            review(uid, "v1beta1", converted(json!({})))
        })
        .unwrap_err();
        assert_eq!(
            err.0,
            "conversion webhook for example.com/v1, Kind=Widget failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        );
        let err = outcome(&["v1"], |_, version| {
            review("other", version, converted(json!({})))
        })
        .unwrap_err();
        assert!(err.0.contains("expected response.uid="), "{err}");
        let metadata = json!({"name": "a", "namespace": "default", "uid": "u-1"});
        let result = outcome(&["v1beta1", "v1"], |_, version| {
            assert_eq!(
                version, "v1beta1",
                "the first listed version this server speaks"
            );
            review("other", version, converted(metadata))
        });
        assert!(result.is_ok(), "{result:?}");
        let err = outcome(&["v1"], |uid, version| {
            json!({"apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "ConversionReview",
                   "response": {"uid": uid, "result": {"status": "Failure"}}})
        })
        .unwrap_err();
        assert_eq!(
            err.0,
            "conversion webhook for example.com/v1, Kind=Widget failed: response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(err.status().code, 500);
        assert_eq!(err.status().reason, "");
    }
}
