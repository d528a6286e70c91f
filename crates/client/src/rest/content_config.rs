//! [`ContentType`]: which encoding a client speaks for built-in kinds (client-go's
//! `rest.ContentConfig`: `AcceptContentTypes` and `ContentType`).

use kubeclient_machinery::protobuf;

/// The encoding of request bodies and preferred responses for built-in kinds.
///
/// With [`Protobuf`](Self::Protobuf) (the default), the typed [`Api`](crate::Api) of a built-in kind
/// sends bodies as `application/vnd.kubernetes.protobuf` and asks for
/// `application/vnd.kubernetes.protobuf, application/json`, as client-go's clientsets do;
/// custom resources, dynamic objects, patches and metadata-only requests always use JSON.
/// Responses are decoded by their `Content-Type`, so a server that answers JSON works too.
///
/// ```
/// use kubeclient::Config;
/// use kubeclient::rest::ContentType;
///
/// let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
/// assert_eq!(config.content_type, ContentType::Protobuf);
/// assert_eq!(config.content_type.accept(), "application/vnd.kubernetes.protobuf, application/json");
/// config.content_type = ContentType::Json;
/// assert_eq!(config.content_type.accept(), "application/json");
/// ```
#[doc(alias = "ContentConfig", alias = "AcceptContentTypes")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContentType {
    /// `application/json` for every kind.
    Json,
    /// `application/vnd.kubernetes.protobuf` for built-in kinds, JSON for the rest: the
    /// default (as kube-controller-manager's), since protobuf decodes faster than JSON
    /// with the generated decoders (docs/BENCHMARKS.md, "Protobuf").
    #[default]
    Protobuf,
}

impl ContentType {
    /// The `Accept` header for reads of built-in kinds.
    #[must_use]
    pub fn accept(self) -> &'static str {
        match self {
            ContentType::Json => super::JSON,
            ContentType::Protobuf => "application/vnd.kubernetes.protobuf, application/json",
        }
    }

    /// The media type of request bodies of built-in kinds.
    #[must_use]
    pub fn body_media_type(self) -> &'static str {
        match self {
            ContentType::Json => super::JSON,
            ContentType::Protobuf => protobuf::MEDIA_TYPE,
        }
    }
}

/// Whether a `Content-Type` header value is protobuf (plain or a watch stream).
pub(crate) fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type
        .is_some_and(|value| value.split(';').next().map(str::trim) == Some(protobuf::MEDIA_TYPE))
}
