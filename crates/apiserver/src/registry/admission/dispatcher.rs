//! Calling the webhooks (kube-apiserver's mutating and validating dispatchers): the
//! mutating ones one after the other in their order, each answer's JSON patch applied
//! to the object the next one sees; the validating ones all at once. A call that fails
//! (unreachable, too slow, an error status, an answer that is no valid review) is
//! handled by the webhook's `failurePolicy`; a refusal is the webhook's Status, with
//! kube-apiserver's texts.
//!
//! The store runs on the blocking pool (the endpoints hand writes to it), so the calls
//! are spawned on the server's runtime and waited for here, each within its
//! `timeoutSeconds`.

use bytes::Bytes;
use kubeclient_machinery::{Status, StatusReason};
use serde_json::{Value, json};

use super::attributes::Attributes;
use super::matcher::{Invocation, should_call};
use super::review::{self, AnswerError, Verdict};
use super::webhook::{Webhook, webhooks};
use crate::registry::apiextensions::version_conversion;
use crate::registry::{Registry, ResourceDef, validate};
use crate::storage::Store;
use crate::webhook_client::{CallError, WebhookPolicy, WebhookRequest, post_blocking};

/// A call that gave no usable answer: what kube-apiserver's `ErrCallingWebhook` says
/// after `failed calling webhook "NAME": `.
struct CallFailure(String);

/// What the rest of the chain does after one webhook.
enum Outcome {
    /// Go on (allowed, or a failure ignored).
    Next,
    /// Stop with this Status.
    Stop(Box<Status>),
}

/// A prepared call: the request, and what its answer must carry.
struct Prepared {
    request: WebhookRequest,
    uid: String,
    version: &'static str,
}

/// The request of `webhook` for `attributes`.
fn prepare(
    webhook: &Webhook,
    attributes: &Attributes<'_>,
    requested: &ResourceDef,
    policy: WebhookPolicy,
) -> Result<Prepared, CallFailure> {
    let version = review::review_version(webhook)
        .map_err(|reason| CallFailure(format!("could not create admission objects: {reason}")))?;
    let uid = uuid::Uuid::new_v4().to_string();
    let body = serde_json::to_vec(&review::request(attributes, requested, &uid, version))
        .map_err(|err| CallFailure(format!("could not create admission objects: {err}")))?;
    let request = WebhookRequest::to(
        webhook.endpoint.as_ref(),
        &webhook.ca_bundle,
        body,
        webhook.timeout,
        policy.allow_remote,
    )
    .map_err(|reason| CallFailure(format!("could not get REST client: {reason}")))?;
    Ok(Prepared {
        request,
        uid,
        version,
    })
}

/// The answer of a call, verified.
fn verdict(
    prepared: &Prepared,
    result: Result<Bytes, CallError>,
    mutating: bool,
) -> Result<Verdict, CallFailure> {
    let body = result.map_err(|err| match err {
        CallError::Client(reason) => CallFailure(format!("could not get REST client: {reason}")),
        other => CallFailure(format!("failed to call webhook: {other}")),
    })?;
    review::verify(&body, &prepared.uid, prepared.version, mutating).map_err(|err| match err {
        AnswerError::Undecodable(reason) => {
            CallFailure(format!("failed to call webhook: {reason}"))
        }
        AnswerError::Invalid(reason) => {
            CallFailure(format!("received invalid webhook response: {reason}"))
        }
    })
}

/// kube-apiserver's `ToStatusErr`: the refusal of webhook `name`, its code at least 400,
/// its message prefixed with who refused.
fn denied(name: &str, status: Option<&Value>) -> Box<Status> {
    let mut result: Status = status
        .and_then(|status| serde_json::from_value(status.clone()).ok())
        .unwrap_or_else(|| {
            let mut status = Status::failure(StatusReason::BadRequest, String::new());
            status.reason.clear();
            status
        });
    result.kind = "Status".to_owned();
    result.api_version = "v1".to_owned();
    if result.code < 400 {
        result.code = 400;
    }
    if result.status.is_empty() || result.status == "Success" {
        result.status = "Failure".to_owned();
    }
    let denied_by = format!("admission webhook {name:?} denied the request");
    result.message = if !result.message.is_empty() {
        format!("{denied_by}: {}", result.message)
    } else if !result.reason.is_empty() {
        format!("{denied_by}: {}", result.reason)
    } else {
        format!("{denied_by} without explanation")
    };
    Box::new(result)
}

