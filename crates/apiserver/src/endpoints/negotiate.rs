//! Content negotiation (apiserver-semantics §8.1): which representation a request gets.
//! JSON is served for every resource and protobuf (§8.3) for built-in ones and for
//! PartialObjectMetadata of any resource (Tables stay JSON); YAML clauses are skipped, so a
//! client that also accepts JSON gets JSON, and one that accepts nothing servable gets 406.

use kubeclient_machinery::protobuf::MEDIA_TYPE as PROTOBUF;
use kubeclient_machinery::{Status, StatusReason};

/// The representation of a response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// The objects themselves.
    Json,
    /// A `meta.k8s.io` Table (what `kubectl get` asks for).
    Table,
    /// `PartialObjectMetadata` (single objects and watch events).
    PartialObjectMetadata,
    /// `PartialObjectMetadataList` (lists).
    PartialObjectMetadataList,
}

/// The encoding of a response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf` (built-in kinds only).
    Protobuf,
}

/// What the request reads, which decides the transformations allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One object.
    Object,
    /// A list.
    List,
    /// A watch stream.
    Watch,
}

struct Clause<'a> {
    media_type: &'a str,
    params: Vec<(&'a str, &'a str)>,
    quality: f32,
}

fn parse_accept(accept: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause<'_>> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let media_type = parts.next().filter(|m| !m.is_empty())?;
            let mut quality = 1.0;
            let mut params = Vec::new();
            for param in parts {
                let (name, value) = param.split_once('=').unwrap_or((param, ""));
                if name.trim() == "q" {
                    quality = value.trim().parse().unwrap_or(0.0);
                } else {
                    params.push((name.trim(), value.trim()));
                }
            }
            Some(Clause {
                media_type,
                params,
                quality,
            })
        })
        .filter(|clause| clause.quality > 0.0)
        .collect();
    // Higher quality first; among equals, specific types before wildcards; otherwise keep order.
    clauses.sort_by(|a, b| {
        b.quality
            .partial_cmp(&a.quality)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.media_type.contains('*').cmp(&b.media_type.contains('*')))
    });
    clauses
}

fn acceptable(clause: &Clause<'_>, target: Target, protobuf: bool) -> Option<(Output, Encoding)> {
    // PartialObjectMetadata is a built-in kind whatever the resource: protobuf is served for
    // it on custom resources too (client-go's metadata informers ask for it first).
    let metadata_only = clause
        .params
        .iter()
        .any(|(name, value)| *name == "as" && value.starts_with("PartialObjectMetadata"));
    let encoding = match clause.media_type {
        "application/json" | "application/*" | "*/*" => Encoding::Json,
        PROTOBUF if protobuf || metadata_only => Encoding::Protobuf,
        _ => return None,
    };
    let mut output = Output::Json;
    let (mut as_kind, mut group, mut version) = (None, None, None);
    for (name, value) in &clause.params {
        match *name {
            "as" => as_kind = Some(*value),
            "g" => group = Some(*value),
            "v" => version = Some(*value),
            "stream" if *value == "watch" => {}
            "pretty" | "charset" | "stream" | "profile" => {}
            _ => return None,
        }
    }
    if let Some(as_kind) = as_kind {
        if group != Some("meta.k8s.io") || !matches!(version, Some("v1" | "v1beta1")) {
            return None;
        }
        output = match (as_kind, target) {
            ("Table", _) => Output::Table,
            ("PartialObjectMetadata", Target::Object | Target::Watch) => {
                Output::PartialObjectMetadata
            }
            ("PartialObjectMetadataList", Target::List) => Output::PartialObjectMetadataList,
            _ => return None,
        };
        // Tables are JSON (or YAML) only.
        if encoding == Encoding::Protobuf && output == Output::Table {
            return None;
        }
    }
    Some((output, encoding))
}

/// Picks the representation for an `Accept` header, for a JSON-only resource.
///
/// # Errors
///
/// A 406 NotAcceptable Status when no clause can be served.
#[cfg(test)]
pub(crate) fn negotiate(accept: Option<&str>, target: Target) -> Result<Output, Box<Status>> {
    negotiate_encoding(accept, target, false).map(|(output, _)| output)
}

