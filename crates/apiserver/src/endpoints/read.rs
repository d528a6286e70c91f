//! GET of one object, and LIST with resourceVersion semantics, pagination and selectors
//! (apiserver-semantics §4).

use std::time::Duration;

use base64::Engine as _;
use bytes::{BufMut, BytesMut};
use http::{Response, StatusCode};
use kubeclient_machinery::{Status, StatusCause};
use serde_json::{Value, json};

use super::call::Call;
use super::negotiate::{Output, Target};
use super::object::store_key;
use super::table::{self, IncludeObject};
use crate::registry::apiextensions::version_conversion;
use crate::registry::{Special, metrics};
use crate::response::{Body, HandlerResult, fail, json, json_bytes};
use crate::storage::{ListRequest, StorageError, StoredObject};

/// How long a list waits for a resourceVersion newer than the store (as the watch cache does).
const TOO_LARGE_RV_WAIT: Duration = Duration::from_secs(3);

/// `GET` of one object (or its `status` / `scale` subresource).
pub(crate) async fn get(call: &Call) -> HandlerResult<Response<Body>> {
    let (output, _) = call.negotiate(Target::Object)?;
    let name = call.path.name.as_deref().unwrap_or("");
    let key = store_key(call.path.namespace.as_deref(), name);
    let storage = call.storage();
    let stored = if call.resource.special == Special::Metrics {
        metrics::objects(
            &call.state.store,
            &call.resource.plural,
            &call.namespace_prefix(),
        )
        .into_iter()
        .find(|object| object.name() == name)
        .ok_or_else(|| call.not_found(name))?
    } else {
        call.state.store.get(&storage, &key).ok_or_else(|| {
            match call.state.store.unreadable(&storage, &key) {
                Some(error) => fail(error.status(&call.group_resource(), name)),
                None => call.not_found(name),
            }
        })?
    };
    let object = call
        .present(vec![stored], false)
        .await?
        .pop()
        .ok_or_else(|| call.not_found(name))?;
    if call.path.subresource.as_deref() == Some("scale") {
        return Ok(json(
            StatusCode::OK,
            &super::write::scale_of(call, &object.value),
        ));
    }
    Ok(match output {
        Output::Json => json_bytes(
            StatusCode::OK,
            version_conversion::served_bytes(&call.resource, &object, call.state.config.webhooks)?,
        ),
        Output::PartialObjectMetadata => json(
            StatusCode::OK,
            &table::partial_object_metadata(&object.value),
        ),
        Output::Table | Output::PartialObjectMetadataList => {
            let include = include_object(call)?;
            let metadata = json!({"resourceVersion": object.rv.to_string()});
            json(
                StatusCode::OK,
                &table::table(
                    &call.resource,
                    std::iter::once(&object.value),
                    include,
                    metadata,
                    true,
                ),
            )
        }
    })
}

fn include_object(call: &Call) -> HandlerResult<IncludeObject> {
    IncludeObject::parse(call.query.get("includeObject")).map_err(|super::table::UnknownIncludeObject(bad)| {
        fail(Status::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {bad:?}: must be 'Metadata', 'Object', 'None', or empty"
        )))
    })
}

/// A 422 on `ListOptions`, as the API server reports bad list parameters.
pub(crate) fn list_options_invalid(field: &str, reason: &str, message: &str) -> Box<Status> {
    fail(Status::invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        vec![StatusCause::new(reason, message, field)],
    ))
}

/// Parses a resourceVersion parameter: `None` for unset/empty.
pub(crate) fn parse_rv(value: Option<&str>) -> HandlerResult<Option<u64>> {
    match value {
        None | Some("") => Ok(None),
        Some(text) => text.parse::<u64>().map(Some).map_err(|_| {
            fail(Status::bad_request(format!(
                "invalid resource version: strconv.ParseUint: parsing {text:?}: invalid syntax"
            )))
        }),
    }
}

/// A continue token: where the next page starts, and at which revision (`None`: latest).
#[derive(Debug)]
struct ContinueToken {
    revision: Option<u64>,
    after_key: String,
}

fn encode_continue(revision: Option<u64>, after_key: &str) -> String {
    let rv = revision.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX));
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{after_key}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> HandlerResult<ContinueToken> {
    let invalid = |why: &str| {
        fail(Status::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        )))
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid("not JSON"))?;
    if value.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(invalid("unsupported version"));
    }
    let rv = value
        .get("rv")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid("no resource version"))?;
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("no start key"))?;
    Ok(ContinueToken {
        revision: u64::try_from(rv).ok().filter(|rv| *rv > 0),
        after_key: start.trim_end_matches('\u{0}').to_owned(),
    })
}