/// A call failure under the webhook's failure policy.
fn failed(webhook: &Webhook, failure: &CallFailure) -> Outcome {
    let message = format!("failed calling webhook {:?}: {}", webhook.name, failure.0);
    if webhook.ignore_failures {
        tracing::warn!(webhook = %webhook.name, configuration = %webhook.configuration, "Failed calling webhook, failing open: {message}");
        return Outcome::Next;
    }
    tracing::warn!(webhook = %webhook.name, configuration = %webhook.configuration, "Failed calling webhook, failing closed: {message}");
    Outcome::Stop(Box::new(Status::internal_error(&message)))
}

/// 400 for a dry run a webhook with side effects would see.
fn dry_run_unsupported(webhook: &Webhook) -> Box<Status> {
    Box::new(Status::bad_request(format!(
        "admission webhook {:?} does not support dry run",
        webhook.name
    )))
}

/// A JSON patch failure in the words of Go's `evanphx/json-patch`, which
/// kube-apiserver applies patches with.
fn patch_error(patch: &json_patch::Patch, err: &json_patch::PatchError) -> String {
    use json_patch::{PatchErrorKind, PatchOperation};
    let op = match patch.0.get(err.operation) {
        Some(PatchOperation::Add(_)) => "add",
        Some(PatchOperation::Remove(_)) => "remove",
        Some(PatchOperation::Replace(_)) => "replace",
        Some(PatchOperation::Move(_)) => "move",
        Some(PatchOperation::Copy(_)) => "copy",
        Some(PatchOperation::Test(_)) => "test",
        None => "patch",
    };
    match err.kind {
        PatchErrorKind::TestFailed => "testing value failed".to_owned(),
        PatchErrorKind::InvalidPointer | PatchErrorKind::InvalidFromPointer => format!(
            "{op} operation does not apply: doc is missing path: {:?}: missing value",
            err.path.as_str()
        ),
        _ => err.to_string(),
    }
}

/// Applies a mutating webhook's JSON patch to the object.
fn apply_patch(
    webhook: &Webhook,
    attributes: &mut Attributes<'_>,
    patch: &[u8],
) -> Result<(), Outcome> {
    let patch: json_patch::Patch = serde_json::from_slice(patch).map_err(|err| {
        failed(
            webhook,
            &CallFailure(format!(
                "received undecodable patch in webhook response: {err}"
            )),
        )
    })?;
    if patch.0.is_empty() {
        return Ok(());
    }
    let Some(object) = attributes.object.as_mut() else {
        return Err(Outcome::Stop(Box::new(Status::internal_error(&format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            webhook.name
        )))));
    };
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).map_err(|err| {
        Outcome::Stop(Box::new(Status::internal_error(&patch_error(&patch, &err))))
    })?;
    // kube-apiserver decodes the patched object into its type: one that no longer
    // decodes is its internal error, not the client's.
    if attributes.subresource.is_empty()
        && let Err(status) = validate::check_decodes(attributes.resource, &patched)
    {
        return Err(Outcome::Stop(Box::new(Status::internal_error(
            &status.message,
        ))));
    }
    if !patched.is_object() {
        return Err(Outcome::Stop(Box::new(Status::internal_error(&format!(
            "admission webhook {:?} patched the object into {}, not an object",
            webhook.name,
            json!(patched)
                .to_string()
                .chars()
                .take(64)
                .collect::<String>()
        )))));
    }
    *object = patched;
    Ok(())
}