/// Picks the representation and encoding for an `Accept` header; `protobuf` says whether
/// the resource has a protobuf form (built-in kinds).
///
/// # Errors
///
/// A 406 NotAcceptable Status when no clause can be served.
pub(crate) fn negotiate_encoding(
    accept: Option<&str>,
    target: Target,
    protobuf: bool,
) -> Result<(Output, Encoding), Box<Status>> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok((Output::Json, Encoding::Json));
    };
    parse_accept(accept)
        .iter()
        .find_map(|clause| acceptable(clause, target, protobuf))
        .ok_or_else(|| {
            let media = match (target == Target::Watch, protobuf) {
                (true, false) => "application/json;stream=watch".to_owned(),
                (true, true) => format!("application/json;stream=watch, {PROTOBUF};stream=watch"),
                (false, false) => "application/json".to_owned(),
                (false, true) => format!("application/json, {PROTOBUF}"),
            };
            Box::new(Status::failure(
                StatusReason::NotAcceptable,
                format!("only the following media types are accepted: {media}"),
            ))
        })
}

impl super::call::Call {
    /// The representation and encoding the request's `Accept` header picks for this
    /// resource (protobuf only for built-in kinds). Plain-object responses are turned into
    /// protobuf at one place, after the handler (`endpoints::encode_response`); watches
    /// frame their events themselves.
    ///
    /// # Errors
    ///
    /// 406 when no clause can be served.
    pub(crate) fn negotiate(&self, target: Target) -> Result<(Output, Encoding), Box<Status>> {
        negotiate_encoding(self.accept.as_deref(), target, self.resource.builtin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

    #[test]
    fn kubectl_get_gets_a_table() {
        assert_eq!(
            negotiate(Some(KUBECTL_GET), Target::List).unwrap(),
            Output::Table
        );
        assert_eq!(
            negotiate(Some(KUBECTL_GET), Target::Watch).unwrap(),
            Output::Table
        );
    }

    #[test]
    fn metadata_clients_get_partial_object_metadata() {
        assert_eq!(
            negotiate(Some(METADATA_LIST), Target::List).unwrap(),
            Output::PartialObjectMetadataList
        );
        let single =
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiate(Some(single), Target::Watch).unwrap(),
            Output::PartialObjectMetadata
        );
        // PartialObjectMetadata for a list falls through to the plain clause.
        assert_eq!(negotiate(Some(single), Target::List).unwrap(), Output::Json);
    }

    #[test]
    fn protobuf_with_json_fallback_gets_json_and_protobuf_alone_is_refused() {
        let typed = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(
            negotiate(Some(typed), Target::Object).unwrap(),
            Output::Json
        );
        let err =
            negotiate(Some("application/vnd.kubernetes.protobuf"), Target::Object).unwrap_err();
        assert_eq!(err.code, 406);
        assert_eq!(negotiate(None, Target::Object).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some("*/*"), Target::Object).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn built_in_resources_get_protobuf_when_it_comes_first() {
        let typed = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(
            negotiate_encoding(Some(typed), Target::List, true).unwrap(),
            (Output::Json, Encoding::Protobuf)
        );
        let json_first = "application/json,application/vnd.kubernetes.protobuf";
        assert_eq!(
            negotiate_encoding(Some(json_first), Target::Watch, true).unwrap(),
            (Output::Json, Encoding::Json)
        );
        // PartialObjectMetadata in protobuf, for custom resources too; Tables stay JSON.
        for builtin in [true, false] {
            assert_eq!(
                negotiate_encoding(Some(METADATA_LIST), Target::List, builtin).unwrap(),
                (Output::PartialObjectMetadataList, Encoding::Protobuf)
            );
        }
        let table =
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate_encoding(Some(table), Target::List, true).unwrap(),
            (Output::Json, Encoding::Json)
        );
        let err = negotiate_encoding(Some(PROTOBUF), Target::Watch, false).unwrap_err();
        assert_eq!(err.code, 406);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json;stream=watch"
        );
    }

    #[test]
    fn aggregated_discovery_clause_is_skipped_for_plain_json() {
        let discovery =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(discovery), Target::Object).unwrap(),
            Output::Json
        );
    }
}