/// LIST, with every resourceVersion/resourceVersionMatch rule of §4.1 and §4.2.
pub(crate) async fn list(call: &Call) -> HandlerResult<Response<Body>> {
    let (output, _) = call.negotiate(Target::List)?;
    let query = ListQuery::parse(call)?;
    let filter = call.selector_filter()?;
    if call.resource.special == Special::Metrics {
        // Computed when read, as metrics-server answers: no resourceVersion, no pages.
        let items: Vec<_> = metrics::objects(
            &call.state.store,
            &call.resource.plural,
            &call.namespace_prefix(),
        )
        .into_iter()
        .filter(|object| filter.matches(object))
        .collect();
        return list_response(call, output, &items, json!({}));
    }
    let (at, start_after, limit) = query.read_point(call).await?;
    let prefix = match (call.path.namespace.as_deref(), filter.exact_name()) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        _ => call.namespace_prefix(),
    };
    // With a namespace and a pinned name the prefix is the exact key, but a longer key
    // sharing it (`ns/a` and `ns/ab`) must not slip through: the filter checks the name.
    // The filter is not `Sync`: scoped, so it is gone before the conversion is awaited.
    let listed = {
        let matches = |object: &StoredObject| filter.matches(object);
        let request = ListRequest {
            at,
            prefix: &prefix,
            start_after: start_after.as_deref(),
            limit,
            filter: &matches,
        };
        call.state.store.list(&call.storage(), &request)
    };
    let page = match listed {
        Ok(page) => page,
        Err(StorageError::Expired { .. }) => return Err(fail(expired(start_after))),
        Err(StorageError::Backend(status)) => return Err(fail(*status)),
        Err(StorageError::TooLarge { requested, current }) => {
            return Err(fail(Status::resource_version_too_large(
                &requested.to_string(),
                &current.to_string(),
            )));
        }
    };
    let mut metadata = json!({"resourceVersion": page.revision.to_string()});
    if let Some(after) = &page.continue_after {
        metadata["continue"] = json!(encode_continue(Some(page.revision), after));
        if filter.is_everything() {
            metadata["remainingItemCount"] = json!(page.remaining);
        }
    }
    let items = call.present(page.items, true).await?;
    list_response(call, output, &items, metadata)
}

/// The resourceVersion, match rule, continue token and limit of a list, validated as
/// the API server validates `ListOptions`.
struct ListQuery<'a> {
    rv_match: &'a str,
    continue_token: Option<&'a str>,
    limit: usize,
    requested_rv: Option<u64>,
}

impl<'a> ListQuery<'a> {
    fn parse(call: &'a Call) -> HandlerResult<Self> {
        if call.query.flag("sendInitialEvents") {
            return Err(list_options_invalid(
                "sendInitialEvents",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents is forbidden for list",
            ));
        }
        let rv_text = call.query.get("resourceVersion").unwrap_or("");
        let rv_match = call.query.get("resourceVersionMatch").unwrap_or("");
        let continue_token = call.query.non_empty("continue");
        // A negative limit means no limit, as upstream; `timeoutSeconds` only has to parse.
        let limit: usize = call.query.int64("limit")?.map_or(0, |limit| {
            usize::try_from(limit.max(0)).unwrap_or(usize::MAX)
        });
        call.query.int64("timeoutSeconds")?;
        if !matches!(rv_match, "" | "Exact" | "NotOlderThan") {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: {rv_match:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                ),
            ));
        }
        if !rv_match.is_empty() && continue_token.is_some() {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if !rv_match.is_empty() && rv_text.is_empty() {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if rv_match == "Exact" && rv_text == "0" {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if continue_token.is_some() && !matches!(rv_text, "" | "0") {
            return Err(fail(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            )));
        }
        Ok(ListQuery {
            rv_match,
            continue_token,
            limit,
            requested_rv: parse_rv(Some(rv_text))?,
        })
    }

    /// The revision to read at (`None`: the latest), the key to start after and the
    /// limit. A resourceVersion not reached yet is waited for briefly, then refused.
    async fn read_point(&self, call: &Call) -> HandlerResult<(Option<u64>, Option<String>, usize)> {
        let store = &call.state.store;
        let (requested_rv, rv_match, limit) = (self.requested_rv, self.rv_match, self.limit);
        let (mut at, start_after, limit) = match self.continue_token {
            Some(token) => {
                let token = decode_continue(token)?;
                (token.revision, Some(token.after_key), limit)
            }
            None => match (requested_rv, rv_match) {
                (None | Some(0), _) if requested_rv.is_none() || rv_match != "Exact" => {
                    // Unset: most recent. "0": any (the latest here), and the limit is ignored.
                    (None, None, if requested_rv == Some(0) { 0 } else { limit })
                }
                (Some(rv), "Exact") => (Some(rv), None, limit),
                (Some(rv), "") if limit > 0 => (Some(rv), None, limit),
                (Some(rv), _) => {
                    if store.revision() < rv
                        && !store.wait_for_revision(rv, TOO_LARGE_RV_WAIT).await
                    {
                        return Err(fail(Status::resource_version_too_large(
                            &rv.to_string(),
                            &store.revision().to_string(),
                        )));
                    }
                    (None, None, limit)
                }
                (None, _) => (None, None, limit),
            },
        };
        if at == Some(store.revision()) {
            at = None;
        }
        Ok((at, start_after, limit))
    }
}