/// `object` in the version `resource` serves (another version of its CRD): converted
/// by the CRD's webhook if it names one, else with its `apiVersion` changed.
fn in_version(
    object: Option<Value>,
    resource: &ResourceDef,
    policy: WebhookPolicy,
) -> Result<Option<Value>, Box<Status>> {
    object
        .map(|object| version_conversion::to_version(resource, object, policy))
        .transpose()
}

/// The attributes a webhook is sent: the write's, or in the equivalent version its
/// rules name.
///
/// # Errors
///
/// The CRD's conversion webhook failed (500).
pub(super) fn sent<'b>(
    attributes: &Attributes<'b>,
    invocation: &'b Invocation,
    policy: WebhookPolicy,
) -> Result<Attributes<'b>, Box<Status>> {
    Ok(match invocation {
        Invocation::Exact => attributes.clone(),
        Invocation::Equivalent(resource) => Attributes {
            resource,
            object: in_version(attributes.object.clone(), resource, policy)?,
            old_object: in_version(attributes.old_object.clone(), resource, policy)?,
            ..attributes.clone()
        },
    })
}

/// Which mutating webhooks run again (kube-apiserver's `webhookReinvokeContext`), by
/// their place in the call order: a webhook with `reinvocationPolicy: IfNeeded` is called
/// a second time, once, when a webhook after it changed the object.
#[derive(Default)]
struct Reinvocation {
    /// `IfNeeded` webhooks called since the object last changed.
    invoked_since_change: Vec<usize>,
    /// The webhooks the second round calls.
    reinvoke: std::collections::BTreeSet<usize>,
}

impl Reinvocation {
    /// The object changed: every `IfNeeded` webhook called before runs again.
    fn object_changed(&mut self) {
        self.reinvoke.extend(self.invoked_since_change.drain(..));
    }

    fn called(&mut self, index: usize, webhook: &Webhook) {
        if webhook.reinvoke_if_needed {
            self.invoked_since_change.push(index);
        }
    }
}

/// Runs the mutating webhooks on the write, in order, each seeing the object as the
/// previous one left it; `attributes.object` ends as the last one left it. When a webhook
/// changed the object after an earlier one with `reinvocationPolicy: IfNeeded` saw it,
/// a second round calls those earlier ones again, in order, once (kube-apiserver's
/// reinvocation; a webhook not called in the first round is not called in the second).
/// Returns the webhooks' warnings.
///
/// # Errors
///
/// The first refusal, a failure under `failurePolicy: Fail`, a dry run a webhook with
/// side effects would see, a patch that does not apply.
pub(crate) fn admit(
    store: &Store,
    registry: &Registry,
    policy: WebhookPolicy,
    attributes: &mut Attributes<'_>,
) -> Result<Vec<String>, Box<Status>> {
    let webhooks = webhooks(store, "mutatingwebhookconfigurations");
    let mut warnings = Vec::new();
    let mut reinvocation = Reinvocation::default();
    for (index, webhook) in webhooks.iter().enumerate() {
        // A webhook its rules skip is not called, and so never reinvoked.
        let Some(changed) =
            call_mutating(store, registry, policy, webhook, attributes, &mut warnings)?
        else {
            continue;
        };
        if changed {
            reinvocation.object_changed();
        }
        reinvocation.called(index, webhook);
    }
    for webhook in reinvocation
        .reinvoke
        .iter()
        .filter_map(|&i| webhooks.get(i))
    {
        call_mutating(store, registry, policy, webhook, attributes, &mut warnings)?;
    }
    Ok(warnings)
}

/// Calls one mutating webhook when its rules match, applying its patch; whether it
/// changed the object, or `None` when it was not called.
fn call_mutating(
    store: &Store,
    registry: &Registry,
    policy: WebhookPolicy,
    webhook: &Webhook,
    attributes: &mut Attributes<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<bool>, Box<Status>> {
    let Some(invocation) = should_call(store, registry, webhook, attributes)? else {
        return Ok(None);
    };
    if attributes.dry_run && !webhook.dry_run_safe() {
        return Err(dry_run_unsupported(webhook));
    }
    let mut sent = sent(attributes, &invocation, policy)?;
    let prepared = match prepare(webhook, &sent, attributes.resource, policy) {
        Ok(prepared) => prepared,
        Err(failure) => {
            return match failed(webhook, &failure) {
                Outcome::Next => Ok(Some(false)),
                Outcome::Stop(status) => Err(status),
            };
        }
    };
    let result = post_blocking(vec![prepared.request.clone()])
        .pop()
        .unwrap_or_else(|| Err(CallError::Client("no answer".to_owned())));
    let verdict = match verdict(&prepared, result, true) {
        Ok(verdict) => verdict,
        Err(failure) => {
            return match failed(webhook, &failure) {
                Outcome::Next => Ok(Some(false)),
                Outcome::Stop(status) => Err(status),
            };
        }
    };
    warnings.extend(verdict.warnings);
    if !verdict.allowed {
        return Err(denied(&webhook.name, verdict.status.as_ref()));
    }
    let Some(patch) = &verdict.patch else {
        return Ok(Some(false));
    };
    let before = attributes.object.clone();
    match apply_patch(webhook, &mut sent, patch) {
        Ok(()) | Err(Outcome::Next) => {}
        Err(Outcome::Stop(status)) => return Err(status),
    }
    attributes.object = match invocation {
        Invocation::Exact => sent.object,
        Invocation::Equivalent(_) => in_version(sent.object, attributes.resource, policy)?,
    };
    Ok(Some(attributes.object != before))
}

/// Runs the validating webhooks on the write, all at once. Returns their warnings.
///
/// # Errors
///
/// The refusal or failure (under `failurePolicy: Fail`) of the first webhook in their
/// order that refused or failed, or a dry run a webhook with side effects would see.
pub(crate) fn validate(
    store: &Store,
    registry: &Registry,
    policy: WebhookPolicy,
    attributes: &Attributes<'_>,
) -> Result<Vec<String>, Box<Status>> {
    let mut called = Vec::new();
    for webhook in webhooks(store, "validatingwebhookconfigurations") {
        let Some(invocation) = should_call(store, registry, &webhook, attributes)? else {
            continue;
        };
        if attributes.dry_run && !webhook.dry_run_safe() {
            return Err(dry_run_unsupported(&webhook));
        }
        let prepared = prepare(
            &webhook,
            &sent(attributes, &invocation, policy)?,
            attributes.resource,
            policy,
        );
        called.push((webhook, prepared));
    }
    if called.is_empty() {
        return Ok(Vec::new());
    }
    let requests: Vec<WebhookRequest> = called
        .iter()
        .filter_map(|(_, prepared)| prepared.as_ref().ok().map(|p| p.request.clone()))
        .collect();
    let mut results = post_blocking(requests).into_iter();
    let mut warnings = Vec::new();
    let mut first_error = None;
    for (webhook, prepared) in &called {
        let verdict = match prepared {
            Ok(prepared) => {
                let result = results
                    .next()
                    .unwrap_or_else(|| Err(CallError::Client("no answer".to_owned())));
                verdict(prepared, result, false)
            }
            Err(failure) => Err(CallFailure(failure.0.clone())),
        };
        let outcome = match verdict {
            Ok(verdict) => {
                warnings.extend(verdict.warnings);
                if verdict.allowed {
                    Outcome::Next
                } else {
                    Outcome::Stop(denied(&webhook.name, verdict.status.as_ref()))
                }
            }
            Err(failure) => failed(webhook, &failure),
        };
        if let (Outcome::Stop(status), None) = (outcome, &first_error) {
            first_error = Some(status);
        }
    }
    match first_error {
        Some(status) => Err(status),
        None => Ok(warnings),
    }
}