/// The 410 of a list whose revision (or continue token, when `start_after` is set) is
/// older than the history.
fn expired(start_after: Option<String>) -> Status {
    match start_after {
        Some(after) => {
            let mut status = Status::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            );
            status.metadata.continue_ = Some(encode_continue(None, &after));
            status
        }
        None => Status::expired("The resourceVersion for the provided list is too old."),
    }
}

/// An object's JSON without its `kind` and `apiVersion` (unchanged if it does not parse).
fn without_type_meta(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut fields)) => {
            fields.remove("kind");
            fields.remove("apiVersion");
            serde_json::to_vec(&fields).map_or(std::borrow::Cow::Borrowed(bytes), Into::into)
        }
        _ => std::borrow::Cow::Borrowed(bytes),
    }
}

/// A list page in the negotiated form: the stored bytes spliced into a JSON list,
/// PartialObjectMetadata, or a Table.
fn list_response(
    call: &Call,
    output: Output,
    items: &[std::sync::Arc<StoredObject>],
    metadata: Value,
) -> HandlerResult<Response<Body>> {
    Ok(match output {
        Output::Json => {
            let resource = &call.resource;
            // Items of built-in kinds carry no kind or apiVersion (kube-apiserver's typed
            // encoder sets them on the list only); custom resources' items keep them.
            let type_meta = resource.builtin.then(|| {
                format!(
                    "{{\"kind\":{},\"apiVersion\":{},",
                    json!(resource.kind),
                    json!(resource.api_version())
                )
            });
            // Unstructured lists always say `continue`, empty on the last page.
            let mut metadata = metadata;
            if !resource.builtin
                && let Some(fields) = metadata.as_object_mut()
            {
                fields.entry("continue").or_insert_with(|| json!(""));
            }
            let mut body = BytesMut::with_capacity(
                129 + items.iter().map(|o| o.bytes.len() + 1).sum::<usize>(),
            );
            body.put_slice(
                format!(
                    "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                    json!(resource.list_kind),
                    json!(resource.api_version()),
                    metadata
                )
                .as_bytes(),
            );
            for (i, object) in items.iter().enumerate() {
                if i > 0 {
                    body.put_u8(b',');
                }
                let bytes =
                    version_conversion::served_bytes(resource, object, call.state.config.webhooks)?;
                match type_meta.as_deref() {
                    None => body.put_slice(&bytes),
                    Some(prefix) => match bytes.strip_prefix(prefix.as_bytes()) {
                        Some(rest) => {
                            body.put_u8(b'{');
                            body.put_slice(rest);
                        }
                        // Converted objects (events.k8s.io Events) have their fields in
                        // another order: the slow path.
                        None => body.put_slice(&without_type_meta(&bytes)),
                    },
                }
            }
            body.put_slice(b"]}\n");
            json_bytes(StatusCode::OK, body.freeze())
        }
        Output::PartialObjectMetadataList | Output::PartialObjectMetadata => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| table::partial_object_metadata(&o.value))
                .collect();
            json(
                StatusCode::OK,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "items": items}),
            )
        }
        Output::Table => {
            let include = include_object(call)?;
            json(
                StatusCode::OK,
                &table::table(
                    &call.resource,
                    items.iter().map(|o| &o.value),
                    include,
                    metadata,
                    true,
                ),
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_bad_ones_are_rejected() {
        let token = encode_continue(Some(42), "ns/web-1");
        let decoded = decode_continue(&token).unwrap();
        assert_eq!(
            (decoded.revision, decoded.after_key.as_str()),
            (Some(42), "ns/web-1")
        );
        let latest = decode_continue(&encode_continue(None, "a")).unwrap();
        assert_eq!(latest.revision, None);
        let err = decode_continue("!!!").unwrap_err();
        assert_eq!(err.code, 400);
        assert!(err.message.starts_with("invalid continue token"));
    }

    #[test]
    fn resource_versions_must_be_decimal() {
        assert_eq!(parse_rv(Some("12")).unwrap(), Some(12));
        assert_eq!(parse_rv(Some("")).unwrap(), None);
        let err = parse_rv(Some("abc")).unwrap_err();
        assert_eq!(
            err.message,
            r#"invalid resource version: strconv.ParseUint: parsing "abc": invalid syntax"#
        );
    }
}
